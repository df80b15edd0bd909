"""What points into the documentation resolves: the README's links, every ``docs/...md`` a source
file names, and every README section a source file names by its title (issue 48: a code comment
named a README section that did not exist). The pages' own links are Sphinx's to check
(``make docs``: ``-W``, myst's missing-reference warnings)."""
import re
from pathlib import Path

import pytest

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]
# Where the code and scripts live (fixtures hold other projects' text).
SOURCES = ("hardware", "golden", "families", "repros", "benchmarks", "scripts", "ci", ".ci", "examples",
           "tests", "Makefile", "conftest.py", "setup.py", "pyproject.toml")
DOC_PATH = re.compile(r"\bdocs/[\w-][\w./-]*?\.md\b")
README_SECTION = re.compile(r'README(?:\.md)?, "([^"]+)"')
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A file the pages name in code, as a path of this repository: `accel_regress/results/known.py` is
# not one (the folder is hardware/; the import name is written with dots).
FILE_SPAN = re.compile(r"`((?:accel_regress|hardware|golden|families|tests|repros|benchmarks|scripts|examples|findings|expectations|policy)/[\w./-]+\.(?:py|toml|md|json|c|h|sh|yml))(?::[\w:-]+)?`")
OTHERS = {"tests/test_swiglu.py"}    # what `accel-regress new-family swiglu` writes in your package


def _checkout():
    if not (REPO / "docs" / "conf.py").is_file():
        pytest.skip("not a source checkout")


def _source_files():
    for name in SOURCES:
        root = REPO / name
        files = [root] if root.is_file() else root.rglob("*") if root.is_dir() else []
        for path in files:
            if path.is_file() and "fixtures" not in path.parts and "__pycache__" not in path.parts \
                    and path.suffix not in (".npy", ".pyc", ".whl", ".so", ".o"):
                yield path


def _headings(markdown: str) -> set:
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.*)$", markdown, re.M)}


def test_readme_links_resolve():
    _checkout()
    readme = (REPO / "README.md").read_text()
    links = [t for t in LINK.findall(readme) if "://" not in t and not t.startswith("#")]
    assert links, "the README links into docs/"
    missing = [t for t in links if not (REPO / t.split("#")[0]).exists()]
    assert not missing, f"README links to paths that do not exist: {missing}"


def test_code_names_only_pages_and_sections_that_exist():
    _checkout()
    readme_sections = _headings((REPO / "README.md").read_text())
    bad = []
    for path in _source_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(REPO)
        for page in DOC_PATH.findall(text):
            if not (REPO / page).is_file():
                bad.append(f"{rel}: {page} does not exist")
        for title in README_SECTION.findall(text):
            if title not in readme_sections:
                bad.append(f"{rel}: README has no section {title!r}")
    assert not bad, "\n".join(bad)


def test_pages_name_files_that_exist():
    """A file a page names in code (`hardware/results/known.py`) is there, at that path."""
    _checkout()
    bad = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        for path in FILE_SPAN.findall(page.read_text()):
            if path not in OTHERS and "<" not in path and "*" not in path and not (REPO / path).exists():
                bad.append(f"{page.relative_to(REPO)}: {path}")
    assert not bad, "pages name files that do not exist:\n" + "\n".join(bad)
