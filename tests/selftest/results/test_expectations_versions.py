"""Known bugs by version and device: an entry holds only where the versions a result records fall
in its range (qemu < 8.1 for the vfcvt.rtz crash) and on its device generations; an entry whose
range none of a run's cases had is stale, named with the versions seen. Patterns match in linear
time with a bounded length; `expectations update --apply` keeps comments (tomlkit) and `check`
does not call a comment between entries unsorted."""
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from accel_regress.results import expectations as X
from accel_regress.results import expectations_update as U
from accel_regress.results import record as results
from accel_regress.util.globs import Glob, PatternError
from accel_regress.results.version_range import Conditions, RangeError

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
CVT = "tests/test_f32_reduction.py::test_f32_reduction[{}-qemu-rvv-vlen256]"


def _qemu_run(qemu: str, verdict: str = "PASS") -> dict:
    """A results file of qemu-rvv cases the qemu-rvv entries match, run under ``qemu``."""
    versions = {"iree-compiler": "3.13.0", "qemu": f"qemu-riscv64 version {qemu} (Debian)", "clang": "16"}
    cases = [{"nodeid": CVT.format(kind), "backend": "qemu-rvv", "family": "f32_reduction", "verdict": verdict,
              "message": "", "detail": {}, "versions": versions}
             for kind in ("cvt-1x4096-v", "cvt-64x64-v", "softmax-64x64-v-zvl512b")]
    return results.build({"hw": ["qemu-rvv"]}, {}, cases)


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_qemu_rvv_entries_carry_their_version_range():
    """The qemu defect (issue 1441) holds for qemu < 8.1; the compiler findings listed beside it do not
    depend on qemu's version."""
    entries = [e for e in X.load_dir(REPO / "expectations").for_backend("qemu-rvv") if "issues/1441" in e.issue]
    assert len(entries) >= 3 and all(e.conditions.versions == {"qemu": "<8.1"} for e in entries)


def test_a_run_on_qemu_8_2_makes_the_qemu_rvv_entries_stale(tmp_path, capsys):
    exp_dir = str(REPO / "expectations")
    new = _write(tmp_path, "new.json", _qemu_run("8.2.0"))
    assert U.main(["stale", new, "--dir", exp_dir]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.startswith("qemu-rvv: stale entry") for line in out)
    assert "holds for qemu <8.1; versions seen: qemu 8.2.0 (2 cases)" in out[0]
    old = _write(tmp_path, "old.json", _qemu_run("7.2.22", verdict="XFAIL"))
    assert U.main(["stale", old, "--dir", exp_dir]) == 0
    # The update command says the same, and proposes no entry for the plain PASSes under 8.2.
    code = U.main(["update", new, "--dir", exp_dir])
    text = capsys.readouterr().out
    assert "# qemu-rvv: stale entry 'tests/test_f32_reduction.py::test_f32_reduction[cvt-*-v*-vlen*]'" in text
    assert code == 0 and "already match" in text


def test_an_entry_for_another_device_is_not_stale(tmp_path, capsys):
    """The NVIDIA H200 entries of iree-vulkan say nothing of lavapipe: a lavapipe run whose
    subnormal cases pass (as they do, lavapipe keeps subnormals) leaves them standing. Failed on
    cc9ebd7: every default run on lavapipe listed the six NVIDIA-only entries as stale."""
    def run(device: str) -> str:
        versions = {"iree-compiler": "3.13.0", "vulkan-device": device}
        cases = [{"nodeid": "tests/test_f32_reduction.py::test_f32_reduction[iree-vulkan-row_sum-64x128-v-vlen256-subnormal]",
                  "backend": "iree-vulkan", "family": "f32_reduction", "verdict": "PASS", "message": "", "detail": {},
                  "versions": versions}]
        return _write(tmp_path, f"{device.split()[0]}.json", results.build({"hw": ["iree-vulkan"]}, {}, cases))

    exp_dir = str(REPO / "expectations")
    assert U.main(["stale", run("llvmpipe (LLVM 15.0.6, 256 bits)"), "--dir", exp_dir]) == 0
    assert "stale entry" not in capsys.readouterr().out


