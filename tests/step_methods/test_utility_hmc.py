"""Exact Hamiltonian trajectories of the utilities (``UtilityMetropolis(hmc_trajectories=...)``,
``pymc_crp/core/reflective_hmc.py``).

The trajectories are the only move of the utilities (no pCN, random walk, cell or column
moves), at fixed labels and noise. Oracles (tests/oracles.py, brute force): the posterior of a
slot's order, over the orders of one column (``n_dims = 1``) or the pairs of column orders
(``n_dims = 2``, independent exchangeable columns, so that every pair is equally likely a
priori); and the prior conditioned on the columns' rank patterns (rejection), which is the
posterior within a pattern whatever the lists say.
"""

import itertools
import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from mc_checks import z_scores
from oracles import linear_extension_list_lik, truncated_equicorrelated_mean

import pymc_crp as pmc
from pymc_crp.core.reflective_hmc import next_fall_time

LISTS = [[0, 1, 2], [0, 1, 2], [0, 2], [2, 1, 0], [2, 1]]
LABELS = np.array([0, 0, 0, 1, 1])
N_ITEMS = 3


def slot_model(n_slots, n_dims, mean=None, rho=0.0, scale=1.0):
    mean = np.zeros((n_slots, N_ITEMS, n_dims)) if mean is None else mean
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=n_slots, n=len(LISTS))
        u = pmc.EquicorrelatedNormal("U", mu=mean, rho=rho, scale=scale)
        p = pm.Beta("p", 1.0, 9.0)
        pmc.PartialOrderLists("y", u, z, p, observed=LISTS)
    return model


def trajectories_only(model, seed, **kwargs):
    with model:
        step = pmc.UtilityMetropolis(
            [model["U"]], item_sweeps=0, pcn=False, cell_sweeps=0, column_moves=0,
            hmc_trajectories=1, rng=np.random.default_rng(seed), **kwargs,
        )  # fmt: skip
    step.tune = False
    return step


def run(model, step, noise, n_steps, seed):
    """``n_steps`` steps at the labels ``LABELS`` and noise ``noise``; the draws of ``U``."""
    point = model.initial_point()
    point.update(z=LABELS, p_logodds__=np.asarray(np.log(noise / (1 - noise))))
    point["U"] = np.random.default_rng(seed).standard_normal(point["U"].shape)
    draws = np.empty((n_steps, *point["U"].shape))
    crossings = np.empty(n_steps)
    for t in range(n_steps):
        point, stats = step.step(point)
        draws[t] = point["U"]
        crossings[t] = stats[0]["utility_hmc_crossings"]
    return draws, crossings


def within_mcse(draws, exact, factor=4.5):
    """Frequencies of the integer draws against ``exact``: the outcomes whose frequency is off
    by more than ``factor`` standard errors (``mc_checks.z_scores`` of the indicators; no fixed
    slack)."""
    indicators = (np.asarray(draws)[:, None] == np.arange(len(exact))).astype(float)[None]
    z = z_scores(indicators, exact)
    return [(k, indicators[0, :, k].mean(), exact[k]) for k in np.flatnonzero(np.abs(z) > factor)]


def test_next_fall_time_is_the_first_downward_zero():
    rng = np.random.default_rng(0)
    grid = np.linspace(0.0, 4 * math.pi, 400_001)
    for _ in range(200):
        c, a, b = rng.normal(size=3)
        now = rng.uniform(0.0, 2 * math.pi)
        f = c + a * np.cos(grid) + b * np.sin(grid)
        falls = grid[1:][(f[:-1] > 0) & (f[1:] <= 0) & (grid[1:] > now)]
        got = next_fall_time(c, a, b, now)
        if falls.size == 0 or falls[0] > now + 2 * math.pi:
            assert math.isinf(got) or got > now + 2 * math.pi - 1e-4
        else:
            assert abs(got - falls[0]) < 1e-4, (c, a, b, now, got, falls[0])


