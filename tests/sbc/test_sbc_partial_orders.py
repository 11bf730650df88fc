"""SBC of the default samplers on the ``partial_orders`` problem of tests/sbc (see there).

Clustered partial-order model: rho, tau, p, concentration alpha and K.
Smoke: 20 simulations (default run); full: 200 simulations (``pytest -m slow``).
Passes when the chi-square uniformity test of every parameter's ranks has p > 0.01.

``rho`` is a known failure: its ranks are not uniform because the chain mixes slowly in
``rho`` (ESS of about 5 per 1000 draws; ranks follow the starting value), while the
``rho`` update alone, with the utilities fixed, matched quadrature of its exact conditional
(27,000 steps, two regimes). It is an expected failure until a joint ``rho``/utility move
lands (issue 5).
"""

import pytest

from sbc import run_problem

SLOW_MIXING = ("rho",)
_RESULTS = {}


def _result(size):
    if size not in _RESULTS:
        _RESULTS[size] = run_problem("partial_orders", size)
    return _RESULTS[size]


SIZES = ["smoke", pytest.param("full", marks=pytest.mark.slow)]


@pytest.mark.parametrize("size", SIZES)
def test_calibrated(size):
    result = _result(size)
    tests = {k: t for k, t in result.tests().items() if k not in SLOW_MIXING}
    bad = {k: t.pvalue for k, t in tests.items() if not t.pvalue > 0.01}
    assert not bad, f"ranks not uniform: {bad}\n{result.summary()}"


@pytest.mark.xfail(reason="slow mixing of rho in the clustered partial-order model", strict=False)
@pytest.mark.parametrize("size", SIZES)
def test_rho_calibrated(size):
    result = _result(size)
    test = result.tests()["rho"]
    assert test.pvalue > 0.01, f"rho ranks not uniform (p = {test.pvalue:.2g})\n{result.summary()}"
