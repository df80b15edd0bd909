"""``accel-regress [COMMAND ...]`` (``python -m accel_regress``).

With no command, list every backend and why it is (not) usable."""
from __future__ import annotations

import importlib
import sys


def commands() -> dict[str, str]:
    """command -> "module:function(argv) -> exit code", from the entry-point group accel_regress.commands."""
    from accel_regress.core import registry
    return {name: reg.value for name, reg in registry.registrations("command").items()}


def list_backends(argv) -> int:
    """Every registered backend and why it is (not) usable; then every registration and its source."""
    from accel_regress.core import registry
    try:
        backends = registry.registrations("backend")
    except registry.RegistrationError as exc:
        print(f"accel-regress registrations: {exc}", file=sys.stderr)
        return 2
    rows, broken = [], []
    for name in backends:
        try:
            backend = registry.get(name)
            reason = registry.availability(name)
        except registry.RegistrationError:
            rows.append((name, "?", "BROKEN", "see below"))
            continue
        missing = backend.missing_files() if reason is None else []
        if missing:
            reason = f"set-up error: the installation lacks {', '.join(missing)}"
        compile_only = backend.compile_only() if reason is None else None
        if compile_only:
            rows.append((name, backend.kind or "?", "compile", f"compiles here, runs SKIP: {compile_only}"))
            continue
        rows.append((name, backend.kind or "?", "yes" if reason is None else "no", reason or backend.description))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'backend':<{w0}}  {'kind':<{w1}}  available  notes")
    for name, kind, ok, note in rows:
        print(f"{name:<{w0}}  {kind:<{w1}}  {ok:<9}  {note}")
    default = [n for n, _, ok, _ in rows if ok == "yes"]
    print(f"\ndefault --hw here: {','.join(default)}")
    print("\nregistrations (entry-point group: name = object, registered by):")
    for kind in registry.kinds():
        print(f"{registry.GROUPS.get(kind, kind)}:" + _readers(registry, kind))
        for reg in registry.registrations(kind).values():
            problem = _problem(registry, reg)
            print(f"  {reg.name} = {reg.value}  [{reg.source}]" + (f"  BROKEN: {problem}" if problem else ""))
            if problem:
                broken.append(problem)
    for problem in broken:
        print(f"accel-regress registrations: {problem}", file=sys.stderr)
    return 2 if broken else 0


def _readers(registry, kind) -> str:
    """For a group of programs: which kind the backends read it as, or that none does."""
    if kind in registry.GROUPS:
        return ""
    declared = registry.program_kinds().get(kind)
    return f"  ({declared.kind}s)" if declared else "  (read by no registered backend)"


def _problem(registry, reg):
    """Why a registration cannot be used (it cannot be loaded, or breaks its contract), or None."""
    if reg.kind != "backend" and reg.contract() is None:      # a plugin or command: found, not run
        return reg.unfindable()
    try:
        if reg.kind == "backend":
            registry.get(reg.name)
        else:
            reg.load()
    except registry.RegistrationError as exc:
        return str(exc)
    return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        COMMANDS = commands()
    except Exception as exc:
        print(f"accel-regress registrations: {exc}", file=sys.stderr)
        return 2
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("commands: " + ", ".join(COMMANDS))
        return 0
    command = argv.pop(0) if argv and not argv[0].startswith("-") else "list"
    if command not in COMMANDS:
        print(f"unknown command {command!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module, func = COMMANDS[command].split(":")
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError) as exc:
        print(f"command {command!r} is not available: {exc}", file=sys.stderr)
        return 2
    try:
        code = int(fn(argv) or 0)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): what it wanted it has; no traceback, and nothing more
        # written to the closed pipe (Python's "Note on SIGPIPE", library/signal.html). 141 is the
        # status of a tool killed by SIGPIPE (128 + 13), as git's or grep's would be.
        import os
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
