"""Issue 26, the attacks that need no session: the gate refuses a record that is not whole (items
2, 3, 6), expectations update writes a test id holding ``*`` / ``{a,b}`` as that id (item 5), a
device-scoped known bug does not apply to a run that recorded no device (item 7), a ``nonfinite``
list cannot turn a string field into a number behind the schema's back and the fields the tools
use are typed (item 10), and every file reader refuses a FIFO and a device (item 11)."""
import contextlib
import io
import json
import os
import threading

import pytest

from accel_regress.results import expectations as X
from accel_regress.results import record as results
from accel_regress.__main__ import main as hardware_main
from accel_regress.results.version_range import Conditions

CASE = {"nodeid": "t.py::test_x[emu-a]", "test": "test_x[emu-a]", "backend": "emu", "family": "f",
        "verdict": "PASS", "stage": "compare", "message": "", "duration_s": 0.1, "runs": [],
        "census": [], "detail": {}, "versions": {}}
SESSION = {"host": "h", "hw": ["emu"], "interrupted": False, "exit_status": 0, "complete": True}


def _doc(session=SESSION, cases=(CASE,)) -> dict:
    return results.build(dict(session), {"emu": {"selected": True, "available": True}}, list(cases))


def _command(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = hardware_main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def _gate(tmp_path, doc) -> tuple[int, str]:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    code, out, err = _command(["gate", str(path)])
    return code, out + err


def test_a_whole_record_ships(tmp_path):
    code, text = _gate(tmp_path, _doc())
    assert code == 0, text


@pytest.mark.parametrize("doc, words", [
    ({"schema": "accel-regress/results", "schema_version": 1, "cases": []}, "has no session"),     # item 6
    ({k: v for k, v in _doc().items() if k != "session"}, "has no session"),
    (_doc(cases=[]), "has no cases"),
    (_doc(session=dict(SESSION, in_progress=True), cases=[]), "never finished"),                     # item 3
    (_doc(session=dict(SESSION, exit_status=1)), "exited with status 1 (tests failed) but no case"),  # item 2
    (_doc(session=dict(SESSION, complete=False, stop_reason="stopping after 1 failures")), "stopped early"),
])
def test_a_record_that_is_not_whole_is_refused_with_the_reason(tmp_path, doc, words):
    code, text = _gate(tmp_path, doc)
    assert code == 1 and words in text, text


# --- item 5: a literal id with wildcard characters ------------------------------------------------

def test_update_writes_an_id_with_wildcards_as_that_id(tmp_path):
    star = dict(CASE, nodeid="t.py::test_x[emu-a*b]", test="test_x[emu-a*b]", verdict="FAIL")
    brace = dict(CASE, nodeid="t.py::test_x[emu-{c,d}]", test="test_x[emu-{c,d}]", verdict="FAIL")
    plain = dict(CASE, nodeid="t.py::test_x[emu-a1b]", verdict="PASS")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_doc(cases=[star, brace, plain])))
    exp = tmp_path / "exp"
    exp.mkdir()
    code, out, err = _command(["expectations", "update", str(path), "--dir", str(exp), "--apply"])
    assert code in (0, 1), err
    loaded = X.load_dir(exp, ["emu"])
    assert {e.test for e in loaded.entries} == {"t.py::test_x[a*b]", "t.py::test_x[{c,d}]"}
    for key in ("t.py::test_x[a1b]", "t.py::test_x[aXb]", "t.py::test_x[c]", "t.py::test_x[d]"):
        assert loaded.match("emu", key) is None, key          # written as a pattern, these would be XFAIL
    assert loaded.match("emu", "t.py::test_x[a*b]").verdict == "FAIL"
    code, out, err = _command(["expectations", "check", "--dir", str(exp)])
    assert code == 0, out + err


# --- item 7: a device-scoped entry and a run that recorded no device ------------------------------

def test_device_scoped_entry_does_not_apply_without_a_device():
    c = Conditions.parse(None, ["Krackan"])
    assert c.check({}, None) == (False, "device generation not recorded")
    assert c.check({}, "emu")[0] is False
    assert c.check({"npu_device_kind": "npu6"})[0] is True
    e = X.Entry("emu", "t.py::test_x[*]", "FAIL", "r", "i", conditions=c)
    assert X.Expectations([e]).match("emu", "t.py::test_x[a]", versions={}) is None


# --- item 10: restored before validated; the fields the tools use are typed -------------------------

