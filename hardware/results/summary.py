"""What the terminal says at the end of a session: the gate's verdict first (with the fault banner
of a run with an injected fault), then the family x backend table, what did not run and why,
the SKIPs that matter, and every non-passing case with the line that reruns it."""
from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Optional

from accel_regress.core import verdicts
from accel_regress.results import skip_rules
from accel_regress.results.record import summarize

_ORDER = [v for v in verdicts.ALL]
_LABEL = {verdicts.NOT_APPLICABLE: "N/A"}
# Options of the session that shape a single case, so its rerun line must carry them.
_VALUE_OPTIONS = ("--case-timeout", "--repeat", "--worker-memory", "--isolation", "--expectations")
_FLAG_OPTIONS = ("--ignore-expectations", "--run-known-hangs")
# Markers that keep a case out of a run unless -m names them (accel_regress/plugin/options.py).
_OPT_IN_MARKERS = ("large", "input_classes")
# Environment a case may read: the suite's own ACCEL_* and the toolchains' variables the backends
# take (docs/howto/npu.md, docs/howto/ascend.md, docs/howto/firesim.md). Not the per-worker device ids, nor ACCEL_HW (the line says --hw), nor the results
# history (where a run is stored, not what it computes).
_ENV_PREFIXES = ("ACCEL_", "PYPTO_", "PTOAS_", "ASCEND_", "A2A3_", "XRT_")
_ENV_NAMES = ("PEANO_INSTALL_DIR", "MLIR_AIE_INSTALL_DIR")
_ENV_NOT = ("ACCEL_DEVICE_", "ACCEL_HISTORY")
# Where things are kept, not what runs: a cache answers what a run would compute, so a rerun
# elsewhere (a developer's machine, without CI's restored root) gives the same verdict without them.
_ENV_WHERE = frozenset({"ACCEL_CACHE_DIR", "ACCEL_IREE_CACHE", "ACCEL_RVV_SCAN_CACHE", "ACCEL_HEATMAP_CACHE",
                        "ACCEL_GOLDEN_CACHE", "ACCEL_GOLDEN_CACHE_BYTES", "ACCEL_GOLDEN_CACHE_SHARED",
                        "ACCEL_GOLDEN_CACHE_KEY_FILE", "ACCEL_IREE_AMD_AIE_CACHE", "ACCEL_RUN_MEMO_BYTES",
                        "ACCEL_ISOLATION_TMP", "ACCEL_BISECT_ENVS", "ACCEL_SETUP_LOG"})


def rerun_env(environ) -> dict:
    """The variables of ``environ`` that a rerun line must set again (session["env"])."""
    return {k: str(v) for k, v in sorted(environ.items())
            if (k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES) and not k.startswith(_ENV_NOT)
            and k != "ACCEL_HW" and k not in _ENV_WHERE}


def table(summary: dict) -> list[str]:
    used = {v for bs in summary.values() for counts in bs.values() for v in counts}
    cols = [v for v in _ORDER if v in used or v == verdicts.PASS]
    rows = [["family", "backend"] + [_LABEL.get(c, c) for c in cols]]
    for family, backends in summary.items():
        for backend, counts in backends.items():
            label = skip_rules.NO_BACKEND if backend == "-" else backend
            rows.append([family, label] + [str(counts.get(v, 0)) for v in cols])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [c.rjust(w) for c, w in zip(r[2:], widths[2:])]
        out.append("  ".join(cells))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _option(argv: list, name: str) -> Optional[str]:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return str(argv[i + 1])
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def rerun_target(nodeid: str, rootdir: Optional[str], cwd: Optional[str]) -> str:
    """``nodeid`` (its path relative to the rootdir) as a pytest argument that works in ``cwd``,
    the directory pytest was started in: a run started elsewhere than the rootdir reruns from there."""
    path, sep, rest = nodeid.partition("::")
    if not rootdir or not cwd or os.path.abspath(rootdir) == os.path.abspath(cwd):
        return nodeid
    return Path(os.path.relpath(os.path.join(rootdir, path), cwd)).as_posix() + sep + rest


def _spelled(session: dict):
    """Our option ``--NAME`` as the session's project accepts it: ``--accel-NAME`` where the
    project defines ``--NAME`` itself (plugin/spelling.py)."""
    theirs = set(session.get("prefixed_only") or ())
    return lambda name: "--accel-" + name[2:] if name in theirs else name


def rerun_line(case: dict, session: dict) -> str:
    """One command that runs exactly this case again, with the options that shaped it, from the
    directory the run was started in."""
    argv = [str(a) for a in session.get("argv") or []]
    env = session.get("env") or {}
    spell = _spelled(session)
    cmd = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
    cmd += ["python", "-m", "pytest", rerun_target(case["nodeid"], session.get("rootdir"), session.get("cwd"))]
    if case.get("backend"):
        cmd += [spell("--hw"), case["backend"]]
    if session.get("golden_seed"):
        cmd += [spell("--golden-seed"), str(session["golden_seed"])]
    if session.get("fault"):
        cmd += [spell("--inject-fault"), str(session["fault"])]
    for name in _VALUE_OPTIONS:
        value = _option(argv, name)
        if value is None:
            value = _option(argv, "--accel-" + name[2:])
        if value is not None:
            cmd += [spell(name), value]
    cmd += [spell(f) for f in _FLAG_OPTIONS if f in argv or "--accel-" + f[2:] in argv]
    markers = (case.get("detail") or {}).get("markers") or []
    opt_in = [m for m in _OPT_IN_MARKERS if m in markers]
    if opt_in and _option(argv, "-m") is None:
        cmd += ["-m", " or ".join(opt_in)]
    elif _option(argv, "-m") is not None:
        cmd += ["-m", _option(argv, "-m")]
    return shlex.join(cmd)


