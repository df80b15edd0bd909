"""Reading the dispatch schedule from IREE's host program (hardware/backends/qemu_rvv/schedule.py)."""
import pytest

from accel_regress.backends.qemu_rvv import schedule


def _compiled(kind):
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.toolchains.iree.program import program_for
    from accel_regress.backends.qemu_rvv import build
    case = R.make_case(kind, R.SEED_SHAPES[kind])
    return build.compile_riscv(program_for(case), "v")


def test_layernorm_schedule():
    s = schedule.parse_file(_compiled("layernorm").output)
    assert [b.arg for b in s.buffers][:3] == [0, 1, 2]
    assert len(s.dispatches) == 2 and all(d.workgroups[0] >= 1 for d in s.dispatches)
    # the second dispatch reads what the first wrote (mean/variance) and the three inputs
    first, second = s.dispatches
    written = {b.buffer for b in first.bindings if s.buffers[b.buffer].arg < 0}
    assert written & {b.buffer for b in second.bindings}
    (out,) = s.outputs
    assert out.shape == (64, 128) and out.dtype == "f32" and out.length == 64 * 128 * 4


def test_two_outputs_in_result_order():
    s = schedule.parse_file(_compiled("cvt").output)
    assert [(o.shape, o.dtype) for o in s.outputs] == [((64,), "i32"), ((64,), "f32")]


def test_unsupported_constructs_are_named():
    with pytest.raises(schedule.ScheduleError, match="copy_buffer"):
        schedule.parse("  util.func public @main() {\n    hal.command_buffer.copy_buffer<%c>\n  }\n")
    with pytest.raises(schedule.ScheduleError, match="no function @main"):
        schedule.parse("  util.func public @other() {\n  }\n")


def test_dynamic_workgroup_count_is_refused():
    text = _compiled("row_sum").output.read_text()
    text = text.replace("workgroups([%c8,", "workgroups([%dyn,", 1)
    with pytest.raises(schedule.ScheduleError, match="not a constant"):
        schedule.parse(text)
