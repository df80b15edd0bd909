"""`make test` (scripts/test_tiers.py): the tiers the README's line names, in order, each one's time
printed, the exit status of the first that failed, and a closing count in pytest's words."""
import importlib.util
import sys
from pathlib import Path

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]


def _tiers_module():
    spec = importlib.util.spec_from_file_location("test_tiers_script", REPO / "scripts" / "test_tiers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tiers_are_the_readmes_and_the_slow_selftests_are_opt_in():
    tiers = _tiers_module()
    names = [name for name, _, _ in tiers.tiers(slow=False)]
    assert names == ["set-up", "lint and types", "docs", "default run", "selftests", "wheel check"]
    readme = (REPO / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("make test"))
    assert all(words in line for words in ("lint and types", "the docs", "the default run", "the selftests",
                                            "the wheel check"))
    selftests = dict((n, c) for n, c, _ in tiers.tiers(slow=False))["selftests"][0]
    assert selftests[-2:] == ["-m", "not slow"] and "-n" in selftests
    nightly = dict((n, c) for n, c, _ in tiers.tiers(slow=True))["selftests"][0]
    assert "not slow" not in nightly


def test_a_failing_tier_sets_the_status_and_the_later_tiers_still_run(tmp_path, monkeypatch, capsys):
    tiers = _tiers_module()
    junit = tmp_path / "j.xml"
    junit.write_text('<testsuites><testsuite tests="5" failures="1" errors="1" skipped="1"/></testsuites>')
    assert tiers.counts(str(junit)) == (2, 2, 1)
    assert tiers.counts(str(tmp_path / "missing.xml")) == (0, 0, 0)
    ran = tmp_path / "ran"
    monkeypatch.setattr(tiers, "JUNIT", tmp_path / "tiers")
    monkeypatch.setattr(tiers, "tiers", lambda slow: [
        ("fails", [[sys.executable, "-c", "raise SystemExit(3)"], [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]],
         None),
        ("counted", [[sys.executable, "-c", f"open({str(ran)!r}, 'w')"]], str(junit))])
    assert tiers.main([]) == 3
    out = capsys.readouterr().out.splitlines()
    assert ran.exists()                                     # the later tier ran; the failed tier's rest did not
    assert any(ln.startswith("fails") and "FAILED (exit 3)" in ln for ln in out)
    assert any(ln.startswith("counted") and "2 passed, 2 failed, 1 skipped" in ln for ln in out)
    assert out[-1] == "tests: 2 passed, 2 failed, 1 skipped"
