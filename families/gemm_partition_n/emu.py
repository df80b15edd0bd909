"""A model of IRON's AIEGEMM operator (iron/operators/gemm) as far as numbers and buffers go.

Layout: B is held column-major (N, K) when ``b_col_maj``, C column-major when ``c_col_maj``.
Padding: M to a multiple of tile_m * 4 (C is joined over IRON's 4 AIE rows), K of tile_k, and each partition's N/partition_N columns to a
multiple of tile_n * num_aie_columns (IRON's ``op.N`` is that padded per-partition width).
``partition_N`` gives one runlist entry per part, each bound to its own B_i and C_i buffer.
With ``emulate_bfp16`` A and B are quantized to bfp16 (blocks of 8 along K) before an f32
accumulation; C is rounded to bf16.

Faults (seed 000): ``iron-gemm-forward-shape`` and ``iron-gemm-stale-dma``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.golden.dtypes import quantize_bfp16, to_bf16


N_AIE_ROWS = 4


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class IronGemm:
    def __init__(self, M, K, N, tile_m, tile_k, tile_n, num_aie_columns, b_col_maj, c_col_maj,
                 partition_N=1, emulate_bfp16=True):
        self.M_logical, self.K_logical, self.N_logical = M, K, N
        self.partition_N = partition_N
        self.n_part = N // partition_N
        self.M = _round_up(M, tile_m * N_AIE_ROWS)
        self.K = _round_up(K, tile_k)
        self.N = _round_up(self.n_part, tile_n * num_aie_columns)
        self.b_col_maj, self.c_col_maj, self.emulate_bfp16 = b_col_maj, c_col_maj, emulate_bfp16
        self.buffers: dict[str, np.ndarray] = {"A": np.zeros((self.M, self.K), np.float32)}
        self.runlist: list[dict[str, str]] = []
        for i in range(partition_N):
            self.buffers[f"B_{i}"] = np.zeros((self.N, self.K) if b_col_maj else (self.K, self.N), np.float32)
            self.buffers[f"C_{i}"] = np.zeros((self.N, self.M) if c_col_maj else (self.M, self.N), np.float32)
            self.runlist.append({"A": "A", "B": f"B_{i}", "C": f"C_{i}"})

    @property
    def weight(self):
        raise AttributeError("weight is write-only, as in IRON")

    @weight.setter
    def weight(self, b: np.ndarray) -> None:
        """Static weights (K, N): split into partitions, pad, store in the device layout."""
        for i in range(self.partition_N):
            part = np.zeros((self.K, self.N), np.float32)
            part[:self.K_logical, :self.n_part] = b[:, i * self.n_part:(i + 1) * self.n_part]
            self.buffers[f"B_{i}"][...] = part.T if self.b_col_maj else part

    def write_buffer(self, name: str, a: np.ndarray) -> None:
        a = np.asarray(a, np.float32).reshape(-1, self.K_logical)
        self.buffers[name][...] = 0
        self.buffers[name][:a.shape[0], :self.K_logical] = a

    def read_buffer(self, name: str, shape) -> np.ndarray:
        """Logical (M, N) view of a C buffer, whatever its layout."""
        buf = self.buffers[name]
        logical = buf.T if (name.startswith("C_") and self.c_col_maj) else buf
        return np.ascontiguousarray(logical).reshape(shape)

    # The data path's two numerical steps, replaceable by a fault model (input_class_faults.py):
    # the f32 accumulation of (M, K) @ (K, N) and the conversion of C to bf16 (held in f32).
    @staticmethod
    def accumulate(a: np.ndarray, b_kn: np.ndarray) -> np.ndarray:
        import torch    # here, not at the top: the pytest process loads this module but never runs it
        return (torch.from_numpy(np.ascontiguousarray(a)) @ torch.from_numpy(np.ascontiguousarray(b_kn))).numpy()

    @staticmethod
    def to_output(c: np.ndarray) -> np.ndarray:
        return to_bf16(c).astype(np.float32)

    def _mmul(self, a: np.ndarray, b_kn: np.ndarray) -> np.ndarray:
        if self.emulate_bfp16:
            a = quantize_bfp16(a, axis=1)
            b_kn = quantize_bfp16(b_kn, axis=0)
        return self.to_output(self.accumulate(a, b_kn))

    def run_runlist(self) -> None:
        for entry in self.runlist:
            b = self.buffers[entry["B"]]
            c = self._mmul(self.buffers[entry["A"]], b.T if self.b_col_maj else b)
            self.buffers[entry["C"]][...] = c.T if self.c_col_maj else c

    def forward(self, a: np.ndarray) -> np.ndarray:
        """(1, M, K) -> (1, M, N): run every partition and stitch the valid columns together."""
        self.write_buffer("A", a)
        self.run_runlist()
        parts = [self.read_buffer(f"C_{i}", (self.M, self.N))[:self.M_logical, :self.n_part]
                 for i in range(self.partition_N)]
        return np.concatenate(parts, axis=1)[None]


def run(case: Case, inputs: Mapping[str, np.ndarray], *, accumulate=None, to_output=None) -> dict[str, np.ndarray]:
    """``accumulate`` / ``to_output``: another data path's numerical steps (a fault model)."""
    p = case.params
    op = IronGemm(p["M"], p["K"], p["N"], p["tile_m"], p["tile_k"], p["tile_n"], p["num_aie_columns"],
                  p["b_col_maj"], p["c_col_maj"], p["partition_N"], p.get("emulate_bfp16", True))
    if accumulate is not None:
        op.accumulate = accumulate
    if to_output is not None:
        op.to_output = to_output
    op.weight = inputs["B"]
    out = {"forward": op.forward(inputs["A"][None])}
    for i in range(op.partition_N):
        out[f"C_{i}"] = op.read_buffer(f"C_{i}", (op.M, op.N))
    return out


