# The two commands of the README. Both run the set-up first (idempotent).
PYTHON ?= python3


.PHONY: setup suite test test-nightly typecheck docs wheel-check gpu
setup:
	bash scripts/setup.sh

# The main job: the suite on every backend available here, summary table + reports/.
suite: setup
	$(PYTHON) -m pytest tests --ignore=tests/selftest

# Everything (what CI runs), tier by tier with the time of each at the end: set-up, lint and
# types, the docs, the default run, the selftests (under xdist; the slow ones: make test-nightly), the wheel check.
test:
	$(PYTHON) scripts/test_tiers.py

# The nightly job: the same, with the selftests marked slow.
test-nightly:
	$(PYTHON) scripts/test_tiers.py --slow

# mypy over the package from this checkout (no install needed); fails on an error not in
# scripts/mypy-baseline.txt. `$(PYTHON) scripts/typecheck.py --sync` after fixing some.
typecheck:
	$(PYTHON) scripts/typecheck.py

# The manual (docs/, MyST Markdown) as HTML in docs/_build/html: warnings are errors (a link or a
# reference that does not resolve, a page in no toctree); -E reads every page again, so a warning of
# a page left unchanged since the last build still fails it. No network (no intersphinx).
docs:
	$(PYTHON) -m sphinx -W --keep-going -E -q -b html docs docs/_build/html

# The outside-team path: wheel + examples/outside-operator in a scratch venv, run outside this tree.
wheel-check: setup
	PYTHON=$(PYTHON) bash scripts/wheel_check.sh

# On a machine with a GPU: every family on every GPU backend present (iree-cuda, iree-hip, iree-vulkan
# on a real GPU, torch devices), at most 5 minutes, reports in reports/gpu/.
gpu:
	$(PYTHON) scripts/gpu_run.py
