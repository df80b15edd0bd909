# The two commands of the README. Both run the set-up first (idempotent).
PYTHON ?= python3


.PHONY: setup suite test typecheck wheel-check gpu
setup:
	bash scripts/setup.sh

# The main job: the suite on every backend available here, summary table + reports/.
suite: setup
	$(PYTHON) -m pytest tests --ignore=tests/selftest

# Everything: the suite and the harness's own selftests (what CI runs).
test: setup
	$(PYTHON) -m ruff check .
	$(PYTHON) scripts/typecheck.py
	$(PYTHON) -m pytest tests

# mypy over the package from this checkout (no install needed); fails on an error not in
# scripts/mypy-baseline.txt. `$(PYTHON) scripts/typecheck.py --sync` after fixing some.
typecheck:
	$(PYTHON) scripts/typecheck.py

# The outside-team path: wheel + examples/outside-operator in a scratch venv, run outside this tree.
wheel-check: setup
	PYTHON=$(PYTHON) bash scripts/wheel_check.sh

# On a machine with a GPU: every family on every GPU backend present (iree-cuda, iree-hip, iree-vulkan
# on a real GPU, torch devices), at most 5 minutes, reports in reports/gpu/.
gpu:
	$(PYTHON) scripts/gpu_run.py