def test_without_likelihood_a_trajectory_is_a_prior_draw():
    """At likelihood power 0 every wall is passed and a quarter period of the flow maps the
    start to ``μ + V``: the end points are independent prior draws, whatever the start
    (``ρ = 0.5``, scale 0.8, a non-zero mean: mean and covariance of the rows)."""
    mean = np.tile(np.array([[0.5, 0.0], [0.0, 0.3], [-0.2, 0.1]])[None], (2, 1, 1))
    model = slot_model(2, 2, mean=mean, rho=0.5, scale=0.8)
    step = trajectories_only(model, 1)
    step.likelihood_temperature = 0.0
    draws, _ = run(model, step, 0.2, 4000, 2)
    x = draws[:, 0]  # slot 0, (draws, item, dim)
    se = 0.8 / math.sqrt(x.shape[0])
    assert np.all(np.abs(x.mean(axis=0) - mean[0]) < 4.5 * se)
    cov = np.cov(x[:, 1].T)
    want = 0.64 * np.array([[1.0, 0.5], [0.5, 1.0]])
    assert np.all(np.abs(cov - want) < 0.05)
    lag1 = np.corrcoef(x[1:, 2, 0], x[:-1, 2, 0])[0, 1]
    assert abs(lag1) < 0.06  # independent draws


def test_trajectories_keep_the_posterior_of_a_total_order():
    """``n_dims = 1``: every wall changes the order; the 6 orders of each occupied slot."""
    model = slot_model(4, 1)
    step = trajectories_only(model, 31)
    noise = 0.5
    draws, crossings = run(model, step, noise, 5000, 32)
    assert crossings.mean() > 0.3
    perms = list(itertools.permutations(range(N_ITEMS)))
    for slot in (0, 1):
        index = [perms.index(tuple(np.argsort(-u[:, 0]))) for u in draws[:, slot]]
        members = [LISTS[i] for i in np.flatnonzero(LABELS == slot)]
        relations = [[[h.index(a) < h.index(b) for b in range(3)] for a in range(3)] for h in perms]
        w = np.array([np.prod([linear_extension_list_lik(r, y, noise) for y in members])
                      for r in relations])  # fmt: skip
        assert not within_mcse(np.asarray(index), w / w.sum())


@pytest.mark.parametrize(("n_dims", "n_steps"), [(2, 6000), (3, 8000)])
def test_trajectories_keep_the_posterior_of_dominance_orders(n_dims, n_steps):
    """Independent exchangeable columns: the tuples of column orders (36 for two columns,
    216 for three) are equally likely a priori and the lists see their dominance order, so
    walls between items that stay incomparable are passed and the others reflect or refract
    (with three columns, a pair toggles only when ordered alike in both other columns)."""
    model = slot_model(3, n_dims)
    step = trajectories_only(model, 41)
    noise = 0.3
    draws, crossings = run(model, step, noise, n_steps, 42)
    perms = list(itertools.permutations(range(N_ITEMS)))
    pairs = list(itertools.product(range(6), repeat=n_dims))
    for slot in (0, 1):
        members = [LISTS[i] for i in np.flatnonzero(LABELS == slot)]
        weights = []
        for columns in pairs:
            rank = [{item: r for r, item in enumerate(perms[c])} for c in columns]
            relation = [[all(rk[a] < rk[b] for rk in rank) for b in range(3)] for a in range(3)]
            weights.append(
                np.prod([linear_extension_list_lik(relation, y, noise) for y in members])
            )
        weights = np.array(weights)
        index = [
            pairs.index(tuple(perms.index(tuple(np.argsort(-u[:, k]))) for k in range(n_dims)))
            for u in draws[:, slot]
        ]
        assert not within_mcse(np.asarray(index), weights / weights.sum())


def test_within_a_rank_pattern_the_utilities_follow_the_truncated_prior():
    """Non-zero mean, ``ρ = 0.5``, scale 0.8: the mean of slot 0's utilities over the draws in
    their most frequent rank pattern against the prior conditioned on that pattern."""
    base = np.array([[0.5, 0.0], [0.0, 0.3], [-0.2, 0.1]])
    mean = np.tile(base[None], (3, 1, 1))
    model = slot_model(3, 2, mean=mean, rho=0.5, scale=0.8)
    step = trajectories_only(model, 51)
    draws, _ = run(model, step, 0.3, 8000, 52)
    x = draws[:, 0]
    patterns = np.argsort(x, axis=1).reshape(x.shape[0], -1)
    keys, inverse, counts = np.unique(patterns, axis=0, return_inverse=True, return_counts=True)
    inside = np.ravel(inverse) == np.argmax(counts)
    assert inside.mean() > 0.1
    start = x[np.flatnonzero(inside)[0]]
    want, sd, n_kept = truncated_equicorrelated_mean(base, 0.5, 0.8, start, 3_000_000)
    assert n_kept > 30_000
    freq = inside.mean()
    got = x[inside].mean(axis=0)
    for j, k in itertools.product(range(3), range(2)):
        series = ((x[:, j, k] - got[j, k]) * inside)[None]  # ratio estimator's residuals
        se = float(np.ravel(az.mcse(series))[0]) / freq
        se = math.hypot(se, sd[j, k] / math.sqrt(n_kept))
        assert abs(got[j, k] - want[j, k]) < 4.5 * se + 1e-3, (j, k, got[j, k], want[j, k], se)
    # power: the untruncated prior mean is far
    assert np.any(np.abs(got - base) > 0.2)