def test_conditions_read_recorded_versions_and_device_generations():
    c = Conditions.parse({"qemu": "<8.1"}, None)
    assert c.check({"qemu": "qemu-riscv64 version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"}) == (True, "qemu 7.2.22 in <8.1")
    assert c.check({"qemu": "qemu-riscv64 version 8.2.0"}) == (False, "qemu 8.2.0 is outside <8.1")
    assert c.check({})[0]                                    # not recorded: cannot rule the bug out
    fw = Conditions.parse({"npu_firmware": ">=1.5,<1.6", "driver_amdxdna": ">=2.19"}, ["Krackan"])
    krackan = {"npu_device_kind": "npu6", "npu_firmware": "1.5.2.380", "driver_amdxdna": "2.19.0_20250101"}
    assert fw.check(krackan)[0]
    assert fw.check(dict(krackan, npu_device_kind="npu1")) == (False, "device Phoenix is not Krackan")
    assert fw.check(dict(krackan, npu_firmware="1.6.0")) == (False, "npu_firmware 1.6.0 is outside >=1.5,<1.6")
    iree = Conditions.parse({"iree-compiler": "<3.14"}, None)
    assert iree.check({"iree-compiler": "3.13.0rc20261016 @ 89ece87b"})[0]
    for versions, devices in (({"qemu": "eight"}, None), ({"qemu": 8}, None), (None, ["Pentium"]), (None, "Krackan")):
        with pytest.raises(RangeError):
            Conditions.parse(versions, devices)


def test_bad_range_in_a_file_is_named(tmp_path):
    path = tmp_path / "qemu-rvv.toml"
    path.write_text("[[expect]]\ntest = 'x'\nverdict = 'CRASH'\nreason = 'r'\nissue = 'i'\nversions = { qemu = 'new' }\n")
    with pytest.raises(X.ExpectationsError, match=r"entry 1 \(test = 'x'\): versions.qemu = 'new' is not a version range"):
        X.load_file(path, ["qemu-rvv"])


DEMO = textwrap.dedent('''
    import numpy as np
    import pytest
    from accel_regress.golden import assert_close
    from accel_regress import Crash

    pytestmark = pytest.mark.family("gemm_partition_n")

    def test_wrong(hw):
        got = np.zeros(8)
        got[3] = 1.0
        assert_close(got, np.zeros(8), atol=0.01, name="out")

    def test_crashes(hw):
        raise Crash("SIGSEGV")
''')


@pytest.mark.parametrize("numpy_range, verdicts, stale", [
    (">=1", {"test_wrong[emu]": "XFAIL", "test_crashes[emu]": "SKIP"}, []),
    ("<1", {"test_wrong[emu]": "FAIL", "test_crashes[emu]": "CRASH"}, ["test_demo.py::test_crashes", "test_demo.py::test_wrong"]),
])
def test_a_run_applies_an_entry_only_inside_its_range(pytester, numpy_range, verdicts, stale):
    pytester.makepyfile(test_demo=DEMO)
    pytester.mkdir("expectations")
    (pytester.path / "expectations" / "emu.toml").write_text(
        "".join(f"[[expect]]\ntest = 'test_demo.py::{t}'\nverdict = '{v}'\nreason = 'r'\nissue = 'i'\n"
                f"versions = {{ numpy = '{numpy_range}' }}\n\n" for t, v in (("test_crashes", "CRASH"), ("test_wrong", "FAIL"))))
    pytester.runpytest("--hw", "emu", "--isolation", "none", "-p", "no:randomly")
    data = json.loads((pytester.path / "reports" / "results.json").read_text())
    assert {c["test"]: c["verdict"] for c in data["cases"]} == verdicts
    summary = json.loads((pytester.path / "reports" / "expectations.json").read_text())
    assert sorted(e["test"] for e in summary["stale"]) == stale
    for e in summary["stale"]:
        assert e["why"] == f"holds for numpy {numpy_range}; versions seen: numpy {np.__version__}"
    if stale:       # each plain result says which entry it was outside of, and why
        wrong = next(c for c in data["cases"] if c["test"] == "test_wrong[emu]")
        assert wrong["detail"]["expectations_not_holding"][0]["why"] == f"numpy {np.__version__} is outside <1"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pattern", ["*a" * 40 + "b", "{*a,*a*a}" * 8 + "b"])
