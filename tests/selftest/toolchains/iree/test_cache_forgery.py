"""Issue 47 S1: a compiled module in the cache root is code the suite runs, so a checksum anyone
can recompute is no seal. A module replaced with another program's and its index.json checksums
recomputed (the attack that turned the real erf(-0) FAIL into PASS), an index stripped of its
signature, or one signed with another key is rebuilt, never loaded. The key lives outside the root ($ACCEL_GOLDEN_CACHE_KEY_FILE, golden/store.py)."""
import hashlib
import json

import numpy as np
import pytest

from accel_regress.toolchains.iree import compiler

pytestmark = pytest.mark.skipif(compiler.availability() is not None, reason=str(compiler.availability()))

ADD = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
SUB = ADD.replace("arith.addf", "arith.subf")
A = np.array([1, 2, 3, 4], np.float32)
B = np.array([10, 20, 30, 40], np.float32)


def _flags():
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    return HOST_FLAGS


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    compiler._verified.clear()
    return compiler.cache_root()


def _run(compiled) -> np.ndarray:
    import iree.runtime as rt
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, compiled.vmfb.read_bytes()))
    return np.asarray(ctx.modules.module[compiled.symbol("f")](A, B).to_host())


def _again():
    compiler._verified.clear()            # a new process: nothing checked yet
    return compiler.compile_cached(ADD, _flags(), name="add")


def _recompute_checksums(entry, doc):
    for name in doc["files"]:
        data = (entry / name).read_bytes()
        doc["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (entry / "index.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("forgery", ["checksums-recomputed", "signature-stripped", "another-key"])
def test_a_forged_module_is_rebuilt_not_run(root, tmp_path, monkeypatch, capsys, forgery):
    first = compiler.compile_cached(ADD, _flags(), name="add")
    assert (_run(first) == A + B).all()
    entry = first.dir
    evil = compiler.compile_cached(SUB, _flags(), name="sub")       # what an attacker would plant
    (entry / compiler.VMFB).write_bytes(evil.vmfb.read_bytes())
    doc = json.loads((entry / "index.json").read_text())
    if forgery == "signature-stripped":
        doc.pop("mac", None), doc.pop("key_id", None)
    _recompute_checksums(entry, doc)
    if forgery == "another-key":            # the attacker signs with a key of its own
        from accel_regress.core import build_seal
        monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "attacker.key"))
        (entry / "index.json").write_text(json.dumps(build_seal.sign(
            {k: v for k, v in doc.items() if k not in ("mac", "key_id")})))
        monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    capsys.readouterr()
    again = _again()
    assert not again.cached, "a forged module was trusted"
    assert (_run(again) == A + B).all(), "the forged module ran"
    err = capsys.readouterr().err
    if forgery == "checksums-recomputed":
        assert "signature does not match" in again.note and "discarded entry" in err
    else:
        assert "not this machine's" in again.note and "never run" in err
    assert _again().cached                      # the rebuilt entry is signed: a hit again


def test_an_unsigned_root_is_said_once(root, capsys):
    first = compiler.compile_cached(ADD, _flags(), name="add")
    second = compiler.compile_cached(SUB, _flags(), name="sub")
    for entry in (first.dir, second.dir):
        doc = json.loads((entry / "index.json").read_text())
        doc.pop("mac", None), doc.pop("key_id", None)
        (entry / "index.json").write_text(json.dumps(doc))
    capsys.readouterr()
    from accel_regress.core import build_seal
    compiler._verified.clear()
    build_seal._said.clear()
    assert not compiler.compile_cached(ADD, _flags(), name="add").cached
    assert not compiler.compile_cached(SUB, _flags(), name="sub").cached
    assert capsys.readouterr().err.count("not signed with this machine's key") == 1

