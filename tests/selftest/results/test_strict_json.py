"""Issue 19 item 2: everything the suite writes is strict JSON (no bare NaN / Infinity), and both
forms read back with the non-finite numbers restored."""
import json
import math
import socket

import numpy as np

from accel_regress.results import merge, record as results
from accel_regress.core.isolation import protocol


def _strict(text: str):
    def refuse(word):
        raise ValueError(f"bare {word} is not JSON")
    return json.loads(text, parse_constant=refuse)


def _nan_case():
    return {"nodeid": "t.py::test_x[emu-a]", "test": "test_x[emu-a]", "backend": "emu", "family": "f",
            "verdict": "FAIL", "stage": "compare", "message": "NaN", "duration_s": 0.1, "runs": [],
            "census": [{"max_abs": math.nan, "max_rel": math.inf, "mean": np.float32("-inf"), "n": 3}],
            "detail": {"note": "Infinity"}, "versions": {}}


def test_results_files_are_strict_and_read_back(tmp_path):
    sink = results.Sink(tmp_path, {"host": "h", "t": math.nan}, {})
    sink.add(_nan_case())
    sink.finish(interrupted=False)
    for path in (tmp_path / "results.json", tmp_path / "results.jsonl"):
        for chunk in ([path.read_text()] if path.suffix == ".json" else path.read_text().splitlines()):
            _strict(chunk)                               # jq / JSON.parse accept it
    (case,) = results.load(tmp_path / "results.json")["cases"]
    census = case["census"][0]
    assert math.isnan(census["max_abs"]) and census["max_rel"] == math.inf and census["mean"] == -math.inf
    assert case["message"] == "NaN" and case["detail"]["note"] == "Infinity"    # real strings stay strings
    assert sink.cases()[0]["census"][0]["max_rel"] == math.inf


def test_old_files_with_bare_nan_still_read(tmp_path):
    data = results.build({}, {}, [_nan_case()])
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data, default=float))     # the old writer: bare NaN
    assert "NaN," in path.read_text()
    assert math.isnan(results.load(path)["cases"][0]["census"][0]["max_abs"])


def test_merge_and_the_isolation_channel_write_strict_json(tmp_path):
    src = tmp_path / "run" / "results.json"
    src.parent.mkdir()
    src.write_text(json.dumps(results.build({}, {}, [_nan_case()]), default=float))   # old form in, strict out
    out = tmp_path / "m" / "results.json"
    assert merge.main([str(src), "-o", str(out)]) == 0
    _strict(out.read_text())
    a, b = socket.socketpair()
    protocol.send(a, {"detail": {"x": math.nan}})
    assert math.isnan(protocol.recv(b)["detail"]["x"])
    a.close(), b.close()
