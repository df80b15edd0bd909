"""``accel-regress bisect TEST --package P1[,P2...] --good V1 --bad V2`` (or ``--toolchain-dir DIR...``).

Finds the last good and the first bad release of a toolchain for one test: the versions between
V1 and V2 that every named package has on the configured index (installed together, one
environment per version), the test run in each as the suite runs it (isolated, the same
``--golden-seed``), a binary search between the two ends. Prints every step's verdict and message,
the time taken, and the upstream range (release tags, compare links). A step whose environment
cannot be built, or whose verdict is neither the good one (PASS unless --good-verdict) nor the
bad one (the bad end's verdict unless --bad-verdict; its message must match --match REGEX when
given), is skipped like ``git bisect skip``.

``--toolchain-dir DIR...`` bisects toolchains installed side by side instead (a qemu or clang
build, an mlir-aie install, a folder of Python packages), oldest first: each step puts DIR/bin
first on PATH and DIR's Python packages (DIR/site, DIR/site-packages, DIR/lib/python*/site-packages,
or DIR itself when it holds packages) first on PYTHONPATH; --good / --bad name two of them
(default the first and the last).

When the good end already shows the bug there is no first bad version: the result names the
oldest version tried (``oldest_tried``, no ``first_bad``), and for a package that had an older
name on the index (``iree-compiler`` before ``iree-base-compiler``) it prints the command that
dates it further back; ``--older-lineage`` runs that bisect too (``older_lineage`` in the JSON).
``versions_tried`` is the versions whose step ran (or came from the journal), not the range.

Exit status: 0 when the range is found (also when the good end already shows the bug), 2 on a
usage error or ends that do not give a good and a bad verdict.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from accel_regress.results.bisect import envs, search, step, upstream_range, versions
from accel_regress.util.atomic import write_atomic
from accel_regress.util.derived_cache import user_cache


def parser(prog: str = "accel-regress bisect") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="The last good and the first bad release of a toolchain for one test, by binary search "
                                "over its released versions.")
    p.add_argument("test", help="the pytest node id of one case, e.g. "
                   "'tests/test_f32_reduction.py::test_f32_reduction[iree-cpu-erf-64-v-vlen256-specials]'")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--package", metavar="P1[,P2...]", help="packages installed together at each version")
    src.add_argument("--toolchain-dir", nargs="+", type=Path, metavar="DIR",
                     help="toolchains installed side by side, oldest first")
    p.add_argument("--good", help="a version (or toolchain dir) where the test gives the good verdict")
    p.add_argument("--bad", help="a version (or toolchain dir) where it gives the bad one")
    p.add_argument("--hw", help="backend (default: the one the test id carries)")
    p.add_argument("--golden-seed", type=int, default=0, help="the inputs' seed, as in the suite (default 0)")
    p.add_argument("--good-verdict", default="PASS", help="the verdict that counts as good (default PASS)")
    p.add_argument("--bad-verdict", help="the verdict that counts as bad (default: the bad end's)")
    p.add_argument("--match", metavar="REGEX", help="a bad step's message must match this too (else skipped)")
    p.add_argument("--pre", action="store_true", help="include pre-releases from the index")
    p.add_argument("--installer", default="auto", choices=envs.INSTALLERS,
                   help="what builds the environments: uv when installed (default), else pip")
    p.add_argument("--env-cache", type=Path, help="environment cache folder (default $ACCEL_BISECT_ENVS, "
                   "else ~/.cache/accel-regress/bisect-envs)")
    p.add_argument("--env-cache-bytes", type=int, help="size bound of that cache (default "
                   "$ACCEL_BISECT_ENV_BYTES, else 8 GiB)")
    p.add_argument("--fresh", action="store_true", help="forget this bisect's journal: rerun every step")
    p.add_argument("--step-timeout", type=float, default=1800.0, help="bound for one step's pytest run (s)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON")
    p.add_argument("--older-lineage", action="store_true",
                   help="when the good end is already bad, bisect the packages' older names too "
                        "(iree-compiler, iree-runtime before iree-base-*)")
    p.add_argument("--older-good", metavar="V", help="the older names' good end (default: the oldest release "
                   "they share on the index)")
    return p


def _older_argv(args, older: list[str], good: str, bad: str, json_file: Optional[Path]) -> list[str]:
    """The bisect command line for the same test over the packages' older names."""
    argv = [args.test, "--package", ",".join(older), "--good", good, "--bad", bad,
            "--golden-seed", str(args.golden_seed), "--good-verdict", args.good_verdict]
    for flag, value in (("--hw", args.hw), ("--bad-verdict", args.bad_verdict), ("--match", args.match),
                        ("--installer", args.installer), ("--env-cache", args.env_cache)):
        if value is not None:
            argv += [flag, str(value)]
    if args.pre:
        argv.append("--pre")
    return argv + (["--json", str(json_file)] if json_file else [])


