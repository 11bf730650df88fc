"""Interweaved updates of rho and tau against exact posteriors by 1-D quadrature.

Oracles (two items, so each slot's partial order is one of ``0 > 1``, ``1 > 0`` or
incomparable):
* one order, ``K = 3``: ``D = U_0 - U_1 ~ N(0, 2Σ_ρ)`` and the trivariate equicorrelated
  orthant probability gives ``P(0 > 1 | ρ) = 1/8 + 3 arcsin(ρ) / (4π)``; the posterior of ``ρ``
  is ``π(ρ) Σ_o P(o | ρ) p(Y | o)`` on a grid.
* uninformative lists (``p = 1``: every list is uniformly random whatever the order), so the
  posterior of ``ρ`` and ``τ`` is their prior: covers the joint map of ``U0`` and ``U`` for
  ``ρ``, ``τ`` with ``K > 1`` and item covariates.
* clustered, ``K = 1``, fixed ``α``: the slot differences ``D_a`` are equicorrelated with
  correlation ``τ²``, so given ``z ~ N(0, 1)`` they are independent with
  ``P(D_a > 0 | z) = Φ(τ z / √(1 - τ²))``; the posterior of ``τ`` sums the CRP's EPPF over
  all set partitions of the lists and integrates ``z`` by Gauss--Hermite quadrature.
"""

import math

import numpy as np
import pymc as pm
import pytest
from mc_checks import quantile_failures
from oracles import eppf, set_partitions
from scipy import stats

import pymc_crp as pmc
from pymc_crp.posets import list_log_likelihood
from pymc_crp.step_methods.noncentred import _joint_logp_function, correlation_map, shrinkage_map

ORDERS = {  # adjacency of 0 > 1, 1 > 0 and the empty order on two items
    "01": np.array([[False, True], [False, False]]),
    "10": np.array([[False, False], [True, False]]),
    "none": np.zeros((2, 2), dtype=bool),
}


def lists_likelihood(lists, noise):
    return {
        name: math.exp(sum(list_log_likelihood(adj, y, noise) for y in lists))
        for name, adj in ORDERS.items()
    }


def check_quantiles(draws, grid, density, k=4.5):
    """Mean and ``P(x <= q)`` at the exact quartiles agree within ``k`` Monte Carlo SEs."""
    return quantile_failures(draws, grid, density, k, (0.25, 0.5, 0.75), check_mean=True)


