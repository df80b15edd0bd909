"""The results history, end to end on real sessions: GEMM partition cases on emu run clean, then
with a fault that spoils partition 1 in every other run, then with a new deterministic fault on
partition 3 (tests/selftest/fixtures/history_faults.py). Each session stores itself in a SQLite
history at its end; the same results.json files are then imported into a real PostgreSQL server.
On both: `history flaky --with-faults` names the flipping case with its rate, `history
regressions --with-faults` names the new failure with its last good and first bad runs, `gate
--baseline history --allow-fault` blocks the new failure and not the flaky one (and a known-bug
expectation still wins); without --with-faults the fault runs are left out. The dashboard the
last session wrote is checked in a real headless Chromium."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import suite_in_process

REPO = Path(__file__).resolve().parents[3]
FAULTS = REPO / "tests" / "selftest" / "fixtures" / "history_faults.py"
FAULT_RUN = "ACCEL_FAULT_RUN"      # the run number its faults read (history_faults.RUN)
# One small GEMM configuration: its shape check and its four partitions (a few seconds a session).
SELECT = "M64-K128-N256 and bf16 and (test_partition or test_forward_shape) and not standalone and not ties"
C1, C3 = "-C1-normal]", "-C3-normal]"
# (fault, $ACCEL_FAULT_RUN): two clean runs, four with partition 1 failing in every other one,
# then partition 3 broken for good (partition 1 failing in that run too).
PLAN = [(None, 0), (None, 0), ("flaky_partition", 1), ("flaky_partition", 2), ("flaky_partition", 3),
        ("flaky_partition", 4), ("flaky_and_broken", 5)]


def _session(root: Path, n: int, history: str, fault, run: int, *extra: str) -> tuple[Path, str]:
    """One session, in this process (issue 51): the run number the fault reads at each call
    ($ACCEL_FAULT_RUN) is set around it."""
    report = root / f"run{n}"
    argv = ["-q", "-p", "no:hypothesispytest", "tests/test_gemm_partition_n.py", "--hw", "emu", "-k", SELECT,
            "--history", history, "--isolation", "none", *extra]
    if fault:
        argv += ["--inject-fault", f"{FAULTS}:{fault}"]
    before = os.environ.get(FAULT_RUN)
    os.environ[FAULT_RUN] = str(run)
    try:
        session = suite_in_process.run(REPO, *argv, report_dir=report)
    finally:
        if before is None:
            del os.environ[FAULT_RUN]
        else:
            os.environ[FAULT_RUN] = before
    assert session.cases is not None, session.out
    assert "history: run" in session.out and "stored in" in session.out, session.out
    return report, session.out


def _cli(capsys, *argv) -> tuple[int, str]:
    from accel_regress.results.history import cli
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def _gate(capsys, *argv) -> tuple[int, str]:
    from accel_regress.results import gate
    code = gate.main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out + cap.err


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("history-demo")
    history = str(root / "history.sqlite")
    reports = []
    for n, (fault, run) in enumerate(PLAN):
        reports.append(_session(root, n, history, fault, run)[0])
    return root, history, reports


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def history(request, runs):
    """The demonstration's history: the sessions' own SQLite file, or the same runs imported into PostgreSQL."""
    if request.param == "sqlite":
        return runs[1]
    from accel_regress.results.history import cli
    url = request.getfixturevalue("postgres").create_database()
    assert cli.main(["import", "--history", url, *(str(r / "results.json") for r in runs[2])]) == 0
    return url


def _imports(history: str) -> list[str]:
    """The PostgreSQL history holds the sessions' files imported: imports are evidence of flakiness
    only when the gate is told to count them."""
    return ["--flaky-imports"] if "://" in history else []


def _line_of(text: str, needle: str) -> str:
    return next(ln for ln in text.splitlines() if needle in ln)


def test_flaky_names_the_flipping_case_with_its_rate(history, capsys):
    code, out = _cli(capsys, "flaky", "--with-faults", "--history", history)
    assert code == 0, out
    assert out.startswith("1 flaky test x device"), out
    line = _line_of(out, C1)
    # P P F P F P F: 5 flips in 7 runs, 3 failures.
    assert "on emu: flip rate 0.83 (5 flips in 7 runs, failed 3 of 7)" in line, out
    assert C3 not in out
    code, out = _cli(capsys, "flaky", "--history", history)      # fault runs left out: nothing flips
    assert code == 0 and out.startswith("no flaky test"), out


def test_regressions_name_the_new_failure_with_last_good_and_first_bad(history, runs, capsys):
    from accel_regress.results.history.rows import run_key
    from accel_regress.results import record
    keys = [run_key(record.load(r / "results.json")["session"])[:9] for r in runs[2]]
    code, out = _cli(capsys, "regressions", "--with-faults", "--history", history)
    assert code == 0, out
    assert out.startswith("1 open regression(s)"), out
    assert re.search(r"FAIL tests/test_gemm_partition_n.py::test_partition\[M64-K128-N256-\S+-C3-normal\] on emu", out), out
    assert f"last good:  {keys[5]}" in out and f"first bad:  {keys[6]}" in out, out
    assert "fault flaky_partition -> flaky_and_broken" in out.replace(str(FAULTS) + ":", ""), out
    assert C1 not in out.split("not listed")[0]          # the flaky one is not a regression
    assert "1 failing now but flaky" in out
    code, out = _cli(capsys, "regressions", "--history", history)
    assert code == 0 and out.startswith("no open regression"), out


def test_show_gives_the_timeline(history, capsys):
    code, out = _cli(capsys, "show", "test_partition[M64-K128-N256", "--with-faults", "--history", history)
    assert code == 0, out
    block = out.split("-C1-normal] on emu")[1].split("on emu")[0]
    assert [re.findall(r"\b(PASS|FAIL)\b", ln)[0] for ln in block.splitlines()[1:] if ln.startswith("  r")] == \
        ["PASS", "PASS", "FAIL", "PASS", "FAIL", "PASS", "FAIL"], out


def test_gate_blocks_the_new_failure_not_the_flaky_one(history, runs, capsys):
    last = str(runs[2][-1] / "results.json")
    code, out = _gate(capsys, last, "--baseline", "history", "--history", history, "--allow-fault", *_imports(history))
    assert code == 1, out
    reasons = [ln for ln in out.splitlines() if ln.startswith("  - ")]
    assert len(reasons) == 1 and "1 new failure(s), passed in the baseline" in reasons[0] and C3 in reasons[0], out
    flaky = _line_of(out, "known flaky")
    assert flaky.startswith("  . ") and C1 in flaky and "flip rate 0.80 (4 flips in 6 runs" in flaky, out
    # Without --allow-fault the run is refused, as every fault run is.
    code, out = _gate(capsys, last, "--baseline", "history", "--history", history)
    assert code == 1 and "pass --allow-fault" in out


def test_policy_can_make_flaky_failures_block(history, runs, tmp_path, capsys):
    policy = tmp_path / "policy.toml"
    policy.write_text("[flaky]\nbound = 0.5\nwindow = 20\nblocks = true\n")
    code, out = _gate(capsys, str(runs[2][-1] / "results.json"), "--baseline", "history", "--history", history,
                      "--allow-fault", "--policy", str(policy), *_imports(history))
    assert code == 1
    assert C1 in _line_of(out, "known flaky") and _line_of(out, "known flaky").startswith("  - "), out
    policy.write_text("[flaky]\nbound = 0.9\n")        # above the case's rate: it is not known flaky
    code, out = _gate(capsys, str(runs[2][-1] / "results.json"), "--baseline", "history", "--history", history,
                      "--allow-fault", "--policy", str(policy))
    assert code == 1 and "known flaky" not in out and C1 in out, out


def test_a_known_bug_expectation_still_wins(runs, tmp_path, capsys):
    """Partition 3's failure listed as a known bug: XFAIL, so the history gate ships the run."""
    root, history, _ = runs
    exp = tmp_path / "expectations"
    exp.mkdir()
    (exp / "emu.toml").write_text(
        '[[expect]]\ntest = "tests/test_gemm_partition_n.py::test_partition[*-C3-normal]"\nverdict = "FAIL"\n'
        'reason = "partition 3 comes back as zeros (history_faults.flaky_and_broken)"\n'
        'issue = "tests/selftest/fixtures/history_faults.py"\n')
    copy = tmp_path / "history.sqlite"
    shutil.copy(history, copy)
    report, out = _session(tmp_path, 7, str(copy), "flaky_and_broken", 7, "--expectations", str(exp))
    code, out = _gate(capsys, str(report / "results.json"), "--baseline", "history", "--history", str(copy),
                      "--allow-fault")
    assert code == 0, out
    assert "known flaky" in out and "known bugs: 1 XFAIL" in out, out


_CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(page: Path, profile: Path) -> tuple[str, list[str]]:
    """(the DOM after the page's scripts ran, the console lines) from a real headless Chromium."""
    proc = subprocess.run([_CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                           "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    return proc.stdout, [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]


@pytest.mark.skipif(_CHROMIUM is None, reason="chromium is not installed (Debian package `chromium`)")
def test_dashboard_in_headless_chromium(runs, tmp_path):
    # The page a fault session wrote shows its runs but counts nothing from a fault run (issue 48:
    # one fault run made "16 flaky"); asked for (--with-faults), the same history's page counts them.
    dom, console = chromium(runs[2][-1] / "history.html", tmp_path / "profile")
    assert console == [] and 'data-ready="1"' in dom, console
    assert "0 flaky, 0 open regression(s), 0 known bug(s), 7 run(s) shown" in dom
    from accel_regress.results.history import cli as history_cli
    page = tmp_path / "with-faults.html"
    assert history_cli.main(["dashboard", "--history", str(runs[1]), "--with-faults", "-o", str(page)]) == 0
    dom, console = chromium(page, tmp_path / "profile")
    assert console == [], console
    assert 'data-ready="1"' in dom                     # its script ran
    assert "1 flaky, 1 open regression(s), 0 known bug(s), 7 run(s) shown" in dom
    flaky = dom.split('id="flaky"')[1].split("</table>")[0]
    assert C1 in flaky and "0.83 (5 flips in 7 runs)" in flaky and C3 not in flaky
    regs = dom.split('id="regressions"')[1].split("</table>")[0]
    assert C3 in regs and C1 not in regs
    matrix = dom.split('id="matrix"')[1].split("</table>")[0]
    cells = re.findall(r'<td class="c (\w+)"', matrix)        # newest first; runs 2-6 have a fault
    assert cells == ["fault", "ok", "fault", "ok", "fault", "ok", "ok"], cells
    # The check sees a script error when there is one.
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text().replace("document.getElementById('filter')", "document.nosuch('filter')"))
    assert any("Uncaught" in ln for ln in chromium(broken, tmp_path / "profile2")[1])
