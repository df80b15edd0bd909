"""What a person needs to read a COMPILE_ERROR, HANG or CRASH, kept in the report folder (issue 37
item 3): the program as compiled, the command lines, the compiler's (or simulator's) output. The
toolchains put them in the error's detail (e.g. hardware/toolchains/iree/compiler.py); their
temporary folders are gone by the end of the run, so the case's message points here instead.

Files are ``failures/<case slug>.<part>``, each at most MAX_FILE bytes (the end kept: diagnostics
end with the error) and all of a session's at most MAX_TOTAL (then the message says they were not
kept); the report folder's clearing at session start removes them (results/report_dir.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from accel_regress.core import verdicts

FOLDER = "failures"
KEPT = (verdicts.COMPILE_ERROR, verdicts.HANG, verdicts.CRASH)
MAX_FILE = 256 * 1024
MAX_TOTAL = 32 * 1024 * 1024
# detail key -> file part; other multi-line text in the detail goes to <key>.txt
PARTS = {"program": "program.mlir", "argv": "command.txt", "diagnostic": "output.txt"}
_written: dict[str, int] = {}        # report folder -> bytes written by this process


def _bounded(text: str) -> str:
    data = text.encode("utf-8", errors="replace")
    if len(data) <= MAX_FILE:
        return text
    return "[... cut: the last %d bytes of %d]\n" % (MAX_FILE, len(data)) + data[-MAX_FILE:].decode("utf-8", "replace")


def files_for(detail: dict) -> dict[str, str]:
    out = {}
    ordered = [k for k in PARTS if k in detail] + [k for k in detail if k not in PARTS]
    for key in ordered:
        value = detail[key]
        if not isinstance(value, str) or not value.strip() or key in ("argv_here", "temp_dir"):
            continue
        if key in PARTS:
            text = value
            if key == "argv" and detail.get("argv_here"):
                text = (f"{value}\n\n# the same, run in this folder next to program.mlir "
                        f"(the folder above was temporary):\n{detail['argv_here']}")
            out[PARTS[key]] = _bounded(text + "\n")
        elif "\n" in value:
            out[f"{key}.txt"] = _bounded(value + "\n")
    return out


def in_message(message: str, detail: dict, report_dir: Path, slug: str) -> str:
    """The message with the temporary folder's program.mlir (a compiler's diagnostic cites it,
    line and column) named as the kept copy."""
    temp = detail.get("temp_dir")
    if not temp or "program" not in detail:
        return message
    return message.replace(f"{temp}/program.mlir", str(Path(report_dir) / FOLDER / f"{slug}.program.mlir"))


def keep(report_dir: Path, slug: str, verdict: str, detail: dict) -> Optional[str]:
    """Write the failure's files; what the case's message adds (None when there is nothing to keep)."""
    if verdict not in KEPT:
        return None
    files = files_for(detail)
    if not files:
        return None
    from accel_regress.core import own_folder
    from accel_regress.util.atomic import write_atomic
    folder = Path(report_dir) / FOLDER
    size = sum(len(t.encode("utf-8", "replace")) for t in files.values())
    key = str(Path(report_dir).resolve())
    if _written.get(key, 0) + size > MAX_TOTAL:
        return f"its files were not kept: the session's {MAX_TOTAL >> 20} MiB for failure files is used up"
    try:
        own_folder.own_subdir(Path(report_dir), FOLDER)      # never written through a planted link
        for part, text in files.items():
            write_atomic(folder / f"{slug}.{part}", text)
    except OSError as exc:
        return f"its files could not be kept: {exc.strerror or exc}"
    _written[key] = _written.get(key, 0) + size
    return f"kept: {folder / slug}.{{{','.join(files)}}}"
