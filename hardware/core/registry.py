"""What the suite can run, registered through entry points, and where each registration came from.

Entry-point groups, read with importlib.metadata. The built-ins are registered through the
same groups in this repository's pyproject.toml; an operator team registers its own in its own
package's pyproject.toml:

    [project.entry-points."accel_regress.backends"]        # name = "module:BackendClass"
    [project.entry-points."accel_regress.families"]        # op = "module"  (the golden module, OP = op)
    [project.entry-points."accel_regress.emu_models"]      # op = "module"  (run, FAULTS, timeout)
    [project.entry-points."accel_regress.iree_programs"]   # op = "module"  (program(case) -> Program)
    [project.entry-points."accel_regress.torch_programs"]  # op = "module"  (run(case, inputs, device))

The core's own groups are GROUPS. Every other ``accel_regress.*`` group holds a kind of per-family
program, read as found: the backend that reads it declares it (``Backend.program_kinds``, a
contracts.ProgramKind naming the group and its contract), so a new kind of program (a GPU target's,
a framework's) is a backend and its registrations, never an edit here.

Two registrations of one name in one group are an error that names both sources. Everything is
imported lazily, so a missing toolchain never breaks the suite.

A source checkout (a pyproject.toml next to the ``hardware`` package) reads accel-regress's own
entry points from that file instead of the installed metadata: the checkout is what runs, and
an installed copy of an older version (an editable install of another tree) must not speak for it.
"""
from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:       # imported when a backend is asked for: the pytest plugin reads this module at start-up
    from accel_regress.core.backend import Backend

DIST = "accel-regress"
PREFIX = "accel_regress."
GROUPS = {
    "backend": "accel_regress.backends",
    "family": "accel_regress.families",
    "plugin": "accel_regress.plugins",      # name = "module": a pytest plugin a backend or family brings
    # name = "module": a pytest plugin registered only when a session is the plugin's (no options of
    # its own; plugin/engagement.py), so that its imports cost a project that never uses it nothing
    "session_plugin": "accel_regress.session_plugins",
    "command": "accel_regress.commands",    # name = "module:function(argv) -> exit code"
    "upstream": "accel_regress.upstream",   # name = family or backend id: its part of an upstream bundle
}


class RegistrationError(Exception):
    """Two registrations of one name, or a registration that cannot be read."""


@dataclass(frozen=True)
class Registration:
    kind: str       # a key of GROUPS, or the group of a kind of program (accel_regress.torch_programs)
    name: str       # backend id, or operator family id (case.op)
    value: str      # "module" or "module:attribute"
    source: str     # who registered it: distribution and version, and where its entry points live

    @property
    def group(self) -> str:
        return GROUPS.get(self.kind, self.kind)

    def load(self, contract=None):
        """The registered object. One that cannot be loaded is a RegistrationError naming the
        distribution, group, name and error; a backend whose own dependency is missing (its
        toolchain's Python package) raises that ImportError, which makes it unavailable.
        ``contract``: the ProgramKind a backend reads it as (else the one a backend declares)."""
        try:
            obj = md.EntryPoint(self.name, self.value, self.group).load()
        except ImportError as exc:
            if self.kind == "backend" and not _names_the_registration(exc, self.module):
                raise
            raise RegistrationError(self.broken(exc)) from None
        except Exception as exc:       # AttributeError (a typo after ':'), SyntaxError, an error at import
            raise RegistrationError(self.broken(exc)) from None
        if self.kind != "backend":    # a backend class is checked once made (get)
            self.check(obj, contract)
        return obj

    def contract(self):
        """What it is checked against: its core kind, or the ProgramKind a backend declares for its
        group; None for a plugin or command, or a group no registered backend reads."""
        from accel_regress.core import contracts      # numpy and the golden types: not at start-up
        if self.kind in contracts.CONTRACTS:
            return self.kind
        return program_kinds().get(self.group)

    def check(self, obj, contract=None) -> None:
        """Raise RegistrationError naming what ``obj`` lacks of its group's contract (core/contracts.py)."""
        from accel_regress.core import contracts
        contract = contract or self.contract()
        if contract is None:
            return
        problems = contracts.problems(contract, obj)
        if self.kind == "family" and isinstance(getattr(obj, "OP", None), str) and obj.OP != self.name:
            problems.insert(0, f"its OP is {obj.OP!r}, not the name it is registered under")
        if problems:
            raise RegistrationError(f"{self.where()} does not meet its contract "
                                    f"({contracts.describe(contract)}): {'; '.join(problems)}")

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def where(self) -> str:
        return f"entry point {self.name} = {self.value} (group {self.group}, distribution {self.source})"

    def broken(self, exc: BaseException) -> str:
        return f"{self.where()} cannot be loaded: {type(exc).__name__}: {exc}"

    def unfindable(self) -> Optional[str]:
        """Why the registered module cannot be found, without running it (its parent packages
        are imported); None when it can."""
        try:
            found = importlib.util.find_spec(self.module) is not None
        except Exception as exc:
            return self.broken(exc)
        return None if found else self.broken(ModuleNotFoundError(f"No module named {self.module!r}"))