def supports_inputs(case: Case):
    """The model holds bfp16 as the device does: an input class bfp16 cannot encode does not apply."""
    from accel_regress.core.errors import NotApplicable
    from accel_regress.families.gemm_partition_n.golden import format_excludes
    why = format_excludes(case)
    return NotApplicable(why) if why else None


def timeout(case: Case) -> float:
    p = case.params
    return 60.0 + p["M"] * p["K"] * p["N"] / 2e9    # ~2 GMAC/s on two slow cores, with headroom


def _parts(case: Case) -> tuple[int, int, int]:
    p = case.params
    return p["partition_N"], p["M"], p["N"] // p["partition_N"]


def forward_shape(case: Case, outputs: dict) -> dict:
    """Seed 000 bug 1: _partition_B overwrites static_weight_shape with one partition's padded
    shape, so forward() divides N by partition_N a second time: it reads each C_i buffer as if it
    were (M, N_padded/partition_N) wide and stitches those, giving N_padded/partition_N columns
    of values from the wrong positions (N_padded being IRON's padded per-partition width)."""
    if case.op != "gemm_partition_n" or case.params["partition_N"] < 2:
        return outputs
    P, M, _ = _parts(case)
    width = outputs["C_0"].shape[1] // P
    parts = [np.ascontiguousarray(outputs[f"C_{i}"]).ravel()[:M * width].reshape(M, width) for i in range(P)]
    outputs["forward"] = np.concatenate(parts, axis=1)[None]
    return outputs


def stale_dma(case: Case, outputs: dict) -> dict:
    """Seed 000 bug 2: runlist entries share one kernel handle and instruction binary, so entries
    after the first compute with the first entry's DMA bindings: C_0 is right, C_1.. repeat it."""
    if case.op != "gemm_partition_n" or case.params["partition_N"] < 2:
        return outputs
    P, M, n_part = _parts(case)
    for i in range(1, P):
        outputs[f"C_{i}"] = outputs["C_0"].copy()
    outputs["forward"] = np.concatenate([outputs[f"C_{i}"][:M, :n_part] for i in range(P)], axis=1)[None]
    return outputs


FAULTS = {"iron-gemm-forward-shape": forward_shape, "iron-gemm-stale-dma": stale_dma}
