"""Issue 19 item 11: an IREE compile cache entry carries a checksummed index; a truncated,
corrupted, index-less or hostile entry is discarded and rebuilt with a note, never trusted.
Plus the fuzz of the cache index (hypothesis): whatever index.json holds, checking the entry
answers with a reason or None, never raises, never reads outside the entry."""
import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_regress.toolchains.iree import compiler

pytestmark = pytest.mark.skipif(compiler.availability() is not None, reason=str(compiler.availability()))

MLIR = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _flags():
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    return HOST_FLAGS


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("iree-cache")
    first = compiler.compile_cached(MLIR, _flags(), root=root, name="add")
    return root, first


def _again(root):
    compiler._verified.clear()          # a new process: nothing checked yet
    return compiler.compile_cached(MLIR, _flags(), root=root, name="add")


def test_a_good_entry_is_a_hit(built):
    root, first = built
    assert not first.cached and (first.dir / "index.json").is_file()
    again = _again(root)
    assert again.cached and again.note == ""


@pytest.mark.parametrize("attack", ["truncate", "flip", "no-index", "garbage-index", "other-key",
                                    "escape", "symlink"])
def test_a_bad_entry_is_discarded_and_rebuilt(built, capsys, attack):
    root, first = built
    entry = first.dir
    vmfb = entry / compiler.VMFB
    index = entry / "index.json"
    if attack == "truncate":
        vmfb.write_bytes(vmfb.read_bytes()[:100])
    elif attack == "flip":
        data = bytearray(vmfb.read_bytes())
        data[len(data) // 2] ^= 0xFF
        vmfb.write_bytes(bytes(data))
    elif attack == "no-index":
        index.unlink()
    elif attack == "garbage-index":
        index.write_text("{\"files\": [1, 2")
    elif attack == "other-key":
        doc = json.loads(index.read_text())
        index.write_text(json.dumps({**doc, "key": "0" * 64}))
    elif attack == "escape":
        doc = json.loads(index.read_text())
        doc["files"]["../../../../etc/passwd"] = {"size": 1, "sha256": "0" * 64}
        index.write_text(json.dumps(doc))
    elif attack == "symlink":
        vmfb.unlink()
        os.symlink("/etc/hostname", vmfb)
    again = _again(root)
    assert not again.cached, "a bad entry was trusted"
    assert "discarded entry" in again.note and "rebuilt" in again.note
    assert "discarded entry" in capsys.readouterr().err
    assert compiler.entry_problem(again.dir, again.dir.name, compiler.VMFB) is None
    assert _again(root).cached                       # the rebuilt entry is a hit again


index_docs = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10)
    | st.sampled_from(["module.vmfb", "../outside/secret", "/etc/passwd", "argv.txt", "0" * 64]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["key", "output", "files", "size", "sha256", "module.vmfb", "../outside/secret"]),
        inner, max_size=4),
    max_leaves=10)


class _Opens:
    seen = None

    @classmethod
    def hook(cls, event, args):
        if cls.seen is not None and event == "open" and isinstance(args[0], (str, os.PathLike)):
            cls.seen.append(os.fspath(args[0]))


sys.addaudithook(_Opens.hook)


@settings(max_examples=int(os.environ.get("ACCEL_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(doc=index_docs, raw=st.booleans(), text=st.text(max_size=30))
def test_fuzz_cache_index(built, doc, raw, text):
    root, first = built
    folder = root / "fuzz" / first.dir.name
    outside = root / "fuzz" / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret").write_text("secret")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / compiler.VMFB).write_bytes(b"not a module")
    (folder / "index.json").write_text(text if raw else json.dumps(doc))
    compiler._verified.clear()
    _Opens.seen = []
    try:
        problem = compiler.entry_problem(folder, folder.name, compiler.VMFB)
    finally:
        opened, _Opens.seen = _Opens.seen, None
    assert problem is not None                        # nothing generated matches the real checksum
    assert not [p for p in opened if str(outside) in p or p == "/etc/passwd"], opened
