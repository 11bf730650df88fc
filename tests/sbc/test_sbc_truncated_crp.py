"""SBC of the default samplers on the ``truncated_crp`` problem of tests/sbc (see there).

DP normal mixture with ``max_clusters = 3 < N = 12`` and ``alpha ~ Gamma(2, 1)``: the truncated
prior is renormalised by ``P(K <= L | alpha)``, so the concentration is calibrated.
Smoke: 20 simulations (default run); full: 200 simulations (``pytest -m slow``).
Passes when the chi-square uniformity test of every parameter's ranks has p > 0.01.
"""

import pytest

from sbc import run_problem


@pytest.mark.parametrize("size", ["smoke", pytest.param("full", marks=pytest.mark.slow)])
def test_calibrated(size):
    result = run_problem("truncated_crp", size)
    bad = {k: t.pvalue for k, t in result.tests().items() if not t.pvalue > 0.01}
    assert not bad, f"ranks not uniform: {bad}\n{result.summary()}"
