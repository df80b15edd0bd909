"""trowexpandmul + set_validshape + tfillpad (seed 002): the whole tile, the padded region, the
controls, and a2a3 against a2a3sim.

Every case checks the whole [R, C] tile against the float64 reference within the one-rounding
error model of families/rowexpandmul_fillpad/golden.py (the census names the wrong rows and column ranges, split into
garbage and never-written elements), and separately that every element outside the valid region
holds the pad value. The controls of the seed's bisection (split, loaded, mul) run with the
same shapes. When both a2a3 and a2a3sim are selected their outputs are also compared with each
other, since seed 002's point is that they disagree. ``--pto-cpp DIR`` adds the codegen lint
over ptoas-emitted C++.
"""
import pytest

from accel_regress.golden import census, store
from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden import inputs as classes
from accel_regress.plugin import run_memo, selection
from accel_regress.core.budget import on_simulators
from accel_regress.plugin.ahead import case_fixture

pytestmark = pytest.mark.family(tiles.OP)

# Input classes (golden/inputs.py): every case with normal inputs; by default one tile per dtype
# (8 x 64, valid 3 x 48, fused, each dtype with another pad) with every other class, every sweep
# case with them under -m input_classes.
CLASS_DEFAULT = [tiles.TileConfig(8, 64, 3, 48, d, pad, "fused", True)
                 for d, pad in (("f32", "zero"), ("f16", "max"), ("bf16", "min"))]


# A simulator builds and runs one harness per case: by default it gets seed 002's kernel at
# valid_rows 1, 16 and 64 in every variant, and the f32 zero-pad sweep.
SIMULATOR_DEFAULT = {c.id for c in tiles.seed_configs() if c.valid_rows in (1, 16, 64)} | {
    c.id for c in tiles.sweep_configs() if c.dtype == "f32" and c.pad == "zero"}
ON_SIMULATORS = on_simulators("only seed 002's kernel at valid_rows 1, 16, 64 and the f32 zero-pad sweep run by default")


def _param(cfg, prefix="", marks=()):
    marks = (*marks, ON_SIMULATORS) if cfg.id not in SIMULATOR_DEFAULT else marks
    return pytest.param(cfg, id=prefix + cfg.test_id, marks=marks)


def _classed(cfgs, marks=()):
    return [_param(c.with_inputs(cls), marks=marks) for c in cfgs for cls in classes.CLASSES[1:]]


CONFIGS = ([_param(c, "seed-") for c in tiles.seed_configs()]
           + [_param(c) for c in tiles.sweep_configs()]
           + [_param(c, marks=(pytest.mark.large,)) for c in tiles.large_configs()]
           + _classed(CLASS_DEFAULT)
           + _classed([c for c in tiles.sweep_configs() if c not in CLASS_DEFAULT], (pytest.mark.input_classes,)))


@pytest.fixture(scope="module")
def cfg(request):
    return request.param


@case_fixture
def case(cfg, golden_seed):
    return tiles.make_case(cfg, golden_seed)


@pytest.fixture(scope="module")
def inputs(case):
    return store.cached("inputs", case, lambda: tiles.make_inputs(case))


@pytest.fixture(scope="module")
def expected(case, inputs, cfg):
    return store.cached("expected", case, lambda: tiles.tile_reference(inputs, cfg))


@pytest.fixture(scope="module")
def run(hw, case, inputs):
    return hw.run(case, inputs)


@pytest.mark.parametrize("cfg", CONFIGS, indirect=True)
def test_tile(run, cfg, expected):
    tiles.assert_tile_close(run["out"], expected, cfg, name=f"out ({cfg.variant})")


@pytest.mark.parametrize("cfg", CONFIGS, indirect=True)
def test_padded_region(run, cfg):
    got = run["out"]
    assert got.shape == (cfg.rows, cfg.cols), f"out has shape {got.shape}, expected {(cfg.rows, cfg.cols)}"
    ok, words = tiles.padded_region_report(got, cfg)
    assert ok, words


# --- a2a3 against a2a3sim --------------------------------------------------------------------

_PAIR = ("a2a3", "a2a3sim")


def _run_on(config, name, case, inputs):
    # the session's memo: the same run test_tile and test_padded_region read on that backend
    return run_memo.run_case(config, name, case, inputs, fault=config.getoption("accel_inject_fault"),
                             timeout_s=config.getoption("accel_case_timeout"))


def pytest_generate_tests(metafunc):
    # The differential cases exist only when both backends are selected; otherwise one SKIP says why.
    if metafunc.function is not test_a2a3_matches_a2a3sim:
        return
    if all(n in selection.selected(metafunc.config) for n in _PAIR):
        metafunc.parametrize("cfg", CONFIGS, indirect=True)
    else:
        metafunc.parametrize("cfg", [pytest.param(None, id="not-selected", marks=pytest.mark.skip(
            reason="differential check needs both a2a3 and a2a3sim selected (--hw a2a3,a2a3sim)"))],
            indirect=True)


def test_a2a3_matches_a2a3sim(request, cfg, case, inputs, expected):
    runs = {n: _run_on(request.config, n, case, inputs) for n in _PAIR}
    outs = {n: r["out"] for n, r in runs.items()}       # a SKIP / CRASH / HANG of either surfaces here
    tol = tiles.tolerances(case, inputs, {"out": expected})["out"].tol
    board = census(outs["a2a3"], outs["a2a3sim"], tol=2 * tol, name="a2a3 out vs a2a3sim out")
    problems = []
    if not board.ok:
        problems.append(board.describe())
    for n in _PAIR:
        g = census(outs[n], expected, tol=tol, name=f"{n} out vs golden")
        if not g.ok:
            problems.append(f"{g.describe()}\n" + "\n".join(tiles.tile_findings(outs[n], expected, tol, cfg)))
    assert not problems, "\n\n".join(problems)


# --- the codegen lint over ptoas output (--pto-cpp DIR) ----------------------------------------

def test_ptoas_codegen_lint(pto_cpp):
    from accel_regress.backends.pypto import lint
    findings, files = lint.lint_paths([pto_cpp])
    assert files, f"--pto-cpp {pto_cpp}: no .cpp or .pto files found"
    if findings:
        raise AssertionError("\n".join(f.describe() for f in findings))
