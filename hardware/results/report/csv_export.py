"""The test x device matrix as CSV (as IRON's CI summary keeps it): ``matrix.csv`` with a column per
device, and ``matrix-<device>.csv`` per device with stage, time and the first line of the message.
No cell starts a spreadsheet formula (hardware/util/escape.py ``csv_cell``)."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from accel_regress.util.atomic import write_atomic
from accel_regress.util.escape import csv_cell
from accel_regress.results.report.tables import Model, first_line


def _text(rows: list[list]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[csv_cell(v) for v in row] for row in rows])
    return buf.getvalue()


def device_file(device: str) -> str:
    return "matrix-" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", device).strip("_") or "device") + ".csv"


def write(m: Model, out: Path) -> list[Path]:
    written = []
    fams = {c["key"]: c.get("family") or "" for c in m.cases}
    rows = [["test", "family"] + m.devices]
    for key, row in m.grid.items():
        rows.append([key, fams.get(key, "")] + [row[d]["verdict"] if d in row else "" for d in m.devices])
    write_atomic(out / "matrix.csv", _text(rows))
    written.append(out / "matrix.csv")
    for d in m.devices:
        per = [["test", "family", "verdict", "stage", "duration_s", "message"]]
        for key, row in m.grid.items():
            c = row.get(d)
            if c is not None:
                per.append([key, c.get("family") or "", c["verdict"], c.get("stage") or "",
                            f"{float(c.get('duration_s') or 0):.3f}", first_line(c.get("message"), 300)])
        write_atomic(out / device_file(d), _text(per))
        written.append(out / device_file(d))
    return written