def _sha256_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def toolchain_paths(folder: Path) -> tuple[list[Path], list[Path]]:
    """(Python package folders, executable folders) of a toolchain installed in ``folder``."""
    py = [p for p in (folder / "site", folder / "site-packages") if p.is_dir()]
    py += sorted(folder.glob("lib/python*/site-packages"))
    if not py and (any(folder.glob("*.dist-info")) or any(folder.glob("*/__init__.py"))):
        py.append(folder)
    return py, [p for p in (folder / "bin",) if p.is_dir()]


class UsageProblem(Exception):
    """A bad combination of arguments: the message, exit 2."""


@dataclass
class Subject:
    """What is bisected: the versions in order, and how a step gets its toolchain."""
    order: list[str]
    label: str
    packages: list[str] = field(default_factory=list)
    oldest: Optional[str] = None                    # the oldest release every package has on the index
    cache: Optional[envs.EnvCache] = None            # environments per version (packages)
    dirs: dict[str, Path] = field(default_factory=dict)   # or folders per version (--toolchain-dir)

    def key(self) -> dict:
        return {"packages": self.packages} if self.packages else \
            {"toolchain_dirs": [str(self.dirs[n]) for n in self.order]}


def subject_of(args) -> Subject:
    """The versions between the good and the bad end, from the index or the toolchain folders."""
    if args.package:
        packages = [p.strip() for p in args.package.split(",") if p.strip()]
        if not (args.good and args.bad):
            raise UsageProblem("--package needs --good and --bad versions")
        try:
            listed = {p: versions.available(p, pre=args.pre) for p in packages}
            order = versions.between(listed, args.good, args.bad)
            oldest = versions.oldest_common(listed)
        except versions.IndexLookupError as exc:
            raise UsageProblem(str(exc)) from None
        try:
            cache = envs.EnvCache(args.env_cache, args.env_cache_bytes, args.installer)
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
        return Subject(order, ",".join(packages), packages, oldest, cache)
    dirs = {}
    for d in args.toolchain_dir:
        if not d.is_dir():
            raise UsageProblem(f"--toolchain-dir {d}: no such folder")
        dirs[str(d)] = d.resolve()
    names = list(dirs)
    good, bad = args.good or names[0], args.bad or names[-1]
    if good not in dirs or bad not in dirs or names.index(good) >= names.index(bad):
        raise UsageProblem("--good and --bad must name two of the --toolchain-dir folders, the good one first")
    return Subject(names[names.index(good): names.index(bad) + 1], "toolchain dirs", dirs=dirs)


def question_of(args, hw: Optional[str], subject: Subject, cwd: Path) -> dict:
    """Everything a step's answer depends on: the journal's key."""
    # The suite's own switches (ACCEL_SATURN_SCAN, ACCEL_HW, ...) change what a step answers.
    switches = {k: v for k, v in sorted(os.environ.items()) if k.startswith("ACCEL_") and not k.startswith("ACCEL_BISECT")}
    return {"test": args.test, "hw": hw, "seed": args.golden_seed, **subject.key(), "env": switches,
            "test_file_sha256": _sha256_file(cwd / args.test.split("::")[0]), "python": sys.version.split()[0]}


