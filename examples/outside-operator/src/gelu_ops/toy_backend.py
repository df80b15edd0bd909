"""``gelu-toy``: where the team's own device would plug in. Here it runs torch's f32 GELU, so the
example shows the whole backend interface (availability, supports_op, versions, run) with
something that runs anywhere."""
from __future__ import annotations

from importlib import metadata
from typing import Optional

import numpy as np

from accel_regress.core.backend import Backend


class ToyBackend(Backend):
    kind = "emulator"
    description = "the GELU team's toy device: torch.nn.functional.gelu in f32"
    default_timeout_s = 60.0

    def supports_op(self, op: str) -> Optional[str]:
        return None if op == "gelu" else f"gelu-toy runs only gelu, not {op!r}"

    def versions(self) -> dict[str, str]:
        # From the installed metadata: versions() is asked in the pytest process, which must not
        # import torch (about 2 s); only run(), in the isolated worker, needs it.
        return {"torch": metadata.version("torch")}

    def run(self, case, inputs):
        import torch
        y = torch.nn.functional.gelu(torch.from_numpy(np.ascontiguousarray(inputs["x"], np.float32)))
        return {"y": y.numpy()}
