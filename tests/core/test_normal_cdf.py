"""The compiled normal CDF helpers (pymc_crp.core.normal_cdf) against scipy.special."""

import math

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr, ndtri
from scipy.stats import norm, truncnorm

import pymc_crp.core.normal_cdf as nc


def test_cdf_and_log_cdf_match_scipy_in_both_tails():
    x = np.linspace(-60.0, 40.0, 4001)
    for v in x:
        if ndtr(v) > 1e-300:
            assert abs(nc.ndtr(v) - ndtr(v)) <= 1e-13 * ndtr(v)
        assert abs(nc.log_ndtr(v) - log_ndtr(v)) <= 1e-12 * abs(log_ndtr(v)) + 1e-300
    assert nc.log_ndtr(-math.inf) == -math.inf and nc.log_ndtr(math.inf) == 0.0


def test_inverse_cdf_matches_scipy_from_denormals_to_one():
    q = np.concatenate(
        [
            10.0 ** -np.linspace(0.4, 320, 800),
            np.linspace(0.01, 0.99, 99),
            1 - 10.0 ** -np.linspace(1, 16, 60),
        ]
    )
    for v in q:
        assert abs(nc.ndtri(v) - ndtri(v)) <= 1e-12 * max(abs(ndtri(v)), 1e-3), v
    assert nc.ndtri(0.0) == -math.inf and nc.ndtri(1.0) == math.inf and nc.ndtri(0.5) == 0.0
    assert math.isnan(nc.ndtri(-0.1)) and math.isnan(nc.ndtri(1.5))


def test_interval_mass_and_truncated_draw_match_scipy():
    rng = np.random.default_rng(3)
    for _ in range(3000):
        low, high = np.sort(rng.normal(0.0, 6.0, 2))
        low = -math.inf if rng.random() < 0.2 else low
        high = math.inf if rng.random() < 0.2 else high
        mu, sd, u = rng.normal(0.0, 2.0), rng.exponential(1.0) + 0.05, rng.random()
        a, b = (low - mu) / sd, (high - mu) / sd
        hi, lo = (log_ndtr(b), log_ndtr(a)) if a <= 0 else (log_ndtr(-a), log_ndtr(-b))
        mass = hi + np.log1p(-np.exp(lo - hi))  # log(Φ(b) - Φ(a)) in the far tail
        assert abs(nc.log_interval_mass(low, high, mu, sd) - mass) <= 1e-10 * (1 + abs(mass))
        x = nc.truncated_normal_draw(low, high, mu, sd, u)
        assert low < x < high
        if max(a, -b) < 30:  # scipy's inverse CDF keeps its digits there
            level = 1.0 - u if a > 0 else u  # above the mean the draw is mirrored
            assert abs(x - (mu + sd * truncnorm.ppf(level, a, b))) <= 1e-7 * (1 + abs(x))


def test_normal_log_pdf_matches_scipy():
    rng = np.random.default_rng(4)
    for x, mu, sd in zip(
        rng.normal(0, 20, 200), rng.normal(0, 3, 200), rng.exponential(1, 200) + 0.01, strict=True
    ):
        assert nc.normal_log_pdf(x, mu, sd) == pytest.approx(norm.logpdf(x, mu, sd), rel=1e-13)
