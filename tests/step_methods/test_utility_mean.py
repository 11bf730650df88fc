"""UtilityMeanGibbs: the collapsed density of the occupied slots and the moves of tau/rho.

The exact posteriors of tau and rho with these moves in place are checked by
test_noncentred.py (the builder assigns them); here: the density with U0 integrated out
against a dense multivariate normal, and the stationary distribution of the hyperparameters
when the lists carry no information (their prior).
"""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_crp as pmc
from pymc_crp.core.utility_hierarchy import collapsed_log_density, hierarchy_statistics


def dense_log_density(slots, tau, rho):
    n, m, k = slots.shape
    sigma = (1 - rho) * np.eye(k) + rho
    across = (1 - tau**2) * np.eye(n) + tau**2
    cov = np.kron(across, sigma)
    return sum(
        stats.multivariate_normal(np.zeros(n * k), cov).logpdf(slots[:, j].ravel())
        for j in range(m)
    )


@pytest.mark.parametrize("n", [1, 2, 5])
def test_collapsed_density_matches_the_dense_normal(n):
    rng = np.random.default_rng(n)
    slots = rng.normal(size=(n, 4, 3))
    settings = [(0.3, 0.2), (0.8, 0.5), (0.05, 0.9), (0.99, 0.0)]
    ours = np.array([collapsed_log_density(slots, t, r) for t, r in settings])
    dense = np.array([dense_log_density(slots, t, r) for t, r in settings])
    np.testing.assert_allclose(ours - ours[0], dense - dense[0], atol=1e-8)
    statistics = hierarchy_statistics(slots)  # what the moves reuse across tau and rho
    reused = [collapsed_log_density(statistics, t, r) for t, r in settings]
    np.testing.assert_array_equal(reused, ours)
    assert collapsed_log_density(slots, 1.0, 0.2) == -np.inf


@pytest.mark.slow  # about 80 s each; the collapsed moves are in test_noncentred's exact tau test
@pytest.mark.parametrize("n_dims", [2, 3])
def test_collapsed_moves_keep_the_prior_without_information(n_dims):
    """p = 1: the lists carry no information, so tau ~ U(0, 1) and rho ~ Beta(2, 2) whatever
    the labels; only UtilityMeanGibbs moves tau and rho here (the others are held fixed). With
    three columns its cycles include the order-keeping trajectories."""
    rng = np.random.default_rng(4)
    lists = [rng.permutation(4).tolist() for _ in range(6)]
    model = pmc.models.clustered_partial_orders(
        lists, 4, n_dims=n_dims, noise=1.0, rho_prior=(2.0, 2.0), concentration=1.0
    )
    with model:
        mean = pmc.UtilityMeanGibbs([model["U0"]])
        assert mean.cone_trajectories == (n_dims == 3)
        steps = [
            mean,
            pmc.PartialOrderLabelGibbs([model["cluster"]], sweeps=1),
            pmc.UtilityMetropolis([model["U"]]),
        ]
        idata = pm.sample(
            1500,
            tune=200,
            chains=2,
            cores=1,
            random_seed=3,
            step=steps,
            progressbar=False,
            compute_convergence_checks=False,
        )
    tau = idata.posterior["tau"].values.ravel()
    rho = idata.posterior["rho"].values.ravel()
    assert stats.kstest(tau[::5], stats.uniform().cdf).pvalue > 1e-3
    assert stats.kstest(rho[::5], stats.beta(2, 2).cdf).pvalue > 1e-3
    assert stats.kstest(rho[::5], stats.beta(2, 2.8).cdf).pvalue < 1e-3  # power
    accept = idata.sample_stats["collapsed_accept"].values.mean()
    assert 0.2 < accept < 0.95


def test_collapsed_moves_validated():
    model = pmc.models.clustered_partial_orders([[0, 1], [1, 0]], 2, n_dims=2)
    with pytest.raises(ValueError, match="collapsed_moves"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, collapsed_moves=-1)
    with pytest.raises(TypeError, match="collapsed_moves"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, collapsed_moves=0.5)


def test_cycles_default_and_validation():
    """Ten cycles by default where the lists read the slots through orders, with item
    covariates too (cell draws in the Gumbel scores)."""
    lists = [[0, 1, 2], [2, 1, 0], [1, 0, 2]]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=2, max_clusters=3)
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model).cycles == 10
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model, cycles=1).cycles == 1
    with pytest.raises(TypeError, match="cycles"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cycles=2.0)
    with pytest.raises(ValueError, match="cycles"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cycles=0)
    covariates = np.eye(3)[:, :1]
    model = pmc.models.clustered_partial_orders(
        lists, 3, n_dims=2, max_clusters=3, covariates=covariates
    )
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model).cycles == 10


