"""The joint move of the noise ``p`` and the labels (``PartialOrderLabelGibbs(noise_moves=...)``).

Oracle (tests/oracles.py, ``exact_clustered_total_orders_random_noise``): 5 lists over 3 items,
``n_dims = 1``, independent slot utilities, ``z ~ CRP(1)``, ``p ~ Beta(1, 9)``; the posterior
of the partition and of ``p`` is a finite sum over set partitions and orders and a 1-D
integral. In the exactness test the joint move is the only move of ``p`` and of the labels
(the step of ``p`` leaves it alone), so any error in its ratio shows in ``p`` or the partition.
"""

import itertools

import numpy as np
import pymc as pm
import pytest
from mc_checks import z_scores
from oracles import exact_clustered_total_orders_random_noise, total_order_list_lik
from pymc.step_methods.compound import BlockedStep
from test_po_labels import mismatches
from test_replica_exchange import LISTS, N_ITEMS, N_LISTS, noise_mismatch

import pymc_crp as pmc
from pymc_crp.core.aux_label_sweep import new_cluster_weights
from pymc_crp.core.noise_path import noise_path, pool_sweep


def noise_model(n_slots):
    """``z ~ CRP(1)`` over ``n_slots`` slots, one-dimensional slot utilities, ``p ~ Beta(1, 9)``."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=n_slots, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((n_slots, N_ITEMS, 1)), rho=0.0)
        p = pm.Beta("p", 1.0, 9.0)
        pmc.PartialOrderLists("y", u, z, p, observed=LISTS)
    return model


class Held(BlockedStep):
    """A step that leaves its variable as it is (so that another step's side moves are the
    only ones)."""

    def __init__(self, value_var):
        self.vars = [value_var]

    def step(self, point):
        return point, []


def joint_move_only(model, **kwargs):
    with model:
        labels = pmc.PartialOrderLabelGibbs(
            [model["z"]],
            n_aux=2,
            merge_split=0,
            annealed_split_merge=0,
            anneal=0,
            sweep=False,
            noise_moves=1,
            **kwargs,
        )
        utilities = pmc.UtilityMetropolis([model["U"]])
        held = Held(model.rvs_to_values[model["p"]])
    return [labels, utilities, held]


def sample(model, steps, draws, seed):
    with model:
        return pm.sample(
            draws, tune=300, chains=2, cores=1, random_seed=seed, step=steps,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("n_slots", "path", "seed"),
    [
        pytest.param(12, 4, 11, marks=pytest.mark.slow),
        pytest.param(6, 8, 12, marks=pytest.mark.slow),
    ],
)
def test_joint_move_alone_samples_the_posterior(n_slots, path, seed):
    """12 slots: the pool (clusters seen + 2) is smaller than the slots, so its Hastings factor
    counts; 6 slots: the pool is every slot."""
    model = noise_model(n_slots)
    idata = sample(model, joint_move_only(model, noise_path=path), 3000, seed)  # passes at 3.5 MCSE
    co, k_dist, mean_p = exact_clustered_total_orders_random_noise(LISTS, N_ITEMS, 1.0, 9.0, 1.0)
    z = idata.posterior["z"].values
    assert not mismatches(z, co, k_dist)
    assert np.mean(np.any(z[:, 1:] != z[:, :-1], axis=-1)) > 0.05  # the labels follow p
    assert not noise_mismatch(idata, mean_p)
    accepted = idata.sample_stats["noise_path_accepted"].values
    assert 0.1 < np.mean(accepted) < 0.7


def joint_move_with_orders_only(model, **kwargs):
    """The joint move with the orders following (``noise_item_sweeps``) is the only move of
    the labels, of ``p`` and of the occupied slots' utilities (the label step still draws the
    empty slots from their prior)."""
    with model:
        labels = pmc.PartialOrderLabelGibbs(
            [model["z"]], n_aux=2, merge_split=0, annealed_split_merge=0, anneal=0, sweep=False,
            noise_moves=1,
            noise_item_sweeps=1, **kwargs,
        )  # fmt: skip
        held = [Held(model.rvs_to_values[model[name]]) for name in ("U", "p")]
    return [labels, *held]


@pytest.mark.parametrize(
    ("n_slots", "path", "all_slots", "draws", "seed"),
    [
        # slow (about 50 s): the opt-in move; its version without the orders and the reversible
        # update of the orders are tested exact in the default run
        pytest.param(6, 3, False, 3000, 21, marks=pytest.mark.slow),
        pytest.param(8, 3, True, 3000, 23, marks=pytest.mark.slow),
        pytest.param(12, 6, False, 8000, 22, marks=pytest.mark.slow),
    ],
)
def test_joint_move_with_orders_alone_samples_the_posterior(n_slots, path, all_slots, draws, seed):
    """Labels, ``p`` and the orders move only along the path, whose pool is the shipped one
    (its Hastings factor counts) or every slot; the utilities move at ``T - 1`` points, in one
    order or the reverse."""
    model = noise_model(n_slots)
    moves = joint_move_with_orders_only(model, noise_path=path, noise_all_slots=all_slots)
    idata = sample(model, moves, draws, seed)
    co, k_dist, mean_p = exact_clustered_total_orders_random_noise(LISTS, N_ITEMS, 1.0, 9.0, 1.0)
    z = idata.posterior["z"].values
    assert not mismatches(z, co, k_dist)
    assert not noise_mismatch(idata, mean_p)
    # the path moves the orders: slot 0's order changes between draws where it is occupied
    # (the label step redraws only the slots empty at the end of its step, and the path leaves
    # empty slots alone, so only the path's utility moves change an order occupied at both ends)
    orders = np.argsort(idata.posterior["U"].values[:, :, 0, :, 0], axis=-1)
    held = np.any(z[:, 1:] == 0, axis=-1) & np.any(z[:, :-1] == 0, axis=-1)
    moved = np.any(orders[:, 1:] != orders[:, :-1], axis=-1)
    assert held.sum() > 100
    assert moved[held].mean() > 0.02
    assert 0.2 < np.mean(idata.sample_stats["noise_path_accepted"].values) < 0.95


@pytest.mark.parametrize("reverse", [False, True])
def test_reversible_update_keeps_the_posterior_of_the_orders(reverse):
    """At fixed labels and ``p``, ``reversible_update`` in either order leaves the posterior of
    each occupied slot's order invariant: with ``n_dims = 1`` and independent items the 6
    orders of 3 items are equally likely a priori, so the posterior of slot ``s``'s order
    ``h`` is proportional to ``Π_{i: z_i = s} p(y_i | h, p)`` (brute force over the orders)."""
    model = noise_model(4)
    with model:
        step = pmc.UtilityMetropolis(
            [model["U"]], item_sweeps=1, cell_sweeps=0, column_moves=0, hmc_trajectories=0,
            rng=np.random.default_rng(31),
        )  # fmt: skip
    step.tune = False
    labels = np.array([0, 0, 0, 1, 1])
    noise = 0.2
    point = model.initial_point()
    point.update(z=labels, p_logodds__=np.asarray(np.log(noise / (1 - noise))))
    point["U"] = np.random.default_rng(32).standard_normal(point["U"].shape)
    perms = list(itertools.permutations(range(N_ITEMS)))
    seen = {0: [], 1: []}
    for _ in range(4000):
        point, _ = step.reversible_update(point, reverse)
        for slot in seen:
            best_first = tuple(np.argsort(-point["U"][slot, :, 0]))
            seen[slot].append(perms.index(best_first))
    for slot, draws in seen.items():
        members = [LISTS[i] for i in np.flatnonzero(labels == slot)]
        weights = np.array(
            [np.prod([total_order_list_lik(h, y, noise) for y in members]) for h in perms]
        )
        exact = weights / weights.sum()
        draws = np.asarray(draws)
        for k, prob in enumerate(exact):
            ind = (draws == k).astype(float)[None]
            assert abs(z_scores(ind, prob)) <= 4.5, (slot, k, ind.mean(), prob)


@pytest.mark.slow  # 31 s; the joint move alone and its reproducibility stay in the default run
def test_joint_move_on_top_of_the_default_moves():
    """With the sweep, merge-split and the noise's own step, at ``T = 6``."""
    model = noise_model(8)
    with model:
        steps = [
            pmc.PartialOrderLabelGibbs(
                [model["z"]],
                n_aux=2,
                merge_split=3,
                anneal=0,
                noise_moves=2,
                noise_path=6,
                sweeps=1,
            ),
            pmc.UtilityMetropolis([model["U"]]),
            pmc.HyperparameterMetropolis([model["p"]]),
        ]
    idata = sample(model, steps, 2500, 13)
    co, k_dist, mean_p = exact_clustered_total_orders_random_noise(LISTS, N_ITEMS, 1.0, 9.0, 1.0)
    assert not mismatches(idata.posterior["z"].values, co, k_dist)
    assert not noise_mismatch(idata, mean_p)


