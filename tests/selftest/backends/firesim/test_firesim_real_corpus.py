"""The FireSim log classifier on real driver output and on every driver format of FireSim and its
neighbours (chipyard / rocket-chip emulator, TestDriver.v): fixtures/real/firesim/README.md says
where each line comes from and why it carries its label."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_regress.backends.firesim import uart
from accel_regress.backends.firesim.classify import classify_files, classify_text

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "firesim"


def _rows():
    rows = []
    for line in (REAL / "driver_lines.tsv").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        source, origin, kind, code, cycles, text = line.split("\t")
        rows.append(pytest.param(origin, kind, int(code) if code else None, int(cycles), text, id=f"{kind}-{source[:60]}"))
    return rows


ROWS = _rows()


def test_the_corpus_has_every_kind_and_real_lines():
    kinds = {p.values[1] for p in ROWS}
    assert kinds == set(uart.DRIVER_KINDS)
    assert any(p.values[0] == "real" for p in ROWS) and {p.values[0] for p in ROWS} <= {"real", "rendered"}


@pytest.mark.parametrize("origin,kind,code,cycles,text", ROWS)
def test_every_driver_format_is_read(origin, kind, code, cycles, text):
    found = uart.markers([text])
    assert [m.kind for m in found] == [kind], text
    assert found[0].fields["cycles"] == cycles
    assert found[0].fields.get("code") == code


@pytest.mark.parametrize("origin,kind,code,cycles,text", ROWS)
def test_every_driver_format_gets_its_verdict_inside_an_open_dispatch(origin, kind, code, cycles, text):
    """The issue's cases: rocket-chip's (code = N, seed S) with a dispatch open was called a hang,
    TestDriver's PASSED was called progress, the deadlock line was a crash of the target."""
    log = "Bench iter 1/1\n[dn] d=0 wg=4\n" + text + "\n"
    c = classify_text(log)
    expected = {"passed": "pass", "failed": "fail", "timed_out": "hang", "deadlock": "hang"}[kind]
    assert c.verdict == expected, c.detail
    if kind == "deadlock":
        assert c.hang_evidence == "deadlock" and "simulator hang" in c.detail
    if kind == "timed_out":
        assert c.hang_evidence == "timeout"
    # the same line before any dispatch: never a hang of a dispatch
    before = classify_text("boot\n" + text + "\n")
    assert before.verdict == {"passed": "pass", "failed": "early", "timed_out": "early", "deadlock": "hang"}[kind]


@pytest.mark.parametrize("name", ["firesim_docs_single_node_poweroff.uartlog", "firesim_docs_cluster_poweroff.uartlog"])
def test_real_uartlog_tails(name):
    c = classify_files(REAL / name)
    assert c.verdict == "pass" and c.driver.kind == "passed"
    assert "no [done] printed" in c.detail and c.dispatches_started == 0


def test_every_corpus_file_is_tested():
    files = {p.name for p in REAL.iterdir() if p.is_file()} - {"README.md", "driver_lines.tsv"}
    assert files == {"firesim_docs_single_node_poweroff.uartlog", "firesim_docs_cluster_poweroff.uartlog"}
