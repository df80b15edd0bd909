"""The layout's rules, checked on the source: golden knows nothing of devices, and the core names
no backend and no operator family (those come from registrations)."""
import ast
import tomllib
from pathlib import Path

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]
CORE = ["hardware/core", "hardware/plugin", "hardware/results", "hardware/util",
        "hardware/__init__.py", "hardware/__main__.py", "golden"]


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def _golden_modules() -> list[Path]:
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    mods = list(eps["accel_regress.families"].values())
    found = [REPO / "families" / Path(*m.split(".")[2:]).with_suffix(".py") for m in mods]
    return sorted((REPO / "golden").glob("*.py")) + found + sorted((REPO / "families").glob("*/llama_ops.py"))


def test_every_registered_family_has_a_golden_module_in_its_folder():
    for path in _golden_modules():
        assert path.is_file(), path


def test_golden_modules_import_nothing_of_the_devices():
    allowed = ("accel_regress.golden", "accel_regress.families", "accel_regress.util")   # util: the layer below golden
    bad = {}
    for path in _golden_modules():
        wrong = [m for m in _imports(path) if m.startswith("accel_regress") and not m.startswith(allowed)]
        # a family's golden module may use another family's golden numerics, never its emu or program
        wrong += [m for m in _imports(path) if m.startswith("accel_regress.families")
                  and m.rsplit(".", 1)[-1] in ("emu", "iree_program", "sweep")]
        if wrong:
            bad[str(path.relative_to(REPO))] = wrong
    assert bad == {}


def _registered_names() -> set[str]:
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    names = set(eps["accel_regress.backends"]) | set(eps["accel_regress.families"])
    return names | {n.replace("-", "_") for n in names}


def _string_constants(path: Path):
    """String literals in code, not docstrings (a docstring may give an example)."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_the_core_names_no_backend_and_no_family():
    names = _registered_names()
    hits = []
    for entry in CORE:
        root = REPO / entry
        for path in ([root] if root.is_file() else sorted(root.rglob("*.py"))):
            for line, value in _string_constants(path):
                if value in names:
                    hits.append(f"{path.relative_to(REPO)}:{line}: {value!r}")
    assert hits == []



def _compared_names(path: Path, names: set[str]):
    """Registered names a comparison tests against (``case.op == "x"``, ``op in ("x", ...)``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                for c in (side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]):
                    if isinstance(c, ast.Constant) and c.value in names:
                        yield node.lineno, c.value


def test_no_backend_decides_by_a_family_or_backend_name():
    """A backend asks the family (its golden module's declared contract, core/contracts.py) what
    it needs to know, never compares a case's op with a family id. A backend's own tables of the
    operators it drives (npu's ADAPTERS and LAYOUTS, keyed by op) are its drivers, not decisions."""
    names = _registered_names()
    hits = [f"{path.relative_to(REPO)}:{line}: {value!r}"
            for path in sorted((REPO / "hardware" / "backends").rglob("*.py"))
            for line, value in _compared_names(path, names)]
    assert hits == []

def _module_graph() -> dict[str, set[str]]:
    """Every module's imports of other accel_regress modules, function-level imports included."""
    roots = {"hardware": "accel_regress", "golden": "accel_regress.golden", "families": "accel_regress.families"}
    mods = {}
    for folder, pkg in roots.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = path
    graph = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                deps.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                            for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        # a package's own __init__ importing its submodules is not a cycle through them
        graph[name] = {d for d in deps if d in mods and d != name and not name.startswith(d + ".")}
    return graph


# The layers of the installed package, lowest first: a module imports only from its own layer or
# below, function-local imports included. util holds the formats with no dependencies (strict JSON,
# the schemas); golden knows nothing of devices; core is the fixture-free machinery (verdicts,
# registry, runner, isolation); toolchains drive compilers; results holds the record and the
# commands; plugin every pytest hook of the core; families and backends come from registrations.
LAYERS = ["util", "golden", "core", "toolchains", "results", "plugin", "families", "backends"]


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def _climbing(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps if _layer(d) > _layer(m))


def test_no_import_climbs_a_layer():
    assert _climbing(_module_graph()) == []


def test_the_layer_check_catches_what_it_is_for():
    graph = {"accel_regress.core.isolation.protocol": {"accel_regress.results.strict_json"},
             "accel_regress.results.history.plugin": {"accel_regress.plugin.recording"},
             "accel_regress.plugin.history": {"accel_regress.results.history.store", "accel_regress.util.atomic"},
             "accel_regress.__main__": {"accel_regress.backends.emu"}}
    assert _climbing(graph) == ["accel_regress.core.isolation.protocol -> accel_regress.results.strict_json",
                                "accel_regress.results.history.plugin -> accel_regress.plugin.recording"]


def _plugin_groups() -> set[str]:
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    return {v for g in ("accel_regress.plugins", "accel_regress.session_plugins") for v in eps.get(g, {}).values()}


def test_every_hook_of_the_core_lives_in_plugin():
    """pytest hook implementations (``def pytest_*``) of the core are modules of plugin/; a backend's
    or family's own pytest plugin stays in its folder and is registered like an outside team's."""
    registered = _plugin_groups()
    out = []
    for path in sorted((REPO / "hardware").rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel.parts[:2] == ("hardware", "plugin") or rel.parts[:2] == ("hardware", "core") and rel.name == "hookspecs.py":
            continue
        module = "accel_regress." + ".".join(rel.with_suffix("").parts[1:])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("pytest_") and module not in registered:
                out.append(f"{rel}:{node.lineno}: {node.name}")
    assert out == []


def test_the_import_graph_has_no_cycle():
    graph = _module_graph()
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


# The package, the suite's own test files and the repository's conftest: session state lives on
# the session (config.stash, or a plugin object the session registers), never in a module global
# or a private attribute stuck on pytest's config.
STATE_CHECKED = ["hardware", "golden", "families", "tests/*.py", "conftest.py"]


def _state_problems(source: str, name: str) -> list[str]:
    """`global` statements, and `_accel_*` attributes set or read (``x._accel_y``, or by name
    through getattr / setattr / hasattr / delattr)."""
    out = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Global):
            out.append(f"{name}:{node.lineno}: global {', '.join(node.names)}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_accel_"):
            out.append(f"{name}:{node.lineno}: attribute {node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and str(node.args[1].value).startswith("_accel_")):
            out.append(f"{name}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return out


def _state_checked_files() -> list[Path]:
    files = []
    for where in STATE_CHECKED:
        found = sorted(REPO.glob(where)) if "*" in where else [REPO / where]
        for p in found:
            files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return files


def test_no_global_statement_and_no_accel_attribute():
    files = _state_checked_files()
    assert len(files) > 100 and REPO / "hardware/plugin/recording.py" in files
    problems = [p for f in files for p in _state_problems(f.read_text(), str(f.relative_to(REPO)))]
    assert not problems, "session state outside the session:\n" + "\n".join(problems)


def test_the_state_check_catches_what_it_is_for():
    cases = {"global _n": "global _n", "config._accel_hw = None": "attribute _accel_hw",
             "x = config._accel_sink": "attribute _accel_sink",
             "y = getattr(config, '_accel_data', None)": "getattr(..., '_accel_data')",
             "setattr(config, '_accel_gate', 1)": "setattr(..., '_accel_gate')"}
    for source, words in cases.items():
        found = _state_problems(f"def f(config):\n    {source}\n", "probe.py")
        assert len(found) == 1 and words in found[0], (source, found)
    clean = "_N = 3\ndef pytest_accel_regress_engaged(config):\n    config.stash[KEY] = _N\n"
    assert _state_problems(clean, "clean.py") == []
