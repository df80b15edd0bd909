"""Issue 39: many programs in one iree-compile (hardware/toolchains/iree/compiler.py compile_batch)
give the same results as one compile each, and each program then finds the batch in the cache."""
import json

import numpy as np
import pytest

from accel_regress.backends.iree_cpu import HOST_FLAGS, IreeCpuBackend
from accel_regress.toolchains.iree import compiler

pytestmark = pytest.mark.skipif(compiler.availability() is not None, reason=str(compiler.availability()))


@pytest.fixture
def starts(compiler_starts, tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    return compiler_starts


def _programs():
    """Programs whose functions (@main) and type aliases (!lhs ...) collide across cases."""
    from accel_regress.families.f32_reduction import golden as R, iree_program as P
    from accel_regress.families.matmul import iree_program as MP
    from accel_regress.toolchains.iree.program import Program
    out = [P.program(R.make_case(k, R.SEED_SHAPES[k], "v", 256)) for k in ("row_sum", "softmax", "layernorm")]
    out += [Program(MP.mlir(m, k, n, "f32", "f32", "f32"), MP.ENTRY, ("lhs", "rhs"), ("out",))
            for m, k, n in ((8, 16, 8), (16, 8, 24))]
    return out


def _run(compiled, program, inputs):
    import iree.runtime as rt
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, compiled.vmfb.read_bytes()))
    out = ctx.modules.module[compiled.symbol(program.entry)](*[inputs[n] for n in program.inputs])
    return [np.asarray(r.to_host()) for r in (out if isinstance(out, (tuple, list)) else (out,))]


def _inputs(program, rng):
    import re
    types = re.search(r"\((.*?)\)\s*->", program.mlir.split("func.func", 1)[1]).group(1)
    aliases = dict(re.findall(r"^(![\w.]+)\s*=\s*(tensor<[^>]*>)", program.mlir, re.M))
    shapes = [aliases.get(t.strip(), t.strip()) for t in re.findall(r":\s*([!\w<>.x]+)", types)]
    out = {}
    for name, ty in zip(program.inputs, shapes):
        dims = [int(d) for d in re.findall(r"(\d+)x", ty)]
        et = ty.rsplit("x", 1)[1].rstrip(">")
        a = rng.standard_normal(dims) if et.startswith("f") else rng.integers(-8, 8, dims)
        out[name] = np.ascontiguousarray(a.astype({"f32": np.float32, "i8": np.int8, "i32": np.int32}.get(et, np.float32)))
    return out


def test_one_compile_for_many_programs_gives_the_same_results(starts, tmp_path, monkeypatch):
    programs = _programs()
    rng = np.random.default_rng(0)
    inputs = [_inputs(p, rng) for p in programs]
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "separate"))
    separate = [_run(compiler.compile_cached(p.mlir, HOST_FLAGS), p, x) for p, x in zip(programs, inputs)]
    assert len(starts) == len(programs)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "batched"))
    starts.clear()
    batch = compiler.compile_batch([p.mlir for p in programs], HOST_FLAGS)
    assert batch is not None and len(starts) == 1, f"{len(starts)} iree-compile starts for {len(programs)} programs"
    for program, x, want in zip(programs, inputs, separate):
        got = compiler.compile_cached(program.mlir, HOST_FLAGS)
        assert got.cached and got.dir == batch.dir
        assert [g.tobytes() for g in _run(got, program, x)] == [w.tobytes() for w in want]
    assert len(starts) == 1
    assert compiler.compile_batch([p.mlir for p in programs], HOST_FLAGS) is None     # all there: nothing to do


def test_a_link_that_does_not_hold_the_program_is_not_trusted(starts):
    programs = _programs()[:2]
    compiler.compile_batch([p.mlir for p in programs], HOST_FLAGS)
    link = next((compiler.cache_root() / compiler.BATCHED).glob("*.json"))
    doc = json.loads(link.read_text())
    doc["symbols"] = {"main": "b1_main"} if doc["symbols"] != {"main": "b1_main"} else {}
    link.write_text(json.dumps(doc))
    starts.clear()
    for p in programs:
        compiler.compile_cached(p.mlir, HOST_FLAGS)
    assert len(starts) == 1, "a link naming the wrong function was served"


def test_per_program_files_are_never_batched(starts):
    flags = (*HOST_FLAGS, "--iree-hal-dump-executable-files-to={out}/dump")
    assert compiler.compile_batch([p.mlir for p in _programs()[:2]], flags) is None
    assert starts == []


def test_iree_cpu_compiles_a_plan_in_one_start(starts):
    """fused_decode's steps: one program each, one iree-compile for all of them."""
    from accel_regress.families.fused_decode import golden as F
    from accel_regress.toolchains.iree.program import plan_for
    case = F.make_case(F.SMALL, 0, "steps")
    out = IreeCpuBackend().run(case, F.make_inputs(case))
    assert len(plan_for(case)) > 1 and len(starts) == 1
    assert set(out) >= {p.outputs[0] for p in plan_for(case)}


def test_qemu_rvv_compiles_a_plan_in_one_start_with_the_same_results(starts, tmp_path, monkeypatch):
    """The plan's riscv static libraries as one: every step's harness links the one library and
    calls its own dispatches; the outputs are those of one compile per step, bit for bit."""
    from accel_regress.backends.qemu_rvv import QemuRvvBackend, build
    from accel_regress.families.fused_decode import golden as F
    from accel_regress.toolchains.iree.program import plan_for
    backend = QemuRvvBackend()
    if backend.availability():
        pytest.skip(backend.availability())
    case = F.make_case(F.SMALL, 0, "steps")
    inputs = F.make_inputs(case)
    batched = backend.run(case, inputs)
    assert len(starts) == 1, f"{len(starts)} iree-compile starts for a plan of {len(plan_for(case))} programs"
    scanned = len(backend.last_report["codegen_scan"])
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "one-by-one"))
    monkeypatch.setattr(build, "compile_plan", lambda *a, **k: None)
    separate = backend.run(case, inputs)
    assert len(starts) == 1 + len(plan_for(case))
    assert sorted(batched) == sorted(separate)
    assert all(batched[n].tobytes() == separate[n].tobytes() for n in separate)
    assert 0 < scanned <= len(backend.last_report["codegen_scan"])
