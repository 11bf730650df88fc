"""Concentration updates against 1-D quadrature of p(θ | K, N) and p(d | c)."""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from oracles import eppf
from scipy import integrate, optimize, special

import pymc_crp as pmc
from pymc_crp.step_methods.concentration import escobar_west_draw

LABELS = np.array([0, 0, 1, 1, 1, 2, 0, 3, 3, 4, 0, 0])  # N = 12, K = 5
SHAPE, RATE = 2.0, 1.0


class Quadrature:
    """Moments and quantiles of an unnormalised 1-D density on (lower, upper)."""

    def __init__(self, log_density, lower, upper):
        grid_max = optimize.minimize_scalar(
            lambda t: -log_density(t), bounds=(lower, upper), method="bounded"
        ).x
        shift = log_density(grid_max)
        self.density = lambda t: math.exp(log_density(t) - shift)
        self.lower, self.upper = lower, upper
        self.norm = integrate.quad(self.density, lower, upper, limit=200)[0]
        self.mean = integrate.quad(lambda t: t * self.density(t), lower, upper, limit=200)[0]
        self.mean /= self.norm

    def cdf(self, x):
        return integrate.quad(self.density, self.lower, x, limit=200)[0] / self.norm

    def quantile(self, q):
        return optimize.brentq(lambda x: self.cdf(x) - q, self.lower + 1e-12, self.upper - 1e-9)


def dp_concentration_posterior(labels, shape, rate):
    n, k = labels.size, np.unique(labels).size

    def log_density(t):
        return (
            k * math.log(t)
            + special.gammaln(t)
            - special.gammaln(t + n)
            + (shape - 1) * math.log(t)
            - rate * t
        )

    return Quadrature(log_density, 0.0, 200.0)


@pytest.fixture(scope="module")
def dp_model():
    with pm.Model() as model:
        theta = pm.Gamma("theta", SHAPE, RATE)
        pmc.CRP("z", theta, max_clusters=LABELS.size, observed=LABELS)
    return model


@pytest.fixture(scope="module")
def dp_exact():
    return dp_concentration_posterior(LABELS, SHAPE, RATE)


def assert_matches_quadrature(draws, exact, probs=(0.1, 0.5, 0.9)):
    """Mean and quantiles within 4.5 Monte Carlo standard errors (ArviZ MCSE)."""
    mcse = az.mcse(draws, method="mean")
    assert abs(draws.mean() - exact.mean) < 4.5 * mcse, (draws.mean(), exact.mean, mcse)
    for q in probs:
        mcse_q = az.mcse(draws, method="quantile", prob=q)
        est = np.quantile(draws, q)
        assert abs(est - exact.quantile(q)) < 4.5 * mcse_q + 1e-3, (q, est, exact.quantile(q))