class Bisection:
    """The steps of one bisection: each version's outcome (run, or read from the journal), what it
    counts as, and the lines printed about it."""

    def __init__(self, args, subject: Subject, journal: search.Journal, hw: Optional[str], cwd: Path, out=None):
        self.args, self.subject, self.journal, self.hw, self.cwd = args, subject, journal, hw, cwd
        self.out = out or sys.stdout
        self.bad_verdict = args.bad_verdict
        self.match = re.compile(args.match) if args.match else None
        self.outcomes: dict[str, step.Outcome] = {}
        self.ran = self.reused = self.skipped = self.steps = 0
        self.build_s = self.run_s = 0.0
        self.last_origin = "run"

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def outcome(self, version: str) -> step.Outcome:
        if version in self.outcomes:
            return self.outcomes[version]
        known = self.journal.get(version)
        if known is not None:
            o, origin = step.Outcome.from_json(known), "journal"
            self.reused += 1
        else:
            o, origin = self._run(version), "run"
            self.journal.record(version, o.to_json())
            self.ran += 1
            self.build_s += o.build_s
            self.run_s += o.seconds
        self.outcomes[version] = o
        self.steps += 1
        self.last_origin = origin
        return o

    def _run(self, version: str) -> step.Outcome:
        args, s = self.args, self.subject
        if s.cache is None:
            py, bins = toolchain_paths(s.dirs[version])
            return step.run_step(version, args.test, hw=self.hw, seed=args.golden_seed, python_path=py, bin_path=bins,
                                 cwd=self.cwd, timeout_s=args.step_timeout,
                                 extra_env={"ACCEL_TOOLCHAIN_DIR": str(s.dirs[version])})
        try:
            with s.cache.use({p: version for p in s.packages}) as env:
                o = step.run_step(version, args.test, hw=self.hw, seed=args.golden_seed, python_path=env.python_path,
                                  bin_path=env.bin_path, cwd=self.cwd, timeout_s=args.step_timeout)
                o.build_s, o.env_cached, o.notes = env.build_s, env.cached, env.notes
                return o
        except envs.BuildError as exc:
            return step.Outcome(version, step.BUILD_ERROR, str(exc))

    def classified(self, version: str) -> str:
        o = self.outcome(version)
        verdict = self.classify(o)
        self.report(o, verdict, self.steps, self.last_origin)
        if verdict == search.SKIP:
            self.skipped += 1
        return verdict
    def classify(self, o: step.Outcome) -> str:
        if o.verdict in step.NOT_A_VERDICT:
            return search.SKIP
        if o.verdict == self.args.good_verdict:
            return search.GOOD
        if o.verdict == self.bad_verdict and (self.match is None or self.match.search(o.message)):
            return search.BAD
        return search.SKIP

    def report(self, o: step.Outcome, verdict: str, n: int, origin: str) -> None:
        how = "from the journal" if origin == "journal" else \
            f"run {o.seconds:.1f} s" + (f", environment built in {o.build_s:.1f} s" if o.build_s and not o.env_cached
                                        else ", environment cached" if origin == "run" and o.env_cached else "")
        what = {search.GOOD: "good", search.BAD: "bad", search.SKIP: "skip"}[verdict]
        self.say(f"[{n}] {o.version}: {o.verdict} -> {what} ({how})")
        if o.message:
            self.say(f"      {o.first_line()}")
        for note in o.notes:
            self.say(f"      note: {note}")
        if verdict == search.SKIP:
            why = "its environment could not be built" if o.verdict == "BUILD_ERROR" else \
                f"neither {self.args.good_verdict} nor {self.bad_verdict}" + \
                (f" matching /{self.args.match}/" if self.match and o.verdict == self.bad_verdict else "")
            self.say(f"      skipped: {why}")



