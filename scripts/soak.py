#!/usr/bin/env python3
"""Soak of the isolated runner (issue 19): ``python scripts/soak.py [--cases 500] [--seed 1]``.

Runs rounds of real pytest sessions (``--hw emu``, tiny exact GEMM cases) whose injected fault
misbehaves at random: hangs, crashes (SIGSEGV, ``os._exit``), a KeyboardInterrupt in the case, a
child left running in its own session, the worker SIGKILLed from outside, the fork server killed
under the case; in some rounds (``-n 2``) the pytest-xdist worker running a case is SIGKILLed from
outside; and every round is ended at a random point by a SIGTERM of the whole run, or by a SIGKILL
of pytest itself (no handler runs). It goes on until CASES cases have finished, then checks and
prints:

- every case the run finished (its line in results.jsonl) is in a results.json that parses
  strictly (no bare NaN), with the same verdict; the session is marked interrupted; after a
  SIGKILL of pytest, results.json is the "in progress" mark the gate refuses, and every finished
  case is in the record ``accel_regress.results.record.recover`` rebuilds from results.jsonl;
- a case whose xdist worker was SIGKILLed is a CRASH record;
- no process started by the run is left (every process carries the soak's tag in its environment);
- no verdict blames the device for a fault of the suite: a case whose fork server was killed is a
  PASS (restarted and retried), never a CRASH or HANG; every other kind gets its own verdict.

Figures: cases, faults injected (by kind), survived (finished and recorded with the right
verdict), lost (finished but missing or misjudged), processes left. Exit 0 when nothing was lost.
Slow (minutes): it is opt-in, not part of ``pytest tests``.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TEST = textwrap.dedent('''
    import numpy as np
    import pytest
    from accel_regress.golden.case import Case

    pytestmark = pytest.mark.family("gemm_partition_n")
    PARAMS = dict(M=16, K=64, N=64, tile_m=16, tile_k=64, tile_n=64, num_aie_columns=1,
                  b_col_maj=False, c_col_maj=False, partition_N=1)
    KINDS = {kinds!r}

    @pytest.mark.parametrize("kind", KINDS)
    def test_gemm(hw, kind):
        if kind.startswith("xkill"):     # the soak driver SIGKILLs the xdist worker running this
            import os, time
            with open(os.path.join(os.environ["SOAK_DIR"], "xdist_victim.pid"), "w") as f:
                f.write(str(os.getpid()))
            while True:
                time.sleep(1)
        rng = np.random.default_rng(len(kind))
        a = rng.integers(0, 2, (16, 64)).astype(np.float32)
        b = rng.integers(0, 2, (64, 64)).astype(np.float32)
        run = hw.run(Case.make("gemm_partition_n", kind, PARAMS), {{"A": a, "B": b}})
        np.testing.assert_array_equal(run["C_0"][:16, :64], a @ b)
''')

FAULTS = textwrap.dedent('''
    import ctypes, os, signal, subprocess, sys, time

    def fault(case, outputs):
        kind = case.id.split("-")[0]
        if kind == "ok":
            return outputs
        if kind == "hang":
            while True:
                time.sleep(1)
        if kind == "segv":
            ctypes.string_at(0)
        if kind == "exit":
            print("last words before exit 3", file=sys.stderr, flush=True)
            os._exit(3)
        if kind == "kbint":
            raise KeyboardInterrupt("inside the case")
        if kind == "leak":
            subprocess.Popen(["sleep", "600"], start_new_session=True)
            return outputs
        if kind == "victim":             # the soak driver SIGKILLs this worker from outside
            with open(os.path.join(os.environ["SOAK_DIR"], "victim.pid"), "w") as f:
                f.write(str(os.getpid()))
            while True:
                time.sleep(1)
        if kind == "killserver":         # the suite's own fork server dies under the case, once
            flag = os.path.join(os.environ["SOAK_DIR"], case.id + ".done")
            if not os.path.exists(flag):
                open(flag, "w").close()
                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(60)
            return outputs
        return outputs
''')

# kind -> (weight, the verdicts it may get). A worker the driver kills from outside is a CRASH, or a
# HANG when the kill comes after the 2 s case bound (the driver polls; a loaded box is slow).
KINDS = {"ok": (60, {"PASS"}), "hang": (6, {"HANG"}), "segv": (6, {"CRASH"}), "exit": (5, {"CRASH"}),
         "kbint": (5, {"CRASH"}), "leak": (8, {"PASS"}), "victim": (5, {"CRASH", "HANG"}),
         "killserver": (1, {"PASS"}),    # rare: each costs a fresh fork server (a torch import)
         "xkill": (2, {"CRASH"})}        # only in -n 2 rounds (else it would be pytest itself)
SUITE_FAULTS = {"killserver"}    # faults of the suite: never a CRASH or HANG of the case
# How a round runs and ends: plain and SIGTERMed; -n 2 (xdist workers SIGKILLed) and SIGTERMed;
# plain and SIGKILLed (pytest itself: no handler, no results.json but the in-progress mark).
MODES = {"sigterm": 3, "xdist": 2, "sigkill": 2}
NOT_IN = {"sigterm": {"xkill"}, "xdist": set(), "sigkill": {"xkill", "leak"}}   # a SIGKILLed run
# cannot end a child that left its session: no process of the suite lives to do it


def strict_load(path: Path):
    return json.loads(path.read_text(), parse_constant=lambda w: (_ for _ in ()).throw(ValueError(f"bare {w}")))


def tagged_processes(tag: str) -> list[str]:
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes()
            if f"SOAK_TAG={tag}".encode() in env.split(b"\0"):
                state = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                if state not in (b"Z", b"X"):
                    out.append(f"{entry.name} {Path(f'/proc/{entry.name}/cmdline').read_bytes()[:80]!r}")
        except OSError:
            continue
    return out


def one_round(folder: Path, kinds: list[str], rng: random.Random, tag: str, mode: str) -> dict:
    for p in folder.glob("*"):
        if p.is_file() and p.name not in ("faults.py",):
            p.unlink()
    shutil.rmtree(folder / "reports", ignore_errors=True)
    (folder / "test_soak.py").write_text(TEST.format(kinds=kinds))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(folder)]), SOAK_DIR=str(folder),
               SOAK_TAG=tag)
    env.pop("ACCEL_HW", None)
    argv = [sys.executable, "-m", "pytest", "-p", "accel-regress", "-p", "no:cacheprovider", "-q",
            "--hw", "emu", "--case-timeout", "2", "--max-hangs", "0", "--inject-fault", "faults.py:fault",
            "--worker-memory", "3G", "test_soak.py", *(["-n", "2"] if mode == "xdist" else [])]
    # A random point of the run, counted in finished cases (0: as soon as the session has started,
    # before any case; more than the round: it ends on its own). Before the session starts no code of
    # the suite runs yet (Python is importing pytest), so that is not a point of the run.
    stop_after = rng.choice([0, *range(1, len(kinds) + 6)])
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = folder / "reports" / "results.jsonl"
    killed_victims = xdist_kills = 0
    sent_term = False
    while proc.poll() is None:
        time.sleep(0.05)
        victim = folder / "victim.pid"
        if victim.exists():
            try:
                pid = int(victim.read_text())
                victim.unlink()
                os.kill(pid, signal.SIGKILL)
                killed_victims += 1
            except (ValueError, OSError):
                pass
        xvictim = folder / "xdist_victim.pid"
        if xvictim.exists():
            try:
                pid = int(xvictim.read_text())
                xvictim.unlink()
                os.kill(pid, signal.SIGKILL)
                xdist_kills += 1
            except (ValueError, OSError):
                pass
        if not jsonl.exists():
            continue
        done = jsonl.read_text().count('"nodeid"')
        if not sent_term and done >= stop_after:
            proc.send_signal(signal.SIGKILL if mode == "sigkill" else signal.SIGTERM)
            sent_term = True
    time.sleep(2.0)      # the run has ended: give the kernel a moment to reap what was killed
    return {"returncode": proc.returncode, "sigterm": sent_term and mode != "sigkill",
            "sigkill": sent_term and mode == "sigkill", "victims": killed_victims, "xdist_kills": xdist_kills,
            "left": tagged_processes(tag)}


def check_round(folder: Path, tally: collections.Counter, problems: list[str], killed: bool = False) -> int:
    reports = folder / "reports"
    if not (reports / "results.jsonl").exists():
        if not killed:       # a SIGKILL before the session started leaves nothing, rightly
            problems.append("the session left no results.jsonl")
        return 0
    lines = []
    for x in (reports / "results.jsonl").read_text().splitlines():
        try:
            lines.append(json.loads(x))
        except ValueError:
            if not killed:   # only a SIGKILL may tear the last line
                problems.append(f"a torn line in results.jsonl: {x[:80]!r}")
    finished = {x["nodeid"]: x for x in lines if "nodeid" in x and x.get("verdict") != "INTERRUPTED"}
    try:
        data = strict_load(reports / "results.json")
        if killed:
            from accel_regress.results import gate, record as results
            if not data["session"].get("in_progress") or gate.evaluate(data).ship:
                problems.append("pytest SIGKILLed: results.json is not the in-progress mark, or it ships")
            # What the killed session finished, rebuilt from its log.
            data = results.recover(reports / "results.jsonl", reports / "recovered.json")
            data["session"]["interrupted"] = True
    except (OSError, ValueError, KeyError) as exc:
        problems.append(f"results.json unreadable: {exc}")
        tally["lost"] += len(finished)
        return len(finished)
    recorded = {c["nodeid"]: c for c in data["cases"]}
    for nodeid, line in finished.items():
        kind = nodeid.rpartition("[emu-")[2].split("-")[0]
        tally[f"fault:{kind}"] += 1
        case = recorded.get(nodeid)
        want = KINDS[kind][1]
        if case is None:
            tally["lost"] += 1
            problems.append(f"{nodeid}: finished ({line['verdict']}) but not in results.json")
        elif case["verdict"] not in want:
            tally["lost"] += 1
            blame = " (a suite fault charged to the device)" if kind in SUITE_FAULTS else ""
            problems.append(f"{nodeid}: {case['verdict']}, expected {'/'.join(sorted(want))}{blame}: "
                            f"{case['message'][:160]}")
        else:
            tally["survived"] += 1
    tally["interrupted"] += sum(1 for c in data["cases"] if c["verdict"] == "INTERRUPTED")
    if not killed and not data["session"].get("interrupted") and len(finished) < len(lines) - 1:
        problems.append("session not marked interrupted")
    return len(finished)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500, help="finished cases to reach (default 500)")
    ap.add_argument("--round", type=int, default=60, help="cases per session (default 60)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    names, weights = list(KINDS), [w for w, _ in KINDS.values()]
    tally: collections.Counter = collections.Counter()
    problems: list[str] = []
    start = time.monotonic()
    rounds = 0
    with tempfile.TemporaryDirectory(prefix="accel-soak-") as tmp:
        folder = Path(tmp)
        (folder / "faults.py").write_text(FAULTS)
        while tally["cases"] < args.cases:
            rounds += 1
            mode = rng.choices(list(MODES), list(MODES.values()))[0]
            allowed = [(n, w) for n, w in zip(names, weights) if n not in NOT_IN[mode]]
            kinds = [f"{k}-{i}" for i, k in enumerate(rng.choices([n for n, _ in allowed], [w for _, w in allowed],
                                                                   k=args.round))]
            tag = uuid.uuid4().hex
            info = one_round(folder, kinds, rng, tag, mode)
            tally[f"mode:{mode}"] += 1
            tally["sigterm"] += info["sigterm"]
            tally["sigkill"] += info["sigkill"]
            tally["worker_kills"] += info["victims"]
            tally["xdist_kills"] += info["xdist_kills"]
            if info["left"]:
                tally["processes_left"] += len(info["left"])
                problems.append(f"round {rounds}: processes left: {info['left']}")
            tally["cases"] += check_round(folder, tally, problems, killed=info["sigkill"])
            print(f"round {rounds}: {tally['cases']} cases finished so far, {tally['lost']} lost, "
                  f"{tally['processes_left']} processes left ({time.monotonic() - start:.0f} s)", flush=True)
    faults = {k.partition(":")[2]: v for k, v in sorted(tally.items()) if k.startswith("fault:")}
    injected = sum(v for k, v in faults.items() if k != "ok")
    print(f"\nsoak: {tally['cases']} cases in {rounds} sessions, {time.monotonic() - start:.0f} s")
    print(f"faults injected: {injected} ({', '.join(f'{k} {v}' for k, v in faults.items() if k != 'ok')}); "
          f"worker SIGKILLs from outside: {tally['worker_kills']}; xdist worker SIGKILLs: {tally['xdist_kills']} "
          f"(in {tally['mode:xdist']} -n 2 sessions); SIGTERM of the run: {tally['sigterm']}, SIGKILL of pytest: "
          f"{tally['sigkill']}, of {rounds} sessions; cases cut short (INTERRUPTED): {tally['interrupted']}")
    print(f"survived: {tally['survived']}, lost: {tally['lost']}, processes left: {tally['processes_left']}")
    for p in problems[:30]:
        print(f"  problem: {p}")
    return 0 if not tally["lost"] and not tally["processes_left"] and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
