"""What each registered piece of an operator family provides, declared as typing.Protocols and
checked when a registration is loaded (core/registry.py), so that a team learns what its module
lacks from one message naming its registration, never from a device FAIL per case.

Each entry-point group has a Protocol of what the suite calls (``Required``) and one of what it
calls when present (``Optional``): a module (or, for backends, an instance) is checked for each
member's presence, that it is callable with the arguments the suite passes, and the type of each
constant. The Protocols are also the documentation: docs/reference/contracts.md is written from them.
The core's own kinds (families, backends) are here; each kind of per-family program is declared by
the backend that reads it (a ProgramKind: emu models in backends/emu, IREE programs in
toolchains/iree/program.py, torch programs in backends/torch).

The one tolerance entry point is ``tolerances(case, inputs, ref) -> {output: ErrorModel}``
(``ErrorModel`` from accel_regress.golden.tolerance: the allowance and which statistical checks
apply; ``ref``: the family's reference outputs by name). Every family declares it, the built-ins
included: a family whose outputs must match bit for bit returns golden.tolerance.exact_model.
"""
import inspect
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, get_type_hints

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.golden.tolerance import ErrorModel

Arrays = Mapping[str, np.ndarray]
# output name (or "*" for every other output) -> (numpy dtype name, logical shape or None: any)
OutputContract = Mapping[str, tuple[str, Optional[tuple[int, ...]]]]


class Fault(Protocol):
    """A documented bug, applied to a backend's outputs before comparison (``--inject-fault``).

    It gets the case and the outputs only: not the inputs, the reference or the backend. Inputs,
    where a fault needs them, are a function of the case (the golden module's ``make_inputs``).
    It may raise accel_regress.Hang / Crash / CompileError, or really hang or kill its process."""

    def __call__(self, case: Case, outputs: Arrays) -> Arrays: ...


class GoldenModule(Protocol):
    """``accel_regress.families``: what is right for the family. Knows no device; imports
    nothing of accel_regress but accel_regress.golden."""

    OP: str                                   # the id it is registered under (case.op)

    def make_inputs(self, case: Case) -> Arrays: ...

    # What is right: {output: array} in float64 (or wider than the device), the ``ref`` tolerances takes.
    def reference(self, case: Case, inputs: Arrays) -> Arrays: ...

    def tolerances(self, case: Case, inputs: Arrays, ref: Arrays) -> Mapping[str, ErrorModel]: ...


class GoldenModuleOptional(Protocol):
    def output_contract(self, case: Case) -> OutputContract: ...

    # Why the number format the case declares (a bfp16 data path) cannot hold its input class, or
    # None: a device backend asks this rather than knowing the family (npu's supports_inputs).
    def format_excludes(self, case: Case) -> Optional[str]: ...


class Backend(Protocol):
    """``accel_regress.backends`` (name = "module:Class"): the class, instantiated with no
    arguments. Subclassing accel_regress.core.backend.Backend gives every member but ``run``.
    Every member the core reads of a backend is declared here or in BackendOptional
    (tests/selftest/core/test_backend_contract.py fails on one that is not)."""

    name: str                                 # the id it is registered under (set by the registry)
    kind: str
    description: str
    # The device pool it locks (None: none). The runner holds one device of it per process from
    # the session's --devices locks (runner.Context) and hands it to the run as the environment
    # ACCEL_DEVICE_<RESOURCE>; the backend never reads the session's state.
    device_resource: Optional[str]

    def availability(self) -> Optional[str]: ...

    # Why its cases only compile here (a GPU backend without its GPU), or None: left out of the default selection.
    def compile_only(self) -> Optional[str]: ...

    # Its package data files that this installation lacks (a set-up error naming them, not a CRASH).
    def missing_files(self) -> list[str]: ...

    def supports_op(self, op: str) -> Optional[str]: ...

    def supports(self, case: Case) -> Optional[str]: ...

    def supports_inputs(self, case: Case) -> Optional[str]: ...

    def versions(self) -> Mapping[str, str]: ...

    def timeout(self, case: Case) -> float: ...

    def run(self, case: Case, inputs: Arrays) -> Arrays: ...

    # What it builds before the cases run: (index of the first case served, job) pairs (plugin/ahead.py).
    def ahead(self, cases: Sequence[Case]) -> list[tuple[int, Callable[[], None]]]: ...

    def preload_modules(self) -> list[str]: ...

    def reset(self) -> None: ...


