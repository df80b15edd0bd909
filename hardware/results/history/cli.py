"""``accel-regress history SUBCOMMAND``: the results history from the command line.

    history import RESULTS.json ...        store runs (old ones, merged ones); a stored run is kept once
    history show TEST [--device D]         a test's verdict timeline, with the versions that changed
    history flaky [--days N] [--runs N]    flip rate per test x device over the last runs
    history regressions                    new failures: last good and first bad run, what changed
    history dashboard [-o FILE]            the HTML page (also written with each session's reports)

Every subcommand takes ``--history PATH|URL`` (default: $ACCEL_HISTORY, else the user data
folder's history.sqlite) and ``--with-faults`` (runs with an injected fault count too).
Exit 0: answered; 2: the history or an input could not be read (one line: a lock another client
holds past $ACCEL_HISTORY_TIMEOUT too). What the history holds is printed inert: a stored
message's terminal escape sequences are shown as text, never sent to the terminal.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from accel_regress.results.history.location import HistoryError, resolve

PROG = "accel-regress history"


def _say(text: str = "") -> None:
    from accel_regress.util.escape import term_text
    print(term_text(text))


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"{value} is out of range (1 to 100000)")
    return value


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if not 0 < value <= 36500:
        raise argparse.ArgumentTypeError(f"{text} is out of range (more than 0, at most 36500 days)")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--history", default=None, metavar="PATH|URL",
                   help="SQLite file, postgresql:// URL or user (default: $ACCEL_HISTORY, else the project's "
                        "own: .accel-regress/history.sqlite in the nearest folder up with a pyproject.toml)")
    p.add_argument("--with-faults", action="store_true",
                   help="count runs with an injected fault too (default: they are stored but left out)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="The results history: every run remembered.")
    sub = p.add_subparsers(dest="cmd", required=True)
    imp = sub.add_parser("import", help="store results.json files (a run already stored is kept once)")
    imp.add_argument("files", nargs="+", metavar="RESULTS.json")
    _common(imp)
    show = sub.add_parser("show", help="a test's verdict timeline per device")
    show.add_argument("test", help="a test key (node id without the backend), or part of one")
    show.add_argument("--device", default=None, help="only this device column (e.g. emu, npu/Strix)")
    show.add_argument("--limit", type=_count, default=50, help="runs shown per device (default 50)")
    _common(show)
    fl = sub.add_parser("flaky", help="tests whose outcome flips between runs")
    fl.add_argument("--days", type=_days, default=None, help="only runs of the last N days")
    fl.add_argument("--runs", type=_count, default=20, help="the last N runs of each device (default 20)")
    fl.add_argument("--device", default=None)
    _common(fl)
    rg = sub.add_parser("regressions", help="failures new since the last green run of the same test and device")
    rg.add_argument("--runs", type=_count, default=20, help="window for telling a flaky test (default 20)")
    rg.add_argument("--device", default=None)
    _common(rg)
    db = sub.add_parser("dashboard", help="write the HTML page")
    db.add_argument("-o", "--output", default="reports/history.html")
    db.add_argument("--runs", type=_count, default=30, help="runs in the matrix (default 30)")
    _common(db)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        location = resolve(args.history)
    except HistoryError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if location is None:
        print(f"{PROG}: --history none: there is no history to use", file=sys.stderr)
        return 2
    from accel_regress.results.history.store import History
    try:
        history = History(location, create=args.cmd == "import")
    except HistoryError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    try:
        return _COMMANDS[args.cmd](history, args)
    except HistoryError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:      # the reader went away (`| head`): accel_regress.__main__ ends quietly
        raise
    except Exception as exc:     # a database error mid-question: one line, never a traceback wall
        from accel_regress.results.history.store import _reason
        print(f"{PROG}: history {history.where}: {_reason(exc)}", file=sys.stderr)
        return 2
    finally:
        history.close()


def _import(history, args) -> int:
    from accel_regress.results.history.store import ingest_files
    status = 0
    for path, result in ingest_files(history, [Path(f) for f in args.files]):
        if isinstance(result, str):
            print(f"{PROG} import: {result}", file=sys.stderr)
            status = 2
            continue
        for key, stored, n in result:
            _say(f"{path}: run {key[:9]} ({n} cases) " + ("stored" if stored else "already in the history: kept once"))
    return status


def _show(history, args) -> int:
    from accel_regress.results.history import questions as Q
    lines, more = Q.show(history, args.test, args.device, args.with_faults, args.limit)
    if not lines:
        _say(f"no test matching {args.test!r} in {history.where}" + (f" on {args.device}" if args.device else ""))
        return 0
    for t in lines:
        _say(f"{t.test} on {t.device} ({t.family or '?'}):")
        for run, verdict, duration, message, changed in t.rows:
            dur = f"{duration:.2f} s" if duration is not None else "-"
            why = f"  {(message or '').splitlines()[0][:100]}" if verdict != "PASS" and message else ""
            _say(f"  {run.label():<40} {verdict:<14} {dur:>9}{why}")
            for c in changed:
                _say(f"      changed: {c}")
    if more:
        _say(f"... and more tests match {args.test!r} (e.g. {more[0]}): give more of the name")
    return 0


def _flaky(history, args) -> int:
    from accel_regress.results.history import questions as Q
    found = Q.flaky(history, runs=args.runs, days=args.days, with_faults=args.with_faults, device=args.device)
    scope = f"the last {args.runs} runs per device" + (f" within {args.days:g} days" if args.days else "")
    if not found:
        _say(f"no flaky test over {scope} in {history.where}")
        return 0
    _say(f"{len(found)} flaky test x device over {scope}:")
    for f in found:
        _say(f"  {f.test} on {f.device}: {f.describe()}")
        _say("      runs: " + " ".join(f"{run.key[:9]}={verdict}" for run, verdict in f.timeline))
    return 0


def _regressions(history, args) -> int:
    from accel_regress.results.history import questions as Q
    found, left = Q.regressions(history, with_faults=args.with_faults, window=args.runs, device=args.device)
    if not found:
        _say(f"no open regression in {history.where}")
    else:
        _say(f"{len(found)} open regression(s) (failing in the device's latest run, passed before):")
    for r in found:
        _say(f"  {r.verdict} {r.test} on {r.device}")
        _say(f"      last good:  {r.last_good.label()}")
        _say(f"      first bad:  {r.first_bad.label()}  ({r.bad_runs} failing run(s) since, latest {r.latest.key[:9]})")
        _say(f"      changed:    {'; '.join(r.changes) or 'nothing recorded (same versions, revision and host)'}")
    if left["flaky"] or left["never_green"]:
        _say(f"not listed: {left['flaky']} failing now but flaky (see `history flaky`), "
              f"{left['never_green']} never green in the history")
    return 0


def _dashboard(history, args) -> int:
    from accel_regress.results.history import dashboard
    out = dashboard.write(history, Path(args.output), runs=args.runs, with_faults=args.with_faults)
    _say(f"wrote {out}")
    return 0


_COMMANDS = {"import": _import, "show": _show, "flaky": _flaky, "regressions": _regressions,
             "dashboard": _dashboard}
