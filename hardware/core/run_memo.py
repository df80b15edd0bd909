"""One backend run per distinct case per pytest process: the runs a session has made, by what
decides their result.

A test module asks for a case's run in a module-scoped fixture, but pytest sets a module fixture
up again whenever the items it orders next to each other come from another parametrization (the
GEMM family's ``test_partition`` parameters are never grouped with ``test_forward_*``), and a test
body may ask for a run another test already made. Either way the device would run the same case
again. The memo answers those asks with the first run's result, whatever it was: outputs, a FAIL
of the output contract, HANG, CRASH, COMPILE_ERROR or SKIP (a hang is not waited out once per test).

Key: backend, the device this process holds for it (--devices), the case's identity (op, id,
params, seed), the inputs' digest (two cases with one identity can differ in inputs: the GEMM
standalone partitions are the same partition_N=1 case on different column slices), the injected
fault and the run's bound. The caller adds what else makes two runs different on purpose (the
repetition of --repeat).

A remembered run's outputs are read-only (every test of the case reads the same arrays).

Memory: outputs can be big (the Llama vocab projection returns about 2 GiB). A run with outputs
is held strongly while it fits ``budget`` bytes (least recently used out first) and while a tag
(the test module that made or used it) is open; after that only weakly, so it lives exactly as
long as a fixture still holds it. Runs without outputs (every verdict but a returned result) are
a few hundred bytes and always held. A case asked for again after its run was let go runs again
(``reruns`` counts those; the run stays correct, it only costs the device time again).
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Hashable, Optional


def outputs_nbytes(run) -> int:
    """Bytes of the outputs a run (or a --repeat set of runs) holds."""
    runs = getattr(run, "runs", None)
    if isinstance(runs, list):
        return sum(outputs_nbytes(r) for r in runs)
    return sum(getattr(a, "nbytes", 0) for a in (getattr(run, "_outputs", None) or {}).values())


def freeze(run) -> None:
    """Make a run's outputs read-only: every test of the case reads the same arrays, and one that
    wrote into them would change what the others check (it gets numpy's ValueError instead)."""
    for r in getattr(run, "runs", None) or [run]:
        for a in (getattr(r, "_outputs", None) or {}).values():
            if hasattr(a, "flags"):
                a.flags.writeable = False


@dataclass
class _Entry:
    run: object
    nbytes: int
    tags: set = field(default_factory=set)


class RunMemo:
    def __init__(self, budget_bytes: float):
        self.budget = budget_bytes
        self._held: "OrderedDict[Hashable, _Entry]" = OrderedDict()   # least recently used first
        self._held_bytes = 0
        self._weak: "weakref.WeakValueDictionary[Hashable, object]" = weakref.WeakValueDictionary()
        self._let_go: set = set()
        self.runs = 0          # runs made
        self.hits = 0          # asks answered from the memo
        self.reruns = 0        # runs made again after the memo had let them go
        self.peak_bytes = 0

    def get(self, key: Hashable, tag: Optional[str] = None):
        entry = self._held.get(key)
        if entry is not None:
            self._held.move_to_end(key)
            if tag is not None:
                entry.tags.add(tag)
            self.hits += 1
            return entry.run
        run = self._weak.get(key)
        if run is not None:        # let go by the memo, still held by a fixture: hold it again
            self.hits += 1
            self._hold(key, run, tag)
            return run
        return None

    def put(self, key: Hashable, run, tag: Optional[str] = None) -> None:
        self.runs += 1
        freeze(run)
        if key in self._let_go:
            self.reruns += 1
            self._let_go.discard(key)
        self._hold(key, run, tag)

    def get_or_run(self, key: Hashable, make: Callable[[], object], tag: Optional[str] = None,
                   key_after: Optional[Callable[[], Hashable]] = None):
        """The remembered run of ``key``, else ``make()``'s, remembered under ``key_after()``
        (the key once the run has happened: a device is chosen at the first run)."""
        run = self.get(key, tag)
        if run is None:
            run = make()
            self.put(key_after() if key_after else key, run, tag)
        return run

    def release(self, tag: str) -> None:
        """``tag`` will ask for nothing more: runs only it held are held weakly from now on."""
        for key in [k for k, e in self._held.items() if tag in e.tags]:
            entry = self._held[key]
            entry.tags.discard(tag)
            if not entry.tags and entry.nbytes:
                self._drop(key)

    def _hold(self, key, run, tag) -> None:
        nbytes = outputs_nbytes(run)
        old = self._held.pop(key, None)
        if old is not None:
            self._held_bytes -= old.nbytes
        self._held[key] = _Entry(run, nbytes, {tag} if tag is not None else set())
        self._held_bytes += nbytes
        try:
            self._weak[key] = run
        except TypeError:          # not weakly referable: held strongly only
            pass
        if self._held_bytes > self.budget:      # (a scan of every held run on each put cost O(runs^2))
            for k in [k for k, e in self._held.items() if e.nbytes]:
                if self._held_bytes <= self.budget:
                    break
                self._drop(k)
        self.peak_bytes = max(self.peak_bytes, self._held_bytes)

    def _drop(self, key) -> None:
        entry = self._held.pop(key)
        self._held_bytes -= entry.nbytes
        self._let_go.add(key)

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    def stats(self) -> dict:
        return {"runs": self.runs, "hits": self.hits, "reruns": self.reruns, "held": len(self._held),
                "held_bytes": self._held_bytes, "peak_bytes": self.peak_bytes, "budget_bytes": self.budget}
