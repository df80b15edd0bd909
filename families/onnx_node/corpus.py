"""ONNX's backend node cases, generated once from the installed ``onnx`` and kept in the cache root.

The wheel ships the generators, not data: each ``onnx/backend/test/case/node/<op>.py`` defines a
class whose ``export*`` methods build a node, draw inputs from numpy's global random state and call
``expect`` (onnx/onnx ``onnx/backend/test/case/node/__init__.py``, ``expect`` and
``collect_testcases``, at v1.23.2). The class is defined, and its exports run, when the module is
imported, so a process generates the corpus once: a second ``collect_testcases()`` returns the same
list. Generation therefore runs in a child process (``python -m`` this module), which writes the
folder this module reads.

Seeds: the exporter calls ``np.random.seed(seed=0)`` before every export (``base.py``, class
``_Exporter``) and some exports seed again themselves (``reducel2.py``: ``np.random.seed(0)``).
A golden seed ``g`` shifts every such call to ``seed + g`` (mod 2**32) in the child, so ``g = 0`` is
the corpus exactly as onnx generates it and any other ``g`` draws other inputs the same way.

Layout: ``<cache root>/onnx-corpus/<key>/`` (``$ACCEL_ONNX_CORPUS_CACHE`` moves it) with
``corpus.json`` (the index) and ``cases/<name>/`` holding
``model.onnx`` (the ModelProto's bytes) and one ``.npy`` per tensor (``in<i>.npy``, ``out<i>.npy``;
a sequence's items ``in<i>.<j>.npy``), loaded with ``allow_pickle=False``. numpy cannot save the
ml_dtypes types (bfloat16, float8, int4) or object arrays: the former are saved as their bits
(``uint8``/``uint16``) with the dtype's name in the index, strings as numpy's ``U`` dtype. The
key names the onnx and numpy versions, the seed, the generated modules and a digest of this
file. The folder is built under a temporary name and renamed into place (a reader sees all of it
or none); a lock file keeps two processes (xdist workers collecting) from generating it twice.
Each file's sha256 is in the index and checked on every read: a truncated or damaged file is an
error naming it, never an input. The folder is also sealed as the cache root's build entries are
(hardware/core/build_seal.py: ``index.json``, an HMAC over every file's size and sha256 with this
machine's key): a model the runtimes parse and arrays they read come from this machine's own
generation. A folder that is not this machine's (another key, none, an older suite) is generated
again, said once; one whose seal does not match its files (edited, truncated) is discarded and
generated again, said with the folder and what did not match; without a signing key each session
generates its own corpus in a temporary folder.

``reference_check`` (per case, in the index): the corpus's stored outputs against
``onnx.reference.ReferenceEvaluator`` run on the same model and inputs at the case's own dtypes,
as ``agrees`` (bit for bit), ``within corpus tolerance`` (its own rtol/atol), ``differs`` (with the
largest difference: a finding against onnx) or ``not evaluated`` (the evaluator raised).
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import hashlib
import importlib
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

FORMAT = 2
INDEX = "corpus.json"
ROOT_ENV = "ACCEL_ONNX_CORPUS_CACHE"
CACHE_NAME = "onnx-corpus"
GENERATE_TIMEOUT_S = 1800.0       # 37-48 s for all 1,884 cases on 2 loaded cores; one module takes ~2 s
PIP_HINT = "pip install 'accel-regress[corpus]' (onnx, onnxruntime)"
MODULE = "accel_regress.families.onnx_node.corpus"    # run as the child that generates
_EXPANDED = re.compile(r"^(?P<base>.*)_expanded(_ver\d+)?$")


class CorpusError(Exception):
    """The corpus could not be generated or read; the message names what and where."""


def onnx_version() -> Optional[str]:
    try:
        return md.version("onnx")
    except md.PackageNotFoundError:
        return None


def unavailable() -> Optional[str]:
    """Why no corpus can be generated here, or None."""
    if onnx_version() is None:
        return f"onnx is not installed ({PIP_HINT})"
    return None


def root() -> Path:
    from accel_regress.util.derived_cache import user_cache
    return Path(os.environ[ROOT_ENV]) if os.environ.get(ROOT_ENV) else user_cache(CACHE_NAME)


# Corpora this process generated outside the root (no signing key), by key.
_scratch: dict[str, Path] = {}


def folder_of(key_: str) -> Path:
    return _scratch.get(key_) or root() / key_


def key(seed: int, modules: Optional[Sequence[str]] = None) -> str:
    h = hashlib.sha256()
    h.update(f"{FORMAT}\0{','.join(sorted(modules)) if modules else '*'}\0".encode())
    h.update(Path(__file__).read_bytes())
    # The float64 references and magnitudes are written at generation by the error models' code.
    h.update((Path(__file__).parent / "error_models.py").read_bytes())
    return f"onnx-{onnx_version()}-numpy-{np.__version__}-seed{int(seed)}-{h.hexdigest()[:12]}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Corpus:
    """A generated corpus folder: its index, each case's model bytes and arrays (checked)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        try:
            self.index = json.loads((self.folder / INDEX).read_text())
        except (OSError, ValueError) as exc:
            raise CorpusError(f"{self.folder / INDEX} cannot be read: {exc}") from None
        self.cases = {c["name"]: c for c in self.index["cases"]}

    def _file(self, name: str, rel: str, digest: str) -> Path:
        path = self.folder / "cases" / name / rel
        try:
            ok = _sha256(path) == digest
        except OSError as exc:
            raise CorpusError(f"corpus file {path} cannot be read: {exc}") from None
        if not ok:
            raise CorpusError(f"corpus file {path} does not match its sha256 in {self.folder / INDEX}: "
                              f"delete {self.folder} to generate it again")
        return path

    def model_bytes(self, name: str) -> bytes:
        entry = self.cases[name]
        return self._file(name, "model.onnx", entry["model_sha256"]).read_bytes()

    def tensor(self, name: str, t: dict) -> np.ndarray:
        a = np.load(self._file(name, t["file"], t["sha256"]), allow_pickle=False)
        return _from_storable(a, t["dtype"])

    def values(self, name: str, side: str) -> list:
        """The case's inputs or outputs (``side``: "inputs" / "outputs"), each an array, a list of
        arrays (a sequence) or None (an absent optional)."""
        out: list = []
        for v in self.cases[name][side]:
            if v["kind"] == "tensor":
                out.append(self.tensor(name, v))
            elif v["kind"] == "sequence":
                out.append([self.tensor(name, t) for t in v["items"]])
            else:
                out.append(None)
        return out


