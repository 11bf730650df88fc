"""The compiled item sweep's helpers (pymc_crp.core.item_sweep)."""

import numpy as np
import pytest

from pymc_crp.core.item_sweep import numpy_sum


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 17, 127, 128, 129, 300, 1031, 5000])
def test_numpy_sum_has_numpy_bits(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        a = rng.standard_normal(n) * np.exp(5 * rng.standard_normal(n)) - 3.0
        assert numpy_sum(a) == a.sum()
