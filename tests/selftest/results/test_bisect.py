"""``accel-regress bisect`` over real releases of a real package: pytz 2022.4 .. 2022.7.1 from the
package index, one environment per version, the case in fixtures/bisect/case_pytz_dst.py
(Mexico City's summer time, abolished in the tz database pytz 2022.6 bundles). Also: the
search's ``git bisect skip`` rule, a bisect killed half-way resuming from its journal, the
environment cache's LRU bound and two processes sharing it, ``--toolchain-dir``.

Needs the package index (pytz wheels, 0.5 MB each) and uv or pip; each step is one pytest run.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accel_regress.results.bisect import envs, search

HERE = Path(__file__).resolve().parents[1]
CASE = HERE / "fixtures" / "bisect" / "case_pytz_dst.py"
NODE = "case_pytz_dst.py::test_mexico_city_keeps_summer_time_in_2023"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder holding only the case (no conftest, no ini): the step's pytest loads the plugin
    from its entry point, as in a user's repository."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(CASE, root / CASE.name)
    monkeypatch.setenv("ACCEL_BISECT_RUNS", str(tmp_path / "journal"))
    monkeypatch.setenv("ACCEL_BISECT_ENVS", str(tmp_path / "envs"))
    return root


def _bisect(project, *args, **kw):
    argv = [sys.executable, "-m", "accel_regress", "bisect", NODE, *args]
    return subprocess.Popen(argv, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_search_skips_like_git_bisect():
    order = [str(v) for v in range(10)]
    truth = {v: (search.GOOD if int(v) < 6 else search.BAD) for v in order}
    truth["5"] = truth["4"] = search.SKIP                     # unbuildable, or another failure
    seen = []

    def classify(v):
        seen.append(v)
        return truth[v]
    found = search.bisect(order, classify)
    assert (found.last_good, found.first_bad) == ("3", "6")
    assert found.skipped == ["4", "5"] and not found.exact
    assert len(seen) == len(set(seen)), "a version was tried twice"
    assert search.bisect(order, lambda v: search.GOOD if int(v) < 7 else search.BAD).first_bad == "7"


def test_bisect_finds_the_pytz_release_and_resumes_after_a_kill(project, tmp_path):
    """A first bisect is killed once two steps are in its journal; the second finishes from there."""
    journal = tmp_path / "journal"
    first = _bisect(project, "--package", "pytz", "--good", "2022.4", "--bad", "2022.7.1", start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.poll() is None:
        files = list(journal.glob("*.json"))
        if files and len(json.loads(files[0].read_text() or "{}").get("steps", {})) >= 2:
            break
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
    files = list(journal.glob("*.json"))
    assert files, "the killed bisect wrote no journal"
    kept = json.loads(files[0].read_text())["steps"]
    assert set(kept) >= {"2022.7.1", "2022.4"}, kept

    second = _bisect(project, "--package", "pytz", "--good", "2022.4", "--bad", "2022.7.1",
                     "--json", str(tmp_path / "result.json"))
    out, _ = second.communicate(timeout=600)
    assert second.returncode == 0, out
    assert "last good: 2022.5" in out and "first bad: 2022.6" in out, out
    assert f"{len(kept)} from the journal" in out, out
    assert "2022.6: FAIL -> bad" in out and "pytz 2022.6: CST" in out, out
    doc = json.loads((tmp_path / "result.json").read_text())
    assert (doc["last_good"], doc["first_bad"]) == ("2022.5", "2022.6")
    assert not list((tmp_path / "envs").glob(".tmp-*")), "a half-built environment was left"


def _record(path, question, who, n):
    journal = search.Journal(path, question)
    for i in range(n):
        journal.record(f"{who}-{i}", {"verdict": "PASS", "i": i})


def test_journal_shared_by_two_processes(tmp_path):
    """Two bisects of one question extend one journal at once: every step of both is kept."""
    path, question = tmp_path / "j.json", {"test": "t"}
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record, args=(path, question, who, 40)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    steps = search.Journal(path, question).steps()
    assert set(steps) == {f"{w}-{i}" for w in "ab" for i in range(40)}
    assert search.Journal(path, {"test": "another"}).steps() == {}, "another question's journal was read"


def _use(root, version, hold_s, bound):
    cache = envs.EnvCache(root, bound)
    with cache.use({"pytz": version}) as env:
        assert (env.site / "pytz" / "__init__.py").is_file()
        time.sleep(hold_s)


def test_env_cache_is_bounded_and_shared_by_two_processes(tmp_path):
    root = tmp_path / "envs"
    one = envs.disk_bytes(_built(root, "2022.4"))
    # Two processes at once, each building and using its own version under a bound that holds one
    # environment: neither may delete the other's environment while it is in use.
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_use, args=(root, v, 1.0, int(one * 1.5))) for v in ("2022.5", "2022.6")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    left = [p for p in root.iterdir() if p.name != ".lock"]
    assert all(not p.name.startswith(".") for p in left), f"a temporary or half-removed entry was left: {left}"
    assert all(envs.EnvCache._read(p) is not None for p in left), "an entry is damaged"
    # The least recently used goes first.
    cache = envs.EnvCache(root, int(one * 2.5))
    with cache.use({"pytz": "2022.4"}):
        pass
    with cache.use({"pytz": "2022.5"}):
        pass
    with cache.use({"pytz": "2022.6"}):
        pass
    kept = {json.loads((p / "env.json").read_text())["pins"]["pytz"] for p in root.iterdir() if not p.name.startswith(".")}
    assert kept == {"2022.5", "2022.6"}


def _built(root, version) -> Path:
    with envs.EnvCache(root, 1 << 40).use({"pytz": version}) as env:
        return env.dir


def test_toolchain_dirs(project, tmp_path):
    """Toolchains installed side by side (here: two pytz folders made with the installer)."""
    dirs = []
    for v in ("2022.5", "2022.6"):
        d = tmp_path / f"pytz-{v}"
        argv = envs.install_argv(envs.resolve_installer("auto"), d / "site", [f"pytz=={v}"])
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
        dirs.append(str(d))
    proc = _bisect(project, "--toolchain-dir", *dirs)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert f"last good: {dirs[0]}" in out and f"first bad: {dirs[1]}" in out, out


def test_bad_end_that_passes_is_refused(project):
    proc = _bisect(project, "--package", "pytz", "--good", "2022.4", "--bad", "2022.5")
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 2 and "nothing to bisect" in out, out