def ensure(seed: int = 0, modules: Optional[Sequence[str]] = None, python: Optional[str] = None) -> Corpus:
    """The corpus of the installed onnx at ``seed`` (``modules``: only those generator modules of
    ``onnx.backend.test.case.node``, e.g. ["softmax"]; None: all of them), generated when the cache
    root has none."""
    reason = unavailable()
    if reason:
        raise CorpusError(reason)
    from accel_regress.core import build_seal
    top = root()
    name = key(seed, modules)
    folder = top / name
    if name in _scratch:
        return Corpus(_scratch[name])
    if build_seal.secret() is None:          # nothing in the root can be vouched for
        scratch = Path(tempfile.mkdtemp(prefix="accel-onnx-corpus-")) / name
        atexit.register(shutil.rmtree, scratch.parent, True)
        _generate_into(scratch, seed, modules, python or sys.executable, seal=False)
        _scratch[name] = scratch
        return Corpus(scratch)
    if _sealed(folder, name) is None:
        return Corpus(folder)
    try:
        top.mkdir(parents=True, exist_ok=True)
        with open(top / f".{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            problem = _sealed(folder, name)
            if problem is not None:
                if folder.exists():       # discarded and generated again, as a build entry is rebuilt
                    if isinstance(problem, build_seal.Unsigned):
                        build_seal.note_once(f"ONNX corpus {folder}: not signed with this machine's key "
                                             f"({problem}); generated again")
                    else:
                        print(f"accel-regress: ONNX corpus: discarded {folder} ({problem}); generated it again",
                              file=sys.stderr)
                    shutil.rmtree(folder)
                _generate_into(folder, seed, modules, python or sys.executable)
    except OSError as exc:
        raise CorpusError(f"the ONNX corpus cannot be kept under {top}: {exc}") from None
    return Corpus(folder)


def _sealed(folder: Path, name: str):
    """None when ``folder`` is whole and carries this machine's seal, else why not ('' when absent)."""
    from accel_regress.core import build_seal
    if not (folder / INDEX).is_file():
        return "" if not folder.exists() else "no corpus.json (an unfinished folder or an older suite's)"
    return build_seal.entry_problem(folder, _seal_key(name), INDEX)


def _seal_key(name: str) -> str:
    """The seal's key (a build entry's is a sha256): the folder's name, hashed."""
    return hashlib.sha256(name.encode()).hexdigest()


def _generate_into(folder: Path, seed: int, modules, python: str, seal: bool = True) -> None:
    from accel_regress.core import build_seal
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        argv = [python, "-m", MODULE, "--seed", str(int(seed)), "--out", str(tmp)]
        for m in modules or ():
            argv += ["--module", m]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=GENERATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CorpusError(f"generating the ONNX corpus took more than {GENERATE_TIMEOUT_S:g} s: "
                              f"{' '.join(argv)}") from None
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise CorpusError(f"generating the ONNX corpus failed (exit {done.returncode}): {' '.join(argv)}\n{tail}")
        if seal and not build_seal.write_index(tmp, _seal_key(folder.name), INDEX):
            raise CorpusError(f"the ONNX corpus {folder} could not be sealed (no signing key)")
        if folder.exists():        # someone without our lock (another machine on a shared root) won
            return
        os.rename(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# -- generation (the child process) ------------------------------------------------------------------

@contextlib.contextmanager
def _shifted_seeds(shift: int):
    """Every ``np.random.seed(s)`` the generators make becomes ``np.random.seed(s + shift)``."""
    if not shift:
        yield
        return
    original = np.random.seed

    def seed(seed=None):
        return original(None if seed is None else (int(seed) + shift) % (1 << 32))
    np.random.seed = seed
    try:
        yield
    finally:
        np.random.seed = original


def _storable(a: np.ndarray) -> tuple[np.ndarray, str]:
    """(what np.save can write without pickle, the dtype's name)."""
    if a.dtype == object:
        items = a.ravel().tolist()
        if all(isinstance(x, bytes) for x in items):
            return a.astype(bytes), "bytes"
        return a.astype(str), "str"
    if a.dtype.kind == "V" or type(a.dtype).__module__.startswith("ml_dtypes"):
        return a.view(f"u{a.dtype.itemsize}"), a.dtype.name
    return a, a.dtype.name


def _from_storable(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype in ("str", "bytes"):
        return a               # numpy's U / S dtype: what the runner carries (never object arrays)
    if a.dtype.name == dtype:
        return a
    import ml_dtypes
    return a.view(np.dtype(getattr(ml_dtypes, dtype)))


def _as_array(value) -> np.ndarray:
    from onnx import TensorProto, numpy_helper
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def _write_tensor(case_dir: Path, stem: str, value) -> dict:
    a = _as_array(value)
    stored, dtype = _storable(a)
    rel = f"{stem}.npy"
    np.save(case_dir / rel, np.require(stored, requirements='C'), allow_pickle=False)   # 0-d stays 0-d
    return {"kind": "tensor", "dtype": dtype, "shape": list(a.shape), "file": rel, "sha256": _sha256(case_dir / rel)}


def _write_value(case_dir: Path, stem: str, value) -> dict:
    if value is None:
        return {"kind": "none"}
    if isinstance(value, list):
        return {"kind": "sequence", "items": [_write_tensor(case_dir, f"{stem}.{j}", v) for j, v in enumerate(value)]}
    return _write_tensor(case_dir, stem, value)


def _opset(model) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)


def _check_against_evaluator(model, inputs, outputs, rtol: float, atol: float) -> dict:
    """The stored outputs against onnx.reference.ReferenceEvaluator at the case's own dtypes."""
    from onnx.reference import ReferenceEvaluator
    try:
        names = [i.name for i in model.graph.input]
        feeds = {n: (v if isinstance(v, list) or v is None else _as_array(v)) for n, v in zip(names, inputs)}
        with np.errstate(all="ignore"):
            got = ReferenceEvaluator(model).run(None, feeds)
    except Exception as exc:       # the evaluator lacks the op or raises on the case: said, not fatal
        return {"status": "not evaluated", "why": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}
    worst, status = 0.0, "agrees"
    for g, e in zip(got, outputs):
        if isinstance(e, list) or e is None or isinstance(g, list) or g is None:
            if (e is None) != (g is None) or (isinstance(e, list) and len(e) != len(g or [])):
                return {"status": "differs", "why": "sequence or optional value of another length or presence"}
            pairs = list(zip(g or [], e or []))
        else:
            pairs = [(g, e)]
        for gi, ei in pairs:
            gi, ei = np.asarray(gi), _as_array(ei)
            if gi.shape != ei.shape:
                return {"status": "differs", "why": f"shape {list(gi.shape)} against the corpus's {list(ei.shape)}"}
            if ei.dtype.kind in "OUS" or gi.dtype.kind in "OUS":
                if not np.array_equal(gi.astype(str), ei.astype(str)):
                    return {"status": "differs", "why": "strings differ"}
                continue
            gf, ef = gi.astype(np.float64), ei.astype(np.float64)
            with np.errstate(all="ignore"):
                same = (gf == ef) | (np.isnan(gf) & np.isnan(ef))
                if same.all() and np.array_equal(np.signbit(gf), np.signbit(ef)):
                    continue
                d = np.where(same, 0.0, np.abs(gf - ef))
                d = np.where(np.isnan(d), np.inf, d)
                worst = max(worst, float(d.max()))
                inside = bool((d <= atol + rtol * np.abs(np.where(np.isfinite(ef), ef, 0.0))).all())
            status = status if status == "differs" else ("within corpus tolerance" if inside else "differs")
    out: dict[str, Any] = {"status": status}
    if status != "agrees":
        out["max_abs"] = worst
    return out


def _attrs(node) -> dict:
    """A node's attributes of plain types (ints, floats, strings and lists of them)."""
    from onnx import helper
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        if isinstance(v, (int, float, str)) or (isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)):
            out[a.name] = v
    return out


def _float64(case_dir: Path, entry: dict, model, inputs) -> None:
    """The float64 reference of a float32 single-node case of a modelled class (error_models.py)."""
    from accel_regress.families.onnx_node import error_models
    in_dtypes, _ = describe_values(entry["inputs"])
    out_dtypes, _ = describe_values(entry["outputs"])
    if not error_models.wants_float64(entry["op_type"], entry["expanded"], in_dtypes, out_dtypes):
        return
    ref, mag, why = error_models.float64_outputs(model, entry["op_type"], [_as_array(v) for v in inputs])
    if ref is None:
        entry["float64_why"] = why
        return
    if entry["op_type"] in error_models.TRANSFORM:
        entry["terms"] = error_models.transform_magnitude(model, entry["op_type"], [_as_array(v) for v in inputs],
                                                          np.shape(ref[0]))[1]
    entry["float64"] = [_write_tensor(case_dir, f"ref64_{i}", r) for i, r in enumerate(ref)]
    if mag is not None:
        entry["magnitude64"] = [_write_tensor(case_dir, f"mag64_{i}", r) for i, r in enumerate(mag)]


def _draws(op_type: str, graph, inputs) -> bool:
    from accel_regress.families.onnx_node import error_models
    feeds = {i.name: (None if v is None or isinstance(v, list) else _as_array(v)) for i, v in zip(graph.input, inputs)}
    return any(error_models.random_draw(n.op_type, feeds, n) for n in graph.node)


def generate(out: Path, seed: int, modules: Optional[Sequence[str]] = None) -> dict:
    """Write the corpus to ``out`` (an empty folder); returns the index. Runs once per process."""
    import onnx
    import onnx.backend.test.case.node as node
    with _shifted_seeds(int(seed)), np.errstate(all="ignore"):
        if modules:
            for m in modules:
                importlib.import_module(f"{node.__name__}.{m}")
            # The list expect() appends to (collect_testcases returns it after importing every module).
            cases = list(node._NodeTestCases)
        else:
            cases = list(node.collect_testcases())
    op_of: dict[str, str] = {}
    entries = []
    for c in cases:
        graph = c.model.graph
        base = _EXPANDED.match(c.name)
        # An expanded case (the op's function body as nodes) follows the case it expands.
        expanded = base is not None and base.group("base") in op_of
        if base is not None and expanded:
            op_type = op_of[base.group("base")]
        else:
            op_type = graph.node[0].op_type if graph.node else ""
            op_of[c.name] = op_type
        (inputs, outputs), = c.data_sets
        case_dir = out / "cases" / c.name
        case_dir.mkdir(parents=True)
        (case_dir / "model.onnx").write_bytes(c.model.SerializeToString())
        entries.append({
            "name": c.name, "op_type": op_type, "domain": graph.node[0].domain if graph.node else "",
            "opset": _opset(c.model), "expanded": expanded, "nodes": len(graph.node),
            "rtol": c.rtol, "atol": c.atol,
            "input_names": [i.name for i in graph.input], "output_names": [o.name for o in graph.output],
            "inputs": [_write_value(case_dir, f"in{i}", v) for i, v in enumerate(inputs)],
            "outputs": [_write_value(case_dir, f"out{i}", v) for i, v in enumerate(outputs)],
            "model_sha256": _sha256(case_dir / "model.onnx"),
            "attrs": _attrs(graph.node[0]) if len(graph.node) == 1 else {},
            "reference_check": _check_against_evaluator(c.model, inputs, outputs, c.rtol, c.atol),
            "random_draw": bool(len(graph.node) >= 1 and _draws(op_type, graph, inputs)),
        })
        _float64(case_dir, entries[-1], c.model, inputs)
    index = {"format": FORMAT, "onnx": onnx.__version__, "numpy": np.__version__, "seed": int(seed),
             "modules": sorted(modules) if modules else None, "cases": entries}
    (out / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True))
    return index


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog=f"python -m {MODULE}", description="generate the ONNX node corpus into a folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--module", action="append", default=[], help="only this generator module (repeatable)")
    args = p.parse_args(argv)
    import warnings
    warnings.simplefilter("ignore")          # the generators' own overflow and deprecation warnings
    index = generate(args.out, args.seed, args.module or None)
    print(f"{len(index['cases'])} cases written to {args.out}")
    return 0


def describe_values(values: list[dict]) -> tuple[list[str], list[Any]]:
    """(dtype names, shapes) of a case's inputs or outputs, as case parameters."""
    dtypes, shapes = [], []
    for v in values:
        if v["kind"] == "tensor":
            dtypes.append(v["dtype"])
            shapes.append(v["shape"])
        elif v["kind"] == "sequence":
            dtypes.append("seq(" + ",".join(sorted({t["dtype"] for t in v["items"]})) + ")")
            shapes.append([t["shape"] for t in v["items"]])
        else:
            dtypes.append("none")
            shapes.append(None)
    return dtypes, shapes


if __name__ == "__main__":
    sys.exit(main())
