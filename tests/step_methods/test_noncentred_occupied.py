"""The non-centred moves of rho and tau over the occupied slots only.

For an empty slot the map keeps the whitened value, so its prior density times its Jacobian
factor does not depend on the proposed value: differences of the occupied-slot log-density
between proposed values equal those of the full model density (every term, every slot) plus
the full Jacobian.
"""

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_crp as pmc
from pymc_crp.roles import HyperparameterRole, set_role
from pymc_crp.step_methods.noncentred import _FullMove, _OccupiedMove

N_SLOTS = 12


def clustered_model(n_dims=3, covariates=None):
    rng = np.random.default_rng(0)
    lists = [rng.permutation(6)[: 3 + i % 4].tolist() for i in range(30)]
    return pmc.models.clustered_partial_orders(
        lists, 6, n_dims=n_dims, max_clusters=N_SLOTS, covariates=covariates
    )


def random_point(model, seed, occupied=(1, 4, 9)):
    """Random utilities and hyperparameters; the lists in the slots ``occupied`` only."""
    rng = np.random.default_rng(seed)
    point = model.initial_point(random_seed=0)
    for name in ("U0", "U"):
        point[name] = rng.normal(size=point[name].shape)
    for name in ("rho_logodds__", "tau_interval__", "p_logodds__"):
        if name in point:
            point[name] = np.asarray(rng.normal(scale=0.7))
    point["cluster"] = np.asarray(occupied)[rng.integers(len(occupied), size=30)]
    return point


def steps(model):
    with model:
        return {
            name: pmc.NonCentredHyperparameterMetropolis([model[name]])
            for name in ("rho", "tau")
            if name in model.named_vars
        }


@pytest.mark.parametrize("name", ["rho", "tau"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_occupied_differences_equal_full_model_differences(name, seed):
    model = clustered_model()
    step = steps(model)[name]
    point = random_point(model, seed)
    assert step._occupied is not None
    logp = model.compile_logp(jacobian=True)  # every term, every slot
    value = float(point[step._value_name])
    old = float(step._from_value(np.asarray(value)))
    move = step._move(point, old)
    assert isinstance(move, _OccupiedMove)
    assert move.slots.tolist() == [1, 4, 9]

    def full(new_value):
        new = float(step._from_value(np.asarray(new_value)))
        proposal, log_det = step._joint_proposal(point, new_value, old, new)
        return logp(proposal) + log_det

    def occupied(new_value):
        return move.log_density(new_value, float(step._from_value(np.asarray(new_value))))

    values = [value - 1.1, value - 0.05, value + 0.3, value + 2.0]
    for a, b in zip(values[:-1], values[1:], strict=True):
        assert occupied(a) - occupied(b) == pytest.approx(full(a) - full(b), abs=1e-9)
    # the point itself (not mapped) against a proposal
    assert occupied(values[2]) - move.current() == pytest.approx(
        full(values[2]) - logp(point), abs=1e-9
    )
    # the point reached: every slot mapped, the occupied ones as evaluated
    new = float(step._from_value(np.asarray(values[1])))
    reached = move.point_at(values[1], new)
    expected = step._joint_proposal(point, values[1], old, new)[0]
    for key in expected:
        np.testing.assert_array_equal(reached[key], expected[key])


def test_occupied_ratio_is_exact_near_rho_one():
    """The closed-form slot prior keeps the ratio exact as ``1 - ρ → 2^-50`` (see the
    ``test_noncentred_ratio_is_exact_near_rho_one`` test of the full density)."""
    model = clustered_model()
    step = steps(model)["rho"]
    rng = np.random.default_rng(3)
    point = random_point(model, 5)
    v = 50 * math.log(2.0)
    point["rho_logodds__"] = np.array(v)
    whiten = math.exp(-0.5 * np.logaddexp(0.0, v))
    common = 0.5 * np.arange(6.0)[::-1, None]
    for name in ("U0", "U"):
        point[name] = common + whiten * rng.normal(size=point[name].shape)
    old = float(step._from_value(np.asarray(v)))
    move = step._move(point, old)
    for new_v in (v - 8.0, v - 1.0, v - 0.2, v + 0.2, v + 1.0):
        new = float(step._from_value(np.asarray(new_v)))
        got = move.log_density(new_v, new) - move.current()

        def prior(x):
            return -np.logaddexp(0.0, -x) - np.logaddexp(0.0, x) / 6.0

        assert got == pytest.approx(prior(new_v) - prior(v), abs=1e-6)


def hand_built(shift, dims=True):
    """The clustered model by hand, with the slot prior's mean ``τ U0 + shift``; the slots
    given by ``dims`` (the value variable takes any number of slots) or by ``shape``."""
    rng = np.random.default_rng(1)
    lists = np.array([rng.permutation(4) for _ in range(10)])
    size = {"dims": ("slot", "item", "dim")} if dims else {"shape": (6, 4, 2)}
    coords = {"slot": range(6), "item": range(4), "dim": range(2)}
    with pm.Model(coords=coords) as model:
        rho = pm.Beta("rho", 2.0, 2.0)
        tau = pm.Uniform("tau", 0.0, 1.0)
        mean = pmc.EquicorrelatedNormal("U0", mu=np.zeros((4, 2)), rho=rho)
        slots = pmc.EquicorrelatedNormal(
            "U", mu=tau * mean + shift, rho=rho, scale=pt.sqrt(1.0 - tau**2), **size
        )
        labels = pmc.CRP("cluster", 1.0, max_clusters=6, shape=10)
        pmc.PartialOrderLists("lists", slots, labels, 0.1, n_items=4, observed=lists)
    set_role(model, tau, HyperparameterRole("shrinkage", (slots,), mean))
    set_role(model, rho, HyperparameterRole("correlation", (mean, slots)))
    return model


def test_recognised_structures_and_fallbacks():
    # the hand-built model is recognised; with a slot mean the maps do not whiten, it is not
    assert all(s._occupied is not None for s in steps(hand_built(0.0)).values())
    assert all(s._occupied is None for s in steps(hand_built(0.5)).values())
    # the number of slots fixed in the value variable's type: not recognised
    assert all(s._occupied is None for s in steps(hand_built(0.0, dims=False)).values())
    # the lists read G^-1(Phi(U)) + x beta: not recognised
    covariates = np.random.default_rng(2).normal(size=(6, 1))
    assert all(s._occupied is None for s in steps(clustered_model(covariates=covariates)).values())
    # one order (no slots)
    single = pmc.models.partial_order([[0, 1, 2], [2, 0]], 3, n_dims=2)
    (step,) = steps(single).values()
    assert step._occupied is None
    point = single.initial_point(random_seed=0)
    assert isinstance(step._move(point, 0.5), _FullMove)


def test_same_seed_same_draws_and_full_path_agrees():
    """Same ``random_seed``, same draws; the occupied and the full evaluations give the same
    chain up to rounding (here: the same draws to 1e-9)."""
    model = clustered_model()

    def run(full=False):
        with model:
            step_list = list(steps(model).values())
            if full:
                for s in step_list:
                    s._occupied = None
            idata = pm.sample(
                draws=30,
                tune=20,
                chains=1,
                random_seed=11,
                step=step_list,
                progressbar=False,
                compute_convergence_checks=False,
            )
        return {v: idata.posterior[v].values for v in ("rho", "tau", "p", "alpha")}

    first, again, full = run(), run(), run(full=True)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
        np.testing.assert_allclose(first[name], full[name], rtol=1e-9)
