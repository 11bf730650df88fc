"""The label step's utility moves with the movable lists' labels summed out, against enumeration.

Oracle (tests/oracles.py): 5 lists over 3 items, ``n_dims = 1`` and independent slot
utilities (``τ = 0``, ``ρ = 0``), so each cluster's order is a uniformly random total order and
the joint posterior of the partition and the clusters' orders is a finite sum. Given an order
the utilities are the sorted draws of three standard normals, so exact posterior draws of the
whole state are cheap: one move from them must leave them exact posterior draws.
"""

import itertools
import math

import numpy as np
import pymc as pm
import pytest
from oracles import (
    exact_clustered_total_orders,
    exact_clustered_total_orders_joint,
    total_order_list_lik,
)
from scipy import stats
from test_po_labels import LISTS, N_ITEMS, N_LISTS, P_NOISE, mismatches, sample_tiny

import pymc_crp as pmc
from pymc_crp.step_methods import po_marginal_utilities

N_SLOTS = 6
NOISE = 0.6  # lists that fit several orders, so that the labels move often
PERMS = list(itertools.permutations(range(N_ITEMS)))


def label_step(discount, **kwargs):
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, discount=discount, max_clusters=N_SLOTS, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((N_SLOTS, N_ITEMS, 1)), rho=0.0)
        pmc.PartialOrderLists("y", u, z, NOISE, observed=LISTS)
        kwargs = {"annealed_split_merge": 0, "tune_annealed_split_merge": 0, **kwargs}
        step = pmc.PartialOrderLabelGibbs([z], rng=np.random.default_rng(3), **kwargs)
    step.tune, step._beta = False, 1.0
    return model, step


def canonical(labels, utilities):
    """The partition (blocks in order of their first list) and each block's order index."""
    blocks, orders = [], []
    for slot in dict.fromkeys(labels.tolist()):
        blocks.append(tuple(np.flatnonzero(labels == slot)))
        orders.append(PERMS.index(tuple(np.argsort(-utilities[slot, :, 0]))))
    return tuple(blocks), tuple(orders)


def one_move_states(discount, n_draws, seed, **kwargs):
    """Exact posterior states (indices into ``states``), each moved once by the marginal
    utility move: ``(states, probs, before, after, marginal_counts)``."""
    kwargs = {
        "anchor_fraction": 0.25,
        "marginal_scale": 0.5,
        "marginal_utility_moves": 3,
        **kwargs,
    }
    model, step = label_step(discount, **kwargs)
    states, probs = exact_clustered_total_orders_joint(LISTS, N_ITEMS, NOISE, 1.0, discount)
    index = {(tuple(map(tuple, b)), o): s for s, (b, o) in enumerate(states)}
    rng = np.random.default_rng(seed)
    point = model.initial_point(random_seed=0)
    before = rng.choice(len(states), size=n_draws, p=probs)
    after = np.empty(n_draws, dtype=np.int64)
    for t, s in enumerate(before):
        blocks, orders = states[s]
        slots = rng.permutation(N_SLOTS)[: len(blocks)]
        labels = np.empty(N_LISTS, dtype=np.int64)
        utilities = rng.normal(size=(N_SLOTS, N_ITEMS, 1))
        for block, order, slot in zip(blocks, orders, slots, strict=True):
            labels[block] = slot
            utilities[slot, list(PERMS[order]), 0] = np.sort(rng.normal(size=N_ITEMS))[::-1]
        point.update(z=labels, U=utilities)
        step._marginal_moves(point, labels, utilities, NOISE, discount)
        after[t] = index[canonical(labels, utilities)]
    return states, probs, before, after, step.marginal_counts


def change_z_scores(states, before, after):
    """``E[f(after) - f(before)] = 0`` when the move keeps the posterior (``before`` are exact
    draws): the z-scores of the mean change of the co-clustering of the lists, the
    log-likelihood of each list under its cluster's order, and the size of each list's
    cluster."""
    lik = np.array([[total_order_list_lik(p, y, NOISE) for p in PERMS] for y in LISTS])
    features = np.zeros((len(states), 3 * N_LISTS))
    for s, (blocks, orders) in enumerate(states):
        for block, order in zip(blocks, orders, strict=True):
            for i in block:
                features[s, i] = len(block)
                features[s, N_LISTS + i] = math.log(lik[i, order])
                features[s, 2 * N_LISTS + i] = np.isin(block, range(i)).sum()  # earlier mates
    change = features[after] - features[before]
    sd = change.std(axis=0)
    moved = sd > 0
    return change.mean(axis=0)[moved] / (sd[moved] / math.sqrt(len(before)))


