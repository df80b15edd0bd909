"""``accel-regress new-family NAME [--package DIR] [--tests DIR] [--backend emu,iree-cpu]``: an
operator team's first family, written into its own package, green as generated.

It writes ``DIR/NAME/`` (golden module with its error model and an explanation of each part, emu
model with one fault, and by default every kind of program a registered backend reads that it has
a template of: the IREE program, the torch program, the ONNX program), ``tests/test_NAME.py``, and
the entry-point lines: added to
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

FAMILY = "accel_regress.families"
# The kinds of program it has a template of: entry-point group -> (module name, template). The
# emu model is always written (it holds the fault); the others for the backends that read them.
PROGRAMS = {"accel_regress.emu_models": ("emu", templates.EMU),
            "accel_regress.iree_programs": ("iree_program", templates.IREE_PROGRAM),
            "accel_regress.torch_programs": ("torch_program", templates.TORCH_PROGRAM),
            "accel_regress.onnx_programs": ("onnx_program", templates.ONNX_PROGRAM)}
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


def entry_points(op: str, module: str, groups: list[str]) -> dict[str, dict[str, str]]:
    """The registrations of family ``op`` in ``module``: the golden module and each program group's."""
    return {FAMILY: {op: f"{module}.{op}.golden"}, **{g: {op: f"{module}.{op}.{PROGRAMS[g][0]}"} for g in groups}}


def program_groups(backends: Optional[list[str]]) -> tuple[list[str], list[str]]:
    """The program groups to write for ``backends`` (None: every registered backend), the emu model's
    first; and, in words, each kind those backends read that there is no template of."""
    from accel_regress.core import registry
    known = registry.names()
    unknown = [b for b in backends or () if b not in known]
    if unknown:
        raise ScaffoldError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(known)}")
    readers: dict[str, list[str]] = {}
    for name in backends if backends is not None else known:
        for kind in getattr(registry.get(name), "program_kinds", ()) or ():
            readers.setdefault(kind.group, []).append(name)
    groups = ["accel_regress.emu_models"] + [g for g in PROGRAMS if g in readers and g != "accel_regress.emu_models"]
    untemplated = [f"{g} (read by {', '.join(names)}): no template; those backends say NOT_APPLICABLE for "
                   f"the family until you register one" for g, names in readers.items() if g not in PROGRAMS]
    return groups, untemplated


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


def scaffold(op: str, package: Path, tests: Path, backends: Optional[list[str]], pyproject: Optional[Path]) -> list[str]:
    """Write the family (with the programs ``backends`` read; None: every registered backend); the lines to print."""
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
    groups, untemplated = program_groups(backends)
    fault = f"{op.replace('_', '-')}-drops-bias"
    fill = {"op": op, "package": f"{module}.{op}", "fault": fault}
    family = package / op
    files = {family / "__init__.py": templates.INIT, family / "golden.py": templates.GOLDEN,
             **{family / f"{PROGRAMS[g][0]}.py": PROGRAMS[g][1] for g in groups}, tests / f"test_{op}.py": templates.TEST}
    there = [str(p) for p in files if p.exists()]
    if there:
        raise ScaffoldError(f"not overwriting {', '.join(there)}")
    eps = entry_points(op, module, groups)
    registered = _register(pyproject, eps) if pyproject is not None and pyproject.is_file() else None
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**fill), encoding="utf-8")
    run = f"pytest {tests / f'test_{op}.py'}" + (f" --hw {','.join(backends)}" if backends else "")
    return ([f"wrote {os.path.relpath(p)}" for p in files] + [f"not written: {line}" for line in untemplated]
            + ["", "entry points:"] + [f"  {line}" for line in _toml_lines(eps)]
            + ([registered] if registered else ["add them to your pyproject.toml and reinstall (pip install -e .)"])
            + ["", "then:", f"  {run}          # green as generated",
               f"  pytest {tests / f'test_{op}.py'} --hw emu --inject-fault {fault}   # every case FAILs",
               f"  and make {os.path.relpath(family)}/ your operator: each file says what to change"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="accel-regress new-family",
                                description="Write a working operator family into your own package.")
    p.add_argument("name", help="the family id (a lower-case Python identifier, e.g. swiglu)")
    p.add_argument("--package", help="the package folder it goes into (default: the only package under ./src)")
    p.add_argument("--tests", default="tests", help="where its test file goes (default: tests)")
    p.add_argument("--backend", help="the backends it is written for, comma-separated (default: every registered "
                                     "backend, so every kind of program they read is written: the IREE program for "
                                     "iree-cpu and qemu-rvv, the torch program for torch-cpu, the ONNX program for "
                                     "onnxruntime)")
    p.add_argument("--no-pyproject", action="store_true", help="print the entry points; leave pyproject.toml alone")
    args = p.parse_args(argv)
    root = Path.cwd()
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] if args.backend is not None else None
    try:
        lines = scaffold(args.name, _package_dir(args.package, root), Path(args.tests), backends,
                         None if args.no_pyproject else root / "pyproject.toml")
    except ScaffoldError as exc:
        print(f"accel-regress new-family: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
