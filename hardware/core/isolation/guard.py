"""``--max-hangs N``: after N hangs in a row on a backend the device is likely wedged; stop trying.

Counted per pytest process (under xdist, per xdist worker, which holds its own device). Any
outcome other than HANG resets the count.
"""
from __future__ import annotations

from typing import Optional


class HangGuard:
    def __init__(self, max_hangs: Optional[int]):
        self.max_hangs = max_hangs if max_hangs and max_hangs > 0 else None
        self._row: dict[str, list[str]] = {}

    def blocked(self, backend: str) -> Optional[str]:
        """None, or the SKIP reason once ``backend`` hung ``max_hangs`` times in a row."""
        row = self._row.get(backend, [])
        if self.max_hangs is None or len(row) < self.max_hangs:
            return None
        return (f"not attempted: {backend} hung {len(row)} times in a row (last: {row[-1]}), the device is "
                f"likely wedged (--max-hangs {self.max_hangs})")

    def record(self, backend: str, case_id: str, verdict: Optional[str]) -> None:
        if verdict == "HANG":
            self._row.setdefault(backend, []).append(case_id)
        elif verdict != "SKIP":
            self._row.pop(backend, None)
