"""Issue 19 item 7 and the fuzz: every command that reads a file (gate, merge, report, expectations
update/check, the IREE compile cache) answers a malformed or hostile file with its exit status and a
message naming the file, the place in it and what was expected: never a traceback, and never a read
outside the file's own folder.

The fuzz (hypothesis) starts from valid documents and breaks them: a node replaced by any JSON
value, keys dropped, paths that leave the folder, deep nesting, non-finite numbers, bytes that are
not UTF-8."""
import contextlib
import io
import json
import math
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_regress.results import record as results
from accel_regress.__main__ import main as hardware_main

# --- item 7: the issue's own malformed files ------------------------------------------------------

GOOD_CASE = {"nodeid": "t.py::test_x[emu-a]", "test": "test_x[emu-a]", "backend": "emu", "family": "f",
             "verdict": "FAIL", "stage": "compare", "message": "m", "duration_s": 0.1, "runs": [],
             "census": [], "detail": {}, "versions": {}}


def _results(**over) -> str:
    doc = results.build({"host": "h", "hw": ["emu"]}, {"emu": {"selected": True, "available": True}}, [GOOD_CASE])
    doc.update(over)
    return json.dumps(doc)


def _command(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = hardware_main(argv)
        except SystemExit as exc:          # argparse's usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


ATTACKS = [
    ("results", _results(cases=[1, 2]), "is not of type 'object'"),
    ("results", '{"schema": "accel-regress/results", "schema_version": 1, "cases": ' + "[" * 100000 + "]" * 100000 + "}",
     "nested deeper"),
    ("results", _results(cases=[{**GOOD_CASE, "verdict": "SHIP_IT"}]), "at cases[0].verdict: 'SHIP_IT' is not one of"),
    ("results", _results(session={"started": 5}), "at session.started: 5 is not of type 'string', 'null'"),
    ("results", b"\xff\xfe{}", "not UTF-8"),
    ("policy", "required = 5\n", "at required: 5 is not of type 'object'"),
    ("policy", "[slowdown]\nfactor = nan\n", "at slowdown.factor"),
    ("expectations", "expect = 5\n", "at expect: 5 is not of type 'array'"),
    ("expectations", "expect = [1]\n", "at expect[0]: 1 is not of type 'object'"),
    ("expectations", "[[expect]]\ntest = 3\n", "at expect[0].test: 3 is not of type 'string'"),
]


def _argvs(kind: str, path: Path, good: Path) -> list[list[str]]:
    if kind == "results":
        return [["gate", str(path)], ["merge", str(path), "-o", str(path.parent / "m" / "results.json")],
                ["report", str(path), "--out", str(path.parent / "r")], ["gate", str(good), "--baseline", str(path)],
                ["expectations", "update", str(path), "--dir", str(path.parent / "noexp")]]
    if kind == "policy":
        return [["gate", str(good), "--policy", str(path)]]
    return [["expectations", "check", "--dir", str(path.parent)],
            ["expectations", "update", str(good), "--dir", str(path.parent)]]


@pytest.mark.parametrize("kind, content, words", ATTACKS, ids=[f"{k}-{w[:24]}" for k, _, w in ATTACKS])
def test_malformed_file_is_exit_2_with_file_place_and_expectation(tmp_path, kind, content, words):
    name = {"results": "results.json", "policy": "policy.toml", "expectations": "emu.toml"}[kind]
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    good = tmp_path / "good.json"
    good.write_text(_results())
    for argv in _argvs(kind, path, good):
        code, _out, err = _command(argv)
        assert code == 2, (argv, code, err)
        assert str(path) in err and words in err, (argv, err)
        assert "Traceback" not in err


# --- the fuzz ---------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12) | st.sampled_from(["../outside/secret.npy", "/etc/passwd", "link.npy", "arrays", "."]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


@st.composite
def broken(draw, base):
    """``base`` with a few nodes replaced by any JSON value or dropped."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return draw(json_values)
        path = draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return doc


def _valid_results() -> dict:
    heat = {**GOOD_CASE, "detail": {"heatmap": {"array": "arrays/x.npy", "shape": [2, 2], "block": [1, 1]},
                                    # the fields the tools use (issue 26 item 10): typed by the schema
                                    "steps": [{"step": "s0", "op": "mm", "max_abs": 0.5, "mean_abs": 0.1,
                                               "max_rel": 0.2, "ok": False, "over": 1, "elements": 4}],
                                    "first_divergent_step": "s0", "markers": ["large"],
                                    "repeat": {"runs": 4, "failed": 1, "rate": "1/4"},
                                    "expectation": {"test": "t.py::test_x[*]", "file": "expectations/emu.toml",
                                                    "reason": "r", "issue": "i", "verdict": "FAIL"}},
            "census": [{"name": "out", "elements": 4, "over_tolerance": 1, "max_abs": 1.0}]}
    data = results.build({"host": "h", "hw": ["emu"], "started": "2026-11-23T10:00:00", "interrupted": False,
                          "exit_status": 1, "complete": True, "in_progress": False},
                         {"emu": {"selected": True, "available": True, "versions": {"device": "npu1"}}},
                         [heat, {**GOOD_CASE, "nodeid": "t.py::test_y[emu-a]", "verdict": "PASS"}])
    return data


class _Reads:
    """Every file opened while a command runs (an audit hook: it sees open() from C and Python)."""
    active = None    # a list while a command runs

    @classmethod
    def hook(cls, event, args):
        if cls.active is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            cls.active.append(os.fsdecode(args[0]))


sys.addaudithook(_Reads.hook)


def _run_watched(argv, outside: Path) -> tuple[int, str]:
    _Reads.active = []
    try:
        code, _out, err = _command(argv)
    finally:
        opened, _Reads.active = _Reads.active, None
    leaked = [p for p in opened if p.startswith(str(outside)) or p == "/etc/passwd"]
    assert not leaked, (argv, leaked)
    return code, err


def _folder(tmp_path_factory) -> tuple[Path, Path]:
    import numpy as np
    root = tmp_path_factory.mktemp("fuzz")
    outside = root / "outside"
    outside.mkdir()
    np.save(outside / "secret.npy", np.ones((2, 2), np.float32))
    run = root / "run"
    (run / "arrays").mkdir(parents=True)
    np.save(run / "arrays" / "x.npy", np.ones((2, 2), np.float32))
    os.symlink(outside / "secret.npy", run / "link.npy")
    return run, outside


FUZZ = settings(max_examples=int(os.environ.get("ACCEL_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(doc=broken(_valid_results()), nan_form=st.booleans())
def test_fuzz_results_file(tmp_path_factory, doc, nan_form):
    run, outside = _folder(tmp_path_factory)
    path = run / "results.json"
    path.write_text(json.dumps(doc, allow_nan=True) if nan_form else json.dumps(doc, default=str, allow_nan=True))
    for argv in (["gate", str(path)], ["merge", str(path), "-o", str(run / "m" / "results.json")],
                 ["report", str(path), "--out", str(run / "r")],
                 ["expectations", "update", str(path), "--dir", str(run / "noexp")]):
        code, err = _run_watched(argv, outside)
        assert code in (0, 1, 2), (argv, code)
        if code == 2:
            assert str(path) in err and "Traceback" not in err, err
    merged = run / "m" / "results.json"
    if merged.exists():
        json.loads(merged.read_text(), parse_constant=lambda w: pytest.fail(f"bare {w} in merged output"))


def _toml(doc) -> str:
    """A TOML rendering of a generated document (tables of scalars and arrays); anything else as a string."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(max(min(v, 2**63 - 1), -2**63))
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v if not isinstance(x, (dict, type(None)))) + "]"
        return json.dumps(str(v))
    if not isinstance(doc, dict):
        return f"x = {value(doc)}\n"
    lines, tables = [], []
    for k, v in doc.items():
        key = json.dumps(str(k))
        if isinstance(v, dict):
            tables.append(f"[{key}]\n" + "".join(f"{json.dumps(str(a))} = {value(b)}\n" for a, b in v.items()
                                                 if not isinstance(b, (dict, type(None)))))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                tables.append(f"[[{key}]]\n" + "".join(f"{json.dumps(str(a))} = {value(b)}\n" for a, b in item.items()
                                                       if not isinstance(b, (dict, type(None)))))
        elif v is not None:
            lines.append(f"{key} = {value(v)}")
    return "\n".join(lines) + "\n" + "\n".join(tables)


