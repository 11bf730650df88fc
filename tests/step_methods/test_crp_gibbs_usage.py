"""``CRPGibbs`` as a PyMC step: reproducibility, parallel chains, pickling, structure errors.

The exactness of its draws is tested in ``test_crp_gibbs.py`` and
``test_crp_gibbs_exactness.py``; the numba sweep alone in ``tests/core/test_label_sweep.py``.
"""

from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from threadpoolctl import threadpool_limits

import pymc_crp as pmc

Y6 = np.array([-2.1, -1.8, -0.2, 0.3, 2.2, 2.5])
TAU = 3.0  # prior sd of the cluster means


def build_dp_model(y: np.ndarray) -> pm.Model:
    """A Dirichlet-process mixture of normals with unit sd (one slot per observation)."""
    n = y.shape[0]
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=n, n=n)
        mu = pm.Normal("mu", 0.0, TAU, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=y)
    return model


# --------------------------------------------------------------------------------------------
# 1. Reproducibility, parallel chains, pickling
# --------------------------------------------------------------------------------------------
SMALL = {"draws": 60, "tune": 40, "chains": 2}


@pytest.fixture(scope="module")
def small_model():
    return build_dp_model(Y6)


def small_run(model, seed, cores=1, **kwargs):
    with model, threadpool_limits(limits=1, user_api="blas"):
        if "step" not in kwargs and "z" in model.named_vars and model["z"] in model.free_RVs:
            # the step under test; pm.sample would give conjugate models to ConjugateCRPGibbs
            kwargs["step"] = [pmc.CRPGibbs([model["z"]])]
        return pm.sample(
            **SMALL,
            cores=cores,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )


def test_same_seed_same_draws_different_seed_different(small_model):
    a = small_run(small_model, 3)
    b = small_run(small_model, 3)
    c = small_run(small_model, 4)
    np.testing.assert_array_equal(a.posterior["z"].values, b.posterior["z"].values)
    np.testing.assert_array_equal(
        a.sample_stats["n_clusters"].values, b.sample_stats["n_clusters"].values
    )
    np.testing.assert_array_equal(a.posterior["mu"].values, b.posterior["mu"].values)
    assert not np.array_equal(a.posterior["z"].values, c.posterior["z"].values)
    z = a.posterior["z"].values
    assert not np.array_equal(z[0], z[1])  # chains differ


@pytest.mark.parametrize(
    "mp_ctx",
    [None, pytest.param("spawn", marks=pytest.mark.slow)],  # fork = spawn: test_reproducibility
)
def test_parallel_chains_match_sequential(small_model, mp_ctx):
    """PyMC seeds chain k from ``random_seed`` alone, so cores=1 and cores=2 agree."""
    seq = small_run(small_model, 11)
    par = small_run(small_model, 11, cores=2, mp_ctx=mp_ctx)
    np.testing.assert_array_equal(seq.posterior["z"].values, par.posterior["z"].values)
    np.testing.assert_array_equal(
        seq.sample_stats["n_clusters"].values, par.sample_stats["n_clusters"].values
    )
    np.testing.assert_allclose(seq.posterior["mu"].values, par.posterior["mu"].values)


@pytest.mark.parametrize(
    "dumps, loads", [(pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)]
)
def test_step_pickle_round_trip(small_model, dumps, loads):
    with small_model:
        step = pmc.CRPGibbs([small_model["z"]], membership_probs=True)
    step.set_rng(np.random.default_rng(8))
    point = small_model.initial_point(random_seed=0)
    point["z"] = np.array([0, 0, 1, 1, 2, 2])  # slots 3..5 empty: their means get refreshed
    if dumps is pickle.dumps:
        with small_model:
            nuts = pm.NUTS([small_model["mu"]])
        try:
            pickle.dumps(nuts)
        except AttributeError:
            pytest.skip(
                "PyMC's own NUTS does not pickle with the standard library in this PyMC "
                "(functools.partial in the model graph); PyMC uses cloudpickle"
            )
    copy = loads(dumps(step))
    assert copy.rng is not step.rng
    for _ in range(3):
        out_a, stats_a = step.step(point)
        out_b, stats_b = copy.step(point)
        assert out_a.keys() == out_b.keys()
        for name in out_a:
            np.testing.assert_array_equal(out_a[name], out_b[name])
        np.testing.assert_array_equal(
            stats_a[0]["membership_probs"], stats_b[0]["membership_probs"]
        )
        assert stats_a[0]["n_clusters"] == stats_b[0]["n_clusters"]
        point = out_a
    # the empty slots' means were refreshed (the step changes more than the labels)
    assert not np.array_equal(out_a["mu"], small_model.initial_point(random_seed=0)["mu"])


