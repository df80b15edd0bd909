"""Issue 47 defect 7: the harness's case-file reader (harness.c, read_case) checked the indices it
reads, not the sizes and offsets: a buffer size near 2^64 wrapped alloc64's rounding (a heap
overflow, SIGABRT), an output offset past its buffer printed unrelated heap bytes with exit 0,
a binding offset past its buffer let a dispatch write out of bounds, and a number too large for
its field was cut silently. Each is now the case file's clear [err], exit 2. The harness is the
real one, linked for a real row_sum program and run under qemu-riscv64; the case files are
build.write_case's with one word changed."""
import subprocess

import pytest

from accel_regress.backends.qemu_rvv import QEMU, build, protocol, qemu_cpu
from accel_regress.families.f32_reduction import golden as R
from accel_regress.toolchains.iree.program import program_for

from test_qemu_link_once import links, pytestmark  # noqa: F401  (links: the fixture; the skip without qemu)


@pytest.fixture
def harness(links, tmp_path):
    case = R.make_case("row_sum", (4, 33))
    program = program_for(case)
    compiled = build.compile_riscv(program, "v")
    exe = build.library_harness(compiled)
    whole = build.write_case(compiled, program, R.make_inputs(case), tmp_path / "case.bin").read_bytes()
    cut = whole.index(b"end\n") + 4
    head, data = whole[:cut].decode().split("\n"), whole[cut:]

    def run(edit) -> subprocess.CompletedProcess:
        lines = list(head)
        edit(lines)
        path = tmp_path / "edited.bin"
        path.write_bytes("\n".join(lines).encode() + data)
        return subprocess.run([QEMU, "-cpu", qemu_cpu("v", 256), str(exe), str(path)], capture_output=True, timeout=120)
    return run


def _at(lines, keyword, item=0):
    """The index of the ``item``-th line after the one that starts with ``keyword``."""
    return next(i for i, ln in enumerate(lines) if ln.startswith(keyword + " ")) + 1 + item


def _set(lines, at, word, value):
    words = lines[at].split()
    words[word] = str(value)
    lines[at] = " ".join(words)


def test_the_unedited_case_file_runs(harness):
    proc = harness(lambda lines: None)
    assert proc.returncode == 0 and protocol.parse(proc.stdout.decode()).done, proc.stdout


@pytest.mark.parametrize("edit, said", [
    (lambda ls: _set(ls, _at(ls, "buffers"), 0, 2**64 - 1), b"buffer size 18446744073709551615 past"),
    (lambda ls: _set(ls, _at(ls, "buffers"), 0, -1), b"malformed (buffer size)"),
    (lambda ls: _set(ls, _at(ls, "outputs"), 4, 1 << 20), b"output past the end of its buffer"),
    (lambda ls: _set(ls, _at(ls, "outputs"), 5, 2**64 - 8), b"output past the end of its buffer"),
    (lambda ls: _set(ls, _at(ls, "dispatches"), -2, 1 << 20), b"binding past the end of its buffer"),
    (lambda ls: _set(ls, _at(ls, "dispatches"), 4, 1 << 16), b"workgroup count 65536 past 65535"),
    (lambda ls: _set(ls, _at(ls, "dispatches"), 2, 1 << 32), b"workgroup count 4294967296 past"),
], ids=["size-near-2^64", "negative-size", "output-offset-past", "output-length-wraps", "binding-offset-past",
        "workgroup-z-past-16-bits", "workgroup-x-past-32-bits"])
def test_a_range_past_its_buffer_or_field_is_the_case_files_error(harness, edit, said):
    proc = harness(edit)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-400:], proc.stderr[-400:])
    assert b"[err] the case file is malformed (" in proc.stdout and said in proc.stdout, proc.stdout[-400:]
