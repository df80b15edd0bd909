"""Where a run comes from, for the history: its project and the checkout's branch and revision.

Read from files, never by starting git: the project is the ``[project] name`` of the rootdir's
pyproject.toml (else the rootdir's folder name); the branch and revision come from the checkout's
``.git/HEAD`` (a worktree's ``.git`` file points at its own HEAD), a branch resolved through its
loose ref or ``packed-refs`` (git's own layout: Documentation/gitrepository-layout.txt). A CI
system's variables and the ``--history-*`` options come first (plugin.py)."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Optional


def project_name(root: Path) -> str:
    try:
        name = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        name = None
    return name if isinstance(name, str) and name.strip() else root.resolve().name


def _git_dirs(root: Path) -> Optional[tuple[Path, Path]]:
    """(the checkout's own git folder, the common one holding refs), for ``root`` or a parent."""
    for folder in (root, *root.resolve().parents):
        dot = folder / ".git"
        try:
            if dot.is_dir():
                return dot, dot
            if dot.is_file():
                text = dot.read_text().strip()
                if not text.startswith("gitdir:"):
                    return None
                own = (folder / text.split(":", 1)[1].strip()).resolve()
                common = own / "commondir"
                return own, ((own / common.read_text().strip()).resolve() if common.is_file() else own)
        except OSError:
            return None
    return None


def _head(root: Path) -> tuple[Optional[str], Optional[str], Optional[Path]]:
    dirs = _git_dirs(root)
    if dirs is None:
        return None, None, None
    try:
        head = (dirs[0] / "HEAD").read_text().strip()
    except OSError:
        return None, None, None
    if head.startswith("ref:"):
        return head[4:].strip(), None, dirs[1]
    return None, head or None, dirs[1]


def git_branch(root: Path) -> Optional[str]:
    ref, _, _ = _head(root)
    return ref.removeprefix("refs/heads/") if ref else None


def git_revision(root: Path) -> Optional[str]:
    ref, detached, common = _head(root)
    if detached or common is None or ref is None:
        return detached
    try:
        return (common / ref).read_text().strip() or None
    except OSError:
        pass
    try:
        for line in (common / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    except OSError:
        pass
    return None
