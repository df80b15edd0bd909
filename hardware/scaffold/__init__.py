"""``accel-regress new-family NAME [--package DIR] [--tests DIR] [--backend emu,iree-cpu]``: an
operator team's first family, written into its own package, green as generated.

It writes ``DIR/NAME/`` (golden module with its error model and an explanation of each part, emu
model with one fault, and by default every program the default backends read: the IREE program
and the torch program), ``tests/test_NAME.py``, and the entry-point lines: added to
the project's pyproject.toml (tomlkit keeps its comments) and printed. Nothing is overwritten.
The operator is a placeholder (y = x * w + b in f32) that passes on every default backend and fails
under its fault; the team replaces the arithmetic (tests/selftest/package/test_new_family.py checks all
three as generated).
"""
from __future__ import annotations

import argparse
import keyword
import os
import re
import sys
from pathlib import Path
from typing import Optional

from accel_regress.scaffold import templates

GROUPS = {"family": ("accel_regress.families", "golden"), "emu": ("accel_regress.emu_models", "emu"),
          "iree": ("accel_regress.iree_programs", "iree_program"),
          "torch": ("accel_regress.torch_programs", "torch_program")}
# The program kinds the default run's backends read (emu, IREE's, torch-cpu): plain `pytest` runs
# every one of them, so a family written for fewer would be NOT_APPLICABLE on the rest.
DEFAULT_BACKENDS = "emu,iree-cpu,torch-cpu"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


MAX_NAME = 64


class ScaffoldError(Exception):
    pass


def _registered(op: str) -> str:
    """Who registers family ``op`` in this environment already ("" when no one does)."""
    from accel_regress.core import registry
    try:
        reg = registry.registrations("family").get(op)
    except registry.RegistrationError:      # the environment's own problem: reported by every session
        return ""
    return reg.source if reg else ""


def _package_dir(given: Optional[str], root: Path) -> Path:
    """The team's package: the one given, else the only package under src/ (the layout
    setuptools' packages.find with where = ["src"] reads)."""
    if given:
        path = Path(given)
        if not path.is_dir():
            raise ScaffoldError(f"--package {given}: no such folder (the importable package the family goes into)")
        return path
    src = root / "src"
    found = sorted(p for p in src.iterdir() if (p / "__init__.py").is_file()) if src.is_dir() else []
    if len(found) != 1:
        where = ", ".join(str(p) for p in found) or f"none under {src}"
        raise ScaffoldError(f"which package? pass --package DIR (packages found: {where})")
    return found[0]


def _module_name(package: Path) -> str:
    """The dotted import name of ``package``: its folder and every parent folder that is a package."""
    parts = [package.name]
    parent = package.resolve().parent
    while (parent / "__init__.py").is_file():
        parts.insert(0, parent.name)
        parent = parent.parent
    return ".".join(parts)


def entry_points(op: str, module: str, iree: bool, torch: bool = False) -> dict[str, dict[str, str]]:
    kinds = ["family", "emu"] + (["iree"] if iree else []) + (["torch"] if torch else [])
    return {GROUPS[k][0]: {op: f"{module}.{op}.{GROUPS[k][1]}"} for k in kinds}


def _toml_lines(eps: dict[str, dict[str, str]]) -> list[str]:
    out = []
    for group, names in eps.items():
        out.append(f'[project.entry-points."{group}"]')
        out += [f'{name} = "{value}"' for name, value in names.items()]
    return out


def _register(pyproject: Path, eps: dict[str, dict[str, str]]) -> str:
    """Add the entry points to pyproject.toml; what was done, in words."""
    import tomlkit
    doc = tomlkit.parse(pyproject.read_text(encoding="utf-8"))
    project = doc.get("project")
    if project is None:
        return f"{pyproject} has no [project] table: add the lines below to the file that declares your package"
    table = project.setdefault("entry-points", tomlkit.table(is_super_table=True))
    for group, names in eps.items():
        have = table.setdefault(group, tomlkit.table())
        for name, value in names.items():
            if name in have and str(have[name]) != value:
                raise ScaffoldError(f"{pyproject}: {group} already registers {name} = {have[name]!r}")
            have[name] = value
    pyproject.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return f"registered in {pyproject} (reinstall the package, e.g. pip install -e ., for pytest to see them)"


def scaffold(op: str, package: Path, tests: Path, backends: list[str], pyproject: Optional[Path]) -> list[str]:
    """Write the family; the lines to print."""
    if not _NAME.match(op) or keyword.iskeyword(op):
        raise ScaffoldError(f"{op!r}: a family id is a Python identifier in lower case (it names a module folder)")
    if len(op) > MAX_NAME:
        raise ScaffoldError(f"a family id of {len(op)} characters: at most {MAX_NAME} (it names a module "
                            "folder, a test file and every test id)")
    taken = _registered(op)
    if taken:
        raise ScaffoldError(f"{op!r} is already a registered family ({taken}): a second registration of it stops "
                            "every session in the environment; choose another id")
    module = _module_name(package)
    iree = any(b.startswith("iree") or b == "qemu-rvv" for b in backends)
    torch = any(b.startswith("torch") for b in backends)
    fault = f"{op.replace('_', '-')}-drops-bias"
    fill = {"op": op, "package": f"{module}.{op}", "fault": fault}
    family = package / op
    files = {family / "__init__.py": templates.INIT, family / "golden.py": templates.GOLDEN,
             family / "emu.py": templates.EMU, tests / f"test_{op}.py": templates.TEST}
    if iree:
        files[family / "iree_program.py"] = templates.IREE_PROGRAM
    if torch:
        files[family / "torch_program.py"] = templates.TORCH_PROGRAM
    there = [str(p) for p in files if p.exists()]
    if there:
        raise ScaffoldError(f"not overwriting {', '.join(there)}")
    eps = entry_points(op, module, iree, torch)
    registered = _register(pyproject, eps) if pyproject is not None and pyproject.is_file() else None
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**fill), encoding="utf-8")
    hw = ",".join(backends)
    return ([f"wrote {os.path.relpath(p)}" for p in files] + ["", "entry points:"] + [f"  {line}" for line in _toml_lines(eps)]
            + ([registered] if registered else ["add them to your pyproject.toml and reinstall (pip install -e .)"])
            + ["", "then:", f"  pytest {tests / f'test_{op}.py'} --hw {hw}          # green as generated",
               f"  pytest {tests / f'test_{op}.py'} --hw emu --inject-fault {fault}   # every case FAILs",
               f"  and make {os.path.relpath(family)}/ your operator: each file says what to change"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="accel-regress new-family",
                                description="Write a working operator family into your own package.")
    p.add_argument("name", help="the family id (a lower-case Python identifier, e.g. swiglu)")
    p.add_argument("--package", help="the package folder it goes into (default: the only package under ./src)")
    p.add_argument("--tests", default="tests", help="where its test file goes (default: tests)")
    p.add_argument("--backend", default=DEFAULT_BACKENDS,
                   help=f"the backends it is written for (default {DEFAULT_BACKENDS}: the program kinds the default "
                        "run reads; an IREE backend adds the IREE program, a torch one the torch program)")
    p.add_argument("--no-pyproject", action="store_true", help="print the entry points; leave pyproject.toml alone")
    args = p.parse_args(argv)
    root = Path.cwd()
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    try:
        lines = scaffold(args.name, _package_dir(args.package, root), Path(args.tests), backends,
                         None if args.no_pyproject else root / "pyproject.toml")
    except ScaffoldError as exc:
        print(f"accel-regress new-family: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
