"""Issue 47 defect 12: an entry reached through a batch link (compile ahead's batches) that did not
verify was rebuilt without a word, while one of the program's own says so (README, docs/howto/
ci-caches.md), and the bad batch stayed on disk for every later reader to check again. The batch
is real (compile_batch of two programs); its module is corrupted by flipping one byte."""
import numpy as np

from accel_regress.toolchains.iree import compiler

from test_cache_forgery import ADD, SUB, A, B, _flags, _run, root  # noqa: F401  (root: the fixture)


def test_a_corrupt_batch_is_said_discarded_and_rebuilt(root, capsys):
    batch = compiler.compile_batch([ADD, SUB], _flags(), name="add and sub")
    assert batch is not None and compiler.compile_cached(ADD, _flags(), name="add").dir == batch.dir
    module = batch.dir / compiler.VMFB
    data = bytearray(module.read_bytes())
    data[len(data) // 2] ^= 0x01
    module.write_bytes(bytes(data))
    compiler._verified.clear()                # a new process: nothing checked yet
    capsys.readouterr()

    add = compiler.compile_cached(ADD, _flags(), name="add")
    err = capsys.readouterr().err
    assert not add.cached and add.dir != batch.dir
    assert f"discarded entry {batch.dir}" in add.note and f"discarded entry {batch.dir}" in err, (add.note, err)
    assert not batch.dir.exists(), "the bad batch stays on disk"
    np.testing.assert_array_equal(_run(add), A + B)
    # The batch's other program finds its link dangling: rebuilt too, said once (above), not again.
    sub = compiler.compile_cached(SUB, _flags(), name="sub")
    assert not sub.cached and "discarded" not in capsys.readouterr().err
    np.testing.assert_array_equal(_run(sub), A - B)
    assert not list((root / compiler.BATCHED).glob("*.json"))
