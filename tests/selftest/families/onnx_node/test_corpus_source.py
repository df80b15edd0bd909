"""The corpus as a case source: deterministic, shifted by the golden seed, checked on read."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.families.onnx_node import corpus as C
from accel_regress.families.onnx_node import golden as G

pytestmark = pytest.mark.skipif(C.unavailable() is not None, reason=str(C.unavailable()))
MODULES = ("softmax", "transpose")


def _generate(out: Path, seed: int) -> dict:
    subprocess.run([sys.executable, "-m", C.MODULE, "--seed", str(seed), "--out", str(out),
                    *[a for m in MODULES for a in ("--module", m)]], check=True, capture_output=True)
    return json.loads((out / "index.json").read_text())


def _files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_two_generations_are_equal_and_a_golden_seed_shifts_the_draws(tmp_path):
    a, b, shifted = tmp_path / "a", tmp_path / "b", tmp_path / "s"
    for p in (a, b, shifted):
        p.mkdir()
    ia, ib, i1 = _generate(a, 0), _generate(b, 0), _generate(shifted, 1)
    assert ia == ib and _files(a) == _files(b)
    names = [c["name"] for c in ia["cases"]]
    assert len(names) > 20 and "test_softmax_axis_1" in names and "test_transpose_default" in names
    by = {c["name"]: c for c in ia["cases"]}
    by1 = {c["name"]: c for c in i1["cases"]}
    # Random inputs (np.random.randn after the exporter's seed) differ at seed 1, fixed ones do not.
    assert (a / "cases/test_softmax_axis_1/in0.npy").read_bytes() != (shifted / "cases/test_softmax_axis_1/in0.npy").read_bytes()
    assert by["test_softmax_example"]["inputs"] == by1["test_softmax_example"]["inputs"]


def test_cases_carry_the_corpus_parameters(in_corpus_root):
    cases = {c.id: c for c in in_corpus_root}
    c = cases["onnx-test_softmax_axis_1"]
    assert (c.op, c.params["op_type"], c.params["opset"], c.params["expanded"]) == (G.OP, "Softmax", 13, False)
    assert c.params["in_dtypes"] == ["float32"] and c.params["in_shapes"] == [[3, 4, 5]]
    assert c.params["attrs"] == {"axis": 1}
    assert cases["onnx-test_softmax_axis_1_expanded"].params["expanded"] is True
    assert cases["onnx-test_softmax_axis_1_expanded"].params["op_type"] == "Softmax"
    assert c.params["reference_check"] == "agrees"


def test_a_damaged_corpus_file_is_an_error_naming_it(in_corpus_root):
    c = next(c for c in in_corpus_root if c.id == "onnx-test_transpose_default")
    path = G.corpus_of(c.params["corpus_key"]).folder / "cases" / "test_transpose_default" / "in0.npy"
    data = path.read_bytes()
    try:
        path.write_bytes(data[:-4] + b"\0\0\0\1")
        with pytest.raises(C.CorpusError, match="does not match its sha256"):
            G.make_inputs(c)
    finally:
        path.write_bytes(data)


def test_without_onnx_the_corpus_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(C, "onnx_version", lambda: None)
    assert "onnx is not installed" in C.unavailable() and "accel-regress[corpus]" in C.unavailable()
    with pytest.raises(C.CorpusError, match="onnx is not installed"):
        C.ensure(0, MODULES)


def _session(tmp_path, cache: Path, *args) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "XDG_"))}
    env.update({"ACCEL_CACHE_DIR": str(cache), "ACCEL_HISTORY": "none"})
    repo = Path(__file__).resolve().parents[4]
    return subprocess.run([sys.executable, "-m", "pytest", "tests/test_onnx_corpus.py", "--hw", "onnxruntime", "-q",
                           "-p", "no:cacheprovider", "-n", "0", "--report-dir", str(tmp_path / "reports"), *args],
                          cwd=repo, env=env, capture_output=True, text=True).stdout


def test_without_m_corpus_the_module_generates_nothing(tmp_path):
    """The corpus is opt-in like ``large``: a default run deselects its one placeholder item and
    leaves the cache root without a corpus."""
    out = _session(tmp_path, tmp_path / "cache")
    assert "1 deselected" in out, out[-2000:]
    assert not (tmp_path / "cache" / C.CACHE_NAME).exists()


def test_a_corpus_that_cannot_be_kept_is_one_error_with_the_reason(tmp_path):
    (tmp_path / "file").write_text("")
    out = _session(tmp_path, tmp_path / "file", "-m", "corpus")
    assert "1 error" in out and "the ONNX corpus cannot be kept under" in out and "Traceback" not in out, out[-2000:]
