"""``--inject-fault FILE.py:NAME`` or a built-in fault name: a callable fault(case, outputs) -> outputs.

Applied to every backend result before comparison, inside the (isolated) run, so a fault that
raises ``Hang`` / ``Crash`` or really hangs or kills its process exercises the same path a device
would. Built-in faults are the documented bugs, shipped with the registered ``emu`` model of each
family (its ``FAULTS`` dict; hardware/core/registry.py); they act on outputs only, so they apply to any
backend.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Optional

Fault = Callable  # (case, outputs) -> outputs


def builtin() -> dict[str, Fault]:
    from accel_regress.core import registry
    found: dict[str, Fault] = {}
    where: dict[str, str] = {}
    kind = registry.program_kinds().get("accel_regress.emu_models")
    for op, reg in registry.registrations("accel_regress.emu_models").items():
        for name, fn in getattr(registry.module_for(kind or "accel_regress.emu_models", op), "FAULTS", {}).items():
            if name in found:
                raise registry.RegistrationError(
                    f"fault {name!r} is defined twice: by the emu model of {where[name]} and of "
                    f"{op!r} ({reg.value}, {reg.source})")
            found[name], where[name] = fn, f"{op!r} ({reg.value}, {reg.source})"
    return found


_loaded: dict[tuple, Fault] = {}


def load(spec: Optional[str]) -> Optional[Fault]:
    if not spec:
        return None
    path, sep, name = spec.rpartition(":")
    if sep and path.endswith(".py"):
        file = Path(path).resolve()
        if not file.is_file():
            raise ValueError(f"--inject-fault {spec}: no such file {file}")
        key = (str(file), file.stat().st_mtime_ns, name)
        if key not in _loaded:
            _loaded[key] = _load_file(spec, file, name)
        return _loaded[key]
    faults = builtin()
    if spec not in faults:
        raise ValueError(f"--inject-fault {spec}: not a FILE.py:NAME and not a built-in fault; "
                         f"built-in: {', '.join(sorted(faults))}")
    return faults[spec]


def _load_file(spec: str, file: Path, name: str) -> Fault:
    mod_spec = importlib.util.spec_from_file_location(f"accel_fault_{file.stem}", file)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"--inject-fault {spec}: {file} has no callable {name!r}")
    return fn