def sample_theta(model, step_factory, seed, draws):
    with model:
        step = step_factory(model)
        idata = pm.sample(
            draws,
            tune=500,
            chains=2,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return idata.posterior["theta"].values


STEPS = {
    "auto": lambda m: None,
    "nuts": lambda m: pm.NUTS([m["theta"]]),
    "gibbs": lambda m: pmc.ConcentrationGibbs([m["theta"]]),
    "metropolis-symmetric": lambda m: pmc.ConcentrationMetropolis(
        [m["theta"]], proposal="symmetric", scale=1.0
    ),
    "metropolis-scaled": lambda m: pmc.ConcentrationMetropolis(
        [m["theta"]], proposal="scaled", scale=0.5
    ),
    "metropolis-transformed": lambda m: pmc.ConcentrationMetropolis(
        [m["theta"]], proposal="transformed", scale=0.7
    ),
}


@pytest.mark.parametrize("step_name", list(STEPS))
def test_concentration_posterior_matches_quadrature(dp_model, dp_exact, step_name):
    # Enough draws that a missing Hastings factor (bias 0.1) or wrong E&W odds are detected.
    n_draws = 3000 if step_name == "nuts" else 25_000
    draws = sample_theta(dp_model, STEPS[step_name], seed=3, draws=n_draws)
    assert_matches_quadrature(draws, dp_exact)


def test_concentration_gibbs_is_assigned_automatically(dp_model):
    with dp_model:
        step = pm.sampling.mcmc.assign_step_methods(dp_model)[1]
    assert pmc.ConcentrationGibbs in step


def test_gibbs_not_assigned_when_it_does_not_apply():
    labels = np.array([0, 1, 1, 2])
    with pm.Model() as shared_child:  # theta has a second child
        theta = pm.Gamma("theta", 2.0, 1.0)
        pmc.CRP("z", theta, max_clusters=4, observed=labels)
        pm.Poisson("count", theta, observed=3)
    with pm.Model() as with_discount:
        theta = pm.Gamma("theta", 2.0, 1.0)
        pmc.CRP("z", theta, 0.3, max_clusters=4, observed=labels)
    with pm.Model() as lognormal_prior:
        theta = pm.LogNormal("theta", 0.0, 1.0)
        pmc.CRP("z", theta, max_clusters=4, observed=labels)
    for model in (shared_child, with_discount, lognormal_prior):
        _, selected = pm.sampling.mcmc.assign_step_methods(model)
        assert pmc.ConcentrationGibbs not in selected
        assert pm.NUTS in selected
        with pytest.raises(ValueError, match="ConcentrationGibbs needs"):
            pmc.ConcentrationGibbs([model["theta"]], model=model)


def test_escobar_west_kernel_leaves_posterior_invariant():
    """Start from exact posterior draws (inverse CDF); one kernel step keeps the law."""
    from scipy import stats

    rng = np.random.default_rng(0)
    exact = dp_concentration_posterior(LABELS, SHAPE, RATE)
    grid = np.linspace(1e-4, 30, 20_001)
    cdf = np.cumsum([exact.density(t) for t in grid])
    cdf /= cdf[-1]
    # 500k draws: SE 0.0017, so a 0.011 bias (odds a+K instead of a+K-1) is 6.5 SE.
    start = np.interp(rng.random(500_000), cdf, grid)
    moved = np.array([escobar_west_draw(t, 5, LABELS.size, SHAPE, RATE, rng) for t in start])
    se = moved.std() / math.sqrt(moved.size)
    assert abs(moved.mean() - exact.mean) < 4.5 * se
    assert stats.ks_2samp(start, moved).pvalue > 1e-3


@pytest.mark.parametrize("proposal", ["symmetric", "transformed"])
def test_metropolis_on_discount_matches_quadrature(proposal):
    """ConcentrationMetropolis on a Pitman--Yor discount (fixed θ) against quadrature."""
    labels = np.array([0, 0, 0, 1, 2, 3, 3, 4, 5, 6])
    sizes = np.bincount(labels)
    theta = 1.0

    def log_density(d):  # Beta(1, 1) prior
        return math.log(eppf(list(sizes), theta, d))

    exact = Quadrature(log_density, 0.0, 1.0 - 1e-9)
    with pm.Model() as model:
        d = pm.Uniform("d", 0.0, 1.0)
        pmc.CRP("z", theta, d, max_clusters=labels.size, observed=labels)
        idata = pm.sample(
            4000,
            tune=500,
            chains=2,
            cores=1,
            step=pmc.ConcentrationMetropolis([d], proposal=proposal, scale=0.2),
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert_matches_quadrature(idata.posterior["d"].values, exact)
    del model


def test_metropolis_invalid_arguments(dp_model):
    with pytest.raises(ValueError, match="proposal"):
        pmc.ConcentrationMetropolis([dp_model["theta"]], proposal="cauchy", model=dp_model)
    with pytest.raises(ValueError, match="scale"):
        pmc.ConcentrationMetropolis([dp_model["theta"]], scale=-1.0, model=dp_model)


def test_gamma_concentration_with_random_discount_is_not_given_escobar_west():
    """E&W needs d = 0: with a random discount the Gamma concentration gets another step."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        discount = pm.Uniform("discount", 0.0, 0.8)
        pmc.CRP("z", alpha, discount, max_clusters=4, n=5, observed=np.array([0, 0, 1, 2, 2]))
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    alpha_value = model.rvs_to_values[alpha]
    owners = [step for step, value_vars in selected.items() if alpha_value in value_vars]
    assert owners and owners[0] is not pmc.ConcentrationGibbs