POLICY = {"required": {"backends": ["emu"], "markers": [], "families": ["f"]},
          "slowdown": {"factor": 2.0, "min_seconds": 1.0, "blocks": True}, "failures": {"pre_existing_block": True}}
EXPECT = {"expect": [{"test": "t.py::test_x[*]", "verdict": "FAIL", "reason": "r", "issue": "i"},
                    {"test": "t.py::test_x[a*b]", "verdict": "FAIL", "reason": "r", "issue": "i", "exact": True}]}


@FUZZ
@given(doc=broken(POLICY), junk=st.booleans(), text=st.text(max_size=40))
def test_fuzz_policy_file(tmp_path_factory, doc, junk, text):
    run, outside = _folder(tmp_path_factory)
    good = run / "results.json"
    good.write_text(_results())
    policy = run / "policy.toml"
    policy.write_text(text if junk else _toml(doc))
    code, err = _run_watched(["gate", str(good), "--policy", str(policy)], outside)
    assert code in (0, 1, 2) and (code != 2 or (str(policy) in err and "Traceback" not in err)), (code, err)


@FUZZ
@given(doc=broken(EXPECT), junk=st.booleans(), text=st.text(max_size=40))
def test_fuzz_expectations_file(tmp_path_factory, doc, junk, text):
    run, outside = _folder(tmp_path_factory)
    good = run / "results.json"
    good.write_text(_results())
    exp = run / "exp"
    exp.mkdir()
    (exp / "emu.toml").write_text(text if junk else _toml(doc))
    for argv in (["expectations", "check", "--dir", str(exp)], ["expectations", "update", str(good), "--dir", str(exp)]):
        code, err = _run_watched(argv, outside)
        assert code in (0, 1, 2) and (code != 2 or (str(exp) in err and "Traceback" not in err)), (argv, code, err)