def chi_square_pvalue(counts, probs, min_expected=5.0):
    """Pearson's test over the states expected at least ``min_expected`` times, the rest
    lumped into one cell."""
    expected = probs * counts.sum()
    big = expected >= min_expected
    observed = np.append(counts[big], counts[~big].sum())
    expected = np.append(expected[big], expected[~big].sum())
    statistic = np.sum((observed - expected) ** 2 / expected)
    return stats.chi2.sf(statistic, observed.size - 1)


@pytest.mark.parametrize("discount", [0.0, 0.4])
def test_one_move_from_exact_draws_keeps_the_joint_posterior(discount):
    """After one move from exact posterior draws, the law of the partition and the clusters'
    orders is the exact posterior: Pearson's chi-square over the states, and no mean change of
    the lists' cluster sizes, co-clusterings and log-likelihoods (a powerful check: only the
    draws the move changes contribute to its variance)."""
    states, probs, before, after, counts = one_move_states(discount, 20_000, 31)
    tried, accepted, relabelled, _ = counts
    assert tried > 10_000 and 0.1 < accepted / tried < 0.95 and relabelled > 1000
    assert chi_square_pvalue(np.bincount(after, minlength=len(states)), probs) > 1e-3
    assert np.abs(change_z_scores(states, before, after)).max() < 4.0


@pytest.mark.parametrize("discount", [0.0, 0.4])
def test_coordinate_draws_from_exact_draws_keep_the_joint_posterior(discount):
    """The coordinate draws alone (no proposals): one move from exact posterior draws leaves
    the law of the partition and the orders exact (checks as above)."""
    states, probs, before, after, counts = one_move_states(
        discount, 20_000, 37, marginal_utility_moves=0, marginal_coordinates=2
    )
    tried, _, relabelled, changed = counts
    assert tried == 0 and relabelled > 1000 and changed > 2000
    assert chi_square_pvalue(np.bincount(after, minlength=len(states)), probs) > 1e-3
    assert np.abs(change_z_scores(states, before, after)).max() < 4.0


def patch_mutant(monkeypatch, mutant, method):
    """Replace ``MarginalUtilityMoves.<method>`` by its source with ``mutant = (old, new)``
    substituted."""
    import inspect
    import textwrap

    source = textwrap.dedent(inspect.getsource(po_marginal_utilities.MarginalUtilityMoves))
    assert mutant[0] in source
    namespace = {}
    exec(source.replace(*mutant), vars(po_marginal_utilities), namespace)  # noqa: S102
    monkeypatch.setattr(
        po_marginal_utilities.MarginalUtilityMoves,
        method,
        getattr(namespace["MarginalUtilityMoves"], method),
    )


@pytest.mark.slow  # 30 s; shows the power of the check above once
@pytest.mark.parametrize(
    "mutant",
    [
        ("rng.gamma(counts - discount)", "rng.gamma(counts + 1.0 - discount)"),  # weights
        ("np.sum(new_s - log_s)", "np.sum(column[read_movable] - ll[movable, j])"),  # labels held
    ],
)
def test_one_move_check_has_power(monkeypatch, mutant):
    """Auxiliary weights ``Gamma(n_k + 1 - d)``, and a ratio that holds the movable lists'
    labels while they are redrawn afterwards, both fail the check of mean changes (largest
    ``|z|`` 4.9 and 5.7 with these seeds, against 1.6 for the move itself; Pearson's test
    over the states, dominated by the draws the move leaves alone, misses both)."""
    patch_mutant(monkeypatch, mutant, "_marginal_moves")
    states, _, before, after, _ = one_move_states(0.0, 20_000, 31)
    assert np.abs(change_z_scores(states, before, after)).max() > 4.5


