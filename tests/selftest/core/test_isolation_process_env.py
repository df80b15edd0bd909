"""A backend's process settings (Backend.process_env: oneDNN's ONEDNN_MAX_CPU_ISA, read once per
process) give it a warm worker of its own: its runs never share a process with a backend whose
settings differ, each keeps its worker warm between the other's runs, and a session without
isolation, where every backend shares one process, says so instead of running under the wrong
settings. The fault file below reports the worker's pid and the setting it ran under."""
import os
import textwrap

import numpy as np
import pytest

from accel_regress.core import runner
from accel_regress.core.errors import Unsupported
from accel_regress.core.isolation import Bounds, Isolation
from accel_regress.core.runner import Job
from accel_regress.golden.case import Case

PARAMS = dict(M=16, K=64, N=64, tile_m=16, tile_k=64, tile_n=64, num_aie_columns=1,
              b_col_maj=False, c_col_maj=False, partition_N=1)
SETTING = "ACCEL_SELFTEST_ONCE_PER_PROCESS"

FAULT = textwrap.dedent(f'''
    import os
    import numpy as np

    def fault(case, outputs):
        seen = os.environ.get("{SETTING}", "")
        return {{**outputs, "pid": np.array([os.getpid()]), "setting": np.array([len(seen)])}}
''')


def _job(fault, process_env):
    a = np.ones((16, 64), np.float32)
    b = np.ones((64, 64), np.float32)
    return Job("emu", Case.make("gemm_partition_n", "once", PARAMS), {"A": a, "B": b}, fault, 60.0,
               process_env=process_env)


@pytest.fixture
def fault(tmp_path):
    (tmp_path / "env_fault.py").write_text(FAULT)
    return f"{tmp_path / 'env_fault.py'}:fault"


def test_each_set_of_process_settings_has_a_warm_worker_of_its_own(fault):
    iso = Isolation(Bounds(stack_wait_s=0.5))
    try:
        runs = [iso.run(_job(fault, env)) for env in ({}, {SETTING: "abc"}, {}, {SETTING: "abc"}, {SETTING: "de"})]
    finally:
        iso.close()
    pids = [int(r["pid"][0]) for r in runs]
    assert [int(r["setting"][0]) for r in runs] == [0, 3, 0, 3, 2]
    assert pids[0] == pids[2] and pids[1] == pids[3], pids         # warm: each kept between the other's runs
    assert len({pids[0], pids[1], pids[4]}) == 3, pids
    assert iso.stats["workers"] == 3


def test_without_isolation_a_backend_whose_settings_are_not_in_place_does_not_run(fault, monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    with pytest.raises(Unsupported, match=rf"needs {SETTING}=abc set before its first use in a process"):
        runner.invoke(_job(fault, {SETTING: "abc"}), None)
    monkeypatch.setenv(SETTING, "abc")          # exported for the whole process: it is in place
    assert int(runner.invoke(_job(fault, {SETTING: "abc"}), None)["setting"][0]) == 3
    assert os.environ[SETTING] == "abc"
