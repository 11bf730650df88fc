"""The order-keeping shift of item-covariate effects (``pymc_crp/core/gumbel_shift.py``),
against closed forms computed here with SciPy."""

import numpy as np
from scipy import special, stats

from pymc_crp.core.gumbel_shift import gumbel_scores, log_gumbel_slope, shift_gumbel_scores


def test_scores_are_the_gumbel_quantiles_of_the_normal_cdf():
    u = np.linspace(-6.0, 4.0, 21)  # (above, the reference's Φ(u) rounds towards 1)
    np.testing.assert_allclose(gumbel_scores(u), stats.gumbel_r.ppf(stats.norm.cdf(u)), rtol=1e-9)


def test_shift_keeps_the_scores_plus_the_shift_and_is_undone_by_its_negative():
    rng = np.random.default_rng(0)
    u = rng.uniform(-7.0, 7.0, size=(4, 5, 2))
    shift = rng.uniform(-4.0, 4.0, size=(5, 1))
    moved, _ = shift_gumbel_scores(u, shift)
    np.testing.assert_allclose(gumbel_scores(moved), gumbel_scores(u) - shift, atol=1e-9)
    back, _ = shift_gumbel_scores(moved, -shift)
    np.testing.assert_allclose(back, u, atol=1e-8)
    # every eta = g(u) + x beta is kept when beta moves by the shift: so is every order
    eta = gumbel_scores(u) + 0.3
    assert np.array_equal(
        np.argsort(eta, axis=1), np.argsort(gumbel_scores(moved) + 0.3 + shift, axis=1)
    )


def test_log_jacobian_matches_finite_differences():
    rng = np.random.default_rng(1)
    u = rng.uniform(-5.0, 5.0, size=12)
    shift = rng.uniform(-3.0, 3.0, size=12)
    _, log_det = shift_gumbel_scores(u, shift)
    h = 1e-6
    derivative = (shift_gumbel_scores(u + h, shift)[0] - shift_gumbel_scores(u - h, shift)[0]) / (
        2 * h
    )
    assert abs(log_det - np.log(derivative).sum()) < 1e-5
    # the slope itself: g'(u) = φ(u) / (Φ(u) (-log Φ(u)))
    want = stats.norm.pdf(u) / (stats.norm.cdf(u) * -np.log(stats.norm.cdf(u)))
    np.testing.assert_allclose(np.exp(log_gumbel_slope(u)), want, rtol=1e-9)
    assert np.isfinite(log_gumbel_slope(np.array([-30.0, 30.0]))).all()  # both tails
    assert np.isfinite(special.log_ndtr(30.0))


def test_a_shift_beyond_the_float_range_gives_minus_infinity():
    _, log_det = shift_gumbel_scores(np.array([0.0, 1.0]), np.array([0.0, -1e6]))
    assert log_det == -np.inf
