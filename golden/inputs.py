"""Seeded input generators that give identical bytes on every machine.

Only integer arithmetic and exactly rounded IEEE operations are used: PCG64 integers, scaled by
powers of two, summed (Irwin-Hall, a near-normal shape) and rounded to the target dtype. No libm
call (log, cos) takes part, so no platform's libm can change a bit.
"""
from __future__ import annotations

import hashlib
from typing import Mapping

import numpy as np

from accel_regress.golden import bulk
from accel_regress.golden.dtypes import to_bf16


def rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


# numpy's Generator.integers(0, 2**24) is, per value, one 32-bit word of the bit generator shifted
# right by 8: it takes Lemire's bounded path for a range in 32 bits (numpy v2.4.6,
# numpy/random/src/distributions/distributions.c random_bounded_uint64_fill, line 1538), whose
# rejection threshold (2**32 - 2**24) % 2**24 is 0 and whose result is (word * 2**24) >> 32
# (buffered_bounded_lemire_uint32, lines 1305-1340). PCG64 hands out a 64-bit output as its low
# word, then its high word, keeping the high word pending in its state (numpy/random/src/pcg64/
# pcg64.h pcg64_next32, lines 386-396); random_raw returns whole 64-bit outputs and leaves the
# pending word alone (numpy/random/_common.pyx random_raw). So the words come from random_raw in
# bulk, with the pending word handled here: the same bytes as gen.integers, several times faster.
_WORD_SHIFT = 8


def _words(gen: np.random.Generator, count: int) -> np.ndarray:
    """The next ``count`` 32-bit words of ``gen`` (uint32), as ``count`` next_uint32 calls take
    them, leaving the state as those calls would: a high word pending, or the last one consumed
    still in ``uinteger`` (pcg64_next32 clears only ``has_uint32``)."""
    bitgen = gen.bit_generator
    state = bitgen.state
    if state["bit_generator"] != "PCG64":
        raise TypeError(f"the word stream follows PCG64's next_uint32, not {state['bit_generator']}'s")
    if count <= 0:
        return np.empty(0, np.uint32)
    pending = state["has_uint32"]
    outputs = (count - pending + 1) // 2                # fresh 64-bit outputs, low word first
    out = np.empty(pending + 2 * outputs, np.uint32)
    if pending:
        out[0] = state["uinteger"]
    if outputs:
        out[pending:] = bitgen.random_raw(outputs).astype("<u8", copy=False).view("<u4")
        state = bitgen.state
        state["uinteger"] = int(out[-1])
    state["has_uint32"] = (count - pending) & 1
    bitgen.state = state
    return out[:count]


def uniform(gen: np.random.Generator, shape, low=-1.0, high=1.0) -> np.ndarray:
    """Uniform in [low, high) on a 2**-24 grid, as float64."""
    ints = (_words(gen, int(np.prod(shape, dtype=np.int64))) >> _WORD_SHIFT).reshape(shape)
    return low + (high - low) * (ints.astype(np.float64) * 2.0 ** -24)


_IRWIN_HALL_N = 4
_NEAR_NORMAL_GAIN = np.sqrt(3.0) / 2.0 * 2.0 ** -23   # var(U(-1,1)) = 1/3, 4 of them 4/3; ints * 2**-23
# Large draws are split into pieces, one bit generator per uniform and piece, advanced to its first
# word (PCG64 makes one step per 64-bit output: numpy/random/src/pcg64/pcg64.h
# pcg_setseq_128_xsl_rr_64_random_r, line 321), and the pieces run on threads (numpy and
# random_raw release the GIL) in blocks that stay in cache.
_PARALLEL_MIN = 1 << 20
_BLOCK = 1 << 16


def _term_sum(uniforms) -> np.ndarray:
    """The four uniforms' 24-bit integers summed (exact: < 2**26), from their words (uint32 arrays
    of one length), minus 2**25: the near-normal draw in units of 2**-23, int32."""
    total = np.right_shift(uniforms[0], _WORD_SHIFT, dtype=np.uint32)
    term = np.empty_like(total)
    for words in uniforms[1:]:
        np.right_shift(words, _WORD_SHIFT, out=term)
        total += term
    total = total.view(np.int32)
    total -= _IRWIN_HALL_N << 23                        # each uniform is int * 2**-23 - 1
    return total


def _near_normal_f64(total: np.ndarray, scale: float) -> np.ndarray:
    # (sum of the uniforms) * sqrt(3)/2 * scale, the uniforms' sum exactly total * 2**-23: scaling
    # by 2**-23 commutes with rounding, so one product rounds as the two did
    x = np.multiply(total, _NEAR_NORMAL_GAIN, dtype=np.float64)
    if scale != 1.0:
        x *= scale
    return x