def _names_the_registration(exc: ImportError, module: str) -> bool:
    """An ImportError about the registered module itself (or its package): a typo, not a missing dependency."""
    name = getattr(exc, "name", None) or ""
    return bool(name) and (module == name or module.startswith(name + "."))


def _checkout_pyproject() -> Optional[Path]:
    path = Path(__file__).resolve().parents[2] / "pyproject.toml"
    return path if path.is_file() else None


def _checkout_entry_points(path: Path) -> list[tuple[str, str, str, str]]:
    import tomllib
    try:
        project = tomllib.loads(path.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RegistrationError(f"{path}: cannot read its entry points: {exc}") from None
    if project.get("name") != DIST:
        return []
    source = f"{DIST} {project.get('version', '?')} (source checkout, {path})"
    eps = project.get("entry-points", {})
    return [(_kind_of(group), name, value, source) for group, table in eps.items()
            if group.startswith(PREFIX) for name, value in table.items()]


_CORE_KIND = {group: kind for kind, group in GROUPS.items()}


def _kind_of(group: str) -> str:
    return _CORE_KIND.get(group, group)


def _installed_entry_points(skip_own: bool) -> list[tuple[str, str, str, str]]:
    # One scan of the installed distributions, and each one's metadata read once: the pytest plugin
    # reads this at start-up in every project of the environment (a scan per group and a metadata
    # parse per entry point took ~0.3 s).
    out = []
    every = md.entry_points()
    named: dict[int, tuple] = {}
    for group in sorted(g for g in every.groups if g.startswith(PREFIX)):
        kind = _kind_of(group)
        for ep in every.select(group=group):
            dist = ep.dist
            if id(dist) not in named:
                meta = dist.metadata if dist is not None else None
                named[id(dist)] = (dist, meta["Name"] if meta is not None else "?",
                                   meta["Version"] if meta is not None else "?")
            _, dname, version = named[id(dist)]
            if skip_own and dname is not None and dname.lower().replace("_", "-") == DIST:
                continue
            where = getattr(dist, "_path", None)
            source = f"{dname} {version} (installed{', ' + str(where) if where else ''})"
            out.append((kind, ep.name, ep.value, source))
    return out


@lru_cache(maxsize=None)
def _all() -> dict[str, dict[str, Registration]]:
    checkout = _checkout_pyproject()
    found = _checkout_entry_points(checkout) if checkout else []
    found += _installed_entry_points(skip_own=bool(found))
    table: dict[str, dict[str, Registration]] = {kind: {} for kind in GROUPS}
    for kind, name, value, source in found:
        reg = Registration(kind, name, value, source)
        old = table.setdefault(kind, {}).get(name)
        if old is not None and old != reg:
            raise RegistrationError(
                f"{(kind if kind in GROUPS else kind[len(PREFIX):].removesuffix('s')).replace('_', ' ')} "
                f"{name!r} is registered twice (entry-point group {reg.group}): "
                f"{old.value} by {old.source}, and {value} by {source}")
        table[kind][name] = reg
    return table


def registrations(kind) -> dict[str, Registration]:
    """Every registration of one kind, by name, in registration order. ``kind``: a key of GROUPS,
    a ProgramKind, or a program kind's name or group ("iree_program", "accel_regress.iree_programs")."""
    return _all().get(_key(kind), {})


def kinds() -> list[str]:
    """Every kind registered in: the core's (GROUPS), then each group of programs found."""
    return list(_all())


def _key(kind) -> str:
    group = getattr(kind, "group", None)
    if group is not None:                 # a ProgramKind
        return group
    if kind in GROUPS or kind.startswith(PREFIX):
        return kind
    for declared in program_kinds().values():
        if declared.kind == kind:
            return declared.group
    raise KeyError(f"no registered backend reads a kind of program named {kind!r}; the kinds read: "
                   f"{', '.join(sorted(k.kind for k in program_kinds().values())) or 'none'}")


@lru_cache(maxsize=None)
def program_kinds() -> dict:
    """group -> the ProgramKind the registered backends declare for it (``program_kinds``), read
    from their classes. Two backends declaring one group with different contracts is an error."""
    found: dict = {}
    for reg in registrations("backend").values():
        try:
            cls = reg.load()
        except Exception:             # broken or unavailable: get() and broken() say why
            continue
        for pk in getattr(cls, "program_kinds", ()) or ():
            old = found.setdefault(pk.group, pk)
            if old != pk:
                raise RegistrationError(f"entry-point group {pk.group} is declared twice with different "
                                        f"contracts: {old} and {pk} (backend {reg.name}, {reg.source})")
    return found


def clear_cache() -> None:
    """Forget what was read (after a test changed the installed entry points)."""
    _all.cache_clear()
    get.cache_clear()
    availability.cache_clear()
    module_for.cache_clear()
    program_kinds.cache_clear()


def names() -> list[str]:
    """Every registered backend id."""
    return list(registrations("backend"))


def __getattr__(attr):
    # ``KNOWN``: backend id -> "module:Class", read when first asked, so that a clash surfaces
    # where it can be reported (the plugin's configure, ``python -m accel_regress``), not at import.
    if attr == "KNOWN":
        return {n: r.value for n, r in registrations("backend").items()}
    if attr == "Unavailable":
        return _unavailable_class()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


@lru_cache(maxsize=None)
def module_for(kind, op: str):
    """The registered module of operator family ``op`` (golden, upstream, or a program: ``kind`` a
    ProgramKind, which it is checked against), or None."""
    reg = registrations(kind).get(op)
    if reg is None:
        return None
    return reg.load(kind if hasattr(kind, "group") else None)


def missing_program(kind, op: str) -> Optional[str]:
    """Why a backend that reads program kind ``kind`` (a contracts.ProgramKind) can run no case of
    operator family ``op``: none of that kind is registered for it (``kind.absent(op)``); else None."""
    return kind.absent(op) if module_for(kind, op) is None else None


@lru_cache(maxsize=None)
def _unavailable_class() -> type:
    from accel_regress.core.backend import Backend

    class Unavailable(Backend):
        """Stands for a backend whose module could not even be imported."""

        def __init__(self, name: str, reason: str):
            self.name, self._reason = name, reason

        def availability(self) -> Optional[str]:
            return self._reason
    return Unavailable


@lru_cache(maxsize=None)
def get(name: str) -> Backend:
    backends = registrations("backend")
    if name not in backends:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(backends)}")
    reg = backends[name]
    try:
        backend = reg.load()()
    except RegistrationError:
        raise                 # a typo or a broken contract: the user's to fix, not a SKIP
    except Exception as exc:  # a missing dependency or a failing constructor: a reason, not a crash of the suite
        return _unavailable_class()(name, f"{reg.value} (registered by {reg.source}) failed to load: "
                                 f"{type(exc).__name__}: {exc}")
    backend.name = name       # before the check: the id is the registry's to give, not the class's
    reg.check(backend)
    return backend


