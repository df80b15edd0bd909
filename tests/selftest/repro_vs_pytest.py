"""Run a repro and the pytest case(s) it stands for on the same backend, case and fault, and read
what each says: the helpers of the tests/selftest/families/<id>/test_repro_*.py files (issue 29: each repro's
output matches pytest's for the same case and fault)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_repro(script: str, *args: str, timeout: float = 600) -> tuple[int, str]:
    """The repro's exit status and stdout (its stderr narrates each run and is left out)."""
    proc = subprocess.run([sys.executable, str(REPO / "repros" / script), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, proc.stdout


def run_pytest(tmp_path: Path, test_file: str, keyword: str, *args: str, timeout: float = 600) -> dict[str, dict]:
    """The cases of one pytest run (``-k keyword``), by node id without the backend."""
    report = tmp_path / "pytest-report"
    argv = [sys.executable, "-m", "pytest", f"tests/{test_file}", "-k", keyword, *args, "--isolation", "none",
            "--report-dir", str(report), "-p", "no:cacheprovider", "-q"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    path = report / "results.json"
    assert path.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    cases = json.loads(path.read_text())["cases"]
    assert cases, proc.stdout[-3000:]
    return {c["nodeid"].replace(f"[{c['backend']}-", "[", 1): c for c in cases}


def where(text: str) -> list[str]:
    """Every census "Where:" line in a message or an output (without its indentation)."""
    return re.findall(r"^\s*(Where: .*)$", text, re.M)


def statistics(text: str) -> list[str]:
    """Every census statistic line (bias, magnitude bias, spread) in a message or an output
    (without its indentation)."""
    return re.findall(r"^\s*((?:bias|magnitude bias|spread) \(.*)$", text, re.M)