class BackendOptional(Protocol):
    program_kinds: tuple               # the ProgramKinds it reads (accel_regress.core.backend.Backend: none)
    # How the isolated worker's memory is bounded (core/isolation/bounds.py MEMORY_BOUNDS; default "address-space").
    memory_bound: str
    # The device generations its device facts may name: (substring, name) pairs, and exact ids -> name
    # (accel_regress.results.keys: merge, gate and expectations read them).
    device_generations: tuple
    device_ids: Mapping[str, str]
    # What the last run saw beyond its outputs (qemu-rvv's codegen scan, FireSim's slot and console),
    # kept in the process that ran it and recorded as the verdict's detail.
    last_report: Mapping[str, Any]
    # Backends whose known bugs are this one's too (a variant of their kernels; plugin/expectations.py).
    shares_expectations_of: tuple

    # Settings a library reads once per process (oneDNN's ONEDNN_MAX_CPU_ISA): the backend's runs
    # get an isolated worker of their own, started with them (core/isolation/pool.py).
    def process_env(self) -> Mapping[str, str]: ...


# The contracts' version: raised when a member's signature changes (and the change is listed in
# DEPRECATED and CHANGELOG.md). 1: reference(inputs); 2: reference(case, inputs) (issue 40).
CONTRACT_VERSION = 2


class AccelRegressDeprecationWarning(DeprecationWarning):
    """A registered module keeps working under a contract's previous signature, for a while."""


@dataclass(frozen=True)
class Deprecated:
    """A member's previous signature, accepted with one warning until accel-regress ``until``, then
    an error saying what to change."""
    kind: str          # the contract's kind ("family")
    member: str        # "reference"
    old_arity: int     # how many arguments the previous signature took
    change: str        # what changed and what to do, in words
    until: str         # the first accel-regress version that refuses it


DEPRECATED = (
    Deprecated("family", "reference", 1, "reference(inputs) became reference(case, inputs) in contract 2 "
               "(accel-regress 0.1.0): add the case as its first parameter", until="0.3.0"),
)
_warned: set = set()


def _deprecated(kind, name: str, value: Callable, where: str) -> Optional[str]:
    """For a member that fails its signature: None if it has a deprecated signature still accepted
    (warned once per module and member), else the problem to report; "" when nothing applies."""
    from packaging.version import Version

    import accel_regress
    for old in DEPRECATED:
        if old.kind != kind or old.member != name or _callable_with(value, old.old_arity) is not None:
            continue
        if accel_regress.__version__ != "0+unknown" and Version(accel_regress.__version__) >= Version(old.until):
            return f"{name} has the signature accel-regress {old.until} no longer accepts: {old.change}"
        if (where, name) not in _warned:
            _warned.add((where, name))
            warnings.warn(f"{where}: {old.change}; the previous form works until accel-regress {old.until}",
                          AccelRegressDeprecationWarning, stacklevel=2)
        return None
    return ""


# The core's own kinds -> (what must be there, what is checked when there); the plugin and command
# groups hold a pytest plugin module and a main(argv) function, which pytest and the command line
# check. A kind of per-family program (emu models, IREE programs, torch programs, ...) is not listed
# here: the backend that reads it declares it as a ProgramKind (Backend.program_kinds).
CONTRACTS: dict[str, tuple[type, type]] = {
    "family": (GoldenModule, GoldenModuleOptional),
    "backend": (Backend, BackendOptional),
}


@dataclass(frozen=True)
class ProgramKind:
    """A kind of per-family module a backend reads: the entry-point group it is registered in
    (one module per family id) and the Protocols of what the backend calls (required) and calls
    when present (optional). Declared by the backend (``program_kinds``), so that a new kind is
    new files and registrations, never an edit of the core."""
    kind: str          # its name in messages and in registry.registrations(kind): "torch_program"
    group: str         # its entry-point group: "accel_regress.torch_programs"
    required: type
    optional: type

    def __post_init__(self):
        if not self.group.startswith("accel_regress."):
            raise ValueError(f"program kind {self.kind!r}: its group {self.group!r} is not an accel_regress.* group")

    def absent(self, op: str) -> str:
        """The one wording of every backend's ``supports_op`` for a family with no module of this
        kind (registry.missing_program, which looks it up: this module imports no registry)."""
        return f"no {self.kind.replace('_', ' ')} for operator {op!r} (register one in {self.group})"


