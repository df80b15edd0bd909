"""Issue 47 S3: text a run chose (a test id, a case's message, a history note) reaches a terminal
through `gate` and through the session's own summary: an escape sequence in it (CSI erasing the
screen, OSC 8 hiding a link behind innocent text, OSC 52 writing the clipboard) must show as
its escape (term_text, hardware/util/escape.py), never act."""
import json
from pathlib import Path

from accel_regress.results import gate, record

pytest_plugins = ["pytester"]

CSI = "\x1b[2J\x1b[1;1H"
OSC8 = "\x1b]8;;https://evil.example/\x07all clear\x1b]8;;\x07"
OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"
EVIL = f"died {CSI}{OSC8}{OSC52} done"
EVIL_ID = f"tests/t.py::test_x[emu-{OSC8}]"


def _shown_inert(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text[:400])
    assert "\\x1b]52;c;" in text or "\\x1b]8;;" in text     # still there, readable


def _results(tmp_path) -> Path:
    case = {"nodeid": EVIL_ID, "test": EVIL_ID.split("::")[1], "backend": "emu", "family": "fam",
            "verdict": "CRASH", "stage": "run", "message": EVIL, "duration_s": 0.1, "runs": [],
            "census": [], "detail": {}, "versions": {}}
    data = record.build({"hw": ["emu"], "interrupted": False, "fault": None, "exit_status": 1},
                        {"emu": {"selected": True, "available": True}}, [case])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


def test_gate_prints_test_ids_and_messages_inert(tmp_path, capsys):
    assert gate.main([str(_results(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "DON'T SHIP" in out
    _shown_inert(out)


SMALL_CASE = (Path(__file__).parents[1] / "fixtures" / "small_gemm_case.py").read_text().split('"""', 2)[2].lstrip("\n")


def test_session_summary_prints_a_crash_message_inert(pytester):
    pytester.makepyfile(test_small=SMALL_CASE)
    pytester.makepyfile(evilfault="from accel_regress import Crash\n"
                                  f"def fault(case, outputs):\n    raise Crash({EVIL!r})\n")
    res = pytester.runpytest("--hw", "emu", "--inject-fault", "evilfault.py:fault")
    res.assert_outcomes(failed=4)
    out = res.stdout.str()
    assert "accel-regress summary" in out and "CRASH" in out
    _shown_inert(out)
