"""The shipped known-bug files (expectations/): valid and canonical, every entry matches a test of
the suite, and each seeded bug's entries agree case for case with the emu model of that bug.

The agreement check runs the family on ``emu`` with the bug's built-in fault injected (plainly,
--ignore-expectations) and asks the update command what it would change if the backend's
entries were emu's: nothing, when every failing case is listed with its verdict and no listed
case passes.
"""
import textwrap
from pathlib import Path

import pytest

# Imported before pytester's in-process runs: a module first imported inside one of them is
# dropped again afterwards, and numpy / torch cannot be imported twice in one process.
import numpy  # noqa: F401
import torch  # noqa: F401
import accel_regress.families.gemm_partition_n.golden  # noqa: F401
import accel_regress.families.matmul.golden  # noqa: F401
import accel_regress.families.f32_reduction.golden  # noqa: F401
import accel_regress.families.rowexpandmul_fillpad.golden  # noqa: F401
import accel_regress.backends.emu  # noqa: F401
import accel_regress.toolchains.iree.riscv  # noqa: F401
import accel_regress.plugin  # noqa: F401
from accel_regress.results import expectations as X
from accel_regress.results import expectations_update as U
from accel_regress.results.expectations_update import propose
from accel_regress.results import record as results
from accel_regress.results.keys import test_key as key_of

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
EXPECTATIONS = REPO / "expectations"
FILES = sorted(p.name for p in (REPO / "tests").glob("test_*.py"))    # every family's test file

# Seed 000 has two bugs at once on the NPU: both built-in faults; forward() last, since it reads
# the (stale) C_i buffers.
SEED000 = textwrap.dedent('''
    from accel_regress.core.faults import builtin
    _F = builtin()

    def both(case, outputs):
        return _F["iron-gemm-forward-shape"](case, _F["iron-gemm-stale-dma"](case, outputs))
''')

TILES = "(seed-R16-C256-vr1- or R8-C64-vr3-vc48-f32-padzero or R4-C64-vr0-vc64-f32-padzero) and not a2a3sim and not lint"
AGREEMENT = [
    # expectation file, test file, fault, -k subset (kept small: a few seconds each)
    ("npu", "test_gemm_partition_n.py", "seed000.py:both", "M64-K512-N256 or M192-K384-N64-m48-k96-n16-c4-bF or vocab-mini"),
    ("a2a3", "test_rowexpandmul_fillpad.py", "pto-bare-tile-validshape", TILES),
    ("a2a3sim", "test_rowexpandmul_fillpad.py", "pto-bare-tile-validshape-sim", TILES),
    ("iree-amd-aie", "test_matmul.py", "aie-matmul-4x2-herd-hang", "(cube-M512 or cube-M640) and bf16 or f32-halved"),
    ("iree-amd-aie", "test_matmul.py", "aie-matmul-remainder-compile", "square-M2432 and exact or square-M2048 and exact"),
    ("firesim", "test_f32_reduction.py", "saturn-f32-reduction-hang", "test_f32_reduction and not novec"),
]


def test_shipped_files_are_valid_and_canonical(capsys):
    assert U.main(["check", "--dir", str(EXPECTATIONS)]) == 0, capsys.readouterr().out
    exp = X.load_dir(EXPECTATIONS)
    assert {"npu", "a2a3", "a2a3sim", "iree-amd-aie", "firesim"} <= set(exp.backends)
    assert all(e.issue.startswith(("https://", "internal:")) for e in exp.entries)


def test_every_entry_matches_a_test_of_the_suite(pytester):
    res = pytester.runpytest_inprocess(*[str(REPO / "tests" / f) for f in FILES], "--rootdir", str(REPO),
                                       "--collect-only", "-q", "--hw", "all", "-m", "large or not large",
                                       "-p", "no:randomly")
    nodeids = [line for line in res.outlines if "::" in line and not line.startswith(" ")]
    assert len(nodeids) > 500
    # The ONNX corpus's cases past the default run's sample are opt-in (-m corpus); its entries are
    # for the backends that run the corpus (one session: the corpus is generated once per root).
    corpus = pytester.runpytest_inprocess(str(REPO / "tests" / "test_onnx_corpus.py"), "--rootdir", str(REPO),
                                          "--collect-only", "-q", "-m", "corpus", "-p", "no:randomly",
                                          "--hw", ",".join(sorted({e.backend for e in X.load_dir(EXPECTATIONS).entries
                                                                   if "test_onnx_corpus.py" in e.test})))
    nodeids += [line for line in corpus.outlines if "::" in line and not line.startswith(" ")]
    exp = X.load_dir(EXPECTATIONS)
    unmatched = [f"{e.file}: {e.test}" for e in exp.entries
                 if not any(key_of(n, e.backend) != n and e.matches(key_of(n, e.backend)) for n in nodeids)]
    assert not unmatched, "entries that match no test of the suite:\n" + "\n".join(unmatched)


@pytest.mark.parametrize("backend, test_file, fault, subset", AGREEMENT,
                         ids=[f"{a[0]}-{a[2].split('.')[0]}" for a in AGREEMENT])
def test_seeded_entries_agree_with_the_emu_model_of_the_bug(pytester, backend, test_file, fault, subset):
    pytester.makepyfile(seed000=SEED000)
    report_dir = pytester.path / "reports"
    res = pytester.runpytest_inprocess(str(REPO / "tests" / test_file), "--rootdir", str(REPO), "--hw", "emu",
                                       "--inject-fault", str(pytester.path / fault) if fault.endswith(":both") else fault,
                                       "--ignore-expectations", "--isolation", "none", "-k", subset,
                                       "--report-dir", str(report_dir), "-p", "no:randomly")
    data = results.load(report_dir / "results.json")
    bad = [c for c in data["cases"] if c["verdict"] in X.EXPECTABLE]
    assert bad, f"the fault {fault} made nothing fail: {res.parseoutcomes()}"
    as_emu = X.Expectations([X.Entry("emu", e.test, e.verdict, e.reason, e.issue, e.file)
                             for e in X.load_dir(EXPECTATIONS).for_backend(backend)])
    proposed, notes = propose(as_emu, data)
    assert notes == [], f"{backend}.toml disagrees with the {fault} model:\n" + "\n".join(notes)
    assert [(e.test, e.verdict) for e in proposed["emu"]] == [(e.test, e.verdict) for e in as_emu.for_backend("emu")]
