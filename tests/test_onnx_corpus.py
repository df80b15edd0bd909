"""The ONNX node corpus (issue 45): every node case of the installed onnx, on every backend that
has a program for it, judged by its error model (families/onnx_node/error_models.py).

The default run takes one case per operator type (golden.representatives: chosen from the corpus
alone); ``-m corpus`` runs all of it. Either generates the corpus once per onnx version and seed,
kept in the cache root (families/onnx_node/corpus.py). ``--golden-seed N`` draws the corpus's random inputs
from another seed. Each case's ``error_model`` parameter says what judged it; ``corpus`` means no
model yet, compared as onnx compares (its rtol / atol), which the message and the record say.
"""
import numpy as np
import pytest

from accel_regress.golden import assert_close
from accel_regress.families.onnx_node import corpus as C
from accel_regress.families.onnx_node import golden as G
from accel_regress.plugin import selection
from accel_regress.plugin.ahead import case_fixture

pytestmark = pytest.mark.family(G.OP)


def _params(config) -> list:
    full = selection.wants(config, "corpus")
    # The full corpus's items carry the opt-in marker; the default sample's do not.
    marks = [pytest.mark.corpus] if full else []
    reason = C.unavailable()
    if reason:
        return [pytest.param(("none", None), id="onnx-corpus", marks=[*marks, pytest.mark.skip(reason=reason)])]
    try:
        cases = G.cases(config.getoption("accel_golden_seed"))
    except C.CorpusError as exc:
        return [pytest.param(("error", str(exc)), id="onnx-corpus", marks=marks)]
    return [pytest.param(("case", c), id=c.id, marks=marks) for c in (cases if full else G.representatives(cases))]


def pytest_generate_tests(metafunc):
    if "cfg" in metafunc.fixturenames:
        metafunc.parametrize("cfg", _params(metafunc.config), indirect=True, scope="module")


@pytest.fixture(scope="module")
def cfg(request):
    return request.param


@case_fixture
def case(cfg):
    __tracebackhide__ = True    # the corpus could not be generated: its message is the error
    what, value = cfg
    if what == "error":
        raise C.CorpusError(value)      # an Exception (not pytest.fail): compile ahead skips the item
    return value


# The corpus folder is these values' cache already (loaded and checked against its sha256s): the
# golden store would keep a second copy of each.
@pytest.fixture(scope="module")
def inputs(case):
    return G.make_inputs(case)


@pytest.fixture(scope="module")
def expected(case, inputs):
    ref = G.reference(case, inputs)
    return ref, G.tolerances(case, inputs, ref)


@pytest.fixture(scope="module")
def run(hw, case, inputs):
    return hw.run(case, inputs)


def test_onnx_node(run, case, expected):
    ref, tol = expected
    for name in G.output_names(case):
        got = run[name]
        what = f"{case.params['op_type']} output {name!r} ({case.params['error_model']}: {case.params['judged_by']})"
        if ref[name].dtype.kind in "US":
            assert got.shape == ref[name].shape and np.array_equal(got.astype(str), ref[name].astype(str)), (
                f"{what}: strings differ: got {got.ravel()[:8].tolist()}, expected {ref[name].ravel()[:8].tolist()}")
            continue
        assert_close(G.widened(got), ref[name], tol=tol[name], name=what, zero_sign=G.zero_sign(case))
