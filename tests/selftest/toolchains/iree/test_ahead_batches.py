"""Each IREE backend's compile ahead (Backend.ahead, toolchains/iree/ahead.py): several cases'
programs in one iree-compile (iree-vulkan: one each, ahead of the runs), with outputs bit for bit
those of each case compiled alone, and on qemu-rvv each case's codegen scan its own program's
dispatches only."""
import pytest

from accel_regress.core.errors import Crash
from accel_regress.families.f32_reduction import golden as R

QEMU_DEFECT = "died of a known qemu defect"

CASES = [R.make_case(k, (4, n), "v", 256, inputs="normal") for k in ("row_sum", "softmax", "layernorm") for n in (33, 40)]


def _links(name):
    from accel_regress.backends.qemu_rvv import build
    return len(list(build.link_cache().glob("*/harness"))) if name == "qemu-rvv" else 0


@pytest.mark.parametrize("name", ["iree-cpu", "iree-vulkan", "qemu-rvv"])
def test_cases_compiled_ahead_in_batches_give_the_outputs_of_cases_compiled_alone(name, compiler_starts, monkeypatch, tmp_path):
    compiles = compiler_starts
    from accel_regress.core import registry
    reason = registry.availability(name)
    if reason:
        pytest.skip(reason)
    backend = registry.get(name)
    inputs = [R.make_inputs(c) for c in CASES]

    def outputs():
        out = []
        for case, x in zip(CASES, inputs):
            try:
                got = backend.run(case, x)
            except Crash as exc:
                # qemu 7.2's vfcvt.rtz translator assertion (the softmax cases) depends on where the
                # code lies in the harness: one link may reach it and another not. qemu's, not the batch's.
                if not exc.detail.get("qemu_defect"):
                    raise
                out.append(QEMU_DEFECT)
                continue
            scan = getattr(backend, "last_report", {}).get("codegen_scan")
            # the file a dispatch's assembly was dumped to is named after its module: not compared
            out.append(({k: v.tobytes() for k, v in got.items()},
                        scan and [{k: v for k, v in d.items() if k != "file"} for d in scan]))
        return out

    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "alone"))
    alone = outputs()
    assert len(compiles) == len(CASES)
    compiles.clear()
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "ahead"))
    jobs = backend.ahead(CASES)
    # A first batch of 4 programs, then the other 2; iree-vulkan keeps a module per program (each
    # run creates every executable of its module).
    starts = {"iree-vulkan": [0, 1, 2, 3, 4, 5]}.get(name, [0, 4])
    assert [i for i, _ in jobs] == starts
    for _, job in jobs:
        job()
    assert len(compiles) == len(starts)
    links = _links(name)
    # qemu-rvv: each batch's harness linked ahead too, one per static library (not one per case)
    assert links == (len(starts) if name == "qemu-rvv" else 0)
    ahead = outputs()
    both = [(a, b) for a, b in zip(alone, ahead) if QEMU_DEFECT not in (a, b)]
    assert len(both) >= len(CASES) - 2, (alone, ahead)      # at most the two softmax cases are qemu's
    assert [a for a, _ in both] == [b for _, b in both]     # bytes and scans alike
    assert len(compiles) == len(starts) and _links(name) == links     # the cases built nothing more
    for _, job in backend.ahead(CASES):            # a session started warm: nothing to do
        job()
    assert len(compiles) == len(starts) and _links(name) == links
    if name == "qemu-rvv":
        assert all(scan and len(scan) <= 2 for _, scan in alone), [s for _, s in alone]
