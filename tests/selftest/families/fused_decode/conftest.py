import numpy as np
import pytest


@pytest.fixture
def judge():
    """judge(case, inputs, fault=None, backend="emu"): (the first divergent step in compare mode or
    None, whether the fused block is right end to end), both modes run on ``backend``."""
    from accel_regress.core import runner
    from accel_regress.families.fused_decode import golden as F
    from accel_regress.golden import census

    def judge(case, inputs, fault=None, backend="emu"):
        steps = runner.execute(runner.Job(backend, case, inputs, fault))
        fused = runner.execute(runner.Job(backend, F.as_program(case, "fused"), inputs, fault))
        first = F.first_divergent(F.compare_steps(case, inputs, steps))
        expected, tol = F.end_to_end_expected(case, inputs)
        e2e = census(np.asarray(fused[F.FUSED_OUTPUT], np.float64), expected, tol=tol)
        return (first.step.name if first else None), e2e.ok
    return judge
