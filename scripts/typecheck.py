#!/usr/bin/env python3
"""Type-check the package from a plain checkout: mypy over `accel_regress` as the wheel lays it out.

The folders are not the import names (hardware/ is accel_regress, golden/ and families/ its
subpackages), and neither mypy nor pyright can rename a folder, so this builds the import tree as
symbolic links in a temporary folder from the one mapping there is, setup.py's ROOTS, and runs
mypy there with this repository's [tool.mypy] settings. Paths in mypy's messages are mapped back to
the checkout's.

Errors the package had when the check was introduced are in scripts/mypy-baseline.txt (line
numbers stripped, so moving code keeps them matched); mypy-baseline (PyPI) passes those and fails on
any other, so the count only goes down. ``--sync`` rewrites the baseline (after fixing some: it
should only shrink). Exit status: 0 clean, 1 new errors.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def roots() -> dict[str, str]:
    """setup.py's ROOTS (import name -> folder), read without running setup.py."""
    for node in ast.walk(ast.parse((REPO / "setup.py").read_text())):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["ROOTS"]:
            return ast.literal_eval(node.value)
    raise SystemExit("typecheck: setup.py has no ROOTS mapping")


def link_tree(dest: Path) -> dict[str, str]:
    """The import tree under ``dest``; returns {linked path prefix: checkout folder} to map messages back."""
    mapping = roots()
    back = {}
    for name, folder in sorted(mapping.items()):     # parents first: accel_regress before accel_regress.golden
        target = dest.joinpath(*name.split("."))
        target.mkdir(parents=True, exist_ok=True)
        children = {n.split(".")[len(name.split("."))] for n in mapping if n.startswith(name + ".")}
        for entry in sorted((REPO / folder).iterdir()):
            if entry.name in children or entry.name == "__pycache__":
                continue
            (target / entry.name).symlink_to(entry)
        back[str(target.relative_to(dest)) + "/"] = folder + "/"
    return back


def mypy_output() -> tuple[str, int]:
    """mypy's report over the linked tree, its paths the checkout's; and mypy's exit status."""
    with tempfile.TemporaryDirectory(prefix="accel-typecheck-") as tmp:
        back = link_tree(Path(tmp))
        top = min(roots(), key=len)
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "-p", top]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                              env={**os.environ, "MYPY_CACHE_DIR": str(REPO / ".mypy_cache")})
    lines = []
    for line in (proc.stdout + proc.stderr).splitlines():
        for linked, folder in sorted(back.items(), key=lambda kv: -len(kv[0])):
            if line.startswith(linked):
                line = folder + line[len(linked):]
                break
        lines.append(line)
    return "\n".join(lines) + "\n", proc.returncode


def main(argv: list[str]) -> int:
    report, status = mypy_output()
    if status not in (0, 1):        # 2: mypy itself failed (bad configuration, crash)
        print(report, end="")
        return 2
    verb = "sync" if argv == ["--sync"] else "filter"
    cmd = [sys.executable, "-m", "mypy_baseline", verb, "--config", str(REPO / "pyproject.toml"), "--no-colors"]
    if verb == "filter":
        cmd.append("--allow-unsynced")
    return subprocess.run(cmd, input=report, text=True, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
