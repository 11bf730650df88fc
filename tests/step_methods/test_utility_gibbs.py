"""Exact coordinate Gibbs draws of partial-order utilities (pymc_crp.core.utility_gibbs).

* The interval-mixture draw against its CDF computed with scipy.stats (KS test), tails
  included; the Gaussian conditional against dense linear algebra.
* ``UtilityMetropolis`` with only coordinate Gibbs moves: the posterior over the partial
  orders of 3 items (K = 2) equals the prior order probabilities (2·10⁶ prior draws) times the
  exact list likelihood, as for the random-walk moves in test_utility_metropolis.py.
* Draws within the current intervals (``cell_draws``): normal order statistics (K = 1) and
  the equicorrelated prior conditioned on the columns' rank patterns (rejection oracle), for
  the core function and for ``UtilityMetropolis`` with only these draws (and with the column
  moves of ``pymc_crp.core.column_moves`` after them; the core moves are tested in
  ``tests/core/test_column_moves.py``).
* With the column swaps as well, the chain visits both cells of rank patterns whose columns
  give the dominance order of ``CELL_START`` and follows the prior conditioned on that order
  (rejection oracle); without the swaps it stays in one cell and misses that target.
"""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from oracles import dominance_conditioned_equicorrelated_draws, truncated_equicorrelated_mean
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
    cell_draws,
    equicorrelated_conditional,
    interval_mixture_log_density,
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


@pytest.mark.parametrize("mu", [0.0, 3.5])
def test_interval_mixture_density_is_the_derivative_of_its_cdf(mu):
    """The density of the draw (used in the informed split--merge ratios) against a central
    difference of the independent CDF, and it is -inf on the interval ends (ties)."""
    low, high, _ = interval_points([-1.0, 0.2, 0.9, 2.5])
    log_lik = np.array([-1.0, 0.5, -3.0, 0.0, 1.0])
    for x in (-2.0, -0.3, 0.5, 1.7, 4.0):
        h = 1e-5
        numeric = (
            mixture_cdf([x + h], log_lik, low, high, mu, 1.3)[0]
            - mixture_cdf([x - h], log_lik, low, high, mu, 1.3)[0]
        ) / (2 * h)
        density = math.exp(interval_mixture_log_density(log_lik, low, high, mu, 1.3, x))
        assert density == pytest.approx(numeric, rel=1e-5)
    assert interval_mixture_log_density(log_lik, low, high, mu, 1.3, 0.2) == -math.inf


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


@pytest.mark.parametrize(
    "moves",
    [
        {"coordinate_items": -1},
        # with the default cell_sweeps=1: one swap of neighbours per move (opt-in; slow, 10 s)
        pytest.param({"cell_hops": 1}, marks=pytest.mark.slow),
    ],
)
def test_coordinate_gibbs_order_posterior_is_exact(moves):
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
        step = pmc.UtilityMetropolis([u], item_sweeps=0, pcn=False, **moves)
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


# --------------------------------------------------------------------------------------------
# Draws within the current intervals (cell_draws)
# --------------------------------------------------------------------------------------------
CELL_MEAN = np.array([[0.5, 0.0], [0.0, 0.3], [-0.2, 0.1]])
CELL_START = np.array([[1.0, 0.0], [0.0, -1.0], [-1.0, 1.0]])


def test_cell_draws_of_k1_rows_are_normal_order_statistics():
    """Three i.i.d. N(0, 1) conditioned on x0 > x1 > x2: means ±3/(2√π) and 0."""
    rng = np.random.default_rng(0)
    n_copies = 4000
    u = np.tile(np.array([1.0, 0.0, -1.0])[None, :, None], (n_copies, 1, 1))
    zeros, ones = np.zeros_like(u), np.ones((n_copies, 3))
    for _ in range(60):
        cell_draws(u, zeros, 0.0 * ones, ones, rng.random((1, 2, n_copies, 3)))
        assert np.all(u[:, 0, 0] > u[:, 1, 0]) and np.all(u[:, 1, 0] > u[:, 2, 0])
    want = np.array([1.5, 0.0, -1.5]) / math.sqrt(math.pi)
    se = u[:, :, 0].std(axis=0) / math.sqrt(n_copies)
    assert np.all(np.abs(u[:, :, 0].mean(axis=0) - want) < 4.5 * se)