# --------------------------------------------------------------------------------------------
# 2. Structure checks
# --------------------------------------------------------------------------------------------
def _structure_model(kind):
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Normal("mu", 0.0, TAU, shape=6)
        if kind == "mean":
            pm.Normal("y", mu[z].mean(), 1.0, observed=Y6)
        elif kind == "reversed":
            pm.Normal("y", mu[z[::-1]], 1.0, observed=Y6)
        elif kind == "scalar":
            pm.Normal("y", mu[z], 1.0, observed=Y6)
            pm.Normal("s", mu[z].sum(), 1.0, observed=0.3)
        elif kind == "potential":
            pm.Normal("y", mu[z], 1.0, observed=Y6)
            pm.Potential("pot", -0.1 * (z > 0).sum())
        elif kind == "discrete_gate":  # local at b's initial value 0, not at b = 1
            b = pm.Bernoulli("b", 0.3)
            pm.Normal("y", mu[z] + b * mu[z].mean(), 1.0, observed=Y6)
        elif kind == "harmless_potential":
            pm.Normal("y", mu[z], 1.0, observed=Y6)
            pm.Potential("pot", -0.01 * (mu**2).sum())
    return model


@pytest.mark.parametrize(
    "kind, error, match",
    [
        ("mean", ValueError, "depends on labels other than"),
        ("reversed", ValueError, "depends on labels other than"),
        ("scalar", ValueError, "jointly"),
        ("potential", ValueError, "Potential pot depends on the labels"),
        ("discrete_gate", ValueError, "depends on labels other than"),
    ],
)
def test_structure_errors(kind, error, match):
    model = _structure_model(kind)
    with model, pytest.raises(error, match=match):
        pmc.CRPGibbs([model["z"]])
    with model, pytest.raises(error, match=match):  # the automatic assignment too
        pm.sample(draws=5, tune=5, chains=1, progressbar=False, compute_convergence_checks=False)


def test_potential_not_depending_on_labels_is_fine():
    model = _structure_model("harmless_potential")
    with model:
        step = pmc.CRPGibbs([model["z"]])
    point, stats = step.step(model.initial_point(random_seed=0))
    assert point["z"].shape == (6,)


def test_step_without_vars_uses_all_label_variables():
    model = build_dp_model(Y6)
    with model:
        step = pmc.CRPGibbs()
    assert [v.name for v in step.vars] == ["z"]


# --------------------------------------------------------------------------------------------
# 3. NaN in the likelihood matrix
# --------------------------------------------------------------------------------------------
def test_nan_loglik_raises_floating_point_error():
    """New data with a missing value (``pm.set_data`` accepts NaN) give NaN log-likelihoods.

    ``pm.sample`` would stop earlier (its start-value check), so the step is called directly.
    """
    with pm.Model() as model:
        y_data = pm.Data("y_data", Y6)
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Normal("mu", 0.0, TAU, shape=6)
        pm.Normal("y", mu[z], 1.0, observed=y_data)
        step = pmc.CRPGibbs([z])
    point = model.initial_point(random_seed=0)
    step.step(point)  # fine with complete data
    y_missing = Y6.copy()
    y_missing[2] = np.nan
    with model:
        pm.set_data({"y_data": y_missing})
    with pytest.raises(FloatingPointError, match="NaN"):
        step.step(point)
