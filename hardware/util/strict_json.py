"""JSON that every parser accepts: no bare ``NaN`` / ``Infinity`` in anything the suite writes.

A NaN output's error statistics are NaN, and ``json.dumps`` would write them as the bare words
``NaN`` / ``Infinity``, which are not JSON: ``jq``, JavaScript's ``JSON.parse`` and strict parsers
reject the whole file. ``dumps`` writes a non-finite number as the string ``"NaN"``,
``"Infinity"`` or ``"-Infinity"`` and lists where it did so in the top-level object's
``"nonfinite"`` key (a list of paths, each a list of keys and indices), so that ``loads`` turns
exactly those strings back into floats and no other string is ever mistaken for a number.
``loads`` also reads the old form (bare ``NaN``), which Python's parser accepts.
"""
from __future__ import annotations

import json
import math
from typing import Any

FLAG = "nonfinite"
_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _word(x: float) -> str:
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _clean(obj: Any, path: list, found: list) -> Any:
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        found.append(list(path))
        return _word(obj)
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            path.append(str(k))
            out[str(k)] = _clean(v, path, found)
            path.pop()
        return out
    if isinstance(obj, (list, tuple)):
        out_list = []
        for i, v in enumerate(obj):
            path.append(i)
            out_list.append(_clean(v, path, found))
            path.pop()
        return out_list
    if hasattr(obj, "item") and hasattr(obj, "dtype") and getattr(obj, "shape", None) == ():
        return _clean(obj.item(), path, found)       # a numpy scalar
    return obj


def plain(obj: Any) -> tuple[Any, list]:
    """``obj`` with every non-finite float replaced by its word; and the paths replaced."""
    found: list = []
    return _clean(obj, [], found), found


def _plain_scalar(obj: Any) -> Any:
    if hasattr(obj, "item") and getattr(obj, "shape", None) == ():
        return obj.item()          # a numpy scalar
    return str(obj)


def dumps(obj: Any, **kw) -> str:
    """``json.dumps`` that never writes a bare NaN/Infinity (raises ValueError if one slipped through)."""
    kw.setdefault("default", _plain_scalar)
    try:
        return json.dumps(obj, allow_nan=False, **kw)     # the common case: nothing non-finite, C speed
    except ValueError:
        pass
    clean, found = plain(obj)
    if found and isinstance(clean, dict):
        clean = {**clean, FLAG: found}
        # a bare list or scalar has no place for the flag: its words stay strings
    return json.dumps(clean, allow_nan=False, **kw)


def restore(data: Any) -> Any:
    """Turn the words listed in a top-level ``"nonfinite"`` back into floats (in place) and drop the key."""
    if not isinstance(data, dict) or FLAG not in data:
        return data
    paths = data.pop(FLAG)
    if not isinstance(paths, list):
        return data
    for path in paths:
        if not isinstance(path, list) or not path:
            continue
        node = data
        try:
            for step in path[:-1]:
                node = node[step]
            last = path[-1]
            if isinstance(node[last], str) and node[last] in _WORDS:
                node[last] = _WORDS[node[last]]
        except (KeyError, IndexError, TypeError):
            continue          # a path into nothing: the file was edited; leave it as it is
    return data


def loads(text: str | bytes) -> Any:
    """Read strict JSON written by ``dumps`` or the old form with bare NaN / Infinity."""
    return restore(json.loads(text))
