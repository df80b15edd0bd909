"""What lint-pto reports, whichever of its two inputs (ptoas's C++ or the PTO IR) it read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

RULE = "pto-bare-tile-validshape"


@dataclass
class Finding:
    file: str
    line: int
    tile: str
    op: str
    declared_line: int
    declaration: str
    set_later_line: Optional[int] = None
    rule: str = RULE

    def describe(self) -> str:
        later = (f"; its SetValidShape comes only at line {self.set_later_line}, after the op"
                 if self.set_later_line else "")
        return (f"{self.file}:{self.line}: {self.rule}: tile {self.tile} declared bare at line "
                f"{self.declared_line} ({self.declaration.strip()}) is written by {self.op}, which reads "
                f"the destination's valid shape, before any constructor or SetValidShape gave it one"
                f"{later}. Construct it with its shape (Tile<...>(rows, cols)) or set the valid shape "
                f"before the op.")
