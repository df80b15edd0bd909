"""pytest plugin: what iree-vulkan leaves to ``-m large`` so the default run stays in its budget.

lavapipe runs each case as one ``iree-run-module`` process (0.23 s to start and open the Vulkan
device, measured) plus the dispatch on the CPU; every family on iree-vulkan took 427 s on this
2-core machine, too much to add to the default run. Deselected by default (not SKIP rows), run
with ``-m large``, because the same compiled programs run in the default run's other cases:
- rowexpandmul_fillpad's sweep grid in the normal input class (264 items, ~100 s): each program
  (variant x dtype x reuse) runs there in the seed configs and the other input classes; the grid
  varies the valid shape and pad value, run-time arguments of the same module; but the seed
  configs pad f32 with zeros only, so the fused 8 x 64 f32 tile with an infinite pad (+inf and
  -inf, KEEP_INF_PAD: 4 items, the same module on other run-time arguments) stays in (issue 49:
  a pad that comes back finite was reached on emu and iree-cpu only);
- gemm_partition_n's vocab-like N=4008 configs (~60 s of lavapipe time): the P4 runlist runs in
  the smaller P4 configs.
"""
from __future__ import annotations

import pytest

BACKEND = "iree-vulkan"
KEEP_INF_PAD = ("-R8-C64-vr3-vc48-f32-padmax-fused-reuse-normal", "-R8-C64-vr3-vc48-f32-padmin-fused-reuse-normal")


def over_budget(item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("hw") != BACKEND:
        return False
    ident = callspec.id
    if item.path.name == "test_rowexpandmul_fillpad.py":
        return ("-seed-" not in f"-{ident}" and ident.endswith("-normal") and not ident.endswith(KEEP_INF_PAD)
                and item.originalname in ("test_tile", "test_padded_region"))
    if item.path.name == "test_gemm_partition_n.py":
        return "-N4008-" in ident
    return False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    from accel_regress.plugin import selection
    if selection.wants(config, "large"):
        return
    out = [i for i in items if over_budget(i)]
    if out:
        config.hook.pytest_deselected(items=out)
        gone = set(out)
        items[:] = [i for i in items if i not in gone]