def test_same_seed_same_draws_and_chains_differ():
    model = slot_model(6, 2)

    def draw():
        with model:
            steps = [
                pmc.UtilityMetropolis([model["U"]], hmc_trajectories=1),
                pmc.PartialOrderLabelGibbs([model["z"]], anneal=0),
            ]
            return pm.sample(
                30, tune=20, chains=2, cores=1, random_seed=7, step=steps, progressbar=False,
                compute_convergence_checks=False,
            ).posterior["U"].values  # fmt: skip

    first, second = draw(), draw()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[0], first[1])


def test_hmc_option_validated():
    model = slot_model(4, 2)
    with model, pytest.raises(TypeError, match="hmc_trajectories"):
        pmc.UtilityMetropolis([model["U"]], hmc_trajectories=1.5)
    with model, pytest.raises(ValueError, match="hmc_trajectories"):
        pmc.UtilityMetropolis([model["U"]], hmc_trajectories=-1)
    with model:
        step = pmc.UtilityMetropolis(
            [model["U"]], hmc_trajectories=1, cell_sweeps=0, column_moves=0
        )
    with pytest.raises(ValueError, match="hmc_trajectories"):
        step.reversible_update(model.initial_point(), False)


@pytest.mark.parametrize("dual", [False, True])
def test_a_toggle_gives_the_order_of_the_utilities_after_the_meeting(dual):
    """Over 100 items (two bitset words), for neighbours of column 0 whose meeting changes
    the order: the toggled bitsets equal those of the utilities with the two values swapped,
    and the lists counted are those that hold both items."""
    from pymc_crp.core.linext_support import utility_relation_words
    from pymc_crp.core.reflective_hmc import _toggled_order
    from pymc_crp.core.restricted_orders import item_masks

    rng = np.random.default_rng(3)
    n_items, n_dims = 100, 2
    u = rng.standard_normal((n_items, n_dims))
    lists = np.array([rng.choice(n_items, 10, replace=False) for _ in range(300)])
    masks = item_masks(lists)
    words = utility_relation_words(u[None], dual)[0]
    column = np.argsort(u[:, 0])
    n_checked = 0
    for r in range(n_items - 1):
        lo, hi = column[r], column[r + 1]
        hi_over = u[hi, 1] > u[lo, 1]
        lo_over_after = u[lo, 1] > u[hi, 1]
        if n_dims == 2 and not (hi_over or lo_over_after):
            continue
        after = u.copy()
        after[[hi, lo], 0] = after[[lo, hi], 0]
        holding = np.flatnonzero([hi in row for row in lists])
        by_item, starts = holding.astype(np.int64), np.zeros(n_items + 1, np.int64)
        starts[hi + 1 :] = holding.size
        new, counted = _toggled_order(
            words, hi, lo, bool(lo_over_after), dual, masks, by_item, starts
        )
        np.testing.assert_array_equal(new, utility_relation_words(after[None], dual)[0])
        want = [t for t in holding if lo in lists[t]]
        np.testing.assert_array_equal(counted, want)
        n_checked += 1
    assert n_checked > 20


def test_a_tied_start_is_left_for_the_other_moves():
    """PyMC's default start of a zero-mean prior ties every column: the trajectory leaves it
    as it is (the order treats tied items as incomparable; the empty slots are redrawn from
    their prior); the pCN move breaks the ties."""
    model = slot_model(4, 2)
    point = model.initial_point()
    point.update(z=LABELS, p_logodds__=np.asarray(np.log(0.2 / 0.8)))
    point["U"] = np.zeros_like(point["U"])
    step = trajectories_only(model, 61)
    moved, _ = step.step(point)
    np.testing.assert_array_equal(moved["U"][:2], point["U"][:2])  # the occupied slots
    with model:
        both = pmc.UtilityMetropolis(
            [model["U"]], item_sweeps=0, cell_sweeps=0, column_moves=0, hmc_trajectories=1,
            rng=np.random.default_rng(62),
        )  # fmt: skip
    for _ in range(3):
        point, _ = both.step(point)
    assert np.all(np.diff(np.sort(point["U"][0], axis=0), axis=0) > 0)
