"""The upstream range to read once a bisect has its two versions: each package's source
repository (from its metadata: ``Project-URL`` repository / source / github, else Home-page), the
two release tags, and the compare link; and, where the runs recorded the exact commits (IREE's
``iree-compile --version`` names one), the compare link between those commits, which is exact
whatever the project's tag names.

Release tag names are the project's habit: ``v{version}`` by default. IREE tagged its stable
releases ``iree-3.0.0`` (iree-org/iree releases/tag/iree-3.0.0, cited in iree-gd/iree.gd#105) and
``v3.1.0`` from 3.1.0 on (iree-org/iree#19641: "releases/tag/v3.1.0", compare/v3.1.0...main;
#21868: releases/tag/v3.7.0).
"""
from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from packaging.version import Version

_LABELS = ("repository", "source", "source code", "code", "github")


def _iree_tag(version: str) -> str:
    return f"v{version}" if Version(version) >= Version("3.1.0") else f"iree-{version}"


TAG_FORMATS: dict[str, Callable[[str], str]] = {
    "iree-base-compiler": _iree_tag,
    "iree-base-runtime": _iree_tag,
}


def tag_for(package: str, version: str) -> str:
    fmt = TAG_FORMATS.get(package.lower())
    return fmt(version) if fmt else f"v{version}"


def repository_url(package: str, search: Sequence[Path]) -> Optional[str]:
    """The source repository the package's metadata names (None when it names none)."""
    want = package.lower().replace("_", "-")
    for dist in importlib.metadata.distributions(path=[str(p) for p in search]):
        if dist.metadata["Name"].lower().replace("_", "-") != want:
            continue
        urls = {}
        for entry in dist.metadata.get_all("Project-URL") or ():
            label, _, url = entry.partition(",")
            urls[label.strip().lower()] = url.strip()
        for label in _LABELS:
            if urls.get(label):
                return urls[label].rstrip("/")
        for url in [*urls.values(), dist.metadata.get("Home-page") or ""]:
            if "github.com/" in url or "gitlab.com/" in url:
                return url.rstrip("/")
        return None
    return None


@dataclass
class Range:
    package: str
    repository: Optional[str]
    good: str
    bad: str
    good_commit: Optional[str] = None
    bad_commit: Optional[str] = None

    @property
    def tags(self) -> tuple[str, str]:
        return tag_for(self.package, self.good), tag_for(self.package, self.bad)

    @property
    def compare(self) -> Optional[str]:
        if not self.repository:
            return None
        return f"{self.repository}/compare/{self.tags[0]}...{self.tags[1]}"

    @property
    def compare_commits(self) -> Optional[str]:
        if not (self.repository and self.good_commit and self.bad_commit):
            return None
        return f"{self.repository}/compare/{self.good_commit}...{self.bad_commit}"

    def lines(self) -> list[str]:
        out = [f"{self.package}: {self.good} .. {self.bad}; release tags {self.tags[0]} .. {self.tags[1]}"
               + (f" in {self.repository}" if self.repository else " (the package's metadata names no repository)")]
        if self.compare:
            out.append(f"  compare: {self.compare}")
        if self.compare_commits:
            out.append(f"  commits: {self.compare_commits}")
        return out

    def to_json(self) -> dict:
        return {"package": self.package, "repository": self.repository, "good": self.good, "bad": self.bad,
                "tags": list(self.tags), "compare": self.compare, "good_commit": self.good_commit,
                "bad_commit": self.bad_commit, "compare_commits": self.compare_commits}
