"""``python -m accel_regress.backends.firesim classify FILE...``: one ``FILE<TAB>VERDICT<TAB>detail`` line per file.

VERDICT is one of pass, warmup, progress, hang, stopped, early, fail (hardware/backends/firesim/classify.py
says what each means). A FILE that is a results job folder is read as its uartlog. When FILE is a
uartlog with a ``metasim_stderr.out`` beside it, the driver's end line is read from there too
(metasimulation sends the driver's stderr to that file), and a ``heartbeat.csv`` beside it gives
the target cycles at the end; ``--fesvr-step-size S`` (the step the run used) bounds what a console
character costs, which lets those cycles show a hang. A file that cannot be classified at all
(missing, unreadable, binary) gets VERDICT ``error`` and the exit status is 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from accel_regress.backends.firesim.classify import classify_files
from accel_regress.backends.firesim.console import worst_cycles_per_char
from accel_regress.backends.firesim.uart import LogError


def _one_line(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def classify_main(files: list[str], out=None, fesvr_step_size: Optional[int] = None) -> int:
    out = out or sys.stdout
    per_char = worst_cycles_per_char(fesvr_step_size) if fesvr_step_size else None
    status = 0
    for name in files:
        path = Path(name)
        uartlog = path / "uartlog" if path.is_dir() and (path / "uartlog").exists() else path
        try:
            beside = uartlog.name == "uartlog"
            c = classify_files(uartlog, uartlog.parent / "metasim_stderr.out" if beside else None,
                               uartlog.parent / "heartbeat.csv" if beside else None, cycles_per_char=per_char)
            out.write(f"{name}\t{c.verdict}\t{_one_line(c.detail)}\n")
        except LogError as exc:
            out.write(f"{name}\terror\t{_one_line(str(exc))}\n")
            status = 2
    return status


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accel_regress.backends.firesim",
                                     description="FireSim micro-test tools (seed 004).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("classify", help="print FILE<TAB>VERDICT<TAB>detail for each uartlog")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--fesvr-step-size", type=int, default=None, metavar="S",
                   help="the run's +fesvr-step-size (bounds the console's cycles; default: unknown)")
    args = parser.parse_args(argv)
    if args.command == "classify":
        return classify_main(args.files, fesvr_step_size=args.fesvr_step_size)
    return 2


if __name__ == "__main__":
    sys.exit(main())
