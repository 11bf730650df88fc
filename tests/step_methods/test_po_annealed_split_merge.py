"""Annealed split--merge moves of PartialOrderLabelGibbs: exact against enumeration (the
oracle of ``test_po_labels``), their choice probabilities and side distributions against
brute force, and their arguments."""

import itertools
import math

import numpy as np
import pymc as pm
import pytest
from oracles import exact_clustered_dominance_orders, exact_clustered_total_orders
from scipy.special import logsumexp
from test_po_labels import LISTS, N_ITEMS, P_NOISE, mismatches, sample_tiny

import pymc_crp as pmc
from pymc_crp.step_methods.po_annealed_split_merge import (
    annealing_levels,
    g_power,
    merge_pair_log_probs,
)


@pytest.mark.parametrize(
    "discount, n_dims, levels",
    [
        (0.4, 1, 6),
        pytest.param(0.0, 1, 3, marks=pytest.mark.slow),
        pytest.param(0.0, 2, 4, marks=pytest.mark.slow),
    ],
)
def test_annealed_split_merge_alone_matches_enumeration(discount, n_dims, levels):
    """Only the annealed split--merge moves change the labels (no sweep, no other
    merge--split): their paths of side and coordinate Gibbs draws, importance weights and
    choice probabilities give the exact posterior, for few and for more levels. (Without the
    1/2 of the move type in the merge's ratio, ``P(K = 2)`` came out 0.301 against 0.427.)"""
    z = sample_tiny(
        n_slots=6, n_aux=1, discount=discount, seed=23, sweep=False, merge_split=0,
        annealed_split_merge=2, annealed_levels=levels, draws=1500, n_dims=n_dims,
    )  # fmt: skip
    exact = exact_clustered_total_orders if n_dims == 1 else exact_clustered_dominance_orders
    co, k_dist = exact(LISTS, N_ITEMS, P_NOISE, 1.0, discount)
    assert not mismatches(z, co, k_dist)
    if n_dims == 1:
        wrong = exact_clustered_total_orders(LISTS, N_ITEMS, P_NOISE, 1.0, 0.4 - discount)
    else:
        wrong = exact_clustered_total_orders(LISTS, N_ITEMS, P_NOISE, 1.0, 0.0)
    assert mismatches(z, *wrong)  # the test has power


def test_merge_pair_log_probs_against_brute_force():
    rng = np.random.default_rng(1)
    labels = np.array([0, 0, 2, 2, 2, 5, 5, 0])
    ll = rng.normal(-5.0, 2.0, size=(labels.size, 7))
    occupied = np.array([0, 2, 5])
    log_probs = merge_pair_log_probs(ll, labels, occupied)
    expected = np.full((3, 3), -np.inf)
    for (x, s), (y, t) in itertools.permutations(enumerate(occupied), 2):
        in_s, in_t = labels == s, labels == t
        expected[x, y] = (
            ll[in_t, s].mean() - ll[in_t, t].mean() + ll[in_s, t].mean() - ll[in_s, s].mean()
        )
    expected -= logsumexp(expected)
    np.testing.assert_allclose(log_probs, expected)
    assert math.isclose(logsumexp(log_probs), 0.0, abs_tol=1e-12)


def test_levels_and_the_power_of_g():
    levels = annealing_levels(8)
    assert levels[0] == 0.0 and levels[-1] == 1.0
    assert np.all(np.diff(levels) > 0)
    np.testing.assert_allclose(levels + levels[::-1], 1.0)
    assert g_power(0.0) == 0.0 and g_power(0.125) == 0.5 and g_power(0.25) == g_power(0.9) == 1


def test_arguments_defaults_and_stats():
    model = pmc.models.clustered_partial_orders([[0, 1, 2], [2, 1, 0], [1, 0]], 3, n_dims=1)
    with model:
        step = pmc.PartialOrderLabelGibbs([model["cluster"]])
        assert step.annealed_split_merge == 0.01 and step.tune_annealed_split_merge == 0.05
        assert step.annealed_levels == 50
        for option in ("annealed_split_merge", "tune_annealed_split_merge"):
            for bad in (-0.1, "1", True, np.nan):
                with pytest.raises(ValueError, match=option):
                    pmc.PartialOrderLabelGibbs([model["cluster"]], **{option: bad})
        for bad in (1, 2.5, True):
            with pytest.raises(ValueError, match="annealed_levels"):
                pmc.PartialOrderLabelGibbs([model["cluster"]], annealed_levels=bad)
        step = pmc.PartialOrderLabelGibbs(
            [model["cluster"]], annealed_split_merge=1.5, annealed_levels=3,
            rng=np.random.default_rng(2),
        )  # fmt: skip
    step.tune = False
    point, made = model.initial_point(random_seed=1), 0
    for _ in range(20):
        point, (stats,) = step.step(point)
        made += stats["annealed_merges"] + stats["annealed_splits"]
    assert made > 0  # 1.5 proposals a step on three lists: some are accepted
    # three lists in three slots (max_clusters = n: never truncated): a singleton that cannot
    # be split is no split refused for want of a slot, so no truncation is reported
    point["cluster"] = np.array([0, 1, 2])
    step.sweep = step.merge_split = 0  # only the annealed moves, which then keep the labels
    step.annealed_split_merge = 3.0
    for _ in range(10):
        point, (stats,) = step.step(point)
        assert not stats["slots_full"]
    with pm.Model():  # the moves need the equicorrelated slot prior's conditionals
        z = pmc.CRP("z", 1.0, max_clusters=4, n=2)
        u = pm.Normal("u", 0.0, 1.0, shape=(4, 3, 1))
        pmc.PartialOrderLists("y", u, z, 0.1, observed=[[0, 1, 2], [2, 1, 0]])
        step = pmc.PartialOrderLabelGibbs([z])  # off by default
        assert step.annealed_split_merge == step.tune_annealed_split_merge == 0.0
        with pytest.raises(ValueError, match="annealed_split_merge needs an EquicorrelatedNormal"):
            pmc.PartialOrderLabelGibbs([z], annealed_split_merge=0.1)


def test_default_rates_fall_in_proportion_beyond_1000_lists():
    lists = [[0, 1], [1, 0], [2, 0, 1]] * 1000  # 3,000 lists
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=1, max_clusters=4)
    with model:
        step = pmc.PartialOrderLabelGibbs([model["cluster"]])
        assert math.isclose(step.annealed_split_merge, 0.01 / 3)
        assert math.isclose(step.tune_annealed_split_merge, 0.05 / 3)
        given = pmc.PartialOrderLabelGibbs([model["cluster"]], annealed_split_merge=0.01)
        assert given.annealed_split_merge == 0.01  # a given rate is kept
