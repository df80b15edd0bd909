"""Find the simplest condition on the dimensions that separates failing shapes from passing ones.

Input: a table (dims tuple -> verdict), e.g. seed 003's sweep {(512, 512, 640): "HANG", ...}.
For every bad verdict V in it, ``find`` searches formulas over atoms on single dimensions

    d == c, d != c   (c a value seen in the table)
    d % m == 0, d % m != 0   (m a power of two, 2..4096)
    d <= c, d > c    (c a value seen in the table)

in order of simplicity: one atom, a conjunction of two, of three, then a disjunction of two or
three atoms, then the two mixed forms of three atoms, ``a and (b or c)`` and ``a or (b and c)``,
and returns the first that is true on exactly the rows with verdict V (SKIP rows are left out:
they say nothing). Simplicity is a cost: equality atoms cost 1, the others 2, plus, once per
distinct constant, the bits needed to name it (log2 of the values seen in that dimension, at least
1; log2 of the 12 moduli); ties go to constants with fewer trailing zero bits (the "odd" size, the one a tiling
bug is about: 640 = 5*2**7 over 512 = 2**9), then to the text. Over seed 003's table this gives
"HANG iff N == 640 and M != 640". No formula of at most three atoms: "no simple rule fits", with the
nearest one: the formula of at most two atoms (a conjunction or a disjunction) that the fewest
shapes contradict, and those shapes.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

PASS, SKIP = "PASS", "SKIP"
MAX_ATOMS = 3
_MODULI = tuple(2 ** i for i in range(1, 13))
_OP_COST = {"==": 1, "!=": 1, "%0": 2, "%!0": 2, "<=": 2, ">": 2}


@dataclass(frozen=True)
class Atom:
    dim: int          # index into the dims tuple
    op: str           # one of _OP_COST
    value: int
    const_cost: float = field(default=1.0, compare=False)   # bits to name the constant

    def holds(self, dims: Sequence[int]) -> bool:
        x = dims[self.dim]
        return {"==": x == self.value, "!=": x != self.value, "%0": x % self.value == 0,
                "%!0": x % self.value != 0, "<=": x <= self.value, ">": x > self.value}[self.op]

    def text(self, names: Sequence[str]) -> str:
        d = names[self.dim]
        if self.op == "%0":
            return f"{d} % {self.value} == 0"
        if self.op == "%!0":
            return f"{d} % {self.value} != 0"
        return f"{d} {self.op} {self.value}"


@dataclass(frozen=True)
class Rule:
    verdict: str
    clauses: tuple            # disjunction of conjunctions: ((Atom, ...), ...); () means "always"
    names: tuple

    def holds(self, dims: Sequence[int]) -> bool:
        if not self.clauses:
            return True
        return any(all(a.holds(dims) for a in clause) for clause in self.clauses)

    @property
    def condition(self) -> str:
        if not self.clauses:
            return "always"
        if len(self.clauses) == 2 and all(len(c) == 2 for c in self.clauses):
            shared = set(self.clauses[0]) & set(self.clauses[1])
            if len(shared) == 1:           # a and (b or c), as found
                (a,) = shared
                b, c = (next(x for x in clause if x != a) for clause in self.clauses)
                return f"{a.text(self.names)} and ({b.text(self.names)} or {c.text(self.names)})"
        parts = [" and ".join(a.text(self.names) for a in _ordered(c)) for c in self.clauses]
        return parts[0] if len(parts) == 1 else " or ".join(f"({p})" if " and " in p else p for p in parts)

    @property
    def text(self) -> str:
        if not self.clauses:
            return f"every shape is {self.verdict}"
        return f"{self.verdict} iff {self.condition}"

    def __str__(self) -> str:
        return self.text


@dataclass
class Finding:
    names: tuple
    rules: list = field(default_factory=list)        # one Rule per bad verdict that has one
    no_rule: dict = field(default_factory=dict)      # verdict -> how many rows, when none fits
    nearest: dict = field(default_factory=dict)      # verdict -> (Rule, [(dims, verdict) it gets wrong])
    rows: int = 0
    skipped: int = 0

    @property
    def all_pass(self) -> bool:
        return not self.rules and not self.no_rule

    def lines(self) -> list[str]:
        if self.rows == 0:
            return ["rule: nothing to explain (no shape ran)"]
        out = []
        if self.all_pass:
            out.append(f"rule: every shape passes ({self.rows} shapes)")
        for r in self.rules:
            out.append(f"rule: {r.text}")
        for verdict, n in self.no_rule.items():
            out.append(f"rule: no simple rule fits {verdict} ({n} of {self.rows} shapes; "
                       f"no condition of at most {MAX_ATOMS} atoms on {', '.join(self.names)} separates them)")
            if verdict in self.nearest:
                rule, wrong = self.nearest[verdict]
                shown = ", ".join(f"{'x'.join(map(str, d))} {v}" for d, v in wrong[:8])
                more = f" and {len(wrong) - 8} more" if len(wrong) > 8 else ""
                out.append(f"  nearest: {rule.text}, with {len(wrong)} exception(s): {shown}{more}")
        if self.skipped:
            out.append(f"({self.skipped} skipped shapes left out)")
        return out

    def describe(self) -> str:
        return "\n".join(self.lines())


def _ordered(clause):
    rank = {"==": 0, "!=": 1, "%!0": 2, "%0": 3, ">": 4, "<=": 5}
    return sorted(clause, key=lambda a: (rank[a.op], a.dim, a.value))


def _trailing_zeros(v: int) -> int:
    return (v & -v).bit_length() - 1 if v > 0 else 0


def _cost(clauses) -> tuple:
    """(atoms, operator cost + bits to name each distinct constant once, trailing zeros)."""
    atoms = [a for c in clauses for a in c]
    consts: dict = {}
    for a in atoms:
        consts[a.value] = max(consts.get(a.value, 0.0), a.const_cost)
    return (len(atoms), round(sum(_OP_COST[a.op] for a in atoms) + sum(consts.values()), 9),
            sum(_trailing_zeros(a.value) for a in atoms if a.op in ("==", "!=")))


def _atoms(rows: list[tuple], ndims: int) -> list[Atom]:
    """Every atom on every dimension. Naming a constant costs log2 of how many there were to
    choose from (at least 1 bit), so a rule that singles out one of many seen values (overfitting
    a wide table) costs more than one that names a tile size."""
    out = []
    for d in range(ndims):
        values = sorted({r[d] for r in rows})
        if len(values) < 2:
            continue
        bits = max(1.0, math.log2(len(values)))
        for v in values:
            out += [Atom(d, "==", v, bits), Atom(d, "!=", v, bits)]
        for v in values[:-1]:
            out += [Atom(d, "<=", v, bits), Atom(d, ">", v, bits)]
        mod_bits = math.log2(len(_MODULI))
        for m in _MODULI:
            if m <= values[-1]:
                out += [Atom(d, "%0", m, mod_bits), Atom(d, "%!0", m, mod_bits)]
    return out


def _mask(atom: Atom, rows) -> int:
    m = 0
    for i, r in enumerate(rows):
        if atom.holds(r):
            m |= 1 << i
    return m


def _distinct_masks(rows: list[tuple], atoms: list[Atom]) -> dict[int, Atom]:
    """Truth mask over ``rows`` -> the cheapest atom with it, for the atoms that split the rows."""
    full = (1 << len(rows)) - 1
    masks: dict[int, Atom] = {}
    for a in atoms:
        m = _mask(a, rows)
        if 0 < m < full and (m not in masks or _key(((a,),)) < _key(((masks[m],),))):
            masks[m] = a
    return masks


def _search(rows: list[tuple], target: int, atoms: list[Atom], max_atoms: int) -> Optional[tuple]:
    """Cheapest formula whose truth mask over ``rows`` equals ``target``."""
    full = (1 << len(rows)) - 1
    masks = _distinct_masks(rows, atoms)
    # Only atoms true on every target row can be in a conjunction that equals the target.
    cover = [(m, a) for m, a in masks.items() if m & target == target]
    best = None
    for n in range(1, max_atoms + 1):
        for combo in itertools.combinations(cover, n):
            m = full
            for mm, _ in combo:
                m &= mm
            if m == target:
                cand = (tuple(a for _, a in combo),)
                if best is None or _key(cand) < _key(best):
                    best = cand
        if best is not None:
            return best
    # Disjunctions of single atoms, each true only on target rows ("M == 640 or K == 640 ...").
    inside = [(m, a) for m, a in masks.items() if m & ~target == 0]
    for n in range(2, max_atoms + 1):
        for combo in itertools.combinations(inside, n):
            m = 0
            for mm, _ in combo:
                m |= mm
            if m == target:
                cand = tuple((a,) for _, a in combo)
                if best is None or _key(cand) < _key(best):
                    best = cand
        if best is not None:
            return best
    if max_atoms >= 3:
        best = _mixed(target, full, masks)
    return best


def _mixed(target: int, full: int, masks: dict) -> Optional[tuple]:
    """The cheapest ``a and (b or c)`` or ``a or (b and c)`` (as clauses: a disjunction of
    conjunctions) whose truth mask is ``target``."""
    best = None
    items = list(masks.items())
    for ma, a in items:
        if ma & target == target:          # a and (b or c): b, c stay inside the target within a
            inside = [(m, x) for m, x in items if x is not a and m & ma & ~target == 0 and m & target]
            for (mb, b), (mc, c) in itertools.combinations(inside, 2):
                if (mb | mc) & ma == target:
                    cand = ((a, b), (a, c))
                    if best is None or _key(cand) < _key(best):
                        best = cand
        if ma & ~target == 0:              # a or (b and c): b and c together add the rest
            rest = target & ~ma
            cover = [(m, x) for m, x in items if x is not a and m & rest == rest]
            for (mb, b), (mc, c) in itertools.combinations(cover, 2):
                if (mb & mc) | ma == target:
                    cand = ((a,), (b, c))
                    if best is None or _key(cand) < _key(best):
                        best = cand
    return best


def _nearest(rows: list[tuple], target: int, atoms: list[Atom]) -> tuple:
    """The formula of at most two atoms (one, a conjunction or a disjunction of two) that the
    fewest rows contradict, cheapest first among equals: (clauses, mask of the rows it gets wrong)."""
    masks = _distinct_masks(rows, atoms)
    best, best_rank = None, None
    items = list(masks.items())
    cands = [(m, ((a,),)) for m, a in items]
    for (m1, a1), (m2, a2) in itertools.combinations(items, 2):
        cands += [(m1 & m2, ((a1, a2),)), (m1 | m2, ((a1,), (a2,)))]
    for m, clauses in cands:
        wrong = m ^ target
        rank = (bin(wrong).count("1"),) + _key(clauses)
        if best_rank is None or rank < best_rank:
            best, best_rank = (clauses, wrong), rank
    return best


def _key(clauses) -> tuple:
    text = " or ".join(" and ".join(f"{a.dim}{a.op}{a.value}" for a in _ordered(c)) for c in clauses)
    return _cost(clauses) + (text,)


def find(table: Mapping[tuple, str], names: Sequence[str] = ("M", "K", "N"),
         max_atoms: int = MAX_ATOMS) -> Finding:
    """Explain every bad verdict in ``table`` (dims tuple -> verdict) by the simplest condition."""
    names = tuple(names)
    for dims in table:
        if len(dims) != len(names):
            raise ValueError(f"row {dims} has {len(dims)} dimensions, expected {len(names)} ({', '.join(names)})")
    rows = [tuple(int(x) for x in d) for d, v in table.items() if v != SKIP]
    verdicts = [table[d] for d in table if table[d] != SKIP]
    finding = Finding(names, rows=len(rows), skipped=len(table) - len(rows))
    bad = sorted({v for v in verdicts if v != PASS})
    atoms = _atoms(rows, len(names))
    for verdict in bad:
        target = sum(1 << i for i, v in enumerate(verdicts) if v == verdict)
        if target == (1 << len(rows)) - 1:
            finding.rules.append(Rule(verdict, (), names))
            continue
        clauses = _search(rows, target, atoms, max_atoms)
        if clauses is None:
            finding.no_rule[verdict] = bin(target).count("1")
            near = _nearest(rows, target, atoms)
            if near is not None:
                near_clauses, wrong = near
                finding.nearest[verdict] = (Rule(verdict, near_clauses, names),
                                            [(rows[i], verdicts[i]) for i in range(len(rows)) if wrong >> i & 1])
        else:
            finding.rules.append(Rule(verdict, clauses, names))
    return finding
