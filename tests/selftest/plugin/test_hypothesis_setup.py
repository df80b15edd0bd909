"""The hypothesis profiles are registered only when hypothesis is in use: a run without property
tests never imports it; ``--hypothesis-profile explore`` still loads the suite's profile; a test
module that imports hypothesis (without the profiles module) still gets hypothesis' home
directory outside the working tree."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _pytest(tmp_path: Path, test: str, *options: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_it.py").write_text(textwrap.dedent(test))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hw", "emu",
                           "--isolation", "none", "--report-dir", str(tmp_path / "reports"), *options, "test_it.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_run_without_property_tests_never_imports_hypothesis(tmp_path):
    proc = _pytest(tmp_path, """
        import sys

        def test_no_hypothesis():
            assert "hypothesis" not in sys.modules
    """)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_explore_profile_is_loaded_by_its_option(tmp_path):
    proc = _pytest(tmp_path, """
        from hypothesis import settings

        def test_explore():
            assert settings.get_current_profile_name() == "explore"
            assert settings.default.max_examples == 400 and settings.default.database is not None
    """, "--hypothesis-profile", "explore")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_module_that_imports_hypothesis_gets_the_home_directory_outside_the_tree(tmp_path):
    proc = _pytest(tmp_path, """
        from hypothesis import given, strategies as st
        from hypothesis.configuration import storage_directory

        @given(st.integers())
        def test_home(x):
            assert "accel-regress" in str(storage_directory(intent_to_write=False).path)
    """)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (tmp_path / ".hypothesis").exists()
