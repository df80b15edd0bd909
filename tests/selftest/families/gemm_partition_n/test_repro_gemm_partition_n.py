"""repros/gemm_partition_n.py judges known bugs as pytest does (issue 29): every line of the repro
is a pytest case of tests/test_gemm_partition_n.py (forward shape and values, each partition, each
standalone partition) and gets that case's verdict under the same expectations. The known bugs are
the real expectations/npu.toml, as emu's iron-gemm-stale-dma fault models that device: C_1..C_3
XFAIL, and the forward shape, right under this fault, XPASS in both."""
import re
import shutil

from repro_vs_pytest import REPO, run_pytest, run_repro

SCRIPT = "gemm_partition_n.py"
FAULT = "iron-gemm-stale-dma"
ID = "vocab-mini-M256-K512-N4008-m64-k64-n64-c8-bT-cF-P4"
TESTS = "tests/test_gemm_partition_n.py"


def _repro_verdicts(out: str) -> dict[str, str]:
    """Each repro line's verdict, by the node id of the pytest case it stands for."""
    found = {}
    for label, verdict in re.findall(r"^  (forward\(\) shape is right|forward\(\) values|C_\d|standalone partition \d)"
                                     r"\b.*?\[([A-Z_]+)\]", out, re.M):
        part = label[-1]
        test, case = {"forward() shape is right": ("test_forward_shape", f"{ID}-normal"),
                      "forward() values": ("test_forward_values", f"{ID}-normal")}.get(
            label, ("test_partition" if label.startswith("C_") else "test_standalone_partition", f"{ID}-C{part}-normal"))
        found[f"{TESTS}::{test}[{case}]"] = verdict
    return found


def test_known_bugs_are_judged_as_pytest_judges_them(tmp_path):
    known = tmp_path / "expectations"
    known.mkdir()
    shutil.copy(REPO / "expectations" / "npu.toml", known / "emu.toml")
    rc, out = run_repro(SCRIPT, "--hw", "emu", "--fault", FAULT, "--expectations", str(known))
    cases = run_pytest(tmp_path, "test_gemm_partition_n.py", f"{ID}-", "--hw", "emu", "--inject-fault", FAULT,
                       "--expectations", str(known))
    repro = _repro_verdicts(out)
    assert len(repro) == 10, out                       # shape, values, 4 partitions, 4 standalone
    assert repro == {n: cases[n]["verdict"] for n in repro}, out
    assert repro[f"{TESTS}::test_partition[{ID}-C1-normal]"] == "XFAIL"
    assert repro[f"{TESTS}::test_forward_shape[{ID}-normal]"] == "XPASS" and rc == 1, out
