"""``python -m hardware.firesim classify FILE...``: one ``FILE<TAB>VERDICT<TAB>detail`` line per file.

VERDICT is one of pass, warmup, progress, hang, early, fail (hardware/firesim/classify.py says
what each means). A FILE that is a results job folder is read as its uartlog. When FILE is a
uartlog with a ``metasim_stderr.out`` beside it, the driver's end line is read from there too
(metasimulation sends the driver's stderr to that file). A file that cannot be classified at all
(missing, unreadable, binary) gets VERDICT ``error`` and the exit status is 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from hardware.firesim.classify import classify_files
from hardware.firesim.uart import LogError


def _one_line(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def classify_main(files: list[str], out=None) -> int:
    out = out or sys.stdout
    status = 0
    for name in files:
        path = Path(name)
        uartlog = path / "uartlog" if path.is_dir() and (path / "uartlog").exists() else path
        try:
            c = classify_files(uartlog, uartlog.parent / "metasim_stderr.out" if uartlog.name == "uartlog" else None)
            out.write(f"{name}\t{c.verdict}\t{_one_line(c.detail)}\n")
        except LogError as exc:
            out.write(f"{name}\terror\t{_one_line(str(exc))}\n")
            status = 2
    return status


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hardware.firesim",
                                     description="FireSim micro-test tools (seed 004).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("classify", help="print FILE<TAB>VERDICT<TAB>detail for each uartlog")
    p.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    if args.command == "classify":
        return classify_main(args.files)
    return 2


if __name__ == "__main__":
    sys.exit(main())