# --- issue 26 item 11: what sits where a file should be ----------------------------------------------

def _not_a_file(path: Path, kind: str) -> None:
    """Put a FIFO, a link to a device or a folder where the command reads a file."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        os.symlink({"dev-zero": "/dev/zero", "dev-urandom": "/dev/urandom", "dev-null": "/dev/null"}[kind], path)


def _bounded(argv, path: Path, outside: Path) -> tuple[int, str]:
    """``_run_watched`` that fails (instead of hanging the suite) when the command blocks."""
    import threading
    box = {}
    t = threading.Thread(target=lambda: box.update(answer=_run_watched(argv, outside)), daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():
        if path.is_fifo():
            with open(path, "wb"):
                pass          # the writer the blocked open() waits for
        t.join(5)
        pytest.fail(f"{argv} blocked on {path}")
    return box["answer"]


NOT_FILES = st.sampled_from(["fifo", "dev-zero", "dev-urandom", "dev-null", "directory"])


@FUZZ
@given(kind=NOT_FILES, role=st.sampled_from(["results", "baseline", "policy", "expectations"]))
def test_fuzz_fifos_and_devices_where_files_are_read(tmp_path_factory, kind, role):
    run, outside = _folder(tmp_path_factory)
    good = run / "good.json"
    good.write_text(_results())
    exp = run / "exp"
    exp.mkdir()
    path = {"results": run / "results.json", "baseline": run / "base.json", "policy": run / "policy.toml",
            "expectations": exp / "emu.toml"}[role]
    _not_a_file(path, kind)
    argvs = {"results": [["gate", str(path)], ["merge", str(path), "-o", str(run / "m" / "results.json")],
                         ["report", str(path), "--out", str(run / "r")],
                         ["expectations", "update", str(path), "--dir", str(run / "noexp")]],
             "baseline": [["gate", str(good), "--baseline", str(path)]],
             "policy": [["gate", str(good), "--policy", str(path)]],
             "expectations": [["expectations", "check", "--dir", str(exp)],
                              ["expectations", "update", str(good), "--dir", str(exp)]]}[role]
    for argv in argvs:
        code, err = _bounded(argv, path, outside)
        assert code == 2 and str(path) in err and "Traceback" not in err, (argv, code, err)
        assert "not a regular file" in err or "is a directory" in err, err
