"""The concentration integrated out (core): ``log G(K)`` and the draws of ``θ | K`` against
quadrature of the EPPF (tests/oracles.py; independent of the package)."""

import math
import warnings

import numpy as np
import pytest
from oracles import eppf, mixed_over_parameter, set_partitions
from scipy import integrate, optimize, stats

from pymc_crp.core.integrated_concentration import IntegratedConcentration

SHAPE, RATE = 2.0, 1.5


def gamma_pdf(theta, shape=SHAPE, rate=RATE):
    return math.exp(
        shape * math.log(rate) + (shape - 1) * math.log(theta) - rate * theta - math.lgamma(shape)
    )


def log_gamma_prior(theta):
    return stats.gamma.logpdf(theta, SHAPE, scale=1.0 / RATE)


def block_factor(sizes, d):
    """``∏_b (1 - d)_{n_b - 1}``: the part of the EPPF that does not involve ``θ``."""
    out = 1.0
    for s in sizes:
        for i in range(1, s):
            out *= i - d
    return out


def oracle_log_g(n, n_slots, d, k):
    """``log G(K)`` from one partition with ``K`` blocks: ``∫ π EPPF / P(K <= L) dθ`` divided by
    the block factor."""
    partitions = list(set_partitions(n))
    sizes = [len(b) for b in next(bl for bl in partitions if len(bl) == k)]

    def at_most(theta):
        return sum(eppf([len(b) for b in bl], theta, d) for bl in partitions if len(bl) <= n_slots)

    value = mixed_over_parameter(lambda t: eppf(sizes, t, d) / at_most(t), gamma_pdf)
    return math.log(value) - math.log(block_factor(sizes, d))


@pytest.mark.parametrize(("n", "n_slots", "d"), [(6, 6, 0.0), (6, 3, 0.4), (7, 10, 0.25)])
def test_log_marginals_match_quadrature(n, n_slots, d):
    core = IntegratedConcentration(n, n_slots, d, log_gamma_prior)
    top = min(n, n_slots)
    assert core.log_marginals.shape == (top,)
    for k in range(1, top + 1):
        assert core.log_marginals[k - 1] == pytest.approx(oracle_log_g(n, n_slots, d, k), abs=1e-9)
    weights = core.new_cluster_weights()
    assert weights.shape == (n_slots + 1,)
    np.testing.assert_allclose(weights[1:top], np.exp(np.diff(core.log_marginals)), rtol=1e-12)
    assert np.all(weights > 0)  # placeholders where no cluster can be opened are positive


@pytest.mark.parametrize(("n", "n_slots", "d", "k"), [(12, 20, 0.0, 3), (30, 6, 0.3, 6)])
def test_draws_follow_the_conditional(n, n_slots, d, k):
    """Kolmogorov--Smirnov against the CDF of ``π(θ) h_K(θ)`` by quadrature."""
    log_w = np.full(n_slots + 1, -np.inf)  # W(m, k; d) for m items, k = 0..L: P(K <= L)
    log_w[1] = 0.0
    for m in range(1, n):
        join = np.array(
            [math.log(m - j * d) if m - j * d > 0 else -np.inf for j in range(n_slots + 1)]
        )
        log_w = np.logaddexp(np.r_[-np.inf, log_w[:-1]], join + log_w)

    def log_h(theta):
        rising = [sum(math.log(theta + i * d) for i in range(1, j)) for j in range(n_slots + 1)]
        base = math.lgamma(theta + 1) - math.lgamma(theta + n)
        log_p = (
            float(np.logaddexp.reduce(np.array(rising[1:]) + log_w[1:])) + base
            if n_slots < n
            else 0.0
        )
        return rising[k] + base - log_p

    density = lambda t: gamma_pdf(t) * math.exp(log_h(t))  # noqa: E731
    total = integrate.quad(density, 0, np.inf, epsabs=0, epsrel=1e-11, limit=400)[0]
    cdf = np.vectorize(
        lambda x: integrate.quad(density, 0, x, epsabs=0, epsrel=1e-10, limit=400)[0] / total
    )
    core = IntegratedConcentration(n, n_slots, d, log_gamma_prior)
    rng = np.random.default_rng(42)
    draws = np.array([core.draw(k, rng) for _ in range(3000)])
    assert stats.kstest(draws, cdf).pvalue > 1e-3
    mean = integrate.quad(lambda t: t * density(t), 0, np.inf, epsabs=0, epsrel=1e-11)[0] / total
    assert core.posterior_mean(k) == pytest.approx(mean, rel=1e-6)
    assert abs(draws.mean() - mean) < 4.5 * draws.std() / np.sqrt(draws.size)


