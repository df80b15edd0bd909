"""The results history at scale: 1,000,000 case results (100 runs x 10,000 cases) ingested into
each back end (a SQLite file; a PostgreSQL server started here on a Unix socket, as the
selftests do), then `flaky`, `regressions` and the gate's history query timed over them, and the
database's size.

    python benchmarks/bench_history.py [--runs 100] [--cases 10000] [--backends sqlite,postgresql]

Targets on a 2-core machine: SQLite ingest >= 20,000 cases/s; each query < 1 s. The runs: 1% of
the tests fail in every other run (flaky), 0.2% start failing at run 80 (regressions), the rest
pass; versions change at run 80. Prints each figure, its ratio to the target, PostgreSQL's
figures against SQLite's, and the load average (the machine is shared: noise is high).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from accel_regress.core import verdicts
from accel_regress.results.gate import FAILURES
from accel_regress.results.history import baseline, localserver
from accel_regress.results.history import questions as Q
from accel_regress.results.history.store import History


def run_data(n: int, cases: int, rnd: random.Random) -> dict:
    flaky_every, broken_from = 100, 80
    out = []
    for i in range(cases):
        verdict = verdicts.PASS
        if i % flaky_every == 0 and n % 2:
            verdict = verdicts.FAIL
        if i % 500 == 1 and n >= broken_from:
            verdict = verdicts.FAIL
        out.append({"nodeid": f"tests/test_family{i % 5}.py::test_case[emu-shape{i}]", "backend": "emu",
                    "family": f"family{i % 5}", "verdict": verdict, "stage": "compare" if verdict != "PASS" else None,
                    "message": "" if verdict == "PASS" else f"{i}: 3 of 4096 elements beyond the bound",
                    "duration_s": round(rnd.uniform(0.01, 2.0), 4), "versions": {}, "detail": {}, "census": []})
    ver = "3.13.0" if n >= broken_from else "3.12.0"
    return {"session": {"started": f"2026-11-{1 + n // 24:02d}T{n % 24:02d}:00:00+0000",
                        "finished": f"2026-11-{1 + n // 24:02d}T{n % 24:02d}:30:00+0000", "host": "bench-runner",
                        "argv": ["tests"], "hw": ["emu"], "fault": None, "revision": f"rev{n}"},
            "backends": {"emu": {"selected": True, "available": True, "versions": {"iree-compile": ver}}},
            "cases": out}


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench(name: str, location: str, runs: int, cases: int) -> dict:
    rnd = random.Random(1)
    history = History(location)
    ingest_s = ingest_cpu = 0.0
    last = None
    for n in range(runs):
        data = run_data(n, cases, rnd)
        cpu = time.process_time()
        _, dt = timed(lambda: history.ingest(data))
        ingest_cpu += time.process_time() - cpu
        ingest_s += dt
        last = data
    # CPU seconds of this process: what a loaded machine's wall time hides (for SQLite all the
    # work is in this process; for PostgreSQL the server's share is not in it).
    figures = {"ingest_s": ingest_s, "rate": runs * cases / ingest_s, "cpu_rate": runs * cases / ingest_cpu}
    flaky, figures["flaky_s"] = timed(lambda: Q.flaky(history, runs=20))
    (regs, left), figures["regressions_s"] = timed(lambda: Q.regressions(history))
    # The gate's query: the last run gated against the history (itself left out).
    (_, known, _), figures["gate_s"] = timed(lambda: baseline.from_history(last, location, FAILURES, 0.1, 20, False))
    figures.update(n_flaky=len(flaky), n_regressions=len(regs), n_known=len(known), left=left)
    if history.dialect == "sqlite":
        figures["size"] = sum(p.stat().st_size for p in Path(location).parent.glob(Path(location).name + "*"))
    else:
        import sqlalchemy as sa
        with history.read() as conn:
            figures["size"] = conn.execute(sa.select(sa.func.pg_database_size(sa.func.current_database()))).scalar()
    history.close()
    return figures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--cases", type=int, default=10000)
    p.add_argument("--backends", default="sqlite,postgresql")
    args = p.parse_args(argv)
    print(f"{args.runs} runs x {args.cases} cases = {args.runs * args.cases:,} case results; "
          f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.backends.split(","):
            if name == "sqlite":
                results[name] = bench(name, str(Path(tmp) / "history.sqlite"), args.runs, args.cases)
            elif name == "postgresql":
                why = localserver.unavailable()
                if why:
                    print(f"postgresql: SKIP: {why}")
                    continue
                with localserver.LocalServer() as server:
                    results[name] = bench(name, server.create_database("bench"), args.runs, args.cases)
    for name, f in results.items():
        print(f"\n{name}:")
        print(f"  ingest       {f['rate']:>10,.0f} cases/s ({f['ingest_s']:.1f} s)   target 20,000: x{f['rate'] / 20000:.2f}")
        print(f"               {f['cpu_rate']:>10,.0f} cases per CPU second of this process"
              + (" (the server's CPU not counted)" if name == "postgresql" else ""))
        for q in ("flaky", "regressions", "gate"):
            print(f"  {q:<12} {f[q + '_s']:>10.3f} s   target < 1 s: {f[q + '_s']:.2f} of the bound")
        print(f"  size         {f['size'] / 1e6:>10.1f} MB ({f['size'] / (args.runs * args.cases):.0f} bytes/case)")
        print(f"  answers: {f['n_flaky']} flaky, {f['n_regressions']} regressions ({f['left']['flaky']} flaky "
              f"failures left out), {f['n_known']} known-flaky failures in the gated run")
    if "sqlite" in results and "postgresql" in results:
        s, pg = results["sqlite"], results["postgresql"]
        print("\npostgresql / sqlite: ingest rate x{:.2f}; flaky x{:.2f}; regressions x{:.2f}; gate x{:.2f}; size x{:.2f}"
              .format(pg["rate"] / s["rate"], pg["flaky_s"] / s["flaky_s"], pg["regressions_s"] / s["regressions_s"],
                      pg["gate_s"] / s["gate_s"], pg["size"] / s["size"]))
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
