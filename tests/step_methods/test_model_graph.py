"""Prior draws and term densities from the model graph (``pymc_crp.step_methods.model_graph``)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_crp as pmc
from pymc_crp.step_methods.model_graph import (
    CHECK_MODE,
    compile_point_function,
    prior_draw_function,
    term_logps,
)

N_BATCH = 400


def _draw(model, name, batch, seed=3):
    fn, rng = prior_draw_function(model, [model[name]], batch=batch)
    rng.set_value(np.random.default_rng(seed))
    return np.asarray(fn(model.initial_point())[0])


def test_batched_draws_are_independent_prior_draws_given_the_parents():
    """Each of ``batch`` copies is a fresh draw of ``N(m, 2²)`` at the point's ``m``."""
    with pm.Model() as model:
        m = pm.Normal("m", 0.0, 1.0, initval=1.5)
        pm.Normal("x", m, 2.0, shape=(3, 4))
    draws = _draw(model, "x", N_BATCH)
    assert draws.shape == (N_BATCH, 3, 4)
    n = draws.size
    # Mean within 4 Monte Carlo standard errors; the standard deviation within 4 of its
    # standard errors (about sigma / sqrt(2n)).
    assert abs(draws.mean() - 1.5) < 4 * 2.0 / np.sqrt(n)
    assert abs(draws.std() - 2.0) < 4 * 2.0 / np.sqrt(2 * n)
    # Copies are not one draw repeated: the spread over the batch axis is the prior's.
    assert abs(draws.std(axis=0).mean() - 2.0) < 0.1


def test_batched_equicorrelated_draws_keep_the_correlation():
    """Slot utilities ``(L, M, K)`` of an equicorrelated normal: the batch axis comes first and
    the ``K`` columns of a row keep the correlation ``ρ``."""
    rho = 0.6
    with pm.Model() as model:
        pmc.EquicorrelatedNormal("U", mu=np.zeros(3), rho=rho, scale=1.0, shape=(5, 7, 3))
    draws = _draw(model, "U", N_BATCH).reshape(-1, 3)
    assert draws.shape == (N_BATCH * 35, 3)
    corr = np.corrcoef(draws.T)[np.triu_indices(3, 1)]
    # The standard error of a correlation is about (1 - ρ²) / sqrt(n).
    assert np.all(np.abs(corr - rho) < 4 * (1 - rho**2) / np.sqrt(draws.shape[0]))


def test_batch_refuses_a_transformed_variable():
    with pm.Model() as model:
        pm.HalfNormal("s", 1.0, shape=2)
    with pytest.raises(ValueError, match="untransformed"):
        prior_draw_function(model, [model["s"]], batch=3)


def _at(model, graph, point):
    fn = model.compile_fn(graph, inputs=model.value_vars, on_unused_input="ignore")
    return fn(point)


def test_term_logps_with_and_without_jacobians_match_pymc():
    """Each term equals PyMC's own ``model.logp(vars=[rv])`` with and without the Jacobians of
    the transforms, at a point away from the initial one."""
    with pm.Model() as model:
        s = pm.HalfNormal("s", 2.0)
        p = pm.Beta("p", 2.0, 3.0)
        pm.Normal("x", p, s, observed=[0.3, -1.2])
    point = {"s_log__": np.asarray(0.4), "p_logodds__": np.asarray(-0.7)}
    for jacobian in (True, False):
        terms = term_logps(model, jacobian=jacobian)
        for rv in model.basic_RVs:
            ours = _at(model, terms[rv].sum(), point)
            pymc = _at(model, model.logp(vars=[rv], jacobian=jacobian), point)
            assert np.isclose(ours, pymc, rtol=1e-12, atol=0), (rv.name, jacobian)
    # the Jacobian of s's log transform is log s = 0.4: the two kinds differ by it
    with_jac, without = term_logps(model), term_logps(model, jacobian=False)
    assert np.isclose(_at(model, with_jac[s].sum() - without[s].sum(), point), 0.4)


def test_scalar_steps_build_the_model_density_once(monkeypatch):
    """PyMC's ``model.logp`` builds every term of the model whatever ``vars`` asks for, so the
    steps take their terms from the per-model :func:`term_logps`: the three scalar steps of a
    clustered partial-order model build the model's terms once with Jacobians and once
    without, not once per step."""
    model = pmc.models.clustered_partial_orders([[0, 1, 2], [2, 1], [1, 0, 2]], 3, n_dims=2)
    calls = []
    logp = pm.Model.logp

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("jacobian", True))
        return logp(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "logp", counting)
    with model:
        for name in ("rho", "tau"):
            pmc.NonCentredHyperparameterMetropolis([model[name]])
        pmc.HyperparameterMetropolis([model["p"]])
    assert sorted(calls) == [False, True]


def test_point_functions_of_equal_graphs_are_compiled_once(monkeypatch):
    """Graphs built apart that compute the same on the same value variables (as the steps of
    a model build them) share one compiled function; another graph, other compile options,
    one output against a list of one, or another model compile their own, and each returns
    what its graph computes."""
    with pm.Model() as model:
        x = pm.Normal("x", shape=3)
        pm.HalfNormal("s")
    with pm.Model() as other:
        pm.Normal("x", shape=3)
    compiled = []
    compile_fn = pm.Model.compile_fn

    def counting(self, *args, **kwargs):
        compiled.append(self)
        return compile_fn(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "compile_fn", counting)
    value, scale = model.rvs_to_values[x], model.rvs_to_values[model["s"]]
    first = compile_point_function(model, pt.sum(value) * 2.0)
    again = compile_point_function(model, pt.sum(value) * 2.0)
    assert again is first and len(compiled) == 1
    point = {"x": np.array([1.0, 2.0, 3.5]), "s_log__": np.array(0.3)}
    assert float(first(point)) == 13.0
    different = [
        compile_point_function(model, pt.sum(value) * 3.0),
        compile_point_function(model, pt.sum(value) * 2.0 + pt.exp(scale)),
        compile_point_function(model, [pt.sum(value) * 2.0]),
        compile_point_function(model, pt.sum(value) * 2.0, {"mode": "FAST_COMPILE"}),
        compile_point_function(other, pt.sum(other.rvs_to_values[other["x"]]) * 2.0),
    ]
    assert len(compiled) == 6 and compiled[-1] is other
    assert len({id(f) for f in [first, *different]}) == 6
    values = [f(point) for f in different]
    assert float(values[0]) == 19.5
    assert float(values[1]) == pytest.approx(13.0 + np.exp(0.3), rel=1e-12)
    assert isinstance(values[2], list) and float(values[2][0]) == 13.0
    assert float(values[3]) == 13.0 and float(values[4]) == 13.0


def test_check_mode_gives_the_model_density_and_minus_infinity_out_of_support():
    """The set-up checks' mode (no graph rewriting) computes what the default mode computes,
    and an invalid parameter gives ``-inf`` as in PyMC's compiled densities, not an error."""
    with pm.Model() as model:
        s = pm.Normal("s")
        pm.Normal("y", 0.0, s, observed=[1.0, -0.4])
    check = compile_point_function(model, model.logp(), {"mode": CHECK_MODE})
    default = compile_point_function(model, model.logp())
    for value in (0.7, 1.3):
        point = {"s": np.array(value)}
        assert float(check(point)) == pytest.approx(float(default(point)), rel=1e-12)
    assert float(check({"s": np.array(-1.0)})) == -np.inf == float(default({"s": np.array(-1.0)}))
