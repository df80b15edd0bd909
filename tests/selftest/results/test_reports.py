"""Reports: each opens with the gate's verdict (the same words as `python -m accel_regress gate`, under
the default policy and policy/release.toml) and a fault run's banner; summary.md (matrix, then
failures with their census and rerun line), heatmaps of |got - expected| / allowed that show where
the garbage is, index.html that opens from disk, CSV matrices and the PR comment; the page and a
heatmap checked in a real headless Chromium."""
import os
import re
import shutil
import subprocess
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from accel_regress.results.report import heatmap

pytest_plugins = ["pytester"]

# Seed 002's symptom on a [16, 256] tile (row 0: col 0 right, cols 1-15 garbage) and seed 000's
# (partition C_0 right, the other three partitions wrong), each against its census.
FAILING = textwrap.dedent('''
    import numpy as np
    import pytest
    from accel_regress.golden import assert_close

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


REPO = Path(__file__).resolve().parents[3]


def _session(root: Path, *options: str) -> Path:
    """One real session (through pytest) that writes every report; its terminal output is kept
    next to them in terminal.txt."""
    report_dir = root / ("reports" if not options else "reports-" + str(abs(hash(options)) % 10 ** 8))
    proc = subprocess.run(["python", "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "--hw", "emu", "--isolation", "none", "--report-dir", str(report_dir), *options,
                           "test_demo.py"],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (report_dir / "terminal.txt").write_text(proc.stdout)
    return report_dir


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports_run")
    (root / "test_demo.py").write_text(FAILING)
    return root


@pytest.fixture(scope="module")
def run_dir(demo_root):
    """The default session, shared by the checks below."""
    return _session(demo_root)


@pytest.fixture(scope="module")
def release_dir(demo_root):
    return _session(demo_root, "--gate-policy", str(REPO / "policy" / "release.toml"))


@pytest.fixture(scope="module")
def fault_dir(demo_root):
    return _session(demo_root, "--inject-fault", "iron-gemm-stale-dma")


def _gate_lines(report_dir: Path, *options: str) -> list[str]:
    proc = subprocess.run(["python", "-m", "accel_regress", "gate", str(report_dir / "results.json"), *options],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def _verdict_lines(gate_out: list[str]) -> list[str]:
    """The gate's opening lines: SHIP / DON'T SHIP: N reasons, then the fault banner (if any)."""
    return [ln for ln in gate_out if not ln.startswith("  ")]


def _terminal_section(report_dir: Path) -> list[str]:
    text = (report_dir / "terminal.txt").read_text().splitlines()
    start = next(i for i, ln in enumerate(text) if "accel-regress summary" in ln)
    return text[start + 1:]


def _md(path: Path) -> str:
    """A Markdown report as its reader sees the run's text: CommonMark's backslash escapes of ASCII
    punctuation undone, and the word joiners that break @mentions taken out (util/escape.py)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", path.read_text()).replace("\u2060", "")


def _markdown_lines(report_dir: Path) -> list[str]:
    return [ln.strip("*# ") for ln in _md(report_dir / "summary.md").splitlines() if ln.strip()]


def test_every_report_is_written(run_dir):
    for name in ("results.json", "junit.xml", "summary.md", "index.html"):
        assert (run_dir / name).is_file(), name
    assert len(list((run_dir / "heatmaps").glob("*.png"))) == 2
    assert len(list((run_dir / "arrays").glob("*.npy"))) == 2


@pytest.mark.parametrize("which, options", [("run_dir", ()), ("release_dir", ("--policy", str(REPO / "policy" / "release.toml"))),
                                             ("fault_dir", ())])
def test_reports_and_terminal_open_with_the_gates_verdict(request, which, options):
    report_dir = request.getfixturevalue(which)
    gate_out = _gate_lines(report_dir, *options)
    head = _verdict_lines(gate_out)
    n = len(head)
    assert _markdown_lines(report_dir)[:n] == head
    assert _terminal_section(report_dir)[:n] == head
    reasons = [ln.strip()[2:] for ln in gate_out if ln.startswith("  - ")]
    md = _md(report_dir / "summary.md")
    for r in reasons:                       # every blocking reason, in the gate's words
        assert f"- {r}" in md
    pr = [ln.strip("*# ") for ln in _md(report_dir / "pr-comment.md").splitlines() if ln.strip()]
    assert pr[:n] == head and pr[n:n + len(reasons)] == [f"- {r}" for r in reasons]


def test_release_policy_gives_its_own_verdict(run_dir, release_dir):
    default, release = _verdict_lines(_gate_lines(run_dir)), _verdict_lines(
        _gate_lines(release_dir, "--policy", str(REPO / "policy" / "release.toml")))
    assert default == ["DON'T SHIP: 1 reason"] and release[0].startswith("DON'T SHIP: ") and release != default
    assert "backend Krackan is required by" in _md(release_dir / "summary.md")


def test_fault_run_says_verdict_first_then_fault_everywhere(fault_dir):
    """Issue 29 item 11: the verdict line opens every report, the fault banner comes second (the old
    order, banner first, fails each of the [:2] checks below)."""
    banner = "fault iron-gemm-stale-dma injected: not a release run"
    gate_out = _gate_lines(fault_dir)
    head = ["DON'T SHIP: 2 reasons", banner]       # the fault and the failing test
    assert gate_out[:2] == head and gate_out[2].startswith(f"  - {banner} (pass --allow-fault")
    assert _markdown_lines(fault_dir)[:2] == head
    assert _md(fault_dir / "summary.md").startswith(f"# {head[0]}\n\n**{banner}**")
    assert _terminal_section(fault_dir)[:2] == head
    lines = (fault_dir / "terminal.txt").read_text().splitlines()
    assert lines.index(banner) < next(i for i, ln in enumerate(lines) if ln.startswith("test_demo.py"))  # before any result
    assert _md(fault_dir / "pr-comment.md").startswith(f"### {head[0]}\n\n**{banner}**")
    page = (fault_dir / "index.html").read_text()
    assert page.index("<h1 id='verdict'") < page.index(f"<div id='fault'>{banner}</div>")
    assert f"<title>{head[0]} · {banner} · " in page.replace("&#x27;", "'")
    allowed = subprocess.run(["python", "-m", "accel_regress", "gate", str(fault_dir / "results.json"), "--allow-fault"],
                             capture_output=True, text=True, cwd=REPO).stdout.splitlines()
    assert allowed[:2] == ["DON'T SHIP: 1 reason", banner] and not any(banner + " (pass" in ln for ln in allowed)


def test_csv_matrices_and_pr_comment(run_dir):
    import csv
    rows = list(csv.reader((run_dir / "matrix.csv").open()))
    assert rows[0] == ["test", "family", "emu"]
    assert ["test_demo.py::test_tile_row0", "gemm_partition_n", "FAIL"] in rows and len(rows) == 4
    per = list(csv.reader((run_dir / "matrix-emu.csv").open()))
    assert per[0] == ["test", "family", "verdict", "stage", "duration_s", "message"]
    assert any(r[0] == "test_demo.py::test_tile_row0" and r[2] == "FAIL" and "not close" in r[5] for r in per)
    pr = _md(run_dir / "pr-comment.md")
    assert "| emu | 1 | 2 |" in pr and "- FAIL `test_demo.py::test_tile_row0` on emu" in pr
    assert "[index.html](index.html)" in pr and len(pr.splitlines()) < 25


def test_summary_markdown_matrix_then_failures_with_census(run_dir):
    md = _md(run_dir / "summary.md")
    assert "**3 cases on 1 device(s): 1 PASS, 2 FAIL**" in md
    assert "| family | emu |\n|---|---|\n| gemm_partition_n | 1 PASS, 2 FAIL |" in md
    assert "| `test_demo.py::test_tile_row0` | FAIL |" in md
    assert md.index("## Family × device") < md.index("## Test × device") < md.index("## Failures (2)")
    tile = md[md.index("### FAIL · emu · `test_demo.py::test_tile_row0[emu]`"):]
    assert "Mismatched elements: 15 / 4096 (0.4%) over tolerance" in tile
    assert "Where: row 0, cols 1-15: 15 elements" in tile
    assert re.search(r"!\[\|got - expected\| / allowed\]\(heatmaps/test_tile_row0_emu-[0-9a-f]{8}\.png\)", tile)
    assert "rerun: `python -m pytest 'test_demo.py::test_tile_row0[emu]' --hw emu --isolation none`" in tile
    parts = md[md.index("### FAIL · emu · `test_demo.py::test_partitions[emu]`"):]
    assert "Where: block rows 0-63, cols 64-255: 12145 of 12288 elements (98.8%)" in parts


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
    assert {"verdict", "headline", "families", "matrix"} <= set(page.ids)
    assert {"summary.md", "results.json", "junit.xml"} <= set(page.links)
    assert sum(1 for x in page.links if x.startswith("heatmaps/")) >= 2
    for link in page.links:
        assert "://" not in link and not link.startswith("/")          # opens from disk, no server
        assert (run_dir / link).is_file(), link


def test_report_command_on_a_results_file(run_dir, tmp_path, capsys):
    from accel_regress.results import report
    out = tmp_path / "again"
    assert report.main([str(run_dir / "results.json"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("DON'T SHIP: 1 reason\n") and "(2 heatmap(s), 2 CSV file(s))" in said
    assert (out / "index.html").is_file() and len(list((out / "heatmaps").glob("*.png"))) == 2
    page = _Links()
    page.feed((out / "index.html").read_text())
    for link in page.links:
        assert (out / link).resolve().is_file(), link


def test_report_command_names_a_bad_file(tmp_path, capsys):
    from accel_regress.results import report
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


def _dom(page: Path, profile: Path) -> str:
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120).stdout


class _Text(HTMLParser):
    """The visible text of a page's body, in order, one entry per text node."""
    def __init__(self):
        super().__init__()
        self.lines, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("head", "style", "script", "title")

    def handle_endtag(self, tag):
        self._skip -= tag in ("head", "style", "script", "title")

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.lines.append(data.strip())


_NO_CHROMIUM = pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (Debian package "
                                                              "`chromium`): the browser check of index.html is skipped")


@_NO_CHROMIUM
@pytest.mark.parametrize("which, options", [("run_dir", ()), ("release_dir", ("--policy", str(REPO / "policy" / "release.toml"))),
                                             ("fault_dir", ())])
def test_browser_shows_the_gates_verdict_first(request, tmp_path, which, options):
    report_dir = request.getfixturevalue(which)
    gate_out = _gate_lines(report_dir, *options)
    text = _Text()
    text.feed(_dom(report_dir / "index.html", tmp_path / "profile"))
    head = _verdict_lines(gate_out)
    assert text.lines[:len(head)] == head
    reasons = [ln.strip()[2:] for ln in gate_out if ln.startswith("  - ")]
    assert text.lines[len(head):len(head) + len(reasons)] == reasons


@_NO_CHROMIUM
def test_index_and_heatmap_in_headless_chromium(run_dir, tmp_path):
    from matplotlib import image
    shot = tmp_path / "index.png"
    _shoot((run_dir / "index.html").resolve().as_uri(), shot, tmp_path / "profile")
    img = image.imread(shot)
    # The page rendered (not blank) and its heatmaps loaded from disk: their over-tolerance reds
    # are on the screen, which no other element of the page uses.
    assert img[..., :3].std() > 0.05
    assert len(_over_pixels(img)) > 200
    dom = _dom(run_dir / "index.html", tmp_path / "profile2")
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
    """accel_regress.families.rowexpandmul_fillpad.golden raises its own TileMismatch (not via assert_close): its arrays are found too."""
    from accel_regress.families.rowexpandmul_fillpad import golden as tiles
    from accel_regress.families.rowexpandmul_fillpad import emu as emu_tiles
    from accel_regress.plugin.reports import _arrays, _mismatch
    cfg = tiles.seed_config(1, "fused", True)
    case = tiles.make_case(cfg)
    inputs = tiles.make_inputs(case)
    ref = tiles.tile_reference(inputs, cfg)
    bad = emu_tiles.bare_tile_validshape(case, {"out": ref.copy()})["out"]
    with pytest.raises(tiles.TileMismatch) as err:
        tiles.assert_tile_close(bad, ref, cfg)
    got, want, atol, rtol, tol = _arrays(_mismatch(err.value))
    r = heatmap.ratio_map(got, want, atol=atol, rtol=rtol, tol=tol)
    # Seed 002: row 0, col 0 right; cols 1-15 garbage and 16-255 ~0: 255 of 4096 wrong, all in row 0.
    assert np.argwhere(r["ratio"] > 1.0).tolist() == [[0, c] for c in range(1, 256)]
    assert r["ratio"][0, 1:16].min() > r["ratio"][0, 16:].max()     # the garbage stands out


def test_heatmap_drawn_once_per_content(tmp_path, monkeypatch):
    """A second render of the same map and texts is the first's PNG, copied: no figure drawn; a
    different map or title is drawn afresh (the cache never gives an old picture)."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("ACCEL_HEATMAP_CACHE", str(tmp_path / "cache"))
    drawn = []
    draw = heatmap.draw
    monkeypatch.setattr(heatmap, "draw", lambda ratio, png, **kw: (drawn.append(kw["title"]), draw(ratio, png, **kw)))
    ratio = np.zeros((16, 256), np.float32)
    ratio[0, 1:16] = 50.0
    heatmap.render(ratio, tmp_path / "a.png", title="FAIL emu row0", shape=[16, 256])
    heatmap.render(ratio, tmp_path / "b.png", title="FAIL emu row0", shape=[16, 256])
    assert drawn == ["FAIL emu row0"]
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    other = ratio.copy()
    other[5, 100] = 50.0
    heatmap.render(other, tmp_path / "c.png", title="FAIL emu row0", shape=[16, 256])
    heatmap.render(ratio, tmp_path / "d.png", title="FAIL emu row0 (again)", shape=[16, 256])
    assert drawn == ["FAIL emu row0", "FAIL emu row0", "FAIL emu row0 (again)"]
    assert (tmp_path / "c.png").read_bytes() != (tmp_path / "a.png").read_bytes()


def test_heatmap_cache_is_bounded_and_optional(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(heatmap.CACHE, "max_files", 2)
    monkeypatch.setenv("ACCEL_HEATMAP_CACHE", str(tmp_path / "cache"))
    for i in range(4):
        heatmap.render(np.full((4, 4), float(i), np.float32), tmp_path / f"{i}.png", title=str(i))
    assert len(list((tmp_path / "cache").glob("*.png"))) == 2
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("ACCEL_HEATMAP_CACHE", str(blocked))        # unusable: drawn every time, no error
    heatmap.render(np.ones((4, 4), np.float32), tmp_path / "x.png", title="x")
    assert (tmp_path / "x.png").stat().st_size > 0
