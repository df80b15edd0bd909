"""Faults for the onnx_node selftests (--inject-fault FILE.py:NAME): fault(case, outputs) -> outputs."""
import numpy as np


def _scaled(outputs, pick):
    out = dict(outputs)
    for name, y in outputs.items():
        if y.dtype.kind != "f":
            continue
        where = np.flatnonzero(pick(np.abs(y.astype(np.float64))))
        if where.size:
            z = y.copy().reshape(-1)
            z[where[0]] *= 2
            out[name] = z.reshape(y.shape)
            return out
    return out


def small_element_doubled(case, outputs):
    """Issue 45's criterion: one output element with 0 < |y| < 1e-4 scaled by 2."""
    return _scaled(outputs, lambda a: (a > 0) & (a < 1e-4))


def smallest_element_doubled(case, outputs):
    """The smallest nonzero finite |y| of the first float output scaled by 2 (a 100% error where
    an absolute floor hides it)."""
    def pick(a):
        ok = (a > 0) & np.isfinite(a)
        return ok & (a == a[ok].min()) if ok.any() else ok
    return _scaled(outputs, pick)