def test_cell_draws_follow_the_truncated_equicorrelated_prior():
    """K = 2, ρ = 0.6, scale 1.3, 4000 copies after 60 scans: the mean of every utility
    within 4.5 Monte Carlo standard errors of the prior conditioned on the columns' rank
    patterns (rejection oracle), and not of the untruncated prior (power)."""
    rng = np.random.default_rng(1)
    rho, scale, n_copies = 0.6, 1.3, 4000
    want, sd, n_kept = truncated_equicorrelated_mean(CELL_MEAN, rho, scale, CELL_START, 4_000_000)
    assert n_kept > 50_000
    u = np.tile(CELL_START[None], (n_copies, 1, 1))
    mean = np.tile(CELL_MEAN[None], (n_copies, 1, 1))
    for _ in range(60):
        cell_draws(u, mean, np.full((n_copies, 3), rho), np.full((n_copies, 3), scale),
                   rng.random((2, 2, n_copies, 3)))  # fmt: skip
    se = np.sqrt(sd**2 / n_copies + sd**2 / n_kept)
    assert np.all(np.abs(u.mean(axis=0) - want) < 4.5 * se)
    assert np.all(np.argsort(u, axis=1) == np.argsort(CELL_START, axis=0)[None])
    assert np.any(np.abs(u.mean(axis=0) - CELL_MEAN) > 10 * se)


def _truncated_quantile(u, low, high, mean, scale):
    """The draw of ``truncated_normal`` from uniform ``u`` by scipy's truncnorm: the quantile
    ``u``, or ``1 - u`` when the interval lies above the mean (the draw is mirrored)."""
    a, b = (low - mean) / scale, (high - mean) / scale
    return stats.truncnorm.ppf(1.0 - u if a > 0 else u, a, b, mean, scale)


@pytest.mark.parametrize(
    ("start", "u_values"),
    [([2.0, 0.5, -1.0], [0.3, 0.9, 0.7]), ([30.0, 25.0, 24.0], [0.2, 0.5, 0.99])],
)
def test_cell_draws_are_inverse_cdf_draws_pass_by_pass(start, u_values):
    """K = 1, one slot of three items (mean 0.4, scale 1.7): the first pass redraws the items
    of rank 0 and 2 from the normal truncated to the interval beyond their neighbour (scipy's
    truncnorm quantiles of the given uniforms), the second the middle item between the new
    values; a far upper tail keeps its digits."""
    mean, scale = 0.4, 1.7
    u = np.array(start)[None, :, None]
    uniforms = np.zeros((1, 2, 1, 3))
    # ranks ascending: item 2 (lowest), item 1, item 0 (highest)
    uniforms[0, 0, 0, 2], uniforms[0, 0, 0, 0], uniforms[0, 1, 0, 1] = u_values
    cell_draws(u, np.full((1, 3, 1), mean), np.zeros((1, 3)), np.full((1, 3), scale), uniforms)
    low_item = _truncated_quantile(u_values[0], -np.inf, start[1], mean, scale)
    high_item = _truncated_quantile(u_values[1], start[1], np.inf, mean, scale)
    middle = _truncated_quantile(u_values[2], low_item, high_item, mean, scale)
    np.testing.assert_allclose(u[0, :, 0], [high_item, middle, low_item], rtol=1e-10)


def test_cell_draws_leave_tied_columns_alone():
    u = np.zeros((1, 3, 2))
    cell_draws(u, np.zeros((1, 3, 2)), np.full((1, 3), 0.3), np.ones((1, 3)),
               np.random.default_rng(0).random((2, 2, 1, 3)))  # fmt: skip
    assert np.all(u == 0.0)


