"""A case: one operator invocation with its parameters, as every backend and fault sees it."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping


def case_seed(op: str, case_id: str, base: int = 0) -> int:
    """A 32-bit seed derived from the case's identity, so a case draws the same inputs everywhere.

    ``base`` shifts every case at once (``--golden-seed``) to run the suite over other inputs.
    """
    digest = hashlib.sha256(f"{base}:{op}:{case_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


@dataclass(frozen=True)
class Case:
    op: str                      # operator family id, e.g. "gemm_partition_n"
    id: str                      # the test-id fragment, e.g. "M64-K512-N256-m16-k64-n64-c4-bT-cF-P4"
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0

    @classmethod
    def make(cls, op: str, case_id: str, params: Mapping[str, Any], base_seed: int = 0,
             seed_id: str | None = None) -> "Case":
        """``seed_id`` (default ``case_id``): the identity the inputs are drawn from, when cases
        that share an id differ in what they draw (an input class: accel_regress.golden.inputs.seed_id)."""
        return cls(op, case_id, dict(params), case_seed(op, seed_id or case_id, base_seed))

    def to_json(self) -> dict:
        return {"op": self.op, "id": self.id, "params": dict(self.params), "seed": self.seed}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Case":
        return cls(d["op"], d["id"], dict(d["params"]), int(d["seed"]))

    @property
    def key(self) -> str:
        blob = json.dumps(self.to_json(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.key)
