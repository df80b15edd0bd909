"""Issue 39: one cache root ($ACCEL_CACHE_DIR) holds every cache; `accel-regress cache info` says
what it holds; a root restored from another clone is verified, not recomputed."""
import json
import shutil
import time

import pytest

from accel_regress.golden import store
from accel_regress.golden.case import Case

CACHE_VARS = ("ACCEL_IREE_CACHE", "ACCEL_GOLDEN_CACHE", "ACCEL_HEATMAP_CACHE", "ACCEL_RVV_SCAN_CACHE",
              "ACCEL_IREE_AMD_AIE_CACHE", "ACCEL_BISECT_ENVS", "ACCEL_BISECT_RUNS")


@pytest.fixture
def root(tmp_path, monkeypatch):
    for var in CACHE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "root"))
    store.configure()
    yield tmp_path / "root"
    store.configure()


def test_every_cache_lives_under_the_root(root):
    from accel_regress.toolchains.iree import compiler
    from accel_regress.backends.qemu_rvv import build, scan
    from accel_regress.results.report import heatmap
    from accel_regress.backends import iree_amd_aie
    where = {"iree": compiler.cache_root(), "qemu-rvv link": build.link_cache(), "golden": store.root(),
             "rvv-scan": scan.SCANS.root(), "heatmaps": heatmap.CACHE.root(),
             "iree-amd-aie": iree_amd_aie._cache_root()}
    outside = {name: str(p) for name, p in where.items() if root not in p.parents}
    assert not outside, f"caches outside $ACCEL_CACHE_DIR={root}: {outside}"
    # The signing key is never inside what a CI cache restores (golden/store.py's trust rule).
    assert root not in store.signing_key_path().parents


def test_a_cache_of_its_own_variable_still_moves_alone(root, tmp_path, monkeypatch):
    from accel_regress.toolchains.iree import compiler
    monkeypatch.setenv("ACCEL_IREE_CACHE", str(tmp_path / "mine"))
    assert compiler.cache_root() == tmp_path / "mine"
    assert root in store.root().parents


def test_cache_info_lists_every_cache_and_its_size(root, capsys):
    from accel_regress import cache_cli
    (root / "iree" / "k1").mkdir(parents=True)
    (root / "iree" / "k1" / "module.vmfb").write_bytes(b"x" * 1000)
    (root / "qemu-rvv").mkdir()
    (root / "qemu-rvv" / "harness-1.o").write_bytes(b"y" * 24)
    (root / "qemu-rvv" / "loop").symlink_to(root)        # never followed, never counted
    assert cache_cli.main(["info", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["root"] == str(root) and doc["root_from"] == "$ACCEL_CACHE_DIR"
    rows = {r["name"]: r for r in doc["caches"]}
    assert {"iree", "qemu-rvv", "golden", "rvv-scan", "heatmaps"} <= set(rows)
    assert (rows["iree"]["bytes"], rows["iree"]["files"]) == (1000, 1)
    assert (rows["qemu-rvv"]["bytes"], rows["qemu-rvv"]["files"]) == (24, 1)
    assert all(r["in_root"] for r in rows.values())
    assert doc["bytes"] == 1024 and doc["golden_key_file"]["in_root"] is False
    assert cache_cli.main(["info"]) == 0
    text = capsys.readouterr().out
    assert f"cache root: {root}" in text and "1000 B" in text and "golden signing key" in text


def test_cache_info_refuses_an_unknown_command(capsys):
    from accel_regress import cache_cli
    assert cache_cli.main(["wipe"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def _slow(value, calls):
    def fn():
        calls.append(1)
        time.sleep(store.MIN_SECONDS)
        return value
    return fn


def test_a_restored_root_is_verified_not_recomputed(root, tmp_path, monkeypatch):
    """Clone A fills its cache root; the root is restored on clone B (another folder, as a CI cache
    restores it) with the same signing key (a CI secret): B's goldens come from disk, checked
    against their signature; with another key they are foreign and recomputed."""
    import numpy as np
    key = tmp_path / "secret" / "golden-store.key"
    case = Case.make("op", "restored", {"n": 1})
    value = {"x": np.arange(10, dtype=np.float32)}
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cloneA-cache"))
    store.configure(key_file=key)
    calls = []
    store.cached("expected", case, _slow(value, calls))
    assert calls == [1]
    shutil.copytree(tmp_path / "cloneA-cache", root)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(root))
    store.configure(key_file=key)
    hits = store.stats["disk_hits"]
    got = store.cached("expected", case, _slow(value, calls))
    assert calls == [1], "the restored entry was recomputed"
    assert store.stats["disk_hits"] == hits + 1
    assert got["x"].tobytes() == value["x"].tobytes()
    store.configure(key_file=tmp_path / "another.key")
    store.cached("expected", case, _slow(value, calls))
    assert calls == [1, 1], "an entry signed with another key was served"


def test_the_ci_key_follows_the_toolchain_versions(monkeypatch, capsys):
    from accel_regress import cache_cli
    versions = {"iree-compile": "3.13.0", "clang": "16.0.6", "qemu": "7.2", "python": "3.11", "numpy": "2.4"}
    monkeypatch.setattr(cache_cli, "toolchains", lambda: dict(versions))
    assert cache_cli.main(["key"]) == 0
    first = capsys.readouterr().out.strip()
    assert len(first) == 16 and cache_cli.main(["key"]) == 0 and capsys.readouterr().out.strip() == first
    versions["iree-compile"] = "3.14.0"
    cache_cli.main(["key"])
    assert capsys.readouterr().out.strip() != first
