"""``CovariateShiftMetropolis``: assignment, the order-keeping move, bad input, seeds.

Its stationary law is checked against the exact posterior of the single-order model with item
covariates in ``tests/models/test_partial_orders.py`` (the default steps, and the
order-keeping moves alone)."""

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.compound import Competence
from scipy import special

import pymc_crp as pmc

LISTS = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2]]
X = np.array([[1.0], [0.0], [-1.0]])


def eta(point):
    return -np.log(-special.log_ndtr(point["U"])) + (X @ point["beta"])[:, None]


@pytest.mark.parametrize("builder", ["partial_order", "clustered_partial_orders"])
def test_assigned_to_beta_of_both_builders(builder):
    model = getattr(pmc.models, builder)(LISTS, 3, n_dims=2, covariates=X)
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert selected[pmc.CovariateShiftMetropolis] == [model.rvs_to_values[model["beta"]]]
    assert pm.Metropolis not in selected


def test_shift_keeps_every_read_order_and_holds_the_empty_slots():
    """Clustered model, labels in slots 0 and 2: a shift proposal maps those slots so that
    ``η`` is unchanged (the orders too) and leaves slots 1 and 3 as they were."""
    model = pmc.models.clustered_partial_orders(LISTS, 3, n_dims=2, max_clusters=4, covariates=X)
    with model:
        step = pmc.CovariateShiftMetropolis([model["beta"]], rng=np.random.default_rng(3))
    point = model.initial_point(random_seed=1)
    point["cluster"] = np.array([0, 2, 2, 0])
    trial, log_det = step._shift(point)
    assert np.isfinite(log_det) and not np.allclose(trial["beta"], point["beta"])
    before, after = eta(point), eta(trial)
    np.testing.assert_allclose(after[[0, 2]], before[[0, 2]], atol=1e-9)
    np.testing.assert_array_equal(trial["U"][[1, 3]], point["U"][[1, 3]])


def test_same_seed_same_draws_and_the_moves_are_accepted():
    model = pmc.models.partial_order(LISTS, 3, n_dims=1, covariates=X)
    runs = []
    for _ in range(2):
        with model:
            idata = pm.sample(
                60, tune=40, chains=1, random_seed=5, progressbar=False,
                compute_convergence_checks=False,
            )  # fmt: skip
        runs.append(idata)
    np.testing.assert_array_equal(runs[0].posterior["beta"], runs[1].posterior["beta"])
    stats = runs[0].sample_stats
    assert 0.0 < float(stats["covariate_shift_accepted"].mean()) < 1.0
    assert 0.0 < float(stats["covariate_accepted"].mean()) < 1.0


def test_bad_input_is_refused():
    model = pmc.models.partial_order(LISTS, 3, n_dims=1, covariates=X)
    with model:
        with pytest.raises(ValueError, match="covariate effects"):
            pmc.CovariateShiftMetropolis([model["p"]])
        with pytest.raises(ValueError, match="shift_scale"):
            pmc.CovariateShiftMetropolis([model["beta"]], shift_scale=0.0)
        with pytest.raises((ValueError, TypeError), match="centred"):
            pmc.CovariateShiftMetropolis([model["beta"]], centred=-1)
        with pytest.raises(ValueError, match="both 0"):
            pmc.CovariateShiftMetropolis([model["beta"]], centred=0, shift_moves=0)
    plain = pmc.models.partial_order(LISTS, 3, n_dims=1)  # no covariates: no beta to take
    assert pmc.CovariateShiftMetropolis.competence(plain["U"]) == Competence.INCOMPATIBLE