def test_cycles_keep_every_score_order_with_item_covariates():
    """With item covariates the cycles move the occupied slots' utilities and keep the
    dominance orders of their Gumbel scores ``g(U) + xβ`` (the orders of ``U`` may change)."""
    rng = np.random.default_rng(1)
    lists = [rng.permutation(5).tolist() for _ in range(12)]
    x = rng.normal(size=(5, 1))
    model = pmc.models.clustered_partial_orders(
        lists, 5, n_dims=2, noise=0.05, max_clusters=6, covariates=x
    )
    with model:
        step = pmc.UtilityMeanGibbs([model["U0"]], rng=np.random.default_rng(2))
        point = model.initial_point(random_seed=3)
    point["beta"] = np.array([2.0])
    occupied = np.unique(point["cluster"])

    def orders(u):
        eta = -np.log(-special.log_ndtr(u)) + (x @ point["beta"])[:, None]
        return np.all(eta[:, :, None, :] > eta[:, None, :, :], axis=-1)

    new, _ = step.step(point)
    before, after = point["U"][occupied], new["U"][occupied]
    assert np.array_equal(orders(before), orders(after))
    assert not np.allclose(before, after)


def test_cycles_keep_every_order_and_move_tau():
    """One step with five cycles at informative lists: the occupied slots' orders are those
    they had (their utilities moved), and tau moved."""
    rng = np.random.default_rng(1)
    lists = [rng.permutation(5).tolist() for _ in range(12)]
    model = pmc.models.clustered_partial_orders(lists, 5, n_dims=2, noise=0.05, max_clusters=6)
    with model:
        step = pmc.UtilityMeanGibbs([model["U0"]], cycles=5, rng=np.random.default_rng(2))
        point = model.initial_point(random_seed=3)
    labels = point["cluster"]
    occupied = np.unique(labels)

    def orders(u):
        return np.all(u[:, :, None, :] > u[:, None, :, :], axis=-1)

    new, _ = step.step(point)
    before, after = point["U"][occupied], new["U"][occupied]
    assert np.array_equal(orders(before), orders(after))
    assert not np.allclose(before, after)
    assert new["tau_interval__"] != point["tau_interval__"]


def test_cone_trajectories_default_and_validation():
    """One order-keeping trajectory per slot and cycle by default with three or more columns
    over at most 32 items; none with two (every wall changes the order), over more items (the
    walls grow quadratically with them) or without the cycles' order-keeping moves, where
    asking for them is an error."""
    lists = [[0, 1, 2], [2, 1, 0], [1, 0, 2]]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=3, max_clusters=3)
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model).cone_trajectories == 1
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model, cycles=1).cone_trajectories == 0
    assert (
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cone_trajectories=3).cone_trajectories == 3
    )
    with pytest.raises(TypeError, match="cone_trajectories"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cone_trajectories=1.0)
    with pytest.raises(ValueError, match="cone_trajectories must be >= 0"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cone_trajectories=-1)
    with pytest.raises(ValueError, match="cone_trajectories > 0 needs"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cycles=1, cone_trajectories=1)
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=2, max_clusters=3)
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model).cone_trajectories == 0
    for n_items, default in ((32, 1), (33, 0)):  # as the lists' Hamiltonian trajectories
        last = [[0, n_items - 1, 1], [n_items - 1, 2, 0]]
        model = pmc.models.clustered_partial_orders(last, n_items, n_dims=3, max_clusters=3)
        assert pmc.UtilityMeanGibbs([model["U0"]], model=model).cone_trajectories == default
        assert pmc.UtilityMetropolis([model["U"]], model=model).hmc_trajectories == default
    assert (
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cone_trajectories=2).cone_trajectories == 2
    )
    model = pmc.models.clustered_partial_orders(
        lists, 3, n_dims=3, max_clusters=3, covariates=np.eye(3)[:, :1]
    )
    assert pmc.UtilityMeanGibbs([model["U0"]], model=model).cone_trajectories == 0
    with pytest.raises(ValueError, match="no item covariates"):
        pmc.UtilityMeanGibbs([model["U0"]], model=model, cone_trajectories=1)


@pytest.mark.parametrize("cone", [0, 1])
def test_trajectories_change_rank_patterns_within_the_orders(cone):
    """Three columns: with the trajectories the cycles change the columns' rank patterns of
    the occupied slots while keeping their orders; without them the patterns stay (the cell
    draws and column moves keep them, the column swaps permute them)."""
    rng = np.random.default_rng(5)
    lists = [rng.permutation(6).tolist() for _ in range(12)]
    model = pmc.models.clustered_partial_orders(lists, 6, n_dims=3, noise=0.05, max_clusters=4)
    with model:
        step = pmc.UtilityMeanGibbs(
            [model["U0"]], cycles=5, cone_trajectories=cone, rng=np.random.default_rng(6)
        )
        point = model.initial_point(random_seed=7)
    point["U"] = rng.normal(size=point["U"].shape)
    occupied = np.unique(point["cluster"])

    def orders(u):
        return np.all(u[:, :, None, :] > u[:, None, :, :], axis=-1)

    new = point
    for _ in range(3):
        new, _ = step.step(new)
    before, after = point["U"][occupied], new["U"][occupied]
    assert np.array_equal(orders(before), orders(after))

    def patterns(u):  # each slot's columns' rank patterns, up to the columns' order (swaps)
        return [sorted(map(tuple, np.argsort(slot, axis=0).T)) for slot in u]

    assert (patterns(before) == patterns(after)) == (cone == 0)