def test_a_pattern_bomb_matches_in_linear_time(pattern):
    # As a regular expression ('.*a.*a...b') this takes exponential time in the number of stars:
    # years, not the two minutes of the bound (its speed is no business of a test on a loaded box).
    assert not Glob(pattern).match("a" * 5000)


def test_patterns_are_bounded():
    with pytest.raises(PatternError, match="at most 1024 allowed"):
        Glob("x" * 1025)
    with pytest.raises(PatternError, match="more than 512 alternatives"):
        Glob("{a,b}" * 10)
    with pytest.raises(PatternError, match="nested"):
        Glob("{a,{b,c}}")
    assert Glob("t.py::f[{a,b}-*]").match("t.py::f[b-x-y]") and not Glob("t.py::f[{a,b}-*]").match("t.py::f[c-x]")


COMMENTED = '''# Known bugs on emu (demo).

[[expect]]
test = "t.py::test_a"   # the first one
verdict = "FAIL"
reason = "a"
issue = "i"

# test_b: seen only on Tuesdays; keep until the fix lands.
[[expect]]
test = "t.py::test_b"
verdict = "FAIL"
reason = "b"
issue = "i"
versions = { numpy = ">=1" }

[[expect]]
test = "t.py::test_c"
verdict = "FAIL"
reason = "c"
issue = "i"
# end of file
'''


def _data(**verdicts):
    return results.build({"hw": ["emu"]}, {}, [
        {"nodeid": f"t.py::test_{t}[emu]", "backend": "emu", "verdict": v, "message": "new bug", "detail": {},
         "versions": {"numpy": np.__version__}} for t, v in verdicts.items()])


def test_update_apply_keeps_comments_and_check_accepts_them(tmp_path, capsys):
    d = tmp_path / "exp"
    d.mkdir()
    (d / "emu.toml").write_text(COMMENTED)
    assert U.main(["check", "--dir", str(d)]) == 0            # a comment between entries is fine
    run = _write(tmp_path, "r.json", _data(a="PASS", b="HANG", c="XFAIL", d="FAIL"))
    assert U.main(["update", run, "--dir", str(d), "--apply"]) == 0
    text = (d / "emu.toml").read_text()
    assert "test_a" not in text and "# the first one" not in text           # fixed: its entry goes
    assert text.startswith("# Known bugs on emu (demo).\n\n[[expect]]\ntest = \"t.py::test_b\"")
    assert "# test_b: seen only on Tuesdays" not in text or text.index("Tuesdays") < text.index("test_b")
    assert 'verdict = "HANG"\nreason = "b"\nissue = "i"\nversions = { numpy = ">=1" }' in text
    assert 'test = "t.py::test_d"' in text and text.rstrip().endswith("# end of file")
    assert text.index("test_b") < text.index("test_c") < text.index("test_d")
    assert U.main(["check", "--dir", str(d)]) == 0
    capsys.readouterr()
    (d / "emu.toml").write_text(COMMENTED.replace("test_a", "test_z"))
    assert U.main(["check", "--dir", str(d)]) == 1
    assert "not sorted by test: 't.py::test_b' comes after 't.py::test_z'" in capsys.readouterr().out


def test_a_comment_above_an_entry_moves_with_it(tmp_path):
    d = tmp_path / "exp"
    d.mkdir()
    (d / "emu.toml").write_text(COMMENTED)
    run = _write(tmp_path, "r.json", _data(a="XFAIL", b="XFAIL", c="XFAIL", aa="FAIL"))
    assert U.main(["update", run, "--dir", str(d), "--apply"]) == 0
    text = (d / "emu.toml").read_text()
    # The new entry goes between a and b; the note about b stays right above b.
    assert text.index("test_a\"") < text.index("test_aa") < text.index("Tuesdays") < text.index("test_b\"")
    assert X.load_file(d / "emu.toml", ["emu"])[0][1].test == "t.py::test_aa"
