"""The harness's stdout protocol reader (hardware/backends/qemu_rvv/protocol.py)."""
import numpy as np
import pytest

from accel_regress.backends.qemu_rvv import protocol

GOOD = ("Bench iter 1/1\r\n[dn] d=0 wg=8\r\n[dc] d=0 cyc=1200\r\n[dn] d=1 wg=4\r\n[dc] d=1 cyc=30\r\n"
        "[out] name=y dtype=f32 shape=2x2 hex=0000803f000000400000404000008040\r\n"
        "[out] name=k dtype=i32 shape=3 hex=ffffffff0100000002000000\r\n[done]\r\n")


def test_outputs_and_dispatches():
    t = protocol.parse(GOOD)
    assert t.done and t.iterations == 1 and t.cycles == 1230 and t.open_dispatch is None
    assert np.array_equal(t.outputs["y"], np.array([[1, 2], [3, 4]], np.float32))
    assert t.outputs["k"].dtype == np.int32 and list(t.outputs["k"]) == [-1, 1, 2]


def test_hang_names_the_open_dispatch():
    t = protocol.parse("Bench iter 1/1\n[dn] d=0 wg=8\n[dc] d=0 cyc=5\n[dn] d=1 wg=8\n")
    assert t.open_dispatch == 1 and not t.done
    assert "d=1" in t.where() and "never completed" in t.where()


def test_truncated_output_line_is_an_error_naming_the_line():
    with pytest.raises(protocol.ProtocolError, match="line 2: .*cut short"):
        protocol.parse("[dn] d=0 wg=1\n[out] name=y dtype=f32 shape=2x2 hex=0000803f\n")


def test_unknown_dtype_and_bad_hex():
    with pytest.raises(protocol.ProtocolError, match="unknown dtype"):
        protocol.parse("[out] name=y dtype=f16 shape=1 hex=0000\n")
    with pytest.raises(protocol.ProtocolError, match="malformed"):
        protocol.parse("[out] name=y dtype=f32 shape=1 hex=zz\n")


def test_noise_is_ignored_and_errors_are_kept():
    t = protocol.parse("boot noise\n[    1.0] kernel: x\n[err] dispatch d=0 wg=(0,0,0) returned 5\n")
    assert t.errors == ["dispatch d=0 wg=(0,0,0) returned 5"] and not t.outputs
