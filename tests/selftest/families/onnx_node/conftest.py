import pytest

from accel_regress.families.onnx_node import corpus as C

# Generator modules of onnx.backend.test.case.node for a corpus of a handful of cases per class:
# exact (transpose), exact-value (relu, maxpool: test_maxpool_3d_default has elements under 1e-4),
# ulp (exp, sigmoid), accumulation (reducesum, matmul, gemm) and the corpus class (softmax's
# expanded cases).
MODULES = ("transpose", "relu", "maxpool", "exp", "sigmoid", "reducesum", "matmul", "gemm", "softmax")


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """(cache root, cases) of MODULES at seed 0, generated once per test module."""
    if C.unavailable():
        pytest.skip(C.unavailable())
    from accel_regress.families.onnx_node import golden as G
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACCEL_CACHE_DIR", str(root))
        for var in ("XDG_CACHE_HOME",):
            mp.delenv(var, raising=False)
        cases = G.cases(0, MODULES)
        yield root, cases


@pytest.fixture
def in_corpus_root(small_corpus, monkeypatch):
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(small_corpus[0]))
    return small_corpus[1]
