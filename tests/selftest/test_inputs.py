"""Inputs are identical bytes on any machine: pinned digests of a few generated cases."""
import numpy as np

from golden import gemm
from golden.case import Case, case_seed
from golden.inputs import near_normal, rng, sha256_of, small_integers

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