def _contract(kind) -> tuple[type, type]:
    if isinstance(kind, ProgramKind):
        return kind.required, kind.optional
    return CONTRACTS[kind]


def _members(proto: type) -> tuple[dict[str, Any], dict[str, Callable]]:
    """A Protocol's constants (name -> type) and methods (name -> function)."""
    hints = get_type_hints(proto)
    methods = {k: v for k, v in vars(proto).items() if callable(v) and not k.startswith("_")}
    return hints, methods


def _signature(fn: Callable) -> str:
    params = list(inspect.signature(fn).parameters)[1:]      # without self
    return f"{fn.__name__}({', '.join(params)})"


def _arity(fn: Callable) -> int:
    return len(inspect.signature(fn).parameters) - 1


def _callable_with(obj: Callable, n: int) -> Optional[str]:
    """None when ``obj`` accepts ``n`` positional arguments; else its signature."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None                  # a builtin without a signature: cannot tell, trust it
    try:
        sig.bind(*([None] * n))
    except TypeError:
        return f"{getattr(obj, '__name__', type(obj).__name__)}{sig}"
    return None


def _check_value(name: str, value: Any, hint: Any) -> Optional[str]:
    if hint is str and not isinstance(value, str):
        return f"{name} is {type(value).__name__} {value!r}, not a str"
    if hint is bool and not isinstance(value, bool):
        return f"{name} is {type(value).__name__} {value!r}, not a bool"
    if getattr(hint, "__origin__", None) is Mapping:
        if not isinstance(value, Mapping):
            return f"{name} is {type(value).__name__}, not a mapping"
        if hint.__args__[1] is Fault:
            bad = [f"{k!r}: {problem}" for k, f in value.items()
                   for problem in [fault_problem(f)] if problem]
            if bad:
                return f"{name} has faults that break the Fault contract ({'; '.join(bad)})"
    return None


def fault_problem(fn: Any) -> Optional[str]:
    """Why ``fn`` cannot be a Fault (fault(case, outputs) -> outputs), or None."""
    if not callable(fn):
        return f"{type(fn).__name__} is not callable"
    wrong = _callable_with(fn, 2)
    return f"{wrong} cannot be called as fault(case, outputs)" if wrong else None


def problems(kind, obj: Any) -> list[str]:
    """What ``obj`` (a module, or a backend instance) lacks or gets wrong of its kind's contract
    (``kind``: a key of CONTRACTS, or a ProgramKind)."""
    if not isinstance(kind, ProgramKind) and kind not in CONTRACTS:
        return []
    required, optional = _contract(kind)
    out = []
    for proto, must in ((required, True), (optional, False)):
        hints, methods = _members(proto)
        for name, hint in hints.items():
            if not hasattr(obj, name):
                if must:
                    out.append(f"no {name} ({getattr(hint, '__name__', hint)})")
                continue
            problem = _check_value(name, getattr(obj, name), hint)
            if problem:
                out.append(problem)
        for name, fn in methods.items():
            if not hasattr(obj, name):
                if must:
                    out.append(f"no {_signature(fn)}")
                continue
            value = getattr(obj, name)
            if not callable(value):
                out.append(f"{name} is {type(value).__name__}, not a function {_signature(fn)}")
                continue
            wrong = _callable_with(value, _arity(fn))
            if wrong:
                old = _deprecated(kind, name, value, getattr(obj, "__name__", type(obj).__name__))
                if old is not None:
                    out.append(old or f"{wrong} cannot be called as {_signature(fn)}")
    return out


def describe(kind) -> str:
    """The contract of ``kind`` in one line, for messages: required, then (optional) members."""
    required, optional = _contract(kind)
    parts = []
    for proto, fmt in ((required, "{}"), (optional, "[{}]")):
        hints, methods = _members(proto)
        parts += [fmt.format(n) for n in hints] + [fmt.format(_signature(f)) for f in methods.values()]
    return f"{required.__module__}.{required.__qualname__}: {', '.join(parts)}"