@pytest.mark.parametrize(
    "moves",
    [joint_move_only, pytest.param(joint_move_with_orders_only, marks=pytest.mark.slow)],
)
def test_same_seed_same_draws_with_the_joint_move(moves):
    model = noise_model(8)
    draws = [sample(model, moves(model), 60, 5).posterior["p"].values for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0][0], draws[0][1])  # chains differ


def test_orders_option_needs_an_integer():
    model = noise_model(6)
    with model, pytest.raises(ValueError, match="noise_item_sweeps must be an integer"):
        pmc.PartialOrderLabelGibbs([model["z"]], noise_moves=1, noise_item_sweeps=-1)
    with model, pytest.raises(ValueError, match="needs noise_moves > 0"):
        pmc.PartialOrderLabelGibbs([model["z"]], noise_item_sweeps=1)


def test_reversible_update_refuses_moves_without_an_adjoint():
    model = noise_model(6)
    with model:
        step = pmc.UtilityMetropolis(
            [model["U"]], coordinate_items=1, cell_sweeps=0, column_moves=0
        )
    with pytest.raises(ValueError, match="reversible_update needs"):
        step.reversible_update(model.initial_point(), reverse=True)


def test_path_at_constant_noise_has_no_weight_and_keeps_the_pool():
    """``p' = p``: every ratio of the path is 1 (log W = 0); labels stay in the pool."""
    rng = np.random.default_rng(0)
    n_lists, width = 40, 4
    ratios = rng.uniform(0.05, 1.0, size=(3, n_lists, width))
    lengths = np.full(n_lists, width + 1, dtype=np.int64)
    pool = np.array([1, 4, 6], dtype=np.int64)
    labels = rng.choice([1, 4], size=n_lists).astype(np.int64)
    counts = np.bincount(labels, minlength=9).astype(np.int64)
    weights = new_cluster_weights(1.0, 0.2, 9)
    log_w, changed = noise_path(
        rng, ratios, lengths, labels, counts, pool, 9, np.full(6, 0.2), 1.0, weights, 0.2
    )
    assert log_w == 0.0
    assert changed > 0
    assert set(np.unique(labels)) <= {1, 4, 6}
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=9))


