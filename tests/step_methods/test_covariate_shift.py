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


def _clustered_shift_setup(mean_follows):
    model = pmc.models.clustered_partial_orders(LISTS, 3, n_dims=2, max_clusters=4, covariates=X)
    with model:
        step = pmc.CovariateShiftMetropolis([model["beta"]], mean_follows=mean_follows)
    point = model.initial_point(random_seed=1)
    point["cluster"] = np.array([0, 2, 2, 0])
    return model, step, point


def test_shift_keeps_every_read_order_and_holds_the_empty_slots():
    """Clustered model, labels in slots 0 and 2, ``mean_follows=False``: a shift proposal maps
    those slots so that ``η`` is unchanged (the orders too) and leaves slots 1 and 3 and ``U0``
    as they were."""
    _, step, point = _clustered_shift_setup(mean_follows=False)
    trial, log_det = step._shift(point, np.array([0.7]))
    assert np.isfinite(log_det) and np.allclose(trial["beta"], point["beta"] + 0.7)
    before, after = eta(point), eta(trial)
    np.testing.assert_allclose(after[[0, 2]], before[[0, 2]], atol=1e-9)
    assert not np.allclose(trial["U"][[0, 2]], point["U"][[0, 2]])
    np.testing.assert_array_equal(trial["U"][[1, 3]], point["U"][[1, 3]])
    np.testing.assert_array_equal(trial["U0"], point["U0"])


def _flat(point):
    return np.concatenate([point["U"].ravel(), point["U0"].ravel()])


def test_shift_with_the_mean_following_is_a_bijection_with_its_jacobian():
    """``mean_follows=True`` (the default): the read slots keep ``η``; ``U0`` moves by
    ``c m`` and the empty slots keep their deviations ``U - τ U0``; ``-δ`` undoes the map; and
    the log-determinant it reports is that of the whole map of ``(U, U0)`` (central
    differences)."""
    model, step, point = _clustered_shift_setup(mean_follows=True)
    tau = float(special.expit(point["tau_interval__"]))
    delta = np.array([0.7])
    trial, log_det = step._shift(point, delta)
    np.testing.assert_allclose(eta(trial)[[0, 2]], eta(point)[[0, 2]], atol=1e-9)
    assert not np.allclose(trial["U0"], point["U0"])
    empty = [1, 3]
    np.testing.assert_allclose(
        trial["U"][empty] - tau * trial["U0"], point["U"][empty] - tau * point["U0"], atol=1e-12
    )
    moved = trial["U"][[0, 2]] - point["U"][[0, 2]]
    c = 2 * tau / (1 - tau**2 + 2 * tau**2)
    np.testing.assert_allclose(trial["U0"] - point["U0"], c * moved.mean(axis=0), atol=1e-12)
    back, back_log_det = step._shift(trial, -delta)
    np.testing.assert_allclose(_flat(back), _flat(point), atol=1e-9)
    np.testing.assert_allclose(back["beta"], point["beta"], atol=1e-12)
    assert back_log_det == pytest.approx(-log_det, abs=1e-9)

    def mapped(flat):
        n_u = point["U"].size
        state = {
            **point,
            "U": flat[:n_u].reshape(point["U"].shape),
            "U0": flat[n_u:].reshape(point["U0"].shape),
        }
        return _flat(step._shift(state, delta)[0])

    x0, h = _flat(point), 1e-6
    jacobian = np.empty((x0.size, x0.size))
    for i in range(x0.size):
        e = np.zeros_like(x0)
        e[i] = h
        jacobian[:, i] = (mapped(x0 + e) - mapped(x0 - e)) / (2 * h)
    sign, numeric = np.linalg.slogdet(jacobian)
    assert sign > 0 and numeric == pytest.approx(log_det, abs=1e-5)


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