def search_range(b: Bisection, prog: str) -> tuple[Optional[dict], Optional[search.Found], Optional[dict]]:
    """The bisection itself: (result, what the search found, the older lineage offered or run);
    result None when the ends give no good and bad verdict (said why)."""
    args, order, label = b.args, b.subject.order, b.subject.label
    # The bad end first: its verdict is what "bad" means unless --bad-verdict says.
    bad_end = b.outcome(order[-1])
    if b.bad_verdict is None:
        b.bad_verdict = bad_end.verdict
    if b.classified(order[-1]) != search.BAD or bad_end.verdict == args.good_verdict:
        b.say(f"the bad end {order[-1]} gives {bad_end.verdict}, not a bad verdict: nothing to bisect")
        return None, None, None
    # The good end, or else the oldest version that gives a verdict at all: an old toolchain the
    # backend cannot drive (a host program format the harness does not read) is no answer. Those
    # are taken to be a prefix of the range and its end is found by binary search.
    lo, good_end = 0, b.classified(order[0])
    if good_end == search.SKIP:
        no, yes = 0, len(order) - 1
        while yes - no > 1:
            mid = (no + yes) // 2
            if b.classified(order[mid]) == search.SKIP:
                no = mid
            else:
                yes = mid
        lo = yes
        good_end = b.classify(b.outcomes[order[lo]])
        if lo < len(order) - 1:
            b.say(f"      the oldest version with a verdict: {order[lo]}")
    if lo == len(order) - 1:
        b.say(f"no version before the bad end {order[-1]} gives a verdict: nothing to bisect")
        return None, None, None
    older = (f" (before it no verdict: {', '.join(v for v in order[:lo] if v in b.outcomes)} tried, "
             f"the rest taken alike)") if lo else ""
    if good_end == search.BAD:
        b.say(f"\nthe good end {order[lo]} is already bad: no first bad version is known; the oldest version tried "
              f"is {order[lo]}" + (f" (the oldest {label} on the index)" if order[lo] == b.subject.oldest else "") + older)
        result = {"last_good": None, "oldest_tried": order[lo], "good_end_bad": True, "no_verdict": order[:lo]}
        return result, None, _older_lineage(args, b.subject.packages, prog, b.say)
    rest = order[lo:]
    b.say(f"bisecting {len(rest) - 2} versions between the ends: about "
          f"{math.ceil(math.log2(max(1, len(rest) - 1)))} steps")
    found = search.bisect(rest, b.classified)
    b.say("")
    b.say(f"last good: {found.last_good} ({b.outcomes[found.last_good].verdict})")
    b.say(f"first bad: {found.first_bad} ({b.outcomes[found.first_bad].verdict}: "
          f"{b.outcomes[found.first_bad].first_line(160)})")
    if found.skipped:
        b.say(f"untested (skipped) between them: {', '.join(found.skipped)}: the first bad is one of "
              f"{', '.join(found.skipped + [found.first_bad])}")
    return {"first_bad": found.first_bad, "last_good": found.last_good, "no_verdict": order[:lo]}, found, None


def upstream_ranges(b: Bisection, result: dict) -> list[upstream_range.Range]:
    """Each package's release range between the last good and the first bad (tags, compare link)."""
    s = b.subject
    if not (s.packages and s.cache is not None and result["last_good"]):
        return []
    good_o, bad_o = b.outcomes[result["last_good"]], b.outcomes[result["first_bad"]]
    ranges = []
    for p in s.packages:
        search_path = [s.cache.root / s.cache.key({q: result["first_bad"] for q in s.packages}) / "site",
                       *map(Path, sys.path)]
        r = upstream_range.Range(p, upstream_range.repository_url(p, search_path), result["last_good"],
                                 result["first_bad"], next(iter(good_o.commits().values()), None),
                                 next(iter(bad_o.commits().values()), None))
        ranges.append(r)
        for line in r.lines():
            b.say(f"upstream: {line}" if not line.startswith(" ") else line)
    return ranges