@pytest.mark.slow  # 80 s; shows the power of the check of the coordinate draws once
@pytest.mark.parametrize(
    "mutant",
    [
        # the movable lists' labels held in the interval weights, then redrawn
        ("np.logaddexp(others, column[movable] + log_g)", "column[movable]"),
        # the anchors left out of the interval weights
        ("np.sum(column[own]) + np.sum(", "np.sum("),
    ],
)
def test_coordinate_check_has_power(monkeypatch, mutant):
    """Two wrong coordinate draws fail the check of mean changes with 60,000 draws (largest
    ``|z|`` above 4.5)."""
    patch_mutant(monkeypatch, mutant, "_coordinate_draw")
    states, _, before, after, _ = one_move_states(
        0.0, 60_000, 37, marginal_utility_moves=0, marginal_coordinates=2
    )
    assert np.abs(change_z_scores(states, before, after)).max() > 4.5


@pytest.mark.slow  # 29 s; the move is exact from exact joint draws in the default run (above)
def test_with_merge_split_only_matches_enumeration():
    """The move with merge--split proposals as the only other label move (no sweep), a
    Pitman--Yor discount: the chain's co-clustering and number of clusters match enumeration."""
    z = sample_tiny(
        n_slots=N_SLOTS,
        n_aux=1,
        discount=0.4,
        seed=23,
        sweep=False,
        merge_split=1,
        marginal_utility_moves=4,
        anchor_fraction=0.4,
    )
    co, k_dist = exact_clustered_total_orders(LISTS, N_ITEMS, P_NOISE, 1.0, 0.4)
    assert not mismatches(z, co, k_dist)


def test_scale_adapts_while_tuning_only():
    """``b`` follows the acceptance rate while PyMC tunes and stays fixed afterwards."""
    model, step = label_step(0.0, marginal_utility_moves=2, marginal_scale=0.9)
    rng = np.random.default_rng(0)
    point = model.initial_point(random_seed=0)

    def moves(n):
        for _ in range(n):
            labels = rng.integers(3, size=N_LISTS)
            utilities = rng.normal(size=(N_SLOTS, N_ITEMS, 1))
            point.update(z=labels, U=utilities)
            step._marginal_moves(point, labels, utilities, NOISE, 0.0)

    step.tune = True
    moves(20)
    tuned = step.marginal_scale
    assert tuned != 0.9
    step.tune = False
    moves(5)
    assert step.marginal_scale == tuned


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"marginal_utility_moves": -1}, "marginal_utility_moves"),
        ({"marginal_utility_moves": 1.5}, "marginal_utility_moves"),
        ({"anchor_fraction": 0.0}, "anchor_fraction"),
        ({"anchor_fraction": 1.0}, "anchor_fraction"),
        ({"marginal_scale": True}, "marginal_scale"),
        ({"marginal_scale": math.nan}, "marginal_scale"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        label_step(0.0, **kwargs)


def test_same_seed_same_draws_and_chains_differ():
    """All randomness of the move comes from the step's generator: ``pm.sample`` with the same
    ``random_seed`` repeats the draws, and its chains differ."""
    kwargs = {"sweep": False, "merge_split": 1, "marginal_utility_moves": 2, "draws": 60}
    first = sample_tiny(n_slots=N_SLOTS, n_aux=1, discount=0.0, seed=3, **kwargs)
    again = sample_tiny(n_slots=N_SLOTS, n_aux=1, discount=0.0, seed=3, **kwargs)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])


def test_sampler_stats_report_each_steps_moves():
    """The stats ``marginal_accepted``, ``marginal_relabelled`` and
    ``coordinate_order_changes`` are this step's share of the counts the move keeps; NaN when
    no proposal was made."""
    model, step = label_step(0.0, marginal_utility_moves=3, marginal_coordinates=2)
    point = model.initial_point(random_seed=0)
    totals = np.zeros(4, dtype=np.int64)
    for _ in range(40):
        before = step.marginal_counts.copy()
        point, (stats,) = step.step(point)
        tried, accepted, relabelled, changed = step.marginal_counts - before
        totals += (tried, accepted, relabelled, changed)
        if tried:
            assert stats["marginal_accepted"] == accepted / tried
        else:
            assert math.isnan(stats["marginal_accepted"])
        assert (stats["marginal_relabelled"], stats["coordinate_order_changes"]) == (
            relabelled,
            changed,
        )
    assert totals[0] > 0 and totals[1] > 0 and totals[2] > 0 and totals[3] > 0
    plain_model, without = label_step(0.0, marginal_utility_moves=0)
    _, (stats,) = without.step(plain_model.initial_point(random_seed=0))
    assert math.isnan(stats["marginal_accepted"]) and stats["marginal_relabelled"] == 0
