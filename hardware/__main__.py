"""``accel-regress [COMMAND ...]`` (``python -m accel_regress``): the commands of accel-regress.

With no command, list every backend and why it is (not) usable. ``--help`` says what the tool is
and lists the commands (each one's summary is the description its own parser prints);
``--version`` prints the version, the contract version and where the package is."""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
from pathlib import Path
from typing import Iterator, Optional

ABOUT = ("accel-regress: a hardware-correctness regression suite for AI-accelerator operators, as a pytest "
         "plugin. Each operator family's cases run on every selected backend (emulator, compiler, simulator, "
         "device) and are judged against a float64 reference within an error model; a gate says ship or not.")
USAGE = """usage: accel-regress [COMMAND] [ARGS ...]    (or python -m accel_regress)
       accel-regress COMMAND --help            one command's options
       accel-regress --version

The tests themselves run under pytest: pytest --hw emu,iree-cpu (pytest --help lists the plugin's
options under "accel-regress"). The manual: docs/ in the source tree (make docs)."""


def commands() -> dict[str, str]:
    """command -> "module:function(argv) -> exit code", from the entry-point group accel_regress.commands."""
    from accel_regress.core import registry
    return {name: reg.value for name, reg in registry.registrations("command").items()}


def list_backends(argv) -> int:
    """Every registered backend and why it is (not) usable; then every registration and its source."""
    if argv:
        if argv[0] in ("-h", "--help"):
            print(f"usage: accel-regress [list]\n\n{inspect_doc(list_backends)}")
            return 0
        print(f"accel-regress list: takes no arguments (got {' '.join(argv)}); see accel-regress --help",
              file=sys.stderr)
        return 2
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


def inspect_doc(fn) -> str:
    import inspect
    return inspect.getdoc(fn) or ""


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


@contextlib.contextmanager
def _parsers_caught() -> Iterator[None]:
    """A command's parser, taken when the command asks it to parse: the command itself never runs."""
    def caught(self, *args, **kwargs):
        raise _Parsed(self)
    saved = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args
    argparse.ArgumentParser.parse_args = caught          # type: ignore[method-assign]
    argparse.ArgumentParser.parse_known_args = caught    # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = saved  # type: ignore[method-assign]


def command_parser(value: str) -> Optional[argparse.ArgumentParser]:
    """The parser of the command registered as ``value`` ("module:function"), or None when it builds
    none (list) or cannot be imported. What --help summarizes and docs/reference/cli.md prints."""
    module, func = value.split(":")
    with _parsers_caught(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            getattr(importlib.import_module(module), func)([])
        except _Parsed as parsed:
            return parsed.parser
        except (Exception, SystemExit):
            return None
    return None


def summary(name: str, value: str) -> str:
    """A command's first sentence: its parser's description (list: its docstring)."""
    if value.endswith(":list_backends"):
        text = "The default: " + inspect_doc(list_backends)
    else:
        parser = command_parser(value)
        if parser is None:
            return f"(cannot be loaded: see accel-regress {name} --help)"
        text = parser.description or ""
    text = " ".join(text.split())
    end = text.find(". ")
    return text[:end + 1] if end >= 0 else text


def version_line() -> str:
    import platform

    import accel_regress
    from accel_regress.core.contracts import CONTRACT_VERSION
    where = Path(accel_regress.__file__).resolve().parent
    return (f"accel-regress {accel_regress.__version__} (contracts {CONTRACT_VERSION}) from {where} "
            f"(python {platform.python_version()})")


def help_text(commands_: dict[str, str]) -> str:
    import textwrap
    width = max(len(n) for n in commands_)
    rows = [textwrap.fill(summary(name, value), 100, initial_indent=f"  {name:<{width}}  ",
                          subsequent_indent=" " * (width + 4)) for name, value in commands_.items()]
    return "\n".join([textwrap.fill(ABOUT, 100), "", USAGE, "", "commands (entry-point group accel_regress.commands):",
                      *rows])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        print(version_line())
        return 0
    try:
        COMMANDS = commands()
    except Exception as exc:
        print(f"accel-regress registrations: {exc}", file=sys.stderr)
        return 2
    if argv and argv[0] in ("-h", "--help"):
        print(help_text(COMMANDS))
        return 0
    if argv and argv[0].startswith("-"):
        print(f"accel-regress: unknown option {argv[0]!r}; options: --help, --version; commands: "
              f"{', '.join(COMMANDS)}", file=sys.stderr)
        return 2
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
