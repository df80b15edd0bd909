"""One matrix, test x device, from the results.json files of several runners.

Each hardware runner (Phoenix, Strix, Krackan, a2a3, FireSim, ...) writes its own results.json.
The same test runs on several devices under one backend id (three NPUs are all ``npu``), so a
case's column is its *device*: an explicit label given on the command line, else the device name
the backend reported in its versions (``npu1`` -> Phoenix, ...), else the backend id.

A test's row is its *test key*: the pytest node id with the backend parameter taken out, so
``test_partition[npu-M64-...-C1]`` and ``test_partition[emu-M64-...-C1]`` share a row.

``python -m accel_regress merge [LABEL=]results.json ... -o merged.json`` writes a results.json
(same schema, every case with a ``device``) that ``report`` and ``gate`` read like any other.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Optional

from accel_regress.results import record as results, tiling

from accel_regress.util import strict_json
from accel_regress.core import verdicts
from accel_regress.results.keys import device_of, test_key

severity = verdicts.severity


def _parse_input(arg: str) -> tuple[Optional[str], Path]:
    label, sep, path = arg.partition("=")
    if sep and label and "/" not in label and not Path(arg).exists():
        return label, Path(path)
    return None, Path(arg)


class ShardsDoNotTile(ValueError):
    """Shard records that are not every shard of one split (hardware/results/tiling.py)."""
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def merge(inputs: Iterable[tuple[Optional[str], Path]]) -> tuple[dict, list[str]]:
    """Merge results files; returns (merged results dict, notes for the user). Shards that do not
    tile their selection exactly raise ShardsDoNotTile."""
    notes: list[str] = []
    by_cell: dict[tuple[str, str], dict] = {}
    sources, backends = [], {}
    hw: list[str] = []
    interrupted = False
    ran: dict[str, list] = {}       # a shard's file -> the node ids it ran
    for label, path in inputs:
        data = results.load(path)   # names the file and what is wrong with it
        session = data.get("session") or {}
        interrupted |= bool(session.get("interrupted"))
        devices = set()
        one_backend = len({c.get("backend") for c in data["cases"]}) <= 1    # once per file: merge stays linear
        for case in data["cases"]:
            case = dict(case)
            device = device_of(case, data)
            if label:
                device = label if one_backend else f"{label}/{case['backend']}"
            case["device"] = device
            case["source"] = str(path)
            devices.add(device)
            cell = (test_key(case["nodeid"], case.get("backend")), device)
            old = by_cell.get(cell)
            if old is not None:
                notes.append(f"{cell[0]} on {device}: in both {old['source']} ({old['verdict']}) and "
                             f"{path} ({case['verdict']}); keeping the worse")
                if severity(case["verdict"]) <= severity(old["verdict"]):
                    continue
            by_cell[cell] = case
        for name, info in (data.get("backends") or {}).items():
            entry = dict(info)
            if name in backends and backends[name].get("available") and not entry.get("available"):
                continue     # one runner had it, another did not: the runner that had it counts
            backends[name] = entry
            if entry.get("selected") and name not in hw:
                hw.append(name)
        for name in session.get("hw") or []:
            if name not in hw:
                hw.append(name)
        sources.append({"file": str(path), "label": label, "host": session.get("host"),
                        "started": session.get("started"), "finished": session.get("finished"),
                        "argv": session.get("argv"), "exit_status": session.get("exit_status"),
                        "fault": session.get("fault"), "golden_seed": session.get("golden_seed"),
                        "interrupted": session.get("interrupted"), "devices": sorted(devices),
                        **{k: session[k] for k in tiling.SHARD_FIELDS if k in session}})
        # The run's provenance, so that the history stores a merged file's runs as their own sessions
        # stored them, and the gate finds their evidence (history/questions.gate_inputs).
        sources[-1].update({k: session[k] for k in ("revision", "runner", "project", "branch") if session.get(k)})
        if tiling.shard_of(session):
            ran[str(path)] = [c["nodeid"] for c in data["cases"]]
    problems = tiling.problems(sources, ran)
    if problems:
        raise ShardsDoNotTile(problems)
    cases = list(by_cell.values())
    session = {"merged_from": sources, "hw": hw, "interrupted": interrupted,
               "started": min((s["started"] for s in sources if s["started"]), default=None),
               "finished": max((s["finished"] for s in sources if s["finished"]), default=None),
               "host": ", ".join(sorted({s["host"] for s in sources if s["host"]}))}
    # Not results.build: that keeps one case per node id, and here one node id runs on many devices.
    merged = {"schema": results.SCHEMA, "schema_version": results.SCHEMA_VERSION, "session": session,
              "backends": backends, "cases": cases,
              "summary": results.summarize({**c, "backend": c["device"]} for c in cases)}  # by device
    return merged, notes


def durations(merged: dict) -> dict[str, float]:
    """{node id: seconds} of the cases that ran (the --shard-durations snapshot format)."""
    out: dict[str, float] = {}
    for c in merged["cases"]:
        d = c.get("duration_s")
        if isinstance(d, (int, float)) and not isinstance(d, bool) and c["verdict"] not in verdicts.NOT_RUN:
            out[c["nodeid"]] = max(float(d), out.get(c["nodeid"], 0.0))
    return dict(sorted(out.items()))


def _bring_arrays(merged: dict, out_dir: Path, notes: list[str]) -> int:
    """Copy each case's saved ratio map next to the merged results, so its report has heatmaps.

    Only a file under the source results file's own folder is copied (results.member_path): a
    results file is untrusted input, and the merged folder is published as a CI artifact.
    """
    copied = 0
    for n, case in enumerate(merged["cases"]):
        info = (case.get("detail") or {}).get("heatmap")
        if not isinstance(info, dict) or not info.get("array"):
            continue
        try:
            data = results.read_member(Path(case["source"]).parent, info["array"])
        except results.PathRefused as exc:
            case["detail"] = dict(case["detail"], heatmap={k: v for k, v in info.items() if k != "array"})
            if "no such file" not in str(exc).lower():
                notes.append(f"{case['source']}: heatmap of {case['nodeid']} not copied: {exc}")
            continue           # missing: the runner's arrays did not travel with its results.json
        rel = f"arrays/{n:05d}-{Path(info['array']).name}"
        results.write_atomic_bytes(out_dir / rel, data)
        case["detail"] = dict(case["detail"], heatmap=dict(info, array=rel))
        copied += 1
    return copied


def _output_problem(out: Path, inputs: list) -> Optional[str]:
    """Why ``-o`` cannot be the merged file: one of its own inputs (overwritten before a second
    look), a folder, or a path under something that is not a folder."""
    if out.exists() and any(out.resolve() == Path(i).resolve() for i in inputs):
        return "is one of the inputs; name a new file"
    if out.is_dir():
        return "is a folder; name a file in it (e.g. results.json)"
    for parent in out.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is not a folder"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m accel_regress merge",
                                description="Merge results.json files from several runners into one "
                                            "test x device matrix (a results.json with a device per case).")
    p.add_argument("inputs", nargs="+", metavar="[LABEL=]RESULTS.json",
                   help="a runner's results.json; LABEL names its device column (default: from the "
                        "device the backend reported, else the backend id)")
    p.add_argument("-o", "--output", default="reports/merged/results.json",
                   help="where the merged results.json goes (default: %(default)s)")
    p.add_argument("--write-durations", metavar="FILE",
                   help="also write the merged cases' durations as a --shard-durations snapshot ({node id: "
                        "seconds}, pytest-split's format; the longest where a test ran on several devices), "
                        "to commit for the next runs' --shard split")
    p.add_argument("--allow-fault", action="store_true",
                   help="merge runs with an injected fault too (they are not release runs; the merged "
                        "file keeps their fault, so its reports and gate say so)")
    args = p.parse_args(argv)
    try:
        merged, notes = merge(_parse_input(a) for a in args.inputs)
    except results.ResultsError as exc:
        print(f"merge: {exc}", file=sys.stderr)
        return 2
    except ShardsDoNotTile as exc:
        print("merge: refused: the shards do not tile their selection:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    from accel_regress.results.gate import release_refusal
    refusal = release_refusal(merged, args.allow_fault)
    if refusal:
        print(f"merge: refused: {refusal}", file=sys.stderr)
        return 2
    out = Path(args.output)
    problem = _output_problem(out, [_parse_input(a)[1] for a in args.inputs])
    if problem:
        print(f"merge: -o {out}: {problem}", file=sys.stderr)
        return 2
    try:
        copied = _bring_arrays(merged, out.parent, notes)
        results.write_atomic(out, strict_json.dumps(merged) + "\n")    # no indent: json's C encoder
    except OSError as exc:
        print(f"merge: -o {out}: cannot write it: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.write_durations:
        try:
            results.write_atomic(Path(args.write_durations), strict_json.dumps(durations(merged), indent=1) + "\n")
        except OSError as exc:
            print(f"merge: --write-durations {args.write_durations}: cannot write it: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
    if copied:
        print(f"copied {copied} heatmap array(s) into {out.parent / 'arrays'}")
    for note in notes:
        print(f"note: {note}")
    devices = sorted({c["device"] for c in merged["cases"]})
    print(f"merged {len(args.inputs)} file(s): {len(merged['cases'])} cases on {', '.join(devices) or 'no device'}"
          f" -> {out}")
    return 0
