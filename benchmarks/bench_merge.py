"""``python benchmarks/bench_merge.py [CASES] [RUNNERS]``: time ``python -m accel_regress merge`` on CASES
cases spread over RUNNERS results files (default 100,000 over 10, issue 19's figure), and the ratio
of the time per case at CASES and at CASES/10 (about 1 when merge is linear)."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_regress.results import merge, record as results  # noqa: E402
from accel_regress.util.strict_json import dumps  # noqa: E402


def runner_file(folder: Path, i: int, n: int) -> Path:
    backend = "npu"
    cases = [{"nodeid": f"tests/test_x.py::test_c[{backend}-case{j}]", "test": f"test_c[{backend}-case{j}]",
              "family": "gemm_partition_n", "backend": backend, "verdict": "PASS" if j % 7 else "FAIL",
              "stage": "compare", "message": "", "duration_s": 0.01, "runs": [], "census": [], "detail": {},
              "versions": {"device": "npu1"}} for j in range(n)]
    data = results.build({"host": f"box-{i}", "hw": [backend], "started": "2026-11-23T10:00:00"},
                         {backend: {"selected": True, "available": True}}, cases)
    path = folder / f"r{i}.json"
    path.write_text(dumps(data))
    return path


def timed(total: int, runners: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = [f"R{i}={runner_file(folder, i, total // runners)}" for i in range(runners)]
        start = time.perf_counter()
        assert merge.main([*files, "-o", str(folder / "m" / "results.json")]) == 0
        return time.perf_counter() - start


if __name__ == "__main__":
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runners = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    small = timed(total // 10, runners)
    big = timed(total, runners)
    print(f"merge: {total} cases from {runners} runners in {big:.2f} s; {total // 10} cases in {small:.2f} s; "
          f"time per case ratio (big/small) {big / total / (small / (total // 10)):.2f}")
