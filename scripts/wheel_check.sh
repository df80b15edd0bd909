#!/usr/bin/env bash
# The outside-team path, end to end (issue 14): build the accel-regress wheel, install it and the
# example operator package (examples/outside-operator) into a scratch virtual environment, copy the
# example out of this tree and run its tests there on emu and iree-cpu (they pass), with its
# documented fault (they fail), and one qemu-rvv case (the wheel's C harness).
#
# The venv sees the machine's site-packages (--system-site-packages) and pip runs with --no-index,
# so torch 2.13.0 and IREE come from what scripts/setup.sh installed: nothing is downloaded.
# usage: bash scripts/wheel_check.sh [WORKDIR]     (default: a fresh temporary folder, removed after)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
if [ $# -gt 0 ]; then work=$1; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
export ACCEL_IREE_CACHE=${ACCEL_IREE_CACHE:-$repo/.cache/iree}
step() { echo "wheel_check: $*"; }
fail() { echo "wheel_check: FAILED: $*" >&2; exit 1; }

step "building the wheels in $work"
mkdir -p "$work/src" "$work/dist"
cp -r "$repo/pyproject.toml" "$repo/setup.py" "$repo/README.md" "$repo/LICENSE" "$repo/hardware" "$repo/golden" "$repo/families" "$work/src/"
cp -r "$repo/examples/outside-operator" "$work/example-src"
find "$work/src" "$work/example-src" -name __pycache__ -prune -exec rm -rf {} +
"$PYTHON" -m pip wheel -q --no-deps --no-build-isolation -w "$work/dist" "$work/src" "$work/example-src"

step "installing them into a scratch venv"
# --without-pip: the venv's own (older) pip and setuptools would hide the machine's, which torch requires.
"$PYTHON" -m venv --system-site-packages --without-pip "$work/venv"
py="$work/venv/bin/python"
cd "$work"    # out of the tree: nothing may be imported from it
# --ignore-installed: the machine's editable install of this checkout must not stand in for the wheel.
"$py" -m pip install -q --no-index --no-deps --ignore-installed "$work"/dist/accel_regress-*.whl
"$py" -m pip install -q --no-index --find-links "$work/dist" accel-regress gelu-ops
"$py" - "$repo" <<'EOF' || fail "the venv imports accel-regress or the example from the source tree"
import sys, accel_regress, gelu_ops
for m in (accel_regress, gelu_ops):
    if m.__file__.startswith(sys.argv[1]) or "site-packages" not in m.__file__:
        sys.exit(f"{m.__name__} comes from {m.__file__}")
EOF
"$work/venv/bin/accel-regress" > "$work/listing.txt" || fail "python -m accel_regress"
grep -q "gelu-toy = gelu_ops.toy_backend:ToyBackend  \[gelu-ops 0.1.0 (installed" "$work/listing.txt" \
  || fail "python -m accel_regress does not list the example's backend with its source"

step "running the example's tests outside this tree ($work/gelu-ops)"
mkdir -p "$work/gelu-ops"
cp -r "$repo/examples/outside-operator/tests" "$repo/examples/outside-operator/pyproject.toml" "$work/gelu-ops/"
cd gelu-ops
"$py" -m pytest -q -p no:cacheprovider --hw emu,iree-cpu,gelu-toy > clean.txt 2>&1 \
  || { tail -30 clean.txt; fail "the example fails clean"; }
"$py" - <<'EOF' || fail "the clean run's results"
import json, sys
cases = json.load(open("reports/results.json"))["cases"]
got = sorted((c["backend"], c["verdict"]) for c in cases)
want = sorted((b, "PASS") for b in ("emu", "iree-cpu", "gelu-toy") for _ in range(3))
if got != want:
    sys.exit(f"clean run: {got}")
EOF
step "clean: 9 cases PASS (emu, iree-cpu, gelu-toy)"

set +e
"$py" -m pytest -q -p no:cacheprovider --hw emu,iree-cpu --inject-fault gelu-tanh-approx > fault.txt 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || { tail -30 fault.txt; fail "with the fault injected pytest exited $rc, expected 1"; }
"$py" - <<'EOF' || fail "the fault run's results"
import json, sys
cases = json.load(open("reports/results.json"))["cases"]
bad = [(c["backend"], c["test"], c["verdict"]) for c in cases if c["verdict"] != "FAIL"]
if len(cases) != 6 or bad:
    sys.exit(f"fault run: {len(cases)} cases, not failed: {bad}")
EOF
step "fault gelu-tanh-approx: 6 of 6 cases FAIL"

"$py" -m pytest -q -p no:cacheprovider --hw qemu-rvv -k N64 > qemu.txt 2>&1 \
  || { tail -30 qemu.txt; fail "the qemu-rvv case"; }
"$py" - <<'EOF' || fail "the qemu-rvv case's result"
import json, sys
cases = json.load(open("reports/results.json"))["cases"]
if [c["verdict"] for c in cases] != ["PASS"]:
    sys.exit(f"qemu-rvv: {[(c['test'], c['verdict'], c['message'][:300]) for c in cases]}")
EOF
step "qemu-rvv: test_gelu[qemu-rvv-N64] PASS from the wheel install"
step "OK"
