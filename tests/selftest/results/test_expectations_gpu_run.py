"""The expectation files hold to the first GPU run (NVIDIA H200, 2026-11-27): every FAIL of it is
declared, nothing it passed is, and the NVIDIA-only iree-vulkan entries do not hold on lavapipe,
where the same cases pass. The runs are kept trimmed under fixtures/real/gpu (README there)."""
import gzip
import json
from pathlib import Path

import pytest

from accel_regress.results import expectations as X
from accel_regress.results import expectations_update as U
from accel_regress.results import keys
from accel_regress.results import record as results

REPO = Path(__file__).resolve().parents[3]
RUNS = REPO / "tests" / "selftest" / "fixtures" / "real" / "gpu"
LAVAPIPE = {"iree-compiler": "3.13.0rc20261016 @ 89ece87b89852100c0a4ac3d515e14842d090967", "iree-runtime": "3.13.0",
            "vulkan-device": "llvmpipe (LLVM 15.0.6, 256 bits)", "vulkan-driver": "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)",
            "vulkan-api": "1.3.230", "vulkan-device-type": "VK_PHYSICAL_DEVICE_TYPE_CPU"}


def _run(name: str) -> dict:
    """A trimmed run as the results file the upkeep commands read."""
    data = json.loads(gzip.decompress((RUNS / f"{name}.json.gz").read_bytes()))
    cases = [{"nodeid": n, "backend": b, "family": f, "verdict": v, "message": "", "detail": {},
              "versions": data["backends"].get(b, {})} for n, b, f, v in data["cases"]]
    return results.build({"hw": sorted(data["backends"])},
                         {b: {"selected": True, "versions": v} for b, v in data["backends"].items()}, cases)


@pytest.mark.parametrize("name", ["run1_iree-cuda_torch-cuda", "run2_iree-vulkan"])
def test_the_files_already_match_the_first_gpu_run(tmp_path, capsys, name):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_run(name)))
    assert U.main(["update", str(path), "--dir", str(REPO / "expectations")]) == 0
    out = capsys.readouterr().out
    assert out.strip() == "# the expectation files already match this run", out
    assert U.main(["stale", str(path), "--dir", str(REPO / "expectations")]) == 0


def test_every_gpu_failure_is_declared_with_a_reason_and_nothing_that_passed():
    exp = X.load_dir(REPO / "expectations")
    for name in ("run1_iree-cuda_torch-cuda", "run2_iree-vulkan"):
        data = _run(name)
        for c in data["cases"]:
            if not c["backend"]:
                continue
            e = exp.match(c["backend"], keys.test_key(c["nodeid"], c["backend"]), c["versions"], keys.device_of(c, data))
            if c["verdict"] in ("FAIL", "XFAIL"):
                assert e is not None and not e.reason.startswith("TODO"), c["nodeid"]
            elif c["verdict"] == "PASS":
                assert e is None, f"{c['nodeid']} passed on the H200 but {e.file} declares {e.test!r}"


def test_the_nvidia_vulkan_entries_hold_on_the_h200_only():
    """lavapipe keeps subnormals and NaN: on it the same cases must run plainly, so a flush there
    would be a new failure, not a known one."""
    exp = X.load_dir(REPO / "expectations")
    h200 = _run("run2_iree-vulkan")["backends"]["iree-vulkan"]["versions"]
    nvidia = [e for e in exp.for_backend("iree-vulkan") if e.conditions.devices]
    assert {e.conditions.devices for e in nvidia} == {("NVIDIA H200",)} and len(nvidia) == 6
    for e in nvidia:
        assert e.holds(h200)[0], e.test
        assert e.holds(LAVAPIPE) == (False, "device generation not recorded"), e.test
    key = "tests/test_matmul.py::test_matmul[edge-M17-K17-N17-bf16xbf16-f32-subnormal]"
    assert exp.match("iree-vulkan", key, h200) is not None
    assert exp.match("iree-vulkan", key, LAVAPIPE) is None