def _first(text) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:160] if lines else ""


def problems(cases: list[dict], limit: int = 30, session: Optional[dict] = None) -> list[str]:
    bad = [c for c in cases if c["verdict"] in verdicts.BAD]
    lines = []
    for c in bad[:limit]:
        first = _first(c.get("message"))
        lines.append(f"{c['verdict']:<13} {c['nodeid']}" + (f"  -- {first}" if first else ""))
        if session is not None:
            lines.append(f"{'':<13} rerun: {rerun_line(c, session)}")
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more (see results.json)")
    return lines


def skips(cases: list[dict], limit: int = 8) -> list[str]:
    """SKIPs that matter, one line per rule (hardware/results/skip_rules.py); the known HANG / CRASH
    not attempted and the cases a default run leaves to ``-m large`` are one line each."""
    groups = skip_rules.grouped(cases, verdicts.SKIP)
    if not groups:
        return []
    out = [f"{sum(n for _, n, _ in groups)} SKIP, by rule:"]
    for why, n, backends in groups[:limit]:
        if why == skip_rules.NEEDS_LARGE:
            out.append(f"  {n:>5} cases {why}, on {', '.join(backends)}")
        else:
            out.append(f"  {n:>5} x {why}")
    if len(groups) > limit:
        out.append(f"  ... and {len(groups) - limit} other rule(s) (see summary.md)")
    return out


def not_applicable(cases: list[dict]) -> list[str]:
    """One line per rule that says a backend can never run a case, however many cases and families."""
    out = []
    for why, n, backends in skip_rules.grouped(cases, verdicts.NOT_APPLICABLE):
        families = sorted({c.get("family") or "?" for c in cases
                           if c["verdict"] == verdicts.NOT_APPLICABLE and skip_rules.rule(c) == why})
        out.append(f"not applicable ({n} cases; {', '.join(families)} on {', '.join(backends)}): {why}")
    return out


def xfails(cases: list[dict], session: dict) -> list[str]:
    """Every known bug seen (XFAIL) with its expectation and the line that reruns it."""
    out = []
    for c in cases:
        if c["verdict"] != verdicts.XFAIL:
            continue
        exp = skip_rules.expectation(c)
        said = f"known {exp.get('verdict', 'bug')}: {exp.get('reason', '')}".rstrip(": ")
        where = ", ".join(x for x in (exp.get("issue"), exp.get("file")) if x)
        out.append(f"{'XFAIL':<13} {c['nodeid']}  -- {said}" + (f" ({where})" if where else ""))
        out.append(f"{'':<13} rerun: {c.get('rerun') or rerun_line(c, session)}")
    return out


def policy_words(verdict) -> str:
    """The release policy the verdict was reached under, in words."""
    source = verdict.policy
    if source.startswith("default policy (") and source.endswith(")"):
        rule = source[len("default policy ("):-1]
        return f"policy: {rule} (the default); the gate says the same: python -m accel_regress gate <results.json>"
    return (f"policy: the release policy in {source}; the gate says the same: "
            f"python -m accel_regress gate <results.json> --policy {shlex.quote(source)}")


def fault_not_reached(data: dict) -> list[str]:
    """A run with an injected fault whose fault changed no output of any case and raised in none:
    it proved nothing, and says so."""
    fault = (data.get("session") or {}).get("fault")
    cases = data.get("cases") or []
    runs = [r for c in cases for r in c.get("runs") or []]
    if not fault or not runs:
        return []
    if any(r.get("fault_changed") for r in runs) or any((c.get("detail") or {}).get("injected_fault") for c in cases):
        return []
    if not any("fault_changed" in r for r in runs):
        return []       # no run got as far as the fault (every one SKIPped or failed before it)
    return [f"note: fault {fault} changed no output of any case: its trigger was not reached "
            f"(none of the {len(cases)} case(s) is one it is about), so this run shows nothing about catching it", ""]


def section(data: dict, verdict, report_lines: list[str] = ()) -> list[str]:
    """The terminal's accel-regress summary; ``verdict`` is accel_regress.results.gate.evaluate's answer."""
    out = list(verdict.lines()) if verdict is not None else []
    out += [f"  - {r}" for r in (verdict.reasons if verdict is not None else [])]
    if verdict is not None:
        out.append(f"  {policy_words(verdict)}")
        out.append("")
    out += fault_not_reached(data)
    # The table of what the record holds, never of what its summary claims.
    counted = summarize(verdicts.worst_by(data.get("cases") or [], lambda c: c["nodeid"]).values())
    out += table(counted) if counted else ["no cases ran"]
    missing = [(n, b.get("reason")) for n, b in (data.get("backends") or {}).items()
               if b.get("selected") and not b.get("available", True)]
    out += [f"not run on {name}: {reason}" for name, reason in missing]
    out += not_applicable(data["cases"])
    out += skips(data["cases"])
    bad = problems(data["cases"], session=data.get("session") or {})
    if bad:
        out += [""] + bad
    known = xfails(data["cases"], data.get("session") or {})
    if known:
        out += ["", f"{len(known) // 2} XFAIL (known bugs; the expectations files say which):"] + known
    out += list(report_lines)
    return out
