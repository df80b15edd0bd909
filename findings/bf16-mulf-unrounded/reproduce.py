#!/usr/bin/env python3
"""Reproduce this bug report with the toolchain alone (no accel-regress): see ISSUE.md.

    pip install iree-base-compiler==VERSION iree-base-runtime==VERSION numpy
    python reproduce.py

bundle.json says what to run, as argv lists, in a scratch folder holding a copy of this bundle:
  "iree-runtime": iree-compile, then the function called with iree.runtime on inputs/*.npy (the
                  same call as the "run_argv" iree-run-module line);
  "riscv-qemu":   iree-compile to a riscv64 static library, clang links it with the bundled C
                  harness (tables for the inputs and the dispatch schedule in build/), qemu-user
                  runs it and prints each output as "[out] name=... dtype=... shape=... hex=..."
                  (Debian: qemu-user-static clang-16 lld-16 libc6-dev-riscv64-cross);
  "codegen-scan": iree-compile with the executables' assembly dumped; each dispatch's .s is
                  searched for the instruction pattern in bundle.json "scan";
  "iree-run-module": iree-compile, then the "run" argv (iree-run-module on a GPU driver, e.g.
                  --device=vulkan) with each output copied back to OUTPUT.npy (--output=@...):
                  the Python binding's to_host() maps device memory, which lavapipe refuses;
  "compile-error": iree-compile alone; the bug is there while it fails with a message matching
                  the regex bundle.json "error" (any other failure: cannot tell).
Outputs are compared with expected/*.npy element by element: a NaN must be a NaN, the sign of a
zero must match where "zero_sign" says IEEE 754 defines it, |got - expected| must be within
tolerance/*.npy (0: bit for bit). Prints each wrong element (or each loop with the pattern).
Exit status: 1 while the bug is there, 0 when it is gone, 2 when the toolchain could not tell.
"""
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT_LINE = re.compile(r"\[out\] name=(\S+) dtype=(\S+) shape=(\S*) hex=([0-9a-f]*)\s*$")
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8, "i64": np.int64, "f16": np.float16}


def wrong_elements(got, expected, tolerance, zero_sign):
    """Boolean mask of the elements that break the rule in the module docstring."""
    got = np.asarray(got, np.float64)
    expected = np.asarray(expected, np.float64)
    tol = np.broadcast_to(np.asarray(tolerance, np.float64), expected.shape)
    gnan, enan = np.isnan(got), np.isnan(expected)
    ginf, einf = np.isinf(got), np.isinf(expected)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(gnan | enan | ginf | einf, 0.0, np.abs(got - expected))
    wrong = (gnan != enan) | (diff > tol) | (ginf != einf) | (ginf & einf & (np.sign(got) != np.sign(expected)))
    if zero_sign:
        wrong |= (got == 0) & (expected == 0) & (np.signbit(got) != np.signbit(expected))
    return wrong


def show(x):
    x = float(x)
    return f"{x!r} ({x.hex()})" if np.isfinite(x) else repr(x)


def tool(name):
    if name == "iree-compile":
        try:
            from iree.compiler.tools.binaries import find_tool
            return str(find_tool("iree-compile"))
        except Exception:
            pass
    if name == "iree-run-module":       # the wheel's copy, also when its venv is not activated
        try:
            from iree._runtime import libs
            path = Path(libs.library_path) / name
            if path.is_file():
                return str(path)
        except Exception:
            pass
    return shutil.which(name)


def run(argv, work, what):
    exe = str(work / argv[0]) if "/" in argv[0] else tool(argv[0])
    if exe is None:
        raise RuntimeError(f"{argv[0]} not found ({what})")
    proc = subprocess.run([exe, *argv[1:]], cwd=work, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n{(proc.stderr or proc.stdout)[-3000:]}")
    return proc.stdout


def outputs_iree_runtime(spec, work):
    import iree.runtime as rt
    run(spec["compile"], work, "iree-compile")
    config = rt.Config(spec["run"]["driver"])
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, (work / "module.vmfb").read_bytes()))
    fn = ctx.modules.module[spec["run"]["entry"]]
    args = [np.load(HERE / "inputs" / f"{n}.npy", allow_pickle=False) for n in spec["run"]["inputs"]]
    results = fn(*args)
    if not isinstance(results, (tuple, list)):
        results = (results,)
    return {n: np.asarray(r.to_host() if hasattr(r, "to_host") else r) for n, r in zip(spec["run"]["outputs"], results)}


def outputs_riscv_qemu(spec, work):
    run(spec["compile"], work, "iree-compile")
    run(spec["link"], work, "clang (links the harness with the static library)")
    text = run(spec["run"]["argv"], work, "qemu")
    found = {}
    for line in text.splitlines():
        m = OUT_LINE.match(line.strip())
        if m:
            shape = tuple(int(d) for d in m.group(3).split("x") if d)
            found[m.group(1)] = np.frombuffer(bytes.fromhex(m.group(4)), DTYPES[m.group(2)]).reshape(shape)
    if "[done]" not in text:
        raise RuntimeError("the harness did not reach [done]:\n" + text[-2000:])
    return found


def outputs_iree_run_module(spec, work):
    shutil.copytree(HERE / "inputs", work / "inputs")
    run(spec["compile"], work, "iree-compile")
    run(spec["run"]["argv"], work, "iree-run-module")
    return {n: np.load(work / f"{n}.npy", allow_pickle=False) for n in spec["run"]["outputs"]}


