"""An upstream bundle: one folder an upstream maintainer can run with the toolchain alone.

    program.mlir              the program, as the suite compiles it (reduced)
    inputs/NAME.npy           the inputs, in argument order (bundle.json "run.inputs")
    expected/NAME.npy         the right outputs (float64); how they were computed: ISSUE.md
    tolerance/NAME.npy        the per-element allowance (0: bit for bit)
    got/NAME.npy              what the toolchain returned when the bundle was made
    build/                    riscv-qemu only: the C harness and its generated tables
    bundle.json               the exact commands as argv lists, the comparison rule, the versions,
                              the bisect range when known
    reproduce.py              the toolchain's packages and numpy only; exit 1 while the bug is there
    ISSUE.md                  the issue text

Written under a temporary name and renamed into place: a bundle is whole or absent.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from accel_regress.results.upstream.templates.reproduce import show, wrong_elements

TEMPLATE = Path(__file__).resolve().parent / "templates" / "reproduce.py"


@dataclass
class Expected:
    """One output's right values and the test's per-element rule for it."""
    reference: np.ndarray      # float64
    tolerance: np.ndarray      # allowed |got - expected| per element (0: bit for bit)
    zero_sign: bool            # the sign of a zero result counts (IEEE 754 defines it here)
    how: str                   # how the reference was computed, for the issue text


def _save(folder: Path, name: str, arr) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / f"{name}.npy", np.asarray(arr), allow_pickle=False)
    return f"{folder.name}/{name}.npy"


def out_refusal(out: Path) -> Optional[str]:
    """Why ``out`` may not be the bundle folder (something is there), or None."""
    out = Path(out)
    if out.is_symlink():
        return f"{out} is a symbolic link: give a new folder for the bundle"
    if out.exists() and not out.is_dir():
        return f"{out} is a file: give a new folder for the bundle"
    if out.is_dir() and any(out.iterdir()):
        return f"{out} already holds files (never deleted): give a new or empty folder for the bundle"
    return None


def write_bundle(out: Path, *, title: str, program_mlir: str, spec: dict, inputs: Mapping[str, np.ndarray],
                 expected: Optional[Mapping] = None, got: Optional[Mapping[str, np.ndarray]] = None,
                 build_files: Optional[Mapping[str, bytes]] = None, issue: str = "") -> Path:
    """``spec``: bundle.json's commands ("compile", "run" with its "kind", "link", "scan", ...)
    and facts ("versions", ...); the comparison rule is added from ``expected``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        (tmp / "program.mlir").write_text(program_mlir)
        for n, v in inputs.items():
            _save(tmp / "inputs", n, v)
        compare = {}
        for n, e in (expected or {}).items():
            compare[n] = {"expected": _save(tmp / "expected", n, e.reference),
                          "tolerance": _save(tmp / "tolerance", n, e.tolerance), "zero_sign": e.zero_sign}
            if got and n in got:
                _save(tmp / "got", n, got[n])
        for name, data in (build_files or {}).items():
            (tmp / "build").mkdir(exist_ok=True)
            (tmp / "build" / name).write_bytes(data)
        doc = {"title": title, "program": "program.mlir", **spec, "compare": compare}
        (tmp / "bundle.json").write_text(json.dumps(doc, indent=1) + "\n")
        shutil.copy(TEMPLATE, tmp / "reproduce.py")
        os.chmod(tmp / "reproduce.py", 0o755)
        (tmp / "ISSUE.md").write_text(issue)
        # rename() replaces only an empty folder: a folder with anything in it (findings/, ".") or a
        # file there is refused by the kernel itself (ENOTEMPTY, ENOTDIR), never deleted.
        refusal = out_refusal(out)
        if refusal:
            raise FileExistsError(refusal)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def element_lines(inputs: Mapping[str, np.ndarray], expected: Mapping, got: Mapping[str, np.ndarray],
                  limit: int = 8) -> list[str]:
    """'y[0]: x = -0.0 (-0x0.0p+0) -> got 0.0 (0x0.0p+0), expected -0.0 (-0x0.0p+0)' per wrong element."""
    lines = []
    for n, e in expected.items():
        g = got.get(n)
        if g is None or np.shape(g) != e.reference.shape:
            lines.append(f"{n}: {'missing' if g is None else f'shape {np.shape(g)}'}, expected {e.reference.shape}")
            continue
        mask = wrong_elements(g, e.reference, e.tolerance, e.zero_sign)
        for idx in list(zip(*np.nonzero(mask)))[:limit]:
            at = ", ".join(f"{k} = {show(v[idx])}" for k, v in inputs.items() if np.shape(v) == e.reference.shape)
            lines.append(f"{n}{list(map(int, idx))}: {at + ' -> ' if at else ''}got {show(g[idx])}, "
                         f"expected {show(e.reference[idx])}")
    return lines


def wrong(expected: Mapping, outputs: Mapping) -> list[tuple[str, tuple]]:
    """(output, index) of every wrong element (index () for a missing or misshapen output)."""
    out = []
    for n, e in expected.items():
        g = outputs.get(n)
        if g is None or np.shape(g) != e.reference.shape:
            out.append((n, ()))
            continue
        out += [(n, tuple(int(i) for i in idx))
                for idx in zip(*np.nonzero(wrong_elements(g, e.reference, e.tolerance, e.zero_sign)))]
    return out
