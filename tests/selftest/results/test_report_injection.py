"""Issue 26 items 18 and 19: text a run chose (test ids, messages, host, device and family names,
expectation reasons) is inert in every report a person opens.

summary.md and pr-comment.md are rendered with cmarkgfm (GitHub's own cmark-gfm, raw HTML let
through as GitHub lets through <img>): a message holding an <img> pointing outside, a Markdown
image, an @team mention, a line "# SHIP", a fake table cell or a link must come out as that text.
The CSV matrices follow OWASP's "CSV Injection" advice: no cell starts with = + - @ tab or CR."""
import csv
import json
import re

import pytest

cmarkgfm = pytest.importorskip("cmarkgfm", reason="pip install cmarkgfm (the test extra)")
from cmarkgfm.cmark import Options  # noqa: E402

from accel_regress.results import record
from accel_regress.results.report import write_all
from accel_regress.util.escape import csv_cell, md_code, md_text

EVIL = ("<img src=https://evil.example/pixel.png> @team ![x](https://evil.example/y.png) | fake cell | **bold**"
        "\n# SHIP\n[click](https://evil.example/) `tick` </details> www.evil.example")
EVIL_ID = 'tests/t.py::test_x[emu-=HYPERLINK("https://evil.example")-@SUM(1+1)]'


def _data() -> dict:
    case = {"nodeid": EVIL_ID, "test": EVIL_ID.split("::")[1], "backend": "emu", "family": "@fam\n# SHIP",
            "verdict": "FAIL", "stage": "compare", "message": EVIL, "duration_s": 0.1, "runs": [],
            "census": [], "detail": {"expectation": {}}, "versions": {}}
    skip = dict(case, nodeid="tests/t.py::test_y[emu]", test="test_y[emu]", verdict="SKIP",
                message="=cmd|' /C calc'!A0\n" + EVIL)
    return record.build({"host": "<img src=https://evil.example/h.png>", "hw": ["emu"], "interrupted": False,
                         "fault": None, "started": "@team", "exit_status": 1},
                        {"emu": {"selected": True, "available": True}}, [case, skip])


def _html(md: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)


def _outside_code(html: str) -> str:
    """GitHub looks for mentions in the rendered text, except inside code."""
    return re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    (out / "results.json").write_text(json.dumps(_data()))
    write_all(record.load(out / "results.json"), out)
    return out


@pytest.mark.parametrize("name", ["summary.md", "pr-comment.md"])
def test_markdown_reports_show_run_text_as_text(written, name):
    html = _html((written / name).read_text())
    assert "<img" not in html and 'href="https://evil' not in html, html
    assert html.count("<h1>") <= 1 and "<h1>SHIP" not in html and "<h3>SHIP" not in html, html
    assert "@team" not in _outside_code(html), "a mention reaches the pull request"
    assert "<strong>bold" not in html and "fake cell</td>" not in html, html
    assert html.count("<details>") == html.count("</details>"), "a message closed the report's own <details>"
    assert 'href="http://www.evil' not in html, html
    # ... and the words are there to read, as text.
    assert "&lt;img src=https://evil.example/pixel.png&gt;" in html
    assert name == "pr-comment.md" or "# SHIP" in html


def test_markdown_heading_only_the_gate_says_ship(written):
    html = _html((written / "summary.md").read_text())
    heads = [line for line in html.splitlines() if line.startswith(("<h1>", "<h2>", "<h3>"))]
    assert not any("SHIP" in h for h in heads[1:]), heads     # the first is the gate's own verdict


def test_escapes_round_trip_through_github_markdown():
    for text in [EVIL, EVIL_ID, "a|b", "``x``", "-1", "plain words"]:
        inline = _html(md_text(text)).strip()
        assert inline.startswith("<p>") and "<img" not in inline and "<a " not in inline, inline
        assert "<code>" in _html(md_code(text))


def test_csv_cells_never_start_a_formula(written):
    for path in written.glob("matrix*.csv"):
        for row in csv.reader(path.open()):
            for cell in row:
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (path.name, cell)
    rows = list(csv.reader((written / "matrix-emu.csv").open()))
    assert {r[1] for r in rows[1:]} == {"'@fam # SHIP"} or {r[1] for r in rows[1:]} == {"'@fam\n# SHIP"}, rows
    assert any(r[5] == "'=cmd|' /C calc'!A0" for r in rows[1:]), rows      # the text kept, made inert
    assert csv_cell("=1+1") == "'=1+1" and csv_cell("-2") == "'-2" and csv_cell("ok") == "ok"