def log_g_by_quadrature(n, n_slots, d, k, log_prior):
    """``log G(K)`` by adaptive quadrature over ``x = log θ``, every product summed term by
    term (``math.fsum``) and ``P(K_N <= L | θ)`` from the recursion of the block counts."""
    log_w = [0.0] + [-math.inf] * (n_slots - 1)  # W(m, k; d), k = 1..L, for m = 1
    for m in range(1, n):
        log_w = [
            np.logaddexp(log_w[j - 1] if j else -math.inf, math.log(m - j * d - d) + log_w[j])
            if m - j * d - d > 0
            else (log_w[j - 1] if j else -math.inf)
            for j in range(n_slots)
        ]

    def log_f(x):
        theta = math.exp(x)
        rising = [0.0]
        for j in range(1, n_slots):
            rising.append(rising[-1] + math.log(theta + j * d))
        falling = math.fsum(math.log(theta + i) for i in range(1, n))
        out = log_prior(theta) + x + rising[k - 1] - falling
        if n_slots < n:
            out -= float(np.logaddexp.reduce(np.add(rising, log_w))) - falling
        return out

    xs = np.linspace(-700, 700, 2801)
    with np.errstate(over="ignore"):
        coarse = xs[np.argmax([log_f(x) for x in xs])]
        peak_x = optimize.minimize_scalar(
            lambda x: -log_f(x), bounds=(coarse - 0.5, coarse + 0.5), method="bounded",
            options={"xatol": 1e-10},
        ).x  # fmt: skip
    peak = log_f(peak_x)
    offsets = np.array([0.001, 0.01, 0.1, 1.0, 10.0, 100.0])
    edges = np.unique(
        np.clip(np.r_[-700, peak_x - offsets, peak_x, peak_x + offsets, 700], -700, 700)
    )
    with np.errstate(over="ignore"):
        value = math.fsum(
            integrate.quad(lambda x: math.exp(log_f(x) - peak), a, b, epsabs=0, epsrel=1e-12,
                           limit=500)[0]
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        )  # fmt: skip
    return math.log(value) + peak


HEAVY_OR_NARROW = {
    "half-Cauchy(1)": lambda t: stats.halfcauchy.logpdf(t),
    "inverse gamma(2, 2)": lambda t: stats.invgamma.logpdf(t, 2, scale=2),
    "gamma(0.1, 0.1)": lambda t: stats.gamma.logpdf(t, 0.1, scale=10),
    "log-normal(log 2, 0.004)": lambda t: stats.lognorm.logpdf(t, 0.004, scale=2.0),
}


@pytest.mark.parametrize("name", list(HEAVY_OR_NARROW))
@pytest.mark.parametrize(("n_slots", "d"), [(12, 0.0), (60, 0.25)])
def test_heavy_tailed_and_narrow_priors_match_quadrature(name, n_slots, d):
    """Tails that reach far in ``log θ`` (``θ^{-2}``, ``θ^{-3} e^{-2/θ}``, ``θ^{-0.9}`` at 0)
    and a prior with standard deviation 0.004 in ``log θ``: the grid adapts to both."""
    n, log_prior = 60, HEAVY_OR_NARROW[name]
    core = IntegratedConcentration(n, n_slots, d, log_prior)
    for k in (1, n_slots // 2, n_slots):
        expected = log_g_by_quadrature(n, n_slots, d, k, log_prior)
        assert core.log_marginals[k - 1] == pytest.approx(expected, abs=1e-7)
    rng = np.random.default_rng(3)
    draws = np.array([core.draw(n_slots // 2, rng) for _ in range(400)])
    assert np.all(np.isfinite(draws)) and np.all(draws > 0)


def test_nearly_improper_and_bounded_priors_are_refused():
    """``π(θ) ∝ 1/θ`` on ``(0, 1)``: ``log θ | K = 1`` is flat towards ``θ → 0``; a uniform
    prior on ``(1, 5)`` vanishes where the posterior has mass. A proper gamma prior whose lower
    tail in ``log θ`` falls only at rate 0.05 is accepted (what lies below ``θ = e^{-700}`` is
    ``e^{-32}`` of the peak)."""
    with pytest.raises(ValueError, match=r"lower \(θ → 0\) tail"):
        IntegratedConcentration(20, 20, 0.0, lambda t: np.where(t < 1, -np.log(t), -np.inf))
    with pytest.raises(ValueError, match=r"positive on \(0, ∞\)"):
        IntegratedConcentration(20, 20, 0.0, lambda t: stats.uniform.logpdf(t, 1, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warnings either
        core = IntegratedConcentration(300, 50, 0.0, lambda t: stats.gamma.logpdf(t, 0.05))
    assert np.all(np.isfinite(core.log_marginals))


def test_bad_input():
    with pytest.raises(ValueError, match="discount"):
        IntegratedConcentration(5, 5, 1.0, log_gamma_prior)
    with pytest.raises(ValueError, match="positive"):
        IntegratedConcentration(0, 5, 0.0, log_gamma_prior)
    with pytest.raises(ValueError, match="no mass"):
        IntegratedConcentration(5, 5, 0.0, lambda t: np.full(np.shape(t), -np.inf))
    core = IntegratedConcentration(5, 3, 0.0, log_gamma_prior)
    with pytest.raises(ValueError, match="k must lie"):
        core.draw(4, np.random.default_rng(0))
