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
    return json.loads((out / C.INDEX).read_text())


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


def test_the_default_run_takes_one_case_per_operator_type(in_corpus_root):
    """The default run's sample: one case per operator type, the op's own node before its expanded
    body and a modelled class first, chosen from the corpus alone (any order of the cases gives
    the same sample), its ids those of the full corpus."""
    import random
    cases = in_corpus_root
    sample = G.representatives(cases)
    assert sorted(c.params["op_type"] for c in sample) == sorted({c.params["op_type"] for c in cases})
    assert not any(c.params["expanded"] for c in sample)
    by_op = {c.params["op_type"]: c for c in sample}
    assert by_op["Exp"].params["error_model"] == "ulp" and by_op["Softmax"].params["error_model"] == "corpus"
    shuffled = list(cases)
    random.Random(7).shuffle(shuffled)
    assert [c.id for c in G.representatives(shuffled)] == [c.id for c in sample]
    assert {c.id for c in sample} <= {c.id for c in cases}


def test_a_corpus_that_cannot_be_kept_is_one_error_with_the_reason(tmp_path):
    (tmp_path / "file").write_text("")
    out = _session(tmp_path, tmp_path / "file", "-m", "corpus")
    assert "1 error" in out and "the ONNX corpus cannot be kept under" in out and "Traceback" not in out, out[-2000:]


def test_the_corpus_folder_is_sealed_and_checked_as_build_entries_are(tmp_path, monkeypatch, capsys):
    """hardware/core/build_seal.py: a folder not signed with this machine's key is generated again
    (said once); one whose seal no longer matches its files is discarded and generated again, said
    with the folder (as an IREE module that does not verify is rebuilt)."""
    from accel_regress.core import build_seal
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path))
    folder = C.ensure(0, MODULES).folder
    assert build_seal.entry_problem(folder, C._seal_key(folder.name), C.INDEX) is None
    seal = folder / build_seal.INDEX
    doc = json.loads(seal.read_text())
    seal.write_text(json.dumps({**doc, "key_id": "0" * 16}))
    again = C.ensure(0, MODULES).folder
    assert again == folder and build_seal.entry_problem(folder, C._seal_key(folder.name), C.INDEX) is None
    assert "not signed with this machine's key" in capsys.readouterr().err
    index = folder / C.INDEX
    index.write_text(index.read_text().replace('"softmax"', '"softmax" '))
    C.ensure(0, MODULES)
    err = capsys.readouterr().err
    assert f"discarded {folder}" in err and "corpus.json does not match its checksum" in err
    assert build_seal.entry_problem(folder, C._seal_key(folder.name), C.INDEX) is None
