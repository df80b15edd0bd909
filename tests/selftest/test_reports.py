"""Reports: summary.md (matrix, then failures with their census), heatmaps of
|got - expected| / allowed that show where the garbage is, index.html that opens from disk, and
the same page and heatmap checked in a real headless Chromium."""
import json
import re
import os
import shutil
import subprocess
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from hardware.report import heatmap

pytest_plugins = ["pytester"]

# Seed 002's symptom on a [16, 256] tile (row 0: col 0 right, cols 1-15 garbage) and seed 000's
# (partition C_0 right, the other three partitions wrong), each against its census.
FAILING = textwrap.dedent('''
    import numpy as np
    import pytest
    from golden import assert_close

    pytestmark = pytest.mark.family("gemm_partition_n")   # a family emu models (else the core SKIPs it)

    def test_tile_row0(hw):
        want = np.linspace(-1, 1, 16 * 256).reshape(16, 256)
        got = want.copy()
        got[0, 1:16] = 2.0 ** np.arange(8, 23)
        assert_close(got, want, atol=1e-5, rtol=1.3e-6, name="out")

    def test_partitions(hw):
        want = np.cos(np.arange(64 * 256)).reshape(64, 256)
        got = want.copy()
        got[:, 64:] = np.sin(np.arange(64 * 192)).reshape(64, 192)
        assert_close(got, want, tol=np.full(want.shape, 0.01), name="forward() output")

    def test_fine(hw):
        pass
''')


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """One real session (through pytest) that writes every report; shared by the checks below."""
    root = tmp_path_factory.mktemp("reports_run")
    (root / "conftest.py").write_text('pytest_plugins = ["hardware.plugin"]\n')
    (root / "test_demo.py").write_text(FAILING)
    proc = subprocess.run(["python", "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "--hw", "emu", "--isolation", "none", "test_demo.py"],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ,
                               "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return root / "reports"


def test_every_report_is_written(run_dir):
    for name in ("results.json", "junit.xml", "summary.md", "index.html"):
        assert (run_dir / name).is_file(), name
    assert len(list((run_dir / "heatmaps").glob("*.png"))) == 2
    assert len(list((run_dir / "arrays").glob("*.npy"))) == 2


def test_summary_markdown_matrix_then_failures_with_census(run_dir):
    md = (run_dir / "summary.md").read_text()
    assert md.startswith("# accel-regress report\n\n**3 cases on 1 device(s): 1 PASS, 2 FAIL (2 problems)**")
    assert "| family | emu |\n|---|---|\n| gemm_partition_n | 1 PASS, 2 FAIL |" in md
    assert "| `test_demo.py::test_tile_row0` | FAIL |" in md
    assert md.index("## Family × device") < md.index("## Test × device") < md.index("## Failures (2)")
    tile = md[md.index("### FAIL · emu · `test_demo.py::test_tile_row0[emu]`"):]
    assert "Mismatched elements: 15 / 4096 (0.4%) over tolerance" in tile
    assert "Where: row 0, cols 1-15: 15 elements" in tile
    assert re.search(r"!\[\|got - expected\| / allowed\]\(heatmaps/test_tile_row0_emu-[0-9a-f]{8}\.png\)", tile)
    parts = md[md.index("### FAIL · emu · `test_demo.py::test_partitions[emu]`"):]
    assert "Where: scattered over rows 0-63; cols 64-255" in parts


def test_ratio_map_marks_exactly_the_bad_elements():
    want = np.linspace(-1, 1, 16 * 256).reshape(16, 256)
    got = want.copy()
    got[0, 1:16] = 1e6
    r = heatmap.ratio_map(got, want, atol=1e-5, rtol=1.3e-6)
    assert r["block"] == [1, 1] and r["shape"] == [16, 256]
    over = np.argwhere(r["ratio"] > 1.0)
    assert over.tolist() == [[0, c] for c in range(1, 16)]


def test_ratio_map_block_max_keeps_one_bad_element():
    want = np.zeros((2048, 4096), np.float32)
    got = want.copy()
    got[1000, 3001] = 1.0
    r = heatmap.ratio_map(got, want, atol=0.5)
    assert r["block"] == [8, 8] and r["ratio"].shape == (256, 512)
    assert np.argwhere(r["ratio"] > 1.0).tolist() == [[1000 // 8, 3001 // 8]]
    assert heatmap.ratio_map(np.zeros(3), np.zeros(4)) is None      # a shape error has no map


def _over_pixels(img: np.ndarray) -> np.ndarray:
    """Pixels in the heatmap's over-tolerance colours (orange to dark red), not text or blues."""
    rgb = img[..., :3].astype(np.float64)
    if rgb.max() > 1.0:
        rgb = rgb / 255.0
    return np.argwhere((rgb[..., 0] - rgb[..., 2] > 0.3) & (rgb[..., 1] < 0.6))


def test_heatmap_png_shows_the_garbage_where_it_is(run_dir):
    from matplotlib import image
    png = next((run_dir / "heatmaps").glob("test_tile_row0*.png"))
    img = image.imread(png)
    h, w = img.shape[:2]
    plot = _over_pixels(img[:, : int(0.86 * w)])       # leave out the colour bar
    assert len(plot) > 20
    (y0, x0), (y1, x1) = plot.min(axis=0), plot.max(axis=0)
    # Row 0 of 16 and cols 1-15 of 256: a thin band at the top left of the plot area.
    assert (y1 - y0) < 0.06 * h and (x1 - x0) < 0.08 * w and x0 < 0.2 * w and y0 < 0.3 * h
    parts = image.imread(next((run_dir / "heatmaps").glob("test_partitions*.png")))
    over = _over_pixels(parts[:, : int(0.86 * parts.shape[1])])
    # C_1..C_3 (cols 64-255) wrong, C_0 right: the red starts a quarter of the way across.
    xs = over[:, 1]
    plot_cols = np.argwhere((parts[..., :3].sum(axis=2) < 2.9).any(axis=0)).ravel()
    assert xs.min() > plot_cols.min() + 0.2 * (xs.max() - plot_cols.min())


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("a", "img"):
            self.links.append(a.get("href") or a.get("src"))
        if "id" in a:
            self.ids.append(a["id"])


def test_index_html_links_resolve_on_disk(run_dir):
    page = _Links()
    page.feed((run_dir / "index.html").read_text())
    assert {"headline", "families", "matrix"} <= set(page.ids)
    assert {"summary.md", "results.json", "junit.xml"} <= set(page.links)
    assert sum(1 for x in page.links if x.startswith("heatmaps/")) >= 2
    for link in page.links:
        assert "://" not in link and not link.startswith("/")          # opens from disk, no server
        assert (run_dir / link).is_file(), link


def test_report_command_on_a_results_file(run_dir, tmp_path, capsys):
    from hardware import report
    out = tmp_path / "again"
    assert report.main([str(run_dir / "results.json"), "--out", str(out)]) == 0
    assert "(2 heatmap(s))" in capsys.readouterr().out
    assert (out / "index.html").is_file() and len(list((out / "heatmaps").glob("*.png"))) == 2
    page = _Links()
    page.feed((out / "index.html").read_text())
    for link in page.links:
        assert (out / link).resolve().is_file(), link


def test_report_command_names_a_bad_file(tmp_path, capsys):
    from hardware import report
    bad = tmp_path / "results.json"
    bad.write_text("[]")
    assert report.main([str(bad)]) == 2
    assert f"{bad}: not an accel-regress results file" in capsys.readouterr().err


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _shoot(url: str, png: Path, profile: Path, size="1280,1800"):
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", f"--window-size={size}", f"--screenshot={png}", url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert png.is_file(), f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (Debian package `chromium`): "
                                                 "the browser check of index.html is skipped")
def test_index_and_heatmap_in_headless_chromium(run_dir, tmp_path):
    from matplotlib import image
    shot = tmp_path / "index.png"
    _shoot((run_dir / "index.html").resolve().as_uri(), shot, tmp_path / "profile")
    img = image.imread(shot)
    # The page rendered (not blank) and its heatmaps loaded from disk: their over-tolerance reds
    # are on the screen, which no other element of the page uses.
    assert img[..., :3].std() > 0.05
    assert len(_over_pixels(img)) > 200
    dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'profile2'}", "--dump-dom",
                          (run_dir / "index.html").resolve().as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert "3 cases on 1 device(s)" in dom and "Where: row 0, cols 1-15: 15 elements" in dom
    heat = tmp_path / "heat.png"
    png = next((run_dir / "heatmaps").glob("test_tile_row0*.png")).resolve()
    _shoot(png.as_uri(), heat, tmp_path / "profile3", size="1000,500")
    assert len(_over_pixels(image.imread(heat))) > 20
    keep = os.environ.get("ACCEL_KEEP_SCREENSHOTS")     # a folder, for a person to look at
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "index.png")
        shutil.copy(heat, Path(keep) / "heatmap.png")


def test_seed002_tile_mismatch_gives_its_arrays():
    """golden.tiles raises its own TileMismatch (not via assert_close): its arrays are found too."""
    from golden import tiles
    from hardware.emu import rowexpandmul_fillpad as emu_tiles
    from hardware.report.plugin import _arrays, _mismatch
    cfg = tiles.seed_config(1, "fused", True)
    case = tiles.make_case(cfg)
    inputs = tiles.make_inputs(case)
    ref = tiles.reference(inputs, cfg)
    bad = emu_tiles.bare_tile_validshape(case, {"out": ref.copy()})["out"]
    with pytest.raises(tiles.TileMismatch) as err:
        tiles.assert_tile_close(bad, ref, cfg)
    got, want, atol, rtol, tol = _arrays(_mismatch(err.value))
    r = heatmap.ratio_map(got, want, atol=atol, rtol=rtol, tol=tol)
    # Seed 002: row 0, col 0 right; cols 1-15 garbage and 16-255 ~0: 255 of 4096 wrong, all in row 0.
    assert np.argwhere(r["ratio"] > 1.0).tolist() == [[0, c] for c in range(1, 256)]
    assert r["ratio"][0, 1:16].min() > r["ratio"][0, 16:].max()     # the garbage stands out
