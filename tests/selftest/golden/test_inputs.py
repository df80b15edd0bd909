"""Inputs are identical bytes on any machine: pinned digests of a few generated cases."""
import numpy as np
import pytest

from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden import inputs as G
from accel_regress.golden.case import Case, case_seed
from accel_regress.golden.dtypes import to_bf16
from accel_regress.golden.inputs import near_normal, rng, sha256_of, small_integers

# Pinned once; a change means every stored golden and every cross-machine comparison breaks.
PINNED = {
    "M64-K512-N256-m16-k64-n64-c4-bT-cF-P4": "758b82ec8874e07fb87d9ad58fa41aab77c58e27ba243709151d2a21a3d6f5a8",
    "M192-K384-N64-m48-k96-n16-c4-bF-cF-P1": "bda11849f067306c10efa407d91f1ac344cc5d5281c2be4dbd870560f77435e4",
}


def test_case_seed_is_stable():
    assert case_seed("gemm_partition_n", "M64-K512-N256-m16-k64-n64-c4-bT-cF-P4") == 3812775030
    assert case_seed("gemm_partition_n", "x", base=1) != case_seed("gemm_partition_n", "x", base=0)


def test_gemm_inputs_are_pinned():
    for cfg in gemm.CI_CONFIGS:
        if cfg.id in PINNED:
            inputs = gemm.make_inputs(gemm.make_case(cfg))
            assert sha256_of(inputs) == PINNED[cfg.id], cfg.id


def test_inputs_are_bf16_values():
    inputs = gemm.make_inputs(gemm.make_case(gemm.CI_CONFIGS[7]))
    for a in inputs.values():
        bits = a.view(np.uint32)
        assert not (bits & 0xFFFF).any(), "low 16 bits of a bf16 value held in f32 must be zero"


def test_generators_repeat_and_differ_by_seed():
    a = near_normal(rng(5), (100,))
    assert np.array_equal(a, near_normal(rng(5), (100,)))
    assert not np.array_equal(a, near_normal(rng(6), (100,)))
    assert abs(a.std() - 1.0) < 0.2
    ints = small_integers(rng(5), (1000,), -4, 4)
    assert ints.min() == -4 and ints.max() == 4


def test_digest_covers_name_dtype_and_shape():
    x = np.zeros(4, np.float32)
    assert sha256_of({"a": x}) != sha256_of({"b": x})
    assert sha256_of({"a": x}) != sha256_of({"a": x.astype(np.float64)})
    assert sha256_of({"a": x}) != sha256_of({"a": x.reshape(2, 2)})


def test_case_round_trips_through_json():
    case = Case.make("gemm_partition_n", "id", {"M": 1})
    assert Case.from_json(case.to_json()) == case and Case.from_json(case.to_json()).key == case.key


# --- the word stream: numpy's own draws, in bulk ---------------------------------------------------

def _integers_uniform(g, shape, low=-1.0, high=1.0):
    """``uniform`` as numpy's Generator.integers draws it (the definition the fast path keeps)."""
    ints = g.integers(0, 1 << 24, size=shape, dtype=np.int64)
    return low + (high - low) * (ints.astype(np.float64) * 2.0 ** -24)


def _integers_near_normal(g, shape, scale=1.0):
    return sum(_integers_uniform(g, shape) for _ in range(4)) * (np.sqrt(3.0) / 2.0) * scale


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.fixture(params=["serial", "pieces"])
def pieces(request, monkeypatch):
    """Run the draws as they are, and with the piecewise (threaded) path taken at small sizes."""
    if request.param == "pieces":
        monkeypatch.setattr(G, "_PARALLEL_MIN", 16)
        monkeypatch.setattr(G, "_BLOCK", 6)
    return request.param


def test_draws_match_numpy_integers_over_mixed_calls(pieces):
    """Odd and even sizes leave a pending 32-bit word or consume one; every call, whatever came
    before, gives the bytes and the generator state numpy's integers-based draws give."""
    plan = np.random.default_rng(17)
    for trial in range(60):
        seed = int(plan.integers(1 << 30))
        fast, slow = rng(seed), rng(seed)
        for step in range(10):
            what = int(plan.integers(0, 5))
            n = int(plan.integers(0, 9)) if plan.random() < 0.5 else int(plan.integers(9, 400))
            shape = (n,) if plan.random() < 0.5 else (n, int(plan.integers(1, 4)))
            scale = float(plan.choice([1.0, 4.0, 0.3, 2.0 ** -0.5]))
            if what == 0:
                a, b = G.uniform(fast, shape, 0.5, 1.5), _integers_uniform(slow, shape, 0.5, 1.5)
            elif what == 1:
                a, b = G.near_normal(fast, shape, scale), _integers_near_normal(slow, shape, scale)
            elif what == 2:
                a = G.near_normal_bf16(fast, shape, scale)
                b = to_bf16(_integers_near_normal(slow, shape, scale)).astype(np.float32)
            elif what == 3:
                a, b = G.signs(fast, shape), G.signs(slow, shape)
            else:
                a, b = fast.integers(0, 1 << 24, size=shape), slow.integers(0, 1 << 24, size=shape)
            assert _same(a, b), (trial, step, what, shape)
            assert fast.bit_generator.state == slow.bit_generator.state, (trial, step, what, shape)


def test_pending_word_is_used_first_and_left_for_the_next_call():
    for pending_before in (False, True):
        fast, slow = rng(3), rng(3)
        if pending_before:
            fast.integers(0, 2, size=1), slow.integers(0, 2, size=1)
            assert fast.bit_generator.state["has_uint32"] == 1
        for n in (1, 2, 5):
            assert _same(G.uniform(fast, (n,)), _integers_uniform(slow, (n,)))
            assert fast.bit_generator.state == slow.bit_generator.state


def test_near_normal_bf16_writes_into_rows_of_a_larger_array(pieces):
    out = np.zeros((6, 10), np.float32)
    G.near_normal_bf16(rng(4), (2, 10), 4.0, out=out[2:4])
    assert _same(out[2:4], to_bf16(_integers_near_normal(rng(4), (2, 10), 4.0)).astype(np.float32))
    assert not out[:2].any() and not out[4:].any()
    with pytest.raises(ValueError, match="C-contiguous"):
        G.near_normal_bf16(rng(4), (6, 2), out=out[:, :2])