def sample(model, seed, draws=4000, step=None):
    with model:
        return pm.sample(
            draws,
            step=step,
            tune=500,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


def test_maps_are_the_whitening_maps():
    rng = np.random.default_rng(0)
    k, rho, new_rho = 3, 0.3, 0.8
    x = rng.normal(size=(5, 4, k))
    sigma = (1 - rho) * np.eye(k) + rho
    new_sigma = (1 - new_rho) * np.eye(k) + new_rho
    a, new_a = np.linalg.cholesky(sigma), np.linalg.cholesky(new_sigma)
    mapped, log_det = correlation_map(x, rho, new_rho)
    # M = A' A⁻¹ for the symmetric square roots; check M Σ Mᵀ = Σ' and the determinant.
    m = mapped.reshape(-1, k).T @ np.linalg.pinv(x.reshape(-1, k).T)
    np.testing.assert_allclose(m @ sigma @ m.T, new_sigma, atol=1e-10)
    np.testing.assert_allclose(log_det, 20 * math.log(np.linalg.det(new_a) / np.linalg.det(a)))
    back, back_log_det = correlation_map(mapped, new_rho, rho)
    np.testing.assert_allclose(back, x)
    assert back_log_det == pytest.approx(-log_det)
    mean = rng.normal(size=(4, k))
    slots, log_det = shrinkage_map(x, mean, 0.4, 0.9)
    whitened = (x - 0.4 * mean) / math.sqrt(1 - 0.4**2)
    np.testing.assert_allclose((slots - 0.9 * mean) / math.sqrt(1 - 0.9**2), whitened)
    assert log_det == pytest.approx(x.size * 0.5 * math.log((1 - 0.81) / (1 - 0.16)))


def test_steps_assigned_to_rho_and_tau():
    model = pmc.models.clustered_partial_orders([[0, 1], [1, 0]], 2, n_dims=2, max_clusters=3)
    steps = pm.sampling.mcmc.assign_step_methods(model)[1]
    names = {step: [v.name for v in values] for step, values in steps.items()}
    assert names[pmc.NonCentredHyperparameterMetropolis] == ["rho_logodds__", "tau_interval__"]
    assert names[pmc.HyperparameterMetropolis] == ["p_logodds__"]
    with pytest.raises(ValueError, match="rho or tau of a model built"):
        pmc.NonCentredHyperparameterMetropolis([model["p"]], model=model)
    with pytest.raises(ValueError, match="noncentred_scale"):
        pmc.NonCentredHyperparameterMetropolis([model["rho"]], model=model, noncentred_scale=0)
    with pytest.raises(ValueError, match="noncentred_move must be 'slice' or 'metropolis'"):
        pmc.NonCentredHyperparameterMetropolis([model["rho"]], model=model, noncentred_move="hmc")


RHO_LISTS = [[0, 1]] * 4 + [[1, 0]] * 2
RHO_NOISE = 0.2
RHO_PRIOR = (2.0, 2.0)


def exact_rho_posterior(n_dims=3):
    grid = np.linspace(1e-5, 1 - 1e-5, 20_001)
    lik = lists_likelihood(RHO_LISTS, RHO_NOISE)
    p_dominates = 1 / 8 + 3 * np.arcsin(grid) / (4 * math.pi)
    assert n_dims == 3
    mix = p_dominates * (lik["01"] + lik["10"]) + (1 - 2 * p_dominates) * lik["none"]
    return grid, stats.beta.pdf(grid, *RHO_PRIOR) * mix


@pytest.mark.parametrize(  # the Metropolis move is opt-in: slow run only
    "move", ["slice", pytest.param("metropolis", marks=pytest.mark.slow)]
)
def test_single_order_rho_posterior_is_exact(move):
    model = pmc.models.partial_order(RHO_LISTS, 2, n_dims=3, noise=RHO_NOISE, rho_prior=RHO_PRIOR)
    step = None
    if move == "metropolis":
        step = [
            pmc.NonCentredHyperparameterMetropolis(
                [model["rho"]], noncentred_move="metropolis", model=model
            )
        ]
    idata = sample(model, seed=7, step=step, draws=2000)  # the power check's mean: z >= 9
    draws = idata.posterior["rho"].values
    grid, density = exact_rho_posterior()
    assert not check_quantiles(draws, grid, density)
    # Power: the prior alone is rejected.
    assert check_quantiles(draws, grid, stats.beta.pdf(grid, *RHO_PRIOR))
    accept = idata.sample_stats["noncentred_accepted"].values.mean()
    assert (0.15 < accept < 0.9) if move == "metropolis" else accept > 0.95


TAU_LISTS = [[0, 1]] * 3 + [[1, 0]] * 3
TAU_NOISE = 0.1
TAU_ALPHA = 1.0


def exact_tau_posterior():
    grid = np.linspace(1e-4, 1 - 1e-4, 2_001)
    nodes, gh_weights = np.polynomial.hermite_e.hermegauss(120)
    gh_weights = gh_weights / gh_weights.sum()
    single = {tuple(y): lists_likelihood([y], TAU_NOISE) for y in TAU_LISTS}
    phi = stats.norm.cdf(grid[:, None] * nodes[None, :] / np.sqrt(1 - grid[:, None] ** 2))
    density = np.zeros_like(grid)
    for blocks in set_partitions(len(TAU_LISTS)):
        integrand = np.ones_like(phi)
        for block in blocks:
            up = math.prod(single[tuple(TAU_LISTS[i])]["01"] for i in block)
            down = math.prod(single[tuple(TAU_LISTS[i])]["10"] for i in block)
            integrand *= phi * up + (1 - phi) * down
        density += eppf([len(b) for b in blocks], TAU_ALPHA, 0.0) * (integrand @ gh_weights)
    return grid, density  # tau ~ Uniform(0, 1)


@pytest.mark.slow  # 55 s; the move of tau targets its exact conditional in test_noncentred_occupied
def test_clustered_tau_posterior_is_exact():
    model = pmc.models.clustered_partial_orders(
        TAU_LISTS,
        2,
        n_dims=1,
        noise=TAU_NOISE,
        concentration=TAU_ALPHA,
        max_clusters=len(TAU_LISTS),
    )
    with model:  # one round of label moves per step (the default's three: test_po_labels),
        labels = pmc.PartialOrderLabelGibbs([model["cluster"]], sweeps=1)
        mean = pmc.UtilityMeanGibbs([model["U0"]], cycles=5)  # and the list-free cycles
    idata = sample(model, seed=8, step=[labels, mean], draws=2000)
    draws = idata.posterior["tau"].values
    grid, density = exact_tau_posterior()
    assert not check_quantiles(draws, grid, density)
    assert check_quantiles(draws, grid, np.ones_like(grid))  # power: the prior is rejected


@pytest.mark.slow  # 45-80 s; rho against quadrature stays in the default run (above)
def test_prior_is_kept_when_lists_carry_no_information():
    """With noise p = 1 the likelihood is constant: rho ~ Beta(2, 2), tau ~ Uniform(0, 1),
    the covariate effect beta ~ N(0, 1) (moved with the occupied slots' utilities, ``U0`` and
    the empty slots by ``CovariateShiftMetropolis``), and every utility coordinate of ``U0`` and
    of a slot ~ N(0, 1)."""
    rng = np.random.default_rng(4)
    lists = [rng.permutation(4)[: 2 + i % 3].tolist() for i in range(8)]
    model = pmc.models.clustered_partial_orders(
        lists,
        4,
        n_dims=3,
        noise=1.0,
        rho_prior=(2.0, 2.0),
        max_clusters=4,
        covariates=rng.normal(size=(4, 1)),
    )
    idata = sample(model, seed=9, draws=1200)  # ESS ~2,200; the power check's z >= 7.8
    grid = np.linspace(1e-5, 1 - 1e-5, 20_001)
    for name, density in (("rho", stats.beta.pdf(grid, 2, 2)), ("tau", np.ones_like(grid))):
        draws = idata.posterior[name].values
        assert not check_quantiles(draws, grid, density), name
    beta_grid = np.linspace(-7.0, 7.0, 20_001)
    normal = stats.norm.pdf(beta_grid)
    for name, draws in (
        ("beta", idata.posterior["beta"].values[..., 0]),
        ("U0", idata.posterior["U0"].values[..., 0, 0]),
        ("U", idata.posterior["U"].values[..., 0, 1, 2]),
    ):
        assert not check_quantiles(draws, beta_grid, normal), name
    # power: a slightly different Beta is rejected
    assert check_quantiles(idata.posterior["rho"].values, grid, stats.beta.pdf(grid, 2, 2.6))


@pytest.mark.parametrize("clustered", [False, True])
def test_noncentred_ratio_is_exact_near_rho_one(clustered):
    """With ``1 - ρ`` down to ``2^-50`` and utilities whose orders the move cannot change
    (items far apart, deviations of size ``√(1-ρ)``), the non-centred log ratio is the prior
    ratio of ``logit ρ`` alone: ``Δ[log ρ + (1/6) log(1-ρ)]`` for the ``Beta(1, 1/6)`` prior.

    Before the density was computed from the eigen-decomposition, this ratio was off by
    40–110 nats at ``ρ = 1 - 2^-50`` and chains stuck there."""
    lists = [[0, 1, 2, 3], [0, 1, 3, 2], [1, 0, 2, 3]]
    if clustered:
        model = pmc.models.clustered_partial_orders(lists, 4, n_dims=3, max_clusters=3)
    else:
        model = pmc.models.partial_order(lists, 4, n_dims=3)
    rng = np.random.default_rng(3)
    softplus = np.logaddexp
    with model:
        step = pmc.NonCentredHyperparameterMetropolis([model["rho"]])
    full = _joint_logp_function(model, None)  # the full joint density of the fallback moves
    point = model.initial_point(random_seed=0)
    v = 50 * math.log(2.0)  # 1 - rho = 2^-50
    point["rho_logodds__"] = np.array(v)
    whiten = math.exp(-0.5 * softplus(0.0, v))  # sqrt(1 - rho)
    common = 0.5 * np.arange(4.0)[::-1, None]  # Φ(U) far from 0 and 1: no ties
    for name in ("U0", "U"):
        if name in point:
            point[name] = common + whiten * rng.normal(size=point[name].shape)

    def prior(x):
        return -softplus(0.0, -x) - softplus(0.0, x) / 6.0

    for new_v in (v - 8.0, v - 1.0, v - 0.2, v + 0.2, v + 1.0):
        old, new = (float(step._from_value(np.asarray(x))) for x in (v, new_v))
        proposal, log_det = step._joint_proposal(point, new_v, old, new)
        got = step._tempered_sum(*full(proposal)) - step._tempered_sum(*full(point)) + log_det
        assert got == pytest.approx(prior(new_v) - prior(v), abs=1e-6)
