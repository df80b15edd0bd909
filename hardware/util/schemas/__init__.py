"""The shape of every file the suite reads, as JSON Schema (``<name>.schema.json`` next to this file).

A file is untrusted input: a malformed one must end as a clear message (the file, the place in it,
what was expected) and exit status 2, never a traceback (which a CI job reads as a failed gate for
a reason that has nothing to do with the device). ``load_json`` / ``load_toml`` read, parse,
bound the nesting and validate; ``check`` validates what was parsed elsewhere. Each raises the
caller's error class (a ``ValueError``), so a command keeps its own ``except``.
"""
from __future__ import annotations

import json
import math
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Type

from accel_regress.util import regular_file
from accel_regress.util import strict_json

HERE = Path(__file__).resolve().parent
MAX_DEPTH = 64            # our files nest about 6 deep; deeper is hostile and would exhaust recursion
MAX_BYTES = 1 << 30       # a results file of a million cases is ~1 GB


class InputError(ValueError):
    """A file the suite reads is missing, unreadable or not of the expected shape."""


@lru_cache(maxsize=None)
def schema(name: str) -> dict:
    return json.loads((HERE / f"{name}.schema.json").read_text())


@lru_cache(maxsize=None)
def validator(name: str):
    """jsonschema's validator: it words the problem (file, place, what was expected)."""
    import jsonschema
    cls = jsonschema.validators.validator_for(schema(name))
    cls.check_schema(schema(name))
    return cls(schema(name))


@lru_cache(maxsize=None)
def _fast(name: str):
    """fastjsonschema's compiled check (~20x faster: 100,000 cases in about a second); None without it."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    return fastjsonschema.compile(schema(name))


def place(path) -> str:
    """``cases[3].detail.heatmap`` from a JSON path (keys and indices); 'the top level' when empty."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "the top level"


def _deepest(doc: Any, limit: int) -> Any:
    """The path to a container deeper than ``limit`` (slow; only called once one is known to exist)."""
    stack = [(doc, ())]
    while stack:
        node, where = stack.pop()
        if len(where) >= limit:
            return where
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((v, (*where, k)) for k, v in items if isinstance(v, (dict, list)))
    return ()


def _shape_error(doc: Any, finite: bool) -> str | None:
    """Too deep a nesting (or, with ``finite``, a NaN / infinity), found without recursion; it
    touches every container of a 100,000-case file, so it carries no paths until it finds one."""
    level, depth = [doc] if isinstance(doc, (dict, list)) else [], 1
    while level:
        if depth > MAX_DEPTH:
            return f"at {place(_deepest(doc, MAX_DEPTH)[:8])}...: nested deeper than {MAX_DEPTH} levels"
        values = [v for node in level for v in (node.values() if isinstance(node, dict) else node)]
        if finite and any(isinstance(v, float) and not math.isfinite(v) for v in values):
            return _nonfinite_at(doc)
        level = [v for v in values if isinstance(v, (dict, list))]
        depth += 1
    return None


def _nonfinite_at(doc: Any) -> str:
    stack = [(doc, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return f"at {place(where)}: {node} is not a finite number"
        if isinstance(node, (dict, list)):
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, (*where, k)) for k, v in items)
    return "a number is not finite"


def check(doc: Any, name: str, source, error: Type[ValueError] = InputError, finite: bool = False) -> Any:
    """Validate a parsed document against schema ``name``; raise ``error`` naming the first problem.
    ``finite``: NaN and infinities are refused too (JSON Schema cannot say so)."""
    problem = _shape_error(doc, finite)
    if problem:
        raise error(f"{source}: {problem}")
    fast, fast_problem = _fast(name), None
    if fast is not None:
        import fastjsonschema
        try:
            fast(doc)
            return doc
        except fastjsonschema.JsonSchemaValueException as exc:
            fast_problem = f"at {exc.name.removeprefix('data').lstrip('.') or 'the top level'}: {exc.message.removeprefix(exc.name + ' ')}"
    import jsonschema
    best = jsonschema.exceptions.best_match(validator(name).iter_errors(doc))
    if best is not None or fast_problem:
        what = schema(name).get("title", name)
        if best is not None:
            message = best.message if len(best.message) < 300 else best.message[:300] + "..."
            fast_problem = f"at {place(best.absolute_path)}: {message}"
        raise error(f"{source}: {fast_problem} (expected by the schema of {what})")
    return doc


def read_text(path: Path, error: Type[ValueError] = InputError) -> str:
    """The text of a file the suite reads: a regular file (a FIFO, a device are refused, never
    waited on or read forever) of at most MAX_BYTES, UTF-8."""
    try:
        return regular_file.read_text(path, MAX_BYTES)
    except regular_file.Refused as exc:
        raise error(str(exc)) from None
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None



def parse_json(path, error: Type[ValueError] = InputError) -> Any:
    """Read and parse a JSON file (strict, or with bare NaN), not yet validated nor restored."""
    path = Path(path)
    text = read_text(path, error)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise error(f"{path}: not valid JSON: nested deeper than this parser goes") from None


def load_json(path, name: str, error: Type[ValueError] = InputError) -> Any:
    """Read a JSON file, bound its nesting, validate it against ``name``; non-finite numbers restored."""
    doc = strict_json.restore(parse_json(path, error))     # restored first: the check sees what tools read
    return check(doc, name, path, error)


def load_toml(path, name: str, error: Type[ValueError] = InputError) -> dict:
    """Read a TOML file and validate it against ``name``."""
    return parse_toml(read_text(Path(path), error), path, name, error)


def parse_toml(text: str, path, name: str, error: Type[ValueError] = InputError) -> dict:
    """Parse the TOML ``text`` of ``path`` and validate it against ``name``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: not valid TOML: nested deeper than this parser goes") from None
    return check(doc, name, path, error, finite=True)     # TOML has nan/inf; no setting of ours means them