def test_path_with_every_slot_taken():
    """All ``L`` slots occupied (the truncation bites): a label has no empty slot to found a
    cluster in, and the sweep must not divide by ``L - K = 0``."""
    rng = np.random.default_rng(1)
    n_lists, width, n_slots = 12, 3, 3
    ratios = rng.uniform(0.05, 1.0, size=(n_slots, n_lists, width))
    lengths = np.full(n_lists, width + 1, dtype=np.int64)
    labels = np.arange(n_lists, dtype=np.int64) % n_slots
    counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
    pool = np.arange(n_slots, dtype=np.int64)
    weights = new_cluster_weights(1.0, 0.0, n_slots)
    changed = pool_sweep(
        rng, ratios, lengths, labels, counts, pool, 0.2, n_slots, 1.0, weights, 0.0
    )
    assert changed > 0
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=n_slots))
    log_w, _ = noise_path(
        rng, ratios, lengths, labels, counts, pool, n_slots, np.linspace(0.1, 0.3, 5), 1.0,
        weights, 0.0,
    )  # fmt: skip
    assert np.isfinite(log_w)


def test_joint_move_needs_a_free_scalar_noise():
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((6, N_ITEMS, 1)), rho=0.0)
        pmc.PartialOrderLists("y", u, z, 0.1, observed=LISTS)
        with pytest.raises(ValueError, match="noise_moves needs the lists' noise"):
            pmc.PartialOrderLabelGibbs([z], noise_moves=1)
    model = noise_model(6)
    with model:
        for bad in ({"noise_moves": -1}, {"noise_moves": 1, "noise_path": 0}):
            with pytest.raises(ValueError, match="must be an integer"):
                pmc.PartialOrderLabelGibbs([model["z"]], **bad)
        with pytest.raises(ValueError, match="noise_scale"):
            pmc.PartialOrderLabelGibbs([model["z"]], noise_moves=1, noise_scale=0.0)