def compare(spec, outputs):
    inputs = {n: np.load(HERE / "inputs" / f"{n}.npy", allow_pickle=False) for n in spec["run"]["inputs"]}
    bad = 0
    for name, rule in spec["compare"].items():
        expected = np.load(HERE / rule["expected"], allow_pickle=False)
        tol = np.load(HERE / rule["tolerance"], allow_pickle=False)
        got = outputs.get(name)
        if got is None or got.shape != expected.shape:
            print(f"{name}: {'missing' if got is None else f'shape {got.shape}'}, expected shape {expected.shape}")
            bad += 1
            continue
        mask = wrong_elements(got, expected, tol, rule["zero_sign"])
        for idx in zip(*np.nonzero(mask)):
            at = ", ".join(f"{n} = {show(v[idx])}" for n, v in inputs.items() if v.shape == expected.shape)
            allowed = float(np.broadcast_to(tol, expected.shape)[idx])
            why = ("the sign of zero" if got[idx] == 0 and expected[idx] == 0 else
                   f"allowed difference {allowed:g}" if allowed else "bit for bit")
            print(f"{name}{list(map(int, idx))}: {at + ' -> ' if at else ''}got {show(got[idx])}, expected "
                  f"{show(expected[idx])} ({why})")
        bad += int(mask.sum())
    return bad


# --- codegen-scan: an instruction pattern inside one loop of a dispatch's assembly ---------------
_FUNC = re.compile(r"^([A-Za-z_][\w.$]*):")
_LABEL = re.compile(r"^(\.L[\w.$]+):")
_BRANCH = re.compile(r"^\s*(?:b[a-z]*|j)\s+(?:[^,]+,\s*)*(\.L[\w.$]+)\s*$")
_VSET = re.compile(r"^\s*(vsetvli|vsetivli)\s+(\w+),\s*(\w+),\s*(e\d+),\s*(mf?\d+)")


def pattern_loops(text, scan):
    """'function: loop label' for every loop (a backward branch and the lines from its target)
    holding every op in scan["ops"], with scan["under"] (or, without it, any of them) running
    under the vector configuration scan["vtype"] (AVL, SEW, LMUL of the last vsetvli / vsetivli
    before it)."""
    funcs, name, lines = [], None, []
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            if name:
                funcs.append((name, lines))
            name, lines = m.group(1), []
        elif name:
            lines.append(line)
    if name:
        funcs.append((name, lines))
    want = tuple(scan["vtype"])
    found = []
    for name, lines in funcs:
        vtype, types, labels = None, [], {}
        for i, line in enumerate(lines):
            v = _VSET.match(line)
            if v:
                vtype = (v.group(3), v.group(4), v.group(5))
            types.append(vtype)
            lab = _LABEL.match(line)
            if lab:
                labels[lab.group(1)] = i
            br = _BRANCH.match(line)
            if br and br.group(1) in labels:
                body = range(labels[br.group(1)], i + 1)
                ops = {k: (lines[k].split() or [""])[0] for k in body}
                hits = [k for k, op in ops.items() if op in scan["ops"]]
                under = [k for k in hits if ops[k] == scan["under"]] if scan.get("under") else hits
                if {ops[k] for k in hits} == set(scan["ops"]) and any(types[k] == want for k in under):
                    found.append(f"{name}: loop {br.group(1)}")
    return found


def codegen_scan(spec, work):
    run(spec["compile"], work, "iree-compile")
    files = sorted((work / "dump").glob("*.s"))
    if not files:
        raise RuntimeError("iree-compile dumped no assembly")
    return [f"{f.name}: {hit}" for f in files for hit in pattern_loops(f.read_text(), spec["scan"])]


def compile_error(spec, work):
    """The compiler's error line matching spec["error"], or None when the program compiles."""
    exe = tool("iree-compile")
    if exe is None:
        raise RuntimeError("iree-compile not found")
    argv = spec["compile"]
    proc = subprocess.run([exe, *argv[1:]], cwd=work, capture_output=True, text=True, timeout=1800)
    if proc.returncode == 0:
        return None
    said = proc.stderr or proc.stdout
    found = re.search(spec["error"], said)
    if found is None:
        raise RuntimeError(f"iree-compile failed otherwise (exit {proc.returncode}):\n{said[-3000:]}")
    return said[found.start():said.find("\n", found.start())]


def main():
    spec = json.loads((HERE / "bundle.json").read_text())
    kind = spec["run"]["kind"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for item in HERE.iterdir():
            if item.is_file():
                shutil.copy(item, work / item.name)
            elif item.name == "build":
                for f in item.iterdir():
                    shutil.copy(f, work / f.name)
        try:
            if kind == "codegen-scan":
                hits = codegen_scan(spec, work)
                for h in hits:
                    print(h)
                bad = len(hits)
            elif kind == "compile-error":
                line = compile_error(spec, work)
                if line:
                    print(line)
                bad = int(line is not None)
            else:
                outputs = {"iree-runtime": outputs_iree_runtime, "iree-run-module": outputs_iree_run_module,
                           "riscv-qemu": outputs_riscv_qemu}[kind](spec, work)
                bad = compare(spec, outputs)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            print(f"could not tell: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:        # iree.runtime's own errors
            print(f"could not tell: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    what = {"codegen-scan": ("wrong loop(s)", "no dispatch loop has the pattern"),
            "compile-error": ("compile error(s)", "the program compiles")}.get(kind, ("wrong element(s)", "no wrong element"))
    if bad:
        print(f"BUG PRESENT: {bad} {what[0]}: {spec['title']}")
        return 1
    print(what[1], ": the bug is not present in this toolchain", sep="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