@pytest.mark.parametrize("column_moves", [0, 1])
def test_utility_step_with_order_keeping_moves_only_keeps_the_orders_and_is_exact(column_moves):
    """UtilityMetropolis with only the cell draws (no pCN, no random walk), and with the
    column moves (pymc_crp.core.column_moves) after them, inside pm.sample: the rank pattern
    of every column never changes and the utilities follow the prior conditioned on it (the
    lists' likelihood is constant there)."""
    rho, scale = 0.6, 1.3
    with pm.Model():
        u = pmc.EquicorrelatedNormal("U", mu=CELL_MEAN, rho=rho, scale=scale)
        pmc.PartialOrderLists("y", u, None, P_NOISE, observed=LISTS_K2)
        step = pmc.UtilityMetropolis(
            [u],
            item_sweeps=0,
            pcn=False,
            cell_sweeps=1,
            column_moves=column_moves,
            hmc_trajectories=0,
        )
        idata = pm.sample(
            3000,
            tune=50,
            chains=2,
            cores=1,
            random_seed=3,
            step=[step],
            initvals={"U": CELL_START},
            progressbar=False,
            compute_convergence_checks=False,
        )
    draws = idata.posterior["U"]
    assert np.all(np.argsort(draws.values, axis=-2) == np.argsort(CELL_START, axis=0))
    want, sd, n_kept = truncated_equicorrelated_mean(CELL_MEAN, rho, scale, CELL_START, 4_000_000)
    ess = az.ess(draws.to_dataset(name="U"))["U"].values
    se = sd / np.sqrt(ess)
    assert np.all(np.abs(draws.mean(("chain", "draw")).values - want) < 4.5 * se)


@pytest.mark.parametrize("column_swaps", [1, 0])
def test_column_swaps_follow_the_prior_given_the_dominance_order(column_swaps):
    """Three items, ``K = 2``, ``0 ≻ 1`` and item 2 apart: two cells of rank patterns (one the
    other with its columns exchanged) give that order. Cell draws, column moves and column
    swaps inside pm.sample keep the order and reach the prior conditioned on it; without the
    swaps the chain stays in its cell (the check's power)."""
    rho, scale = 0.6, 1.3
    with pm.Model():
        u = pmc.EquicorrelatedNormal("U", mu=CELL_MEAN, rho=rho, scale=scale)
        pmc.PartialOrderLists("y", u, None, P_NOISE, observed=LISTS_K2)
        step = pmc.UtilityMetropolis(
            [u], item_sweeps=0, pcn=False, hmc_trajectories=0, column_swaps=column_swaps
        )
        idata = pm.sample(
            2000, tune=50, chains=2, cores=1, random_seed=4, step=[step],
            initvals={"U": CELL_START}, progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
    draws = idata.posterior["U"]
    values = draws.values.reshape(-1, *CELL_MEAN.shape)
    dominance = np.all(values[:, :, None, :] > values[:, None, :, :], axis=3)
    assert np.all(dominance == np.all(CELL_START[:, None] > CELL_START[None], axis=2))
    first_column_starts = np.mean(np.argmax(values[:, :, 0], axis=1) == 0)
    oracle = dominance_conditioned_equicorrelated_draws(
        CELL_MEAN, rho, scale, CELL_START, 3_000_000
    )
    ess = az.ess(draws.to_dataset(name="U"))["U"].values
    se = np.sqrt(oracle.var(axis=0) / ess)
    close = np.all(np.abs(draws.mean(("chain", "draw")).values - oracle.mean(axis=0)) < 4.5 * se)
    if column_swaps:
        assert 0.05 < first_column_starts < 0.95  # both cells
        assert close
    else:
        assert first_column_starts == 1.0
        assert not close


@pytest.mark.parametrize(
    "option, wrong_type, negative",
    [
        ("coordinate_items", 1.0, -2),
        ("cell_sweeps", 1.5, -1),
        ("column_moves", 2.5, -1),
        ("column_swaps", 1.0, -1),
        ("cell_hops", True, -3),
    ],
)
def test_single_utility_options_validated(option, wrong_type, negative):
    lists = [[0, 1, 2], [2, 1, 0]]
    model = pmc.models.partial_order(lists, 3, n_dims=2, noise=0.1)
    with pytest.raises(TypeError, match=option):
        pmc.UtilityMetropolis([model["U"]], model=model, **{option: wrong_type})
    with pytest.raises(ValueError, match=option):
        pmc.UtilityMetropolis([model["U"]], model=model, **{option: negative})
    covariates = np.eye(3)[:, :1]  # lists read G⁻¹(Φ(U)) + xβ: none of these moves applies
    model = pmc.models.partial_order(lists, 3, n_dims=2, noise=0.1, covariates=covariates)
    with pytest.raises(ValueError, match=f"{option} needs"):
        pmc.UtilityMetropolis([model["U"]], model=model, **{option: 1})
    step = pmc.UtilityMetropolis([model["U"]], model=model)
    assert step.cell_sweeps == step.column_moves == 0