@lru_cache(maxsize=None)
def availability(name: str) -> Optional[str]:
    try:
        return get(name).availability()
    except RegistrationError:
        raise
    except Exception as exc:
        return f"availability check failed: {type(exc).__name__}: {exc}"


def parse(spec: Optional[str]) -> list[str]:
    """``--hw a,b`` (or $ACCEL_HW); none given: every available backend that runs its cases here
    (not a compile-only one, Backend.compile_only). 'all' selects every known one.

    ``spec`` None means the option was not given; an empty or blank ``--hw=`` is a mistake, not a
    request for the default (a CI variable that expanded to nothing must not run everything)."""
    known = names()
    if spec is None:
        spec = os.environ.get("ACCEL_HW")
        if spec is None or not spec.strip():
            return [n for n in known if availability(n) is None and get(n).compile_only() is None]
    parts = [s.strip() for s in spec.split(",")]
    if not any(parts):
        raise ValueError("empty; name one or more backends, or leave the option out for every available one")
    names_ = [s for s in parts if s]
    if names_ == ["all"]:
        return known
    unknown = [n for n in names_ if n not in known]
    if unknown:
        raise ValueError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return list(dict.fromkeys(names_))      # --hw emu,emu runs each case once, not as emu0 / emu1


def broken() -> list[str]:
    """Every registration that cannot be loaded, each named with its distribution, group, name and
    error. The registered modules are found without being run (their packages are imported); the
    backends, which every session loads anyway, are loaded and checked against their contract."""
    problems = [problem for kind in kinds() if kind != "backend" for reg in registrations(kind).values()
                for problem in [reg.unfindable()] if problem]
    for name in registrations("backend"):
        try:
            get(name)
        except RegistrationError as exc:
            problems.append(str(exc))
    return problems


def check() -> None:
    """Raise RegistrationError naming every registration that cannot be loaded (a usage error)."""
    problems = broken()
    if problems:
        raise RegistrationError("; ".join(problems))
