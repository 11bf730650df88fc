"""SBC of the default samplers on the ``pitman_yor`` problem of tests/sbc (see there).

Pitman-Yor normal mixture: concentration alpha, discount d and number of clusters K.
Smoke: 20 simulations (default run); full: 200 simulations (``pytest -m slow``).
Passes when the chi-square uniformity test of every parameter's ranks has p > 0.01.
"""

import pytest

from sbc import run_problem


@pytest.mark.parametrize("size", ["smoke", pytest.param("full", marks=pytest.mark.slow)])
def test_calibrated(size):
    result = run_problem("pitman_yor", size)
    bad = {k: t.pvalue for k, t in result.tests().items() if not t.pvalue > 0.01}
    assert not bad, f"ranks not uniform: {bad}\n{result.summary()}"
