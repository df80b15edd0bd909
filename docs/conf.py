"""Sphinx configuration: MyST Markdown sources, built with warnings as errors (`make docs`), no network."""
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "accel-regress"
author = "The accel-regress maintainers"
extensions = ["myst_parser", "accel_reference"]   # _ext/accel_reference.py: pages from the code
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3          # a [link](page.md#a-section-title) resolves; a wrong one is a warning
html_theme = "alabaster"          # Sphinx's own: nothing more to install
html_static_path: list = []
