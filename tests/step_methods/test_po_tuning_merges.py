"""Tuning-phase merges of PartialOrderLabelGibbs (``tune_merges``): the criterion merges a
group split at random and keeps two different groups apart, they run only while tuning at
their schedule, and their arguments."""

import numpy as np
import pymc as pm
import pytest

import pymc_crp as pmc
import pymc_crp.step_methods.po_annealed_split_merge as annealed
from pymc_crp.step_methods.po_prior_split_merge import SplitMergeState

N_ITEMS, N_PER_GROUP = 5, 40


def two_groups(seed=0):
    """Lists near the identity (group 0) and near its reverse (group 1): each a total order
    with one random adjacent swap."""
    rng = np.random.default_rng(seed)
    lists, groups = [], []
    for group in (0, 1):
        base = np.arange(N_ITEMS) if group == 0 else np.arange(N_ITEMS)[::-1]
        for _ in range(N_PER_GROUP):
            order = base.copy()
            i = rng.integers(N_ITEMS - 1)
            order[[i, i + 1]] = order[[i + 1, i]]
            lists.append(order.tolist())
            groups.append(group)
    return lists, np.array(groups)


def merges_from(labels, utilities, lists):
    """Labels after one call of the tuning-phase merges from ``labels`` and slot
    ``utilities``."""
    model = pmc.models.clustered_partial_orders(lists, N_ITEMS, n_dims=1, max_clusters=4)
    with model:
        step = pmc.PartialOrderLabelGibbs([model["cluster"], model["alpha"]], rng=5)
    point = model.initial_point()
    point["cluster"] = labels
    step._beta = 1.0
    noise = float(step._term.noise_fn(point))
    ll = np.zeros((labels.size, 4))
    for slot in np.unique(labels):
        ll[:, slot] = step._column(utilities[slot], np.arange(labels.size), noise)
    moves = SplitMergeState(
        labels.copy(), ll, utilities.copy(), noise, step._concentration.new_cluster_weights(),
        0.0, lambda: step._prior_draws(point)[0],
    )  # fmt: skip
    made = step._tuning_merges(moves, step._slot_prior(point))
    assert made == np.unique(labels).size - np.unique(moves.labels).size
    return moves.labels


def fitted_utilities(lists, groups, n_slots=4):
    """Slot ``g`` ordered like group ``g``'s base order (the direction that gives its lists the
    higher likelihood); the other slots at zero."""
    utilities = np.zeros((n_slots, N_ITEMS, 1))
    model = pmc.models.clustered_partial_orders(lists, N_ITEMS, n_dims=1, max_clusters=n_slots)
    with model:
        step = pmc.PartialOrderLabelGibbs([model["cluster"]], tune_merges=0)
    step._beta = 1.0
    noise = 0.1
    for group in (0, 1):
        rows = np.flatnonzero(groups == group)
        ramp = np.linspace(-1.0, 1.0, N_ITEMS)[:, None]
        base = ramp if group == 0 else ramp[::-1]
        score = [step._column(u, rows, noise).sum() for u in (base, -base)]
        utilities[group] = base if score[0] >= score[1] else -base
    return utilities


def test_a_group_split_at_random_is_merged():
    """One group's lists in two clusters with the same order: merging gains the partition
    prior's ``n H`` and loses no likelihood (with the prior ratio's sign flipped, no merge)."""
    lists, groups = two_groups()
    rows = groups == 0
    lists = [lst for lst, keep in zip(lists, rows, strict=True) if keep]
    labels = np.random.default_rng(1).integers(0, 2, size=len(lists))
    utilities = fitted_utilities(lists + lists, np.repeat([0, 1], len(lists)))
    utilities[1] = utilities[0]
    assert np.unique(merges_from(labels, utilities, lists)).size == 1


def test_two_different_groups_stay_apart():
    """Lists near an order and near its reverse, each group in its own cluster with a fitted
    order: merging would lose far more likelihood than the partition prior gains."""
    lists, groups = two_groups()
    utilities = fitted_utilities(lists, groups)
    after = merges_from(groups.copy(), utilities, lists)
    np.testing.assert_array_equal(after, groups)


def test_only_while_tuning_on_schedule(monkeypatch):
    """Tried at tuning iterations ``anneal``, ``anneal + 100``, ... only; never on kept
    draws."""
    lists, _ = two_groups()
    seen = []

    def record(self, moves, prior):
        seen.append((self._iteration - 1, self.tune))
        return 0

    monkeypatch.setattr(annealed.AnnealedSplitMerge, "_tuning_merges", record)
    model = pmc.models.clustered_partial_orders(lists[:12], N_ITEMS, n_dims=1, max_clusters=4)
    with model:
        step = pmc.PartialOrderLabelGibbs([model["cluster"], model["alpha"]], anneal=150)
        idata = pm.sample(
            60, tune=320, chains=1, cores=1, step=[step], random_seed=3, progressbar=False,
            compute_convergence_checks=False, discard_tuned_samples=False,
        )  # fmt: skip
    assert seen == [(200, True), (300, True)]
    assert int(idata.sample_stats["tune_merges"].sum()) == 0


def test_arguments_and_defaults():
    lists, _ = two_groups()
    model = pmc.models.clustered_partial_orders(lists[:6], N_ITEMS, n_dims=1)
    with model:
        assert pmc.PartialOrderLabelGibbs([model["cluster"]]).tune_merges == 3
        assert pmc.PartialOrderLabelGibbs([model["cluster"]], tune_merges=0).tune_merges == 0
        for bad in (-1, 1.5, True, "2"):
            with pytest.raises(ValueError, match="tune_merges"):
                pmc.PartialOrderLabelGibbs([model["cluster"]], tune_merges=bad)
    with pm.Model():  # the merges need the equicorrelated slot prior's conditionals
        z = pmc.CRP("z", 1.0, max_clusters=4, n=2)
        u = pm.Normal("u", 0.0, 1.0, shape=(4, 3, 1))
        pmc.PartialOrderLists("y", u, z, 0.1, observed=[[0, 1, 2], [2, 1, 0]])
        assert pmc.PartialOrderLabelGibbs([z]).tune_merges == 0
        with pytest.raises(ValueError, match="tune_merges needs an EquicorrelatedNormal"):
            pmc.PartialOrderLabelGibbs([z], tune_merges=2)
