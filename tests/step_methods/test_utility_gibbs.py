"""Exact coordinate Gibbs draws of partial-order utilities (pymc_crp.core.utility_gibbs).

* The interval-mixture draw against its CDF computed with scipy.stats (KS test), tails
  included; the Gaussian conditional against dense linear algebra.
* ``UtilityMetropolis`` with only coordinate Gibbs moves: the posterior over the partial
  orders of 3 items (K = 2) equals the prior order probabilities (2·10⁶ prior draws) times the
  exact list likelihood, as for the random-walk moves in test_utility_metropolis.py.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from test_utility_metropolis import (
    LISTS_K2,
    N_ITEMS,
    P_NOISE,
    RHO,
    prior_order_probabilities,
    within_mc_error,
)

import pymc_crp as pmc
from pymc_crp.core.utility_gibbs import (
    equicorrelated_conditional,
    interval_points,
    sample_interval_mixture,
)
from pymc_crp.posets import list_log_likelihood


def mixture_cdf(x, log_lik, low, high, mu, sd):
    """CDF of N(mu, sd²) restricted to the intervals with weights exp(log_lik)."""
    dist = stats.norm(mu, sd)
    mass = dist.cdf(high) - dist.cdf(low)
    w = np.exp(log_lik - log_lik.max()) * mass
    w /= w.sum()
    x = np.asarray(x)[:, None]
    inside = (np.clip(dist.cdf(x), dist.cdf(low), dist.cdf(high)) - dist.cdf(low)) / mass
    return (w * inside).sum(axis=1)


@pytest.mark.parametrize("mu", [0.0, 3.5, -6.0])
def test_interval_mixture_draws_follow_their_cdf(mu):
    rng = np.random.default_rng(1)
    low, high, _ = interval_points([-1.0, 0.2, 0.9, 2.5])
    log_lik = np.array([-1.0, 0.5, -3.0, 0.0, 1.0])
    draws = np.array(
        [
            sample_interval_mixture(log_lik, low, high, mu, 1.3, rng.random(), rng.random())[0]
            for _ in range(4000)
        ]
    )
    cdf = lambda x: mixture_cdf(x, log_lik, low, high, mu, 1.3)  # noqa: E731
    assert stats.kstest(draws, cdf).pvalue > 1e-3
    # Power: the same draws against the mixture that forgets the prior mass of each interval.
    wrong = lambda x: mixture_cdf(  # noqa: E731
        x, log_lik - np.log(stats.norm(mu, 1.3).cdf(high) - stats.norm(mu, 1.3).cdf(low)),
        low, high, mu, 1.3,
    )  # fmt: skip
    assert stats.kstest(draws, wrong).pvalue < 1e-3
    assert np.all(draws != np.array([-1.0, 0.2, 0.9, 2.5])[:, None])


def test_equicorrelated_conditional_matches_dense_algebra():
    rng = np.random.default_rng(0)
    rho, scale = 0.4, 1.7
    for n_dims in (1, 2, 4):
        cov = scale**2 * ((1 - rho) * np.eye(n_dims) + rho)
        mean, row = rng.normal(size=n_dims), rng.normal(size=n_dims)
        for k in range(n_dims):
            rest = [i for i in range(n_dims) if i != k]
            gain = cov[k, rest] @ np.linalg.inv(cov[np.ix_(rest, rest)]) if rest else np.zeros(0)
            want_mu = mean[k] + gain @ (row[rest] - mean[rest])
            want_var = cov[k, k] - (gain @ cov[rest, k] if rest else 0.0)
            mu, sd = equicorrelated_conditional(row, mean, rho, scale, k)
            assert np.isclose(mu, want_mu) and np.isclose(sd**2, want_var)


def test_coordinate_gibbs_order_posterior_is_exact():
    prior = prior_order_probabilities()
    weights = {}
    for code, prob in prior.items():
        adj = ((code >> np.arange(9)) & 1).astype(bool).reshape(3, 3)
        lik = np.exp(sum(list_log_likelihood(adj, y, P_NOISE) for y in LISTS_K2))
        weights[code] = prob * lik
    norm = sum(weights.values())
    with pm.Model():
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((N_ITEMS, 2)), rho=RHO)
        pmc.PartialOrderLists("y", u, None, P_NOISE, observed=LISTS_K2)
        step = pmc.UtilityMetropolis([u], item_sweeps=0, pcn=False, coordinate_items=-1)
        idata = pm.sample(
            2000,
            tune=100,
            chains=2,
            cores=1,
            random_seed=4,
            step=[step],
            progressbar=False,
            compute_convergence_checks=False,
        )
    u_draws = idata.posterior["U"].values
    adj = np.all(u_draws[..., :, None, :] > u_draws[..., None, :, :], axis=-1)
    codes = adj.reshape(*adj.shape[:2], -1) @ (1 << np.arange(9))
    for code, w in sorted(weights.items(), key=lambda kv: -kv[1])[:6]:
        ok, info = within_mc_error((codes == code).astype(float), w / norm)
        assert ok, (code, info)
    # The continuous utilities too: their prior is the posterior's only other factor, so the
    # mean of U given the order is that of the prior within the order's cone; check a moment.
    assert abs(float(u_draws.mean())) < 0.2


def test_coordinate_items_validated():
    lists = [[0, 1, 2], [2, 1, 0]]
    model = pmc.models.partial_order(lists, 3, n_dims=2, noise=0.1)
    with pytest.raises(TypeError, match="coordinate_items"):
        pmc.UtilityMetropolis([model["U"]], model=model, coordinate_items=1.0)
    with pytest.raises(ValueError, match="coordinate_items"):
        pmc.UtilityMetropolis([model["U"]], model=model, coordinate_items=-2)
    covariates = np.eye(3)[:, :1]
    model = pmc.models.partial_order(lists, 3, n_dims=2, noise=0.1, covariates=covariates)
    with pytest.raises(ValueError, match="coordinate_items needs"):
        pmc.UtilityMetropolis([model["U"]], model=model, coordinate_items=1)