@pytest.mark.parametrize("change, where", [
    (lambda d: d.update(nonfinite=[["cases", 0, "message"]]) or d["cases"][0].update(message="NaN"), "message"),
    (lambda d: d.update(nonfinite=[["cases", 0, "nodeid"]]) or d["cases"][0].update(nodeid="Infinity"), "nodeid"),
    (lambda d: d["cases"][0].update(duration_s="slow"), "duration_s"),
    (lambda d: d["cases"][0]["detail"].update(steps=[{"step": "a", "max_abs": "x"}]), "steps"),
    (lambda d: d["cases"][0]["detail"].update(repeat=[1, 2]), "repeat"),
    (lambda d: d["cases"][0]["detail"].update(expectation="listed"), "expectation"),
    (lambda d: d["cases"][0]["detail"].update(markers=[1, 2]), "markers"),
])
def test_restored_fields_and_used_fields_are_checked(tmp_path, change, where):
    doc = _doc(cases=[dict(CASE, verdict="FAIL", detail={})])
    change(doc)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    for argv in (["gate", str(path)], ["report", str(path), "--out", str(tmp_path / "r")],
                 ["merge", str(path), "-o", str(tmp_path / "m" / "results.json")]):
        code, out, err = _command(argv)
        assert code == 2 and where in err and "Traceback" not in err, (argv, code, out, err)


# --- item 11: a FIFO or a device where a file is read -----------------------------------------------

def _fifo(path):
    os.mkfifo(path)
    return path


def _device(path):
    os.symlink("/dev/zero", path)
    return path


@pytest.mark.parametrize("make", [_fifo, _device], ids=["fifo", "dev-zero"])
@pytest.mark.parametrize("kind", ["results", "baseline", "policy", "expectations"])
def test_readers_refuse_fifos_and_devices(tmp_path, make, kind):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_doc()))
    exp = tmp_path / "exp"
    exp.mkdir()
    bad = {"results": tmp_path / "results.json", "baseline": tmp_path / "base.json",
           "policy": tmp_path / "policy.toml", "expectations": exp / "emu.toml"}[kind]
    make(bad)
    argv = {"results": ["gate", str(bad)], "baseline": ["gate", str(good), "--baseline", str(bad)],
            "policy": ["gate", str(good), "--policy", str(bad)],
            "expectations": ["expectations", "check", "--dir", str(exp)]}[kind]
    box = {}
    t = threading.Thread(target=lambda: box.update(answer=_command(argv)), daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():            # the old code blocks in open(): free it, then fail
        if make is _fifo:
            with open(bad, "wb"):
                pass
        t.join(5)
        pytest.fail(f"{argv} blocked on a {make.__name__[1:]}")
    code, out, err = box["answer"]
    assert code == 2 and str(bad) in err and "not a regular file" in err, (code, err)


# --- item 12: a crashed run's output is read as a bounded tail ----------------------------------------

def test_a_huge_output_log_is_read_as_a_bounded_tail(tmp_path):
    import tracemalloc
    from types import SimpleNamespace

    from accel_regress.core.isolation.pool import Isolation
    log = tmp_path / "worker.log"
    with open(log, "wb") as f:
        line = b"x" * 1023 + b"\n"
        for _ in range(64 << 10):            # 64 MB of output, then the last words
            f.write(line)
        f.write(b"last words before the crash\n")
    worker = SimpleNamespace(log=log)
    tracemalloc.start()
    try:
        text = Isolation._log_from(None, worker, 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text.endswith("last words before the crash\n")
    assert peak < 8 << 20, f"{peak / 2**20:.0f} MiB to read the tail of a 64 MiB log"


@pytest.mark.parametrize("make", [_fifo, _device], ids=["fifo", "dev-zero"])
def test_golden_store_refuses_a_fifo_or_device_manifest(tmp_path, make):
    from accel_regress.golden import store_folder
    entry = tmp_path / "entry"
    entry.mkdir()
    make(entry / store_folder.MANIFEST)
    fd = os.open(entry, os.O_RDONLY)
    box = {}

    def read():
        try:
            box["got"] = store_folder.read_in(fd, store_folder.MANIFEST)
        except OSError as exc:
            box["error"] = exc
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(20)
    try:
        if t.is_alive():
            if make is _fifo:
                with open(entry / store_folder.MANIFEST, "wb"):
                    pass
            t.join(5)
            pytest.fail(f"the golden store blocked on a {make.__name__[1:]} manifest")
    finally:
        os.close(fd)
    assert "error" in box, box        # refused: a FIFO is not a regular file, a link is never followed