def main(argv=None, prog: str = "accel-regress bisect") -> int:
    args = parser(prog).parse_args(argv)
    start = time.perf_counter()
    cwd = Path.cwd()
    from accel_regress.core import registry
    hw = args.hw or step.backend_of(args.test, registry.names())
    try:
        subject = subject_of(args)
    except UsageProblem as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    question = question_of(args, hw, subject, cwd)
    qkey = hashlib.sha256(json.dumps(question, sort_keys=True).encode()).hexdigest()[:20]
    runs = Path(os.environ.get("ACCEL_BISECT_RUNS") or user_cache("bisect-runs"))
    journal = search.Journal(runs / f"{qkey}.json", question)
    if args.fresh:
        journal.path.unlink(missing_ok=True)

    b = Bisection(args, subject, journal, hw, cwd)
    order = subject.order
    b.say(f"bisect: {args.test}" + (f" on {hw}" if hw else "") + f", golden seed {args.golden_seed}")
    b.say(f"{subject.label}: {len(order)} versions from {order[0]} (good) to {order[-1]} (bad): {', '.join(order)}")
    if subject.cache is not None:
        b.say(f"environments: {subject.cache.installer}, cached in {subject.cache.root} "
              f"(at most {subject.cache.max_bytes >> 20} MiB)")
    b.say(f"journal: {journal.path}" + (" (resuming: " + str(len(journal.steps())) + " steps known)"
                                         if journal.steps() else ""))
    result, found, older_lineage = search_range(b, prog)
    if result is None:
        return 2
    elapsed = time.perf_counter() - start
    b.say(f"time: {elapsed:.1f} s ({b.ran} steps run: {b.build_s:.1f} s building environments, "
          f"{b.run_s:.1f} s running the test; {b.reused} from the journal; {b.skipped} skipped)")
    ranges = upstream_ranges(b, result)
    if args.json:
        doc = {"question": question, **result, "seconds": round(elapsed, 1), "versions": order,
               "versions_tried": [v for v in order if v in b.outcomes],
               **({"older_lineage": older_lineage} if older_lineage is not None else {}),
               "skipped": found.skipped if found else [],
               "steps": [b.outcomes[v].to_json() for v in order if v in b.outcomes],
               "upstream": [r.to_json() for r in ranges]}
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n")
    return 0



def _older_lineage(args, packages: list[str], prog: str, say: Callable[[str], None]) -> Optional[dict]:
    """Offer (or with --older-lineage run) the bisect over the packages' older names; what was
    offered or found, for the JSON (None when no package was renamed)."""
    older = versions.older_lineage(packages)
    if older is None:
        return None
    try:
        listed = {p: versions.available(p, pre=args.pre) for p in older}
        good = args.older_good or versions.oldest_common(listed)
        bad = versions.newest_common(listed)
    except versions.IndexLookupError as exc:
        say(f"older lineage {','.join(older)}: {exc}")
        return {"packages": older, "checked": False, "why": str(exc)}
    if good is None or bad is None:
        say(f"older lineage {','.join(older)}: no release they share on the index")
        return {"packages": older, "checked": False, "why": "no common release on the index"}
    argv = _older_argv(args, older, good, bad, None)
    command = " ".join(shlex.quote(a) for a in [*prog.split(), *argv])
    if not args.older_lineage:
        say(f"older lineage: {','.join(packages)} had older names on the index ({', '.join(older)}: "
              f"{good} .. {bad}); to date it further back:\n  {command}")
        return {"packages": older, "checked": False, "command": command}
    say(f"\nolder lineage: {command}")
    with tempfile.TemporaryDirectory(prefix="bisect-older-") as tmp:
        out = Path(tmp) / "older.json"
        rc = main(_older_argv(args, older, good, bad, out), prog=prog)
        found = json.loads(out.read_text()) if out.is_file() else None
    return {"packages": older, "checked": True, "command": command, "exit": rc, "result": found}
