"""The npu adapter and its stand-ins against verbatim excerpts of the real sources
(tests/selftest/fixtures/real/{iron,xrt}/, provenance in their READMEs): IRON's AIEGEMM naming in
both revisions, XRT's xrt_info_device numbering, runlist error text and runlist wait binding."""
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.backends.npu import iron_runner, layouts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NAMING = json.loads((REAL / "iron" / "aiegemm_naming.json").read_text())
XRT = (REAL / "xrt" / "pyxrt_excerpts.txt").read_text()

_spec = importlib.util.spec_from_file_location(
    "npu_standin", Path(__file__).parents[2] / "fixtures" / "pyxrt_standin" / "npu_standin.py")
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)

CONFIGS = gemm.CI_CONFIGS + [gemm.VOCAB_MINI, gemm.LLAMA_VOCAB]
CONFIGS = CONFIGS + [c.standalone(0) for c in CONFIGS if c.partition_N > 1]


class _Op:
    """What IRON's naming code reads from ``self``: the operator after its constructor ran."""
    def __init__(self, p):
        self.M, self.K, self.N = layouts.gemm_padded(p)
        self.tile_m, self.tile_k, self.tile_n = p["tile_m"], p["tile_k"], p["tile_n"]
        self.num_aie_columns, self.partition_N = p["num_aie_columns"], p["partition_N"]
        self.b_col_maj, self.c_col_maj = p["b_col_maj"], p["c_col_maj"]


def _render(expressions, op, p, **names):
    """Evaluate upstream's own f-string expressions (our fixture, copied verbatim) for this case."""
    scope = dict(self=op, prefix="gemm_", M=op.M, K=op.K, N=op.N, tile_m=op.tile_m, tile_k=op.tile_k,
                 tile_n=op.tile_n, b_col_maj=op.b_col_maj, c_col_maj=op.c_col_maj, prio_accuracy=False,
                 emulate_bf16_mmul_with_bfp16=p.get("emulate_bfp16", True), **NAMING["later"]["defaults"], **names)
    return "".join(eval(e, {}, scope) for e in expressions)      # noqa: S307 - a fixture of ours


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.id)
def test_artifact_names_follow_both_revisions(cfg, tmp_path):
    p = gemm.make_case(cfg).params
    op = _Op(p)
    assert layouts.iron_gemm_basename(p) == _render(NAMING["seed000"]["artifact_base"], op, p)
    later = _render(NAMING["later"]["artifact_base"] + [NAMING["later"]["non_batched_suffix"]], op, p)
    if op.partition_N > 1:
        later += _render([NAMING["later"]["partition_suffix"]], op, p)
    assert layouts.iron_gemm_basename_later(p) == later
    for name in (later, layouts.iron_gemm_basename(p)):
        for ext in (".xclbin", ".bin"):
            (tmp_path / f"{name}{ext}").write_text("x")
        assert layouts.find_iron_gemm(tmp_path, p) == later     # the later one wins when both exist


@pytest.mark.parametrize("revision", ["seed000", "later"])
@pytest.mark.parametrize("cfg", [gemm.CI_CONFIGS[7], gemm.CI_CONFIGS[7].standalone(1)], ids=lambda c: c.id)
def test_c_buffer_names_are_the_operators(monkeypatch, tmp_path, revision, cfg):
    """iron_runner asks the operator; the IRON stand-in's names match upstream's expressions."""
    standin.activate(monkeypatch, tmp_path, iron=True, artifacts=False)
    monkeypatch.setenv("IRON_STANDIN_REVISION", "later" if revision == "later" else "seed")
    standin.fresh()
    try:
        from iron.common import AIEContext
        from iron.operators.gemm.op import AIEGEMM
        p = gemm.make_case(cfg).params
        ctx = AIEContext()
        op = AIEGEMM(M=p["M"], K=p["K"], N=p["N"], tile_m=p["tile_m"], tile_k=p["tile_k"], tile_n=p["tile_n"],
                     num_aie_columns=p["num_aie_columns"], partition_N=p["partition_N"], context=ctx,
                     b_col_maj=p["b_col_maj"], c_col_maj=p["c_col_maj"])
        for i in range(p["partition_N"]):
            expected = eval(NAMING[revision]["c_buffer"], {}, {"self": op, "i": i, "partition_index": i})  # noqa: S307
            assert iron_runner.c_buffer(op, i) == expected
    finally:
        standin.fresh()


def test_iron_device_manager_reset_is_a_no_op_upstream():
    """What iron_runner.reset() works around, as the excerpt shows it."""
    assert NAMING["device_manager"]["reset"].rstrip().endswith("pass")
    assert "DefaultNPURuntime()" in NAMING["device_manager"]["device"]


# --- XRT --------------------------------------------------------------------------------------

def _section(title: str) -> str:
    start = XRT.index(title)
    end = XRT.find("\n// ", start + len(title))
    return XRT[start:end if end > 0 else None]


def test_standin_info_device_numbers_are_xrts():
    enum = re.findall(r"^\s+(\w+),?$", _section("xrt_device.h"), re.MULTILINE)
    bound = re.findall(r'\.value\("(\w+)", xrt::info::device::\w+\)', _section("xrt_info_device as bound"))
    sys.path.insert(0, str(standin.PYXRT_DIR))
    try:
        standin.fresh()
        import pyxrt
        assert {m.name: int(m) for m in pyxrt.xrt_info_device} == {name: enum.index(name) for name in bound}
    finally:
        sys.path.remove(str(standin.PYXRT_DIR))
        standin.fresh()


def test_standin_runlist_error_and_wait_binding_are_xrts(monkeypatch, tmp_path):
    text = _section("xrt_kernel.cpp")
    assert 'std::string msg = "runlist failed execution (" + cmd_state_to_string(state) + ")";' in text
    includes = _section("the pybind11 includes")
    assert "pybind11/chrono.h" not in includes                     # so milliseconds has no caster
    runlist = _section("(runlist)")
    assert re.search(r'\.def\("wait", \(\[\]\(xrt::runlist &r, const std::chrono::milliseconds& timeout\)', runlist)
    assert 'py::arg("timeout")' in runlist
    standin.activate(monkeypatch, tmp_path)
    try:
        import pyxrt
        rl = pyxrt.runlist()
        # pybind11 names an argument type it has no caster for by its demangled C++ name:
        # std::chrono::milliseconds is duration<long, ratio<1, 1000>> in libstdc++.
        with pytest.raises(TypeError, match=re.escape(
                "(self: pyxrt.runlist, timeout: std::chrono::duration<long, std::ratio<1l, 1000l> >) -> std::cv_status")):
            rl.wait(5)
        monkeypatch.setenv("PYXRT_STANDIN_STATE", "ERT_CMD_STATE_ERROR")
        from accel_regress.core import registry
        case = gemm.make_case(gemm.CI_CONFIGS[7])
        with pytest.raises(Exception, match=re.escape("ERT_CMD_STATE_ERROR")) as info:
            registry.get("npu").run(case, gemm.make_inputs(case))
        assert "runlist failed execution (ERT_CMD_STATE_ERROR)" in str(info.value.detail["exception"])
    finally:
        standin.fresh()
