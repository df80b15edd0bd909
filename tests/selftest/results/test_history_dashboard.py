"""history.html as a release manager's page (issue 34 item 11), on SQLite and on a real PostgreSQL
server: the newest run first with its verdict; cells that tell new / still failing / flaky / known
/ fault apart by their word and colour, not hover text; the known bugs counted and listed; each
column's run, date and revision. Checked in a real headless Chromium (its DOM after the script ran
and a screenshot, kept in $ACCEL_KEEP_SCREENSHOTS when set, else in the test's tmp folder)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from accel_regress.results.history import dashboard
from accel_regress.results.history.store import History

from test_history_store import make_results

EXP = {"test": "tests/test_demo.py::test_x[*-k]", "verdict": "FAIL", "reason": "partition 1 reads stale DMA descriptors",
       "issue": "https://github.com/amd/IRON/issues/83", "file": "expectations/emu.toml"}
# name -> verdicts of runs 0..5, oldest first; run 4 has an injected fault, run 5 is the newest.
PLAN = {"a": "PPPPFP", "b": "PFPFPF", "c": "PPPPPF", "k": "XXXXXX"}
WORD = {"P": "PASS", "F": "FAIL", "X": "XFAIL"}
KEY = "tests/test_demo.py::test_x[{}]"


def _runs() -> list[dict]:
    out = []
    for n in range(6):
        data = make_results(n, {name: WORD[seq[n]] for name, seq in PLAN.items()},
                            fault="tests/selftest/fixtures/history_faults.py:broken" if n == 4 else None,
                            revision=f"{n}abcdef0123456789")
        for case in data["cases"]:
            if case["verdict"] == "XFAIL":
                case["detail"] = {"expectation": EXP}
        out.append(data)
    return out


@pytest.fixture(params=["sqlite", "postgresql"])
def page(request, tmp_path) -> Path:
    location = (str(tmp_path / "history.sqlite") if request.param == "sqlite"
                else request.getfixturevalue("postgres").create_database())
    history = History(location)
    try:
        for data in _runs():
            history.ingest(data)
        return dashboard.write(history, tmp_path / "history.html", with_faults=True)
    finally:
        history.close()


def _between(text: str, start: str, end: str) -> str:
    assert start in text, f"{start!r} is not on the page"
    return text.split(start, 1)[1].split(end, 1)[0]


def _check(dom: str) -> None:
    """What the page must say, in the DOM (the server's HTML, or Chromium's after the script)."""
    # The newest run first, with its verdict and the reason: c failed, passing in the run before.
    latest = _between(dom, 'id="latest"' if 'id="latest"' in dom else "id=latest", "</section>")
    assert "DON&#x27;T SHIP: 1 reason" in latest or "DON'T SHIP: 1 reason" in latest, latest
    reasons = _between(latest, "reasons", "</ul>")
    assert "1 new failure(s)" in reasons and KEY.format("c") in reasons and KEY.format("b") not in reasons
    assert "Known flaky, not blocking: 1: FAIL " + KEY.format("b") in latest
    assert dom.index("latest") < dom.index("matrix")
    # The known bugs: counted, listed with their reason and issue.
    assert "2 flaky, 1 open regression(s), 1 known bug(s), 6 run(s) shown" in dom     # a flips through the fault run
    known = _between(dom, "known-head", "</table>")
    assert "Known bugs in the newest run (1)" in known and KEY.format("k") in known
    assert EXP["reason"] in known and EXP["issue"] in known
    # Columns newest first: run, date, revision, verdict.
    matrix = _between(dom, 'id="matrix"' if 'id="matrix"' in dom else "id=matrix", "</table>")
    heads = re.findall(r"<th class=\"?c\"? [^>]*>(.*?)</th>", matrix)
    assert len(heads) == 6
    assert "2026-11-20 10:05" in heads[0] and "rev 5abcdef012" in heads[0] and "SHIP" in heads[0]
    assert "DON" in heads[0] and "fault run" in heads[1] and "2026-11-20 10:00" in heads[5]
    assert [re.sub(r"<[^>]+>", " ", h).split()[-1] for h in heads] == ["SHIP", "run", "SHIP", "SHIP", "SHIP", "SHIP"]
    # Cells: word and colour, worst kind first; newest first.
    cells = re.findall(r"<td class=[\"']c (\w+)[\"'] data-kind=[\"']\w+[\"'] title=[\"'][^\"']*[\"']>([^<]*)</td>", matrix)
    assert cells == [("new", "new 1"), ("fault", "fault 1"), ("flaky", "flaky 1"), ("known", "known 1"),
                     ("flaky", "flaky 1"), ("known", "known 1")], cells


def test_dashboard_is_a_release_managers_page(page):
    _check(page.read_text())


_CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
          "--disable-component-update", "--disable-sync"]


def _pixels(img, rgb) -> int:
    import numpy as np
    return int((np.abs(img[..., :3] * 255 - np.array(rgb)).max(axis=-1) < 8).sum())


@pytest.mark.skipif(_CHROMIUM is None, reason="chromium is not installed (Debian package `chromium`)")
def test_dashboard_in_headless_chromium(page, tmp_path):
    proc = subprocess.run([_CHROMIUM, *_FLAGS, f"--user-data-dir={tmp_path / 'p1'}", "--enable-logging=stderr",
                           "--v=0", "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln] == []
    assert 'data-ready="1"' in dom                     # its script ran
    _check(dom)
    shot = tmp_path / "history.png"
    subprocess.run([_CHROMIUM, *_FLAGS, f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1400,1100",
                    f"--screenshot={shot}", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.is_file()
    keep = os.environ.get("ACCEL_KEEP_SCREENSHOTS")     # a folder, for a person to look at
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "history.png")
    from matplotlib import image
    img = image.imread(shot)
    # Each kind's colour is on the screen: the verdict and the new cell (red), flaky (amber), known (purple).
    for name, rgb in (("new / DON'T SHIP", (0xdd, 0x33, 0x33)), ("flaky", (0xf2, 0xb0, 0x1e)),
                      ("known", (0x6a, 0x5a, 0xcd))):
        assert _pixels(img, rgb) > 100, name


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_lone_shard_is_not_a_release_decision_on_the_page(kind, request, tmp_path):
    location = (str(tmp_path / "history.sqlite") if kind == "sqlite"
                else request.getfixturevalue("postgres").create_database())
    history = History(location)
    try:
        history.ingest(make_results(0, {"a": "PASS"}))
        data = make_results(1, {"b": "PASS"})
        data["session"]["argv"] = ["tests/test_demo.py", "--shard", "1/2"]
        history.ingest(data)
        text = dashboard.render(history)
    finally:
        history.close()
    latest = _between(text, "id=latest", "</section>")
    assert "NOT A RELEASE DECISION" in latest and "shard 1/2 alone: merge the results.json of all 2 shards" in latest
    heads = re.findall(r"<th class=c [^>]*>(.*?)</th>", _between(text, "id=matrix", "</table>"))
    assert "shard 1/2" in heads[0] and heads[1].endswith("SHIP</b>"), heads


def test_a_fault_sessions_page_shows_its_run_and_counts_no_flake_from_it(tmp_path):
    """Issue 48: the page a fault session writes (show_faults) has the fault run as a column, but
    its verdicts are no evidence: a, which fails only in the fault run, is not flaky. On 60769d1 a
    fault session wrote its page with the fault runs as evidence (with_faults): '2 flaky', as above."""
    history = History(str(tmp_path / "history.sqlite"))
    try:
        for data in _runs():
            data["session"]["project"] = "demo-ops"
            history.ingest(data)
        page = dashboard.write(history, tmp_path / "history.html", show_faults=True).read_text()
    finally:
        history.close()
    assert "1 flaky, 1 open regression(s), 1 known bug(s), 6 run(s) shown" in page
    assert "<h1>accel-regress history: demo-ops</h1>" in page      # whose runs these are
    assert "runs with an injected fault shown, left out of the flaky and regression counts" in page
