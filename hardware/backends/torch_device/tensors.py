"""numpy arrays <-> torch tensors, bit for bit, bfloat16 (ml_dtypes) included, which torch.from_numpy refuses."""
from __future__ import annotations

import ml_dtypes
import numpy as np


def to_torch(torch, array: np.ndarray, device):
    a = np.ascontiguousarray(array)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(a).to(device)


def to_numpy(torch, tensor) -> np.ndarray:
    t = tensor.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()