def _near_normal_into(gen: np.random.Generator, out: np.ndarray, scale: float, finish) -> None:
    """``out`` (flat) = finish(near_normal draws), leaving ``gen`` as ``near_normal`` would."""
    n = out.size
    state = gen.bit_generator.state
    if n < _PARALLEL_MIN or n % 2 or state["has_uint32"] or state["bit_generator"] != "PCG64":
        words = _words(gen, _IRWIN_HALL_N * n)
        out[:] = finish(_near_normal_f64(_term_sum(words.reshape(_IRWIN_HALL_N, n)), scale))
        return
    # no pending word and n even: uniform j's words start at output j*n/2, two elements per output
    def at(output: int) -> np.random.PCG64:
        bitgen = np.random.PCG64(0)
        bitgen.state = state
        return bitgen.advance(output)

    def piece(lo: int, hi: int) -> None:                  # in pairs of elements: one output per uniform
        streams = [at(j * n // 2 + lo) for j in range(_IRWIN_HALL_N)]
        for p0 in range(lo, hi, _BLOCK // 2):
            p1 = min(p0 + _BLOCK // 2, hi)
            total = _term_sum([s.random_raw(p1 - p0).astype("<u8", copy=False).view("<u4") for s in streams])
            out[2 * p0:2 * p1] = finish(_near_normal_f64(total, scale))

    pairs = n // 2
    bulk.run(piece, pairs, -(-pairs // (4 * bulk.count())))
    outputs = _IRWIN_HALL_N * n // 2
    last = at(outputs - 1).random_raw(1).astype("<u8").view("<u4")
    state["state"] = at(outputs).state["state"]
    state["has_uint32"], state["uinteger"] = 0, int(last[1])   # pcg64_next32 left the high word
    gen.bit_generator.state = state


def near_normal(gen: np.random.Generator, shape, scale=1.0) -> np.ndarray:
    """Sum of four uniforms scaled to unit variance (Irwin-Hall n=4), times ``scale``, as float64:
    (u1 + u2 + u3 + u4) * (sqrt(3)/2) * scale with each u a ``uniform(gen, shape)`` in turn."""
    out = np.empty(shape, np.float64)
    _near_normal_into(gen, out.reshape(-1), scale, lambda x: x)
    return out


def near_normal_bf16(gen: np.random.Generator, shape, scale=1.0, out=None) -> np.ndarray:
    """``to_bf16(near_normal(gen, shape, scale))`` held in float32 (into ``out`` if given), the same
    bytes computed in pieces on every core."""
    out = np.empty(shape, np.float32) if out is None else out
    if not out.flags.c_contiguous or out.dtype != np.float32 or out.size != np.prod(shape, dtype=np.int64):
        raise ValueError(f"out must be a C-contiguous float32 array of {shape}, not {out.dtype} {out.shape}")
    _near_normal_into(gen, out.reshape(-1), scale, to_bf16)
    return out


def small_integers(gen: np.random.Generator, shape, low=-4, high=4) -> np.ndarray:
    """Integers in [low, high] as float64: products and sums stay exact in f32 for modest K."""
    return gen.integers(low, high + 1, size=shape, dtype=np.int64).astype(np.float64)


def sha256_of(inputs: Mapping[str, np.ndarray]) -> str:
    """Digest of named arrays: name, dtype, shape and raw bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"{name}|{a.dtype.name}|{a.shape}|".encode())
        h.update(a.reshape(-1).view(np.uint8))     # the raw bytes in place (tobytes() would copy them)
    return h.hexdigest()


# --- input classes -------------------------------------------------------------------------------
#
# An input class is an axis of every family's cases (the test id ends in it). Each reaches bugs
# that near-normal, zero-mean draws never reach:
#   normal     today's draws (near-normal, zero or small mean); the bytes never change.
#   shifted    rows with a mean of 10**3 x their spread, operands with a positive mean:
#              cancellation (one-pass variance) and biased rounding add up instead of cancelling.
#   exact      small integers and powers of two: every product and partial sum is exact in f32,
#              so the golden and the check are bit-exact. A pivot pair +-2**23 units in every dot
#              product (cancelling, so the result stays small) makes partial sums need all 24
#              bits: an accumulator with fewer mantissa bits than f32 is no longer exact.
#   ties       exact results that sit exactly halfway between two values of the output format:
#              round to nearest even is checked bit for bit.
#   specials   +-inf, NaN, -0, the largest finite value and what IEEE 754 makes of them
#              (inf x 0 = NaN, inf - inf = NaN, overflow to inf); bit-exact on integer bases.
#   subnormal  the exact class scaled into and across the subnormal range of the input and
#              output formats: a flush-to-zero device returns 0 where IEEE keeps a value.
CLASSES = ("normal", "shifted", "exact", "ties", "specials", "subnormal")
DEFAULT_CLASS = "normal"
# Classes whose golden is one correctly rounded value per element: any difference is a bug.
BIT_EXACT_CLASSES = ("exact", "ties", "specials", "subnormal")

EXACT_PIVOT_LOG2 = 23           # pivot product 2**23 units: partial sums need 24 bits
SUBNORMAL_PIVOT_LOG2 = 22       # 2**22 units of 2**-148: the pivot sits at 2**-126 (smallest normal)
TIES_PIVOT = 1.5 * 2.0 ** 24    # f32 spacing there is 2: an odd unit is exactly halfway
SHIFT_RATIO = 1000.0            # shifted rows: mean / spread


def class_of(params) -> str:
    cls = params.get("inputs", DEFAULT_CLASS) if hasattr(params, "get") else DEFAULT_CLASS
    if cls not in CLASSES:
        raise ValueError(f"unknown input class {cls!r}; known: {', '.join(CLASSES)}")
    return cls


def seed_id(case_id: str, cls: str) -> str:
    """The identity a case's seed is drawn from: the normal class keeps today's seeds (and bytes)."""
    return case_id if cls == DEFAULT_CLASS else f"{case_id}-{cls}"


def ternary(gen: np.random.Generator, shape) -> np.ndarray:
    """-1, 0, +1 with probabilities 1/4, 1/2, 1/4 (variance 1/2), as float64."""
    return np.array([-1.0, 0.0, 0.0, 1.0])[gen.integers(0, 4, size=shape, dtype=np.int64)]


def signs(gen: np.random.Generator, shape) -> np.ndarray:
    return np.where(gen.integers(0, 2, size=shape, dtype=np.int64) > 0, 1.0, -1.0)


def shifted_rows(gen: np.random.Generator, shape, scale=1.0, near_constant=None) -> np.ndarray:
    """Near-normal rows of spread ``scale`` around per-row means: every other row has a mean of
    SHIFT_RATIO x the spread (random sign), the rest a mean uniform in [1, 10) x the spread.
    ``near_constant=(level, spread)``: rows 1, 5, 9, ... become ``near_constant_rows`` instead
    (drawn after the others, so every other row keeps its bytes)."""
    rows = shape[0]
    mean = np.where((np.arange(rows) % 2 == 0)[:, None], SHIFT_RATIO, uniform(gen, (rows, 1), 1.0, 10.0))
    mean = mean * signs(gen, (rows, 1))
    x = (near_normal(gen, shape) + mean) * scale
    if near_constant is not None:
        pick = np.arange(1, rows, 4)
        x[pick] = near_constant_rows(gen, (len(pick), shape[1]), *near_constant)
    return x


def near_constant_rows(gen: np.random.Generator, shape, level: float, spread: float) -> np.ndarray:
    """Rows of +-``level`` (random sign per row) plus near-normal noise of ``spread``: a row
    variance of spread**2, chosen by the caller under its operator's eps, where a one-pass
    variance, a clamp or a moved eps decides the result (issue 38)."""
    return signs(gen, (shape[0], 1)) * level + near_normal(gen, shape, spread)


def positive_mean(gen: np.random.Generator, shape, mean=1.0, scale=0.5) -> np.ndarray:
    """Operands with a positive mean (GEMM, matmul): rounding errors share a sign over K."""
    return mean + near_normal(gen, shape, scale)


def pivot_rows(gen: np.random.Generator, rows: int, n: int, pivot: np.ndarray, block: int = 1) -> np.ndarray:
    """Integer rows of ternary values with ``pivot`` (one value per row) at column 0 and
    -``pivot`` at column n-1, so the pivots cancel and every partial sum that holds one is
    large. Columns sharing a ``block`` (bfp16's 8 along K) with a pivot are 0, so a block
    exponent set by the pivot loses nothing. Rows too short for a pivot pair are +-1 instead
    (no zeros, so a one-term dot product is never 0)."""
    if n <= 2 * block:
        return signs(gen, (rows, n))
    x = ternary(gen, (rows, n))
    if n > 2 * block:
        x[:, :block] = 0.0
        x[:, ((n - 1) // block) * block:] = 0.0
        x[:, 0] = pivot
        x[:, n - 1] = -pivot
    return x


def exact_operands(gen: np.random.Generator, M: int, K: int, N: int, *, pivot_log2: int = EXACT_PIVOT_LOG2,
                   block: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A (M, K), B (K, N) of integers: ternary, plus A[:, 0] = +-2**a, B[0, :] = 2**b with
    a + b = ``pivot_log2`` and the same pair negated at k = K-1. Every product is an integer
    of at most ``pivot_log2`` bits and every partial sum, in any order, below 2**(pivot_log2+1):
    exact in f32 for pivot_log2 <= 23. The result is the ternary part's: |C| <= K."""
    ha = pivot_log2 // 2
    A = pivot_rows(gen, M, K, signs(gen, M) * 2.0 ** ha, block)
    B = pivot_rows(gen, N, K, np.full(N, 2.0 ** (pivot_log2 - ha)), block).T.copy()
    if K > 2 * block:
        B[K - 1, :] = B[0, :]          # A carries the sign: +P at k=0, -P at k=K-1
    return A, B


def ties_rows(gen: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """Rows whose exact f32 sum is a tie: +-1.5*2**24 (spacing 2 up to 2**25), multiples of 4,
    and one odd unit (+-1 or +-3) last. However the row is summed, only the addition that meets
    the odd unit rounds, once, and it is exactly halfway: RNE keeps P+4k for +1 and goes to
    P+4k+4 for +3, so round-half-away and round-toward-zero each differ on half of them."""
    x = 4.0 * ternary(gen, (rows, n))
    if n >= 2:
        x[:, 0] = signs(gen, rows) * TIES_PIVOT
        x[:, n - 1] = signs(gen, rows) * gen.choice([1.0, 3.0], size=rows)
    return x


def ties_operands(gen: np.random.Generator, M: int, K: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """A @ B whose every element is an f32 tie (``ties_rows`` as products): A[:, 0] = +-3*2**11,
    B[0, :] = 2**12; even ternaries elsewhere (products are multiples of 4); at k = K-1
    A in {+-1, +-3} and B in {+-1} (the one odd product)."""
    A = 2.0 * ternary(gen, (M, K))
    B = 2.0 * ternary(gen, (K, N))
    if K >= 2:
        A[:, 0] = signs(gen, M) * 3.0 * 2.0 ** 11
        B[0, :] = 2.0 ** 12
        A[:, K - 1] = signs(gen, M) * gen.choice([1.0, 3.0], size=M)
        B[K - 1, :] = signs(gen, N)
    return A, B


SPECIAL_EVENTS = ("none", "+inf", "-inf", "nan", "inf-inf", "max", "max+max", "-max-max", "-0")
# A dot product's lhs leaves out the pairs of largest values (see ``special_rows``).
DOT_SPECIAL_EVENTS = ("none", "+inf", "-inf", "nan", "inf-inf", "max", "-0")


def special_rows(g: np.random.Generator, x: np.ndarray, big: float, events=SPECIAL_EVENTS) -> None:
    """One IEEE 754 event per row of ``x`` (in place): an infinity, a NaN, inf - inf, the largest
    finite value (which small terms cannot move), two of them (overflow to inf in any order), or
    negative zeros. At most one event per row keeps the result independent of summation order.
    A matmul's lhs leaves out the pairs of largest values: times rhs entries of either sign they
    would overflow in one product and not in the other, and the result would depend on order."""
    rows, n = x.shape
    kind = g.integers(0, len(events), size=rows)
    k1 = g.integers(0, n, size=rows)
    k2 = (k1 + 1 + g.integers(0, max(n - 1, 1), size=rows)) % n
    for i in range(rows):
        what = events[kind[i]]
        if what == "-0":
            x[i, x[i] == 0] = -0.0
        elif what != "none":
            first, second = {"+inf": (np.inf, None), "-inf": (-np.inf, None), "nan": (np.nan, None),
                             "inf-inf": (np.inf, -np.inf), "max": (big, None), "max+max": (big, big),
                             "-max-max": (-big, -big)}[what]
            x[i, k1[i]] = first
            if second is not None and n > 1:
                x[i, k2[i]] = second


def is_tie(exact: np.ndarray, dtype) -> np.ndarray:
    """Whether each float64 value lies exactly halfway between two neighbours in ``dtype``."""
    exact = np.asarray(exact, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = exact.astype(np.float32).astype(dtype)
        lo = np.where(r.astype(np.float64) > exact, np.nextafter(r, dtype.type(-np.inf)), r).astype(np.float64)
        hi = np.nextafter(lo.astype(dtype), dtype.type(np.inf)).astype(np.float64)
        return np.isfinite(exact) & (lo != exact) & (exact - lo == hi - exact)


# The largest value a sum's specials use: bf16's largest finite (0x7F7F, 3.39e38, 0.4% below
# f32's). It has 8 significant bits, so a sum that holds it is the same in any accumulator at
# least that wide and the specials class tests IEEE semantics (x2 and +itself overflow to inf),
# not accumulator width, which is the exact class's. f32's own largest value is in the
# elementwise specials, where nothing is accumulated.
SUM_BIG = float.fromhex("0x1.fep+127")
