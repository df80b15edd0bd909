"""The declared Backend contract (hardware/core/contracts.py) is the whole of what the core reads of
a backend: every attribute the core takes from a backend object is a member of ``Backend`` or
``BackendOptional``. Found on the source, so a new use of an undeclared member fails here, not in an
outside team's backend that was written against the declaration."""
import ast
import textwrap
from pathlib import Path

import accel_regress
from accel_regress.core import contracts

REPO = Path(accel_regress.__file__).resolve().parents[1]
# Everything of the package but the backends themselves (a backend reads its own members freely).
OWN = ("backends",)


def _is_get(node: ast.AST, in_registry: bool) -> bool:
    """``registry.get(name)`` (``get(name)`` inside the registry), or the registry's stand-in class made."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr == "get" and isinstance(f.value, ast.Name) and f.value.id == "registry":
        return True
    if in_registry and isinstance(f, ast.Name) and f.id == "get":
        return True
    return isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id == "_unavailable_class"


def _loads_backends(fn: ast.AST) -> bool:
    """The function walks ``registrations("backend")``: its ``.load()`` results are backend classes."""
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "registrations"
               and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value == "backend"
               for n in ast.walk(fn))


def backend_members_read(source: str, in_registry: bool = False) -> dict[str, int]:
    """Member name -> first line, for each attribute read of a backend object in ``source``: on
    ``registry.get(...)``, on a name or ``self.<attr>`` assigned from it, on a parameter annotated
    ``Backend``, on a loaded backend registration; plain, or through ``getattr``/``hasattr``."""
    tree = ast.parse(source)
    found: dict[str, int] = {}
    holder_attrs: set[str] = set()          # self.backend = registry.get(...): ``X.backend`` is one
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for _ in range(2):                      # a holder attribute assigned in one method, read in another
        for fn in functions:
            loads = _loads_backends(fn)
            names = {a.arg for a in fn.args.args + fn.args.kwonlyargs
                     if a.annotation is not None and "Backend" in ast.unparse(a.annotation)}

            def is_backend(e: ast.AST) -> bool:
                if _is_get(e, in_registry) or (isinstance(e, ast.Name) and e.id in names):
                    return True
                if isinstance(e, ast.Attribute) and e.attr in holder_attrs:
                    return True
                if loads and isinstance(e, ast.Call):
                    f = e.func.func if isinstance(e.func, ast.Call) else e.func      # reg.load() or reg.load()()
                    return isinstance(f, ast.Attribute) and f.attr == "load"
                return False

            grew = True
            while grew:
                grew = False
                for n in ast.walk(fn):
                    if isinstance(n, ast.Assign) and is_backend(n.value):
                        for t in n.targets:
                            if isinstance(t, ast.Name) and t.id not in names:
                                names.add(t.id)
                                grew = True
                            elif isinstance(t, ast.Attribute) and t.attr not in holder_attrs:
                                holder_attrs.add(t.attr)
                                grew = True
            for n in ast.walk(fn):
                if isinstance(n, ast.Attribute) and is_backend(n.value):
                    found.setdefault(n.attr, n.lineno)
                elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr")
                      and len(n.args) >= 2 and is_backend(n.args[0]) and isinstance(n.args[1], ast.Constant)):
                    found.setdefault(n.args[1].value, n.lineno)
    return found


def _declared() -> set[str]:
    out: set[str] = set()
    for proto in contracts.CONTRACTS["backend"]:
        hints, methods = contracts._members(proto)
        out |= set(hints) | set(methods)
    return out


def test_every_member_the_core_reads_of_a_backend_is_declared():
    used: dict[str, list[str]] = {}
    for path in sorted((REPO / "hardware").rglob("*.py")):
        rel = path.relative_to(REPO / "hardware")
        if rel.parts[0] in OWN:
            continue
        in_registry = rel.as_posix() == "core/registry.py"
        for name, line in backend_members_read(path.read_text(), in_registry).items():
            used.setdefault(name, []).append(f"hardware/{rel}:{line}")
    # The scan still sees the core's calls (a renamed registry.get would leave it blind and green).
    assert {"run", "supports", "timeout", "reset", "versions", "ahead"} <= set(used), sorted(used)
    undeclared = {name: where for name, where in used.items() if name not in _declared()}
    assert not undeclared, (f"the core reads backend members that hardware/core/contracts.py does not declare "
                            f"(add each to Backend, or BackendOptional when read with a default): {undeclared}")


def test_the_scan_sees_each_way_the_core_holds_a_backend():
    source = textwrap.dedent('''
        from accel_regress.core import registry
        def direct(name):
            return registry.get(name).frob()
        def named(name):
            b = registry.get(name)
            return b.wobble
        def defaulted(name):
            return getattr(registry.get(name), "quux", None)
        def annotated(backend: "Backend"):
            return hasattr(backend, "zap")
        def loaded():
            for reg in registry.registrations("backend").values():
                cls = reg.load()
                return cls.klass_attr
        class Holder:
            def __init__(self, name):
                self.backend = registry.get(name)
            def use(self):
                return self.backend.held
        def not_a_backend(config):
            d = config.get("x")
            return d.strip(), registry.names()
    ''')
    assert set(backend_members_read(source)) == {"frob", "wobble", "quux", "zap", "klass_attr", "held"}


def test_one_spelling_of_the_run_report():
    """qemu-rvv and FireSim both say what their last run saw as ``last_report``, the member the runner reads."""
    from accel_regress.backends.firesim.backend import FireSimBackend
    from accel_regress.backends.qemu_rvv import QemuRvvBackend
    for cls in (FireSimBackend, QemuRvvBackend):
        assert not hasattr(cls(), "last_record") and isinstance(cls().last_report, dict), cls
