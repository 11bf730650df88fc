"""slice_slots: the stepping-out limit keeps the target when it binds.

Oracle: the draws start from the target itself, ``log X`` with ``X ~ Gamma(2, 1)`` (density
``e^{2y - e^y}`` on the log scale, skewed), in 20,000 independent coordinates; an exact update
keeps that distribution after any number of updates. A width of 0.05 against a slice several
units long makes the limit of 3 stepping-out steps bind in nearly every update. With a fixed
limit at each end (the implementation before the random split) the same checks gave
Kolmogorov--Smirnov p-values of 2e-35 (width 0.05) and 8e-67 (width 0.2).
"""

import numpy as np
import pytest
from scipy import stats

from pymc_crp.step_methods.slot_slice import slice_slots


def log_gamma2_on_log_scale(y):
    return 2.0 * y - np.exp(y)


@pytest.mark.parametrize("width, max_steps_out", [(0.05, 3), (0.2, 3), (1.0, 100)])
def test_stepping_out_limit_keeps_the_target(width, max_steps_out):
    rng = np.random.default_rng(0)
    n = 20_000
    x = np.log(rng.gamma(2.0, size=n))
    active = np.ones(n, dtype=bool)
    start = x.copy()
    for _ in range(100):
        x, _ = slice_slots(log_gamma2_on_log_scale, x, active, width, rng, max_steps_out)
    assert np.mean(x != start) > 0.99  # the chains moved
    assert stats.kstest(np.exp(x), stats.gamma(2.0).cdf).pvalue > 1e-3


def test_inactive_coordinates_are_kept():
    rng = np.random.default_rng(1)
    x0 = np.array([0.3, -0.2, 1.0])
    active = np.array([True, False, True])
    x1, evaluations = slice_slots(log_gamma2_on_log_scale, x0, active, 0.5, rng, 4)
    assert x1[1] == x0[1] and evaluations >= 2
