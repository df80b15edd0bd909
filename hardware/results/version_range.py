"""For which toolchain / driver / firmware versions and which device generations a known bug holds.

An expectation entry may carry::

    versions = { qemu = "<8.1", "iree-compiler" = ">=3.10,<3.14" }   # PEP 440 specifiers
    devices = ["Krackan"]                                             # device generations
    facts = { onednn-bf16-matmul = "*amx*" }                          # device facts, as patterns

Each key of ``versions`` names a key of the versions a result records (``Backend.versions()``:
``qemu``, ``iree-compiler``, ``driver_amdxdna``, ``npu_firmware``, ``xrt_version`` ...). The
recorded value is free text (``qemu-riscv64 version 7.2.22 (Debian 1:7.2+dfsg-7)``); its first
dotted number is the version compared. A version that was not recorded, or has no number, cannot
rule the entry out: the entry holds and the check says so.

``facts`` names device facts a result records as text (the kernel path a CPU backend ran,
``onednn-bf16-matmul = brg_matmul:avx512_core_amx``; its CPU features) and a pattern each must
match (``*`` any run, ``{a,b}`` either: hardware/util/globs.py). A fact that was not recorded rules
the entry out, as a device generation does: a run that cannot say it took that path is no run on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from accel_regress.results.keys import device_name, known_generations
from accel_regress.util.globs import Glob, PatternError

_DOTTED = re.compile(r"\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?")
_PLAIN = re.compile(r"\d+")


class RangeError(ValueError):
    pass


def number(text) -> Optional[Version]:
    """The first dotted version number in a recorded version string (else its first integer)."""
    for pattern in (_DOTTED, _PLAIN):
        m = pattern.search(str(text))
        if m:
            try:
                return Version(m.group(0))
            except InvalidVersion:
                return None
    return None


def generation(versions: Mapping[str, str], device: Optional[str] = None) -> Optional[str]:
    """The device generation (Phoenix, Strix, Krackan ...) of a result, from its device column
    or the device facts its backend recorded."""
    if device and "/" in device:
        name = device_name(device.rsplit("/", 1)[-1])
        if name:
            return name
    for key, value in (versions or {}).items():
        if "device" in key or key in ("board", "target"):
            name = device_name(str(value))
            if name:
                return name
    return None


@dataclass(frozen=True)
class Conditions:
    versions: Mapping[str, str] = field(default_factory=dict)    # key -> specifier text
    devices: tuple = ()
    facts: Mapping[str, str] = field(default_factory=dict)       # key -> pattern of its recorded text

    @classmethod
    def parse(cls, versions, devices, facts=None) -> "Conditions":
        if versions is None:
            versions = {}
        if not isinstance(versions, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in versions.items()):
            raise RangeError("'versions' must be a table of strings, e.g. versions = { qemu = \"<8.1\" }")
        for key, spec in versions.items():
            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                raise RangeError(f"versions.{key} = {spec!r} is not a version range "
                                 f"(PEP 440 specifiers such as \"<8.1\" or \">=2.17,<2.19\")") from None
            if not spec.strip():
                raise RangeError(f"versions.{key} is empty")
        if devices is None:
            devices = []
        if not isinstance(devices, list) or not all(isinstance(d, str) and d.strip() for d in devices):
            raise RangeError("'devices' must be a list of device generations, e.g. devices = [\"Krackan\"]")
        bad = [d for d in devices if device_name(d) is None]
        if bad:
            raise RangeError(f"devices: {', '.join(map(repr, bad))} is not a device generation "
                             f"(the backends name {', '.join(known_generations())}, or an id such as npu6)")
        if facts is None:
            facts = {}
        if not isinstance(facts, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                                     for k, v in facts.items()):
            raise RangeError("'facts' must be a table of patterns, e.g. facts = { onednn-bf16-matmul = \"*amx*\" }")
        for key, pattern in facts.items():
            try:
                Glob(pattern)
            except PatternError as exc:
                raise RangeError(f"facts.{key} = {pattern!r}: {exc}") from None
        return cls(dict(versions), tuple(device_name(d) for d in devices), dict(facts))

    def __bool__(self) -> bool:
        return bool(self.versions or self.devices or self.facts)

    def check(self, versions: Mapping[str, str], device: Optional[str] = None) -> tuple[bool, str]:
        """(holds, why): does the entry hold for a result with these versions / this device?"""
        why = []
        for key, spec in self.versions.items():
            raw = (versions or {}).get(key)
            v = number(raw) if raw is not None else None
            if v is None:
                why.append(f"{key} {'not recorded' if raw is None else repr(raw) + ' has no version number'}")
                continue
            if not SpecifierSet(spec).contains(v, prereleases=True):
                return False, f"{key} {v} is outside {spec}"
            why.append(f"{key} {v} in {spec}")
        if self.devices:
            gen = generation(versions, device)
            if gen is None:
                # A run that recorded no device (emu, or a runner that failed to say) is not a run
                # on that device: the entry must not hide its failures.
                return False, "device generation not recorded"
            if gen not in self.devices:
                return False, f"device {gen} is not {' / '.join(self.devices)}"
            why.append(f"device {gen}")
        for key, pattern in self.facts.items():
            raw = (versions or {}).get(key)
            if raw is None:
                return False, f"{key} not recorded"
            if not Glob(pattern).match(str(raw)):
                return False, f"{key} {str(raw)!r} does not match {pattern!r}"
            why.append(f"{key} {raw}")
        return True, "; ".join(why)

    def on_device(self, versions: Mapping[str, str], device: Optional[str] = None) -> bool:
        """Was the result on a device the entry names, with the facts it names (or does it name
        none)? A result elsewhere says nothing of the entry: it is no sign that the bug is gone (not stale)."""
        if self.devices and generation(versions, device) not in self.devices:
            return False
        return all(key in (versions or {}) and Glob(pattern).match(str(versions[key]))
                   for key, pattern in self.facts.items())

    def seen(self, versions: Mapping[str, str], device: Optional[str] = None) -> str:
        """The versions this entry looks at, as a result recorded them: 'qemu 8.2.0, device Strix'."""
        parts = []
        for key in self.versions:
            raw = (versions or {}).get(key)
            v = number(raw) if raw is not None else None
            parts.append(f"{key} {v if v is not None else (raw or 'not recorded')}")
        if self.devices:
            parts.append(f"device {generation(versions, device) or 'not recorded'}")
        parts += [f"{key} {(versions or {}).get(key) or 'not recorded'}" for key in self.facts]
        return ", ".join(parts)

    def describe(self) -> str:
        """'qemu <8.1, device Krackan': what the entry says it holds for."""
        return ", ".join([f"{k} {v}" for k, v in self.versions.items()] +
                         ([f"device {' / '.join(self.devices)}"] if self.devices else []) +
                         [f"{k} {v}" for k, v in self.facts.items()])

    def to_json(self) -> dict:
        out = {}
        if self.versions:
            out["versions"] = dict(self.versions)
        if self.devices:
            out["devices"] = list(self.devices)
        if self.facts:
            out["facts"] = dict(self.facts)
        return out

