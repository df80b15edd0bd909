"""Each IREE backend's compile ahead (Backend.ahead, toolchains/iree/ahead.py): several cases'
programs in one iree-compile, with outputs bit for bit those of each case compiled alone, and on
qemu-rvv each case's codegen scan its own program's dispatches only."""
import pytest

from accel_regress.families.f32_reduction import golden as R

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
            got = backend.run(case, x)
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
    assert [i for i, _ in jobs] == [0, 4]          # a first batch of 4 programs, then the other 2
    for _, job in jobs:
        job()
    assert len(compiles) == 2
    links = _links(name)
    assert links == (len(CASES) if name == "qemu-rvv" else 0)    # each case's harness linked ahead too
    assert outputs() == alone                      # bytes and scans alike
    assert len(compiles) == 2 and _links(name) == links         # the cases built nothing more
    for _, job in backend.ahead(CASES):            # a session started warm: nothing to do
        job()
    assert len(compiles) == 2 and _links(name) == links
    if name == "qemu-rvv":
        assert all(scan and len(scan) <= 2 for _, scan in alone), [s for _, s in alone]


def test_a_batch_of_wrapped_programs_is_one_module_with_one_target():
    from accel_regress.toolchains.iree import compiler
    header = 'module attributes {hal.device.targets = [#hal.device.target<"vulkan", []> : !hal.device]} {'
    a = "!t = tensor<4xf32>\n" + header + "\nfunc.func @main(%x: !t) -> !t {\n  return %x : !t\n}\n}\n"
    merged, renames = compiler.merge_programs([a, a.replace("4xf32", "8xf32")])
    assert merged.count("module attributes") == 1 and merged.splitlines()[:2] == ["!t = tensor<4xf32>", "!b1_t = tensor<8xf32>"]
    assert renames[1] == ({"main": "b1_main"}, {"!t": "!b1_t"})
    assert compiler._holds(merged, compiler._renamed(a.replace("4xf32", "8xf32"), *renames[1]))
    other = a.replace('"vulkan", []', '"vulkan", [#x]')
    assert compiler.merge_programs([a, other]) is None           # two targets: no batch
    assert compiler.merge_programs([a, "module {\n}\nmodule {\n}\n"]) is None
