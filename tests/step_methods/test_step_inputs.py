"""Bad inputs to the step methods.

Rows ``(callable, kwargs, error, match)`` (see ``tests/bad_inputs.py``); behaviours that are
not errors (documented defaults) are checked by the tests after the table.
"""

import logging

import numpy as np
import pymc as pm
import pytest
from bad_inputs import (
    NAN,
    case_id,
    check_raises,
    covariate_model,
    hpo_model,
    step_on,
)

import pymc_crp as pmc

CASES = [
    # ---- step methods -----------------------------------------------------------------------
    (step_on, dict(step_cls=pmc.CRPGibbs, var="mu"), TypeError, "CRPGibbs needs a CRP"),
    (step_on, dict(step_cls=pmc.ConjugateCRPGibbs, var="theta"), ValueError, "conjugate slot"),
    (step_on, dict(step_cls=pmc.SlotSliceSampler, var="theta"), ValueError, "slot parameter"),
    (step_on, dict(step_cls=pmc.ConcentrationGibbs, var="nrm"), ValueError, "scalar Gamma"),
    (step_on, dict(step_cls=pmc.ConcentrationGibbs, var="b"), ValueError, "scalar Gamma"),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationGivenClusters, var="mu"),
        ValueError,
        "ConcentrationGivenClusters needs one CRP concentration",
    ),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationGivenClusters, var="p", model_fn=hpo_model),
        ValueError,
        "integrated",
    ),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationMetropolis, var="theta", proposal="x"),
        ValueError,
        "proposal",
    ),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationMetropolis, var="theta", scale=0.0),
        ValueError,
        "scale",
    ),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationMetropolis, var="theta", scale=NAN),
        ValueError,
        "scale",
    ),
    (step_on, dict(step_cls=pmc.ConcentrationMetropolis, var="mu"), ValueError, "scalar"),
    (
        step_on,
        dict(step_cls=pmc.HyperparameterMetropolis, var="b", scale=-1.0),
        ValueError,
        "scale",
    ),
    (step_on, dict(step_cls=pmc.UtilityMetropolis, var="mu"), ValueError, "UtilityMetropolis"),
    (step_on, dict(step_cls=pmc.UtilityMeanGibbs, var="mu"), ValueError, "mean utilities"),
    (step_on, dict(step_cls=pmc.LatentNormalGibbs, var="mu"), ValueError, "measurement_error"),
    (step_on, dict(step_cls=pmc.NormalInverseWishartGibbs, var="mu"), ValueError, "measurement"),
    (step_on, dict(step_cls=pmc.DirichletWeightsGibbs, var="mu"), ValueError, "measurement"),
    (step_on, dict(step_cls=pmc.MixtureLabelGibbs, var="z"), ValueError, "measurement"),
    (step_on, dict(step_cls=pmc.MixtureCRPGibbs, var="z"), ValueError, "use CRPGibbs"),
    (
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, pcn_step=0.0),
        ValueError,
        "pcn_step",
    ),
    (
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, pcn_step=1.5),
        ValueError,
        "pcn_step",
    ),
    (
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, rw_scale=NAN),
        ValueError,
        "rw_scale",
    ),
    pytest.param(
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, item_sweeps=-1),
        ValueError,
        "item_sweeps",
    ),
    (
        step_on,
        dict(step_cls=pmc.HyperparameterMetropolis, var="tau", model_fn=hpo_model, proposal="x"),
        ValueError,
        "proposal",
    ),
    (
        step_on,
        dict(step_cls=pmc.HyperparameterMetropolis, var="tau", model_fn=hpo_model, repeats=0),
        ValueError,
        "repeats",
    ),
    (
        step_on,
        dict(step_cls=pmc.HyperparameterMetropolis, var="tau", model_fn=hpo_model, repeats=1.5),
        TypeError,
        "repeats",
    ),
    (
        step_on,
        dict(step_cls=pmc.UtilityMeanGibbs, var="U", model_fn=hpo_model),
        ValueError,
        "mean utilities",
    ),
    (
        step_on,
        dict(step_cls=pmc.PartialOrderLabelGibbs, var="cluster", model_fn=hpo_model, n_aux=0),
        ValueError,
        "n_aux",
    ),
    (
        step_on,
        dict(step_cls=pmc.PartialOrderLabelGibbs, var="cluster", model_fn=hpo_model, n_aux=1.5),
        TypeError,
        "n_aux",
    ),
    (step_on, dict(step_cls=pmc.PartialOrderLabelGibbs, var="z"), ValueError, "PartialOrderLists"),
    (
        step_on,
        dict(step_cls=pmc.CovariateShiftMetropolis, var="p", model_fn=hpo_model),
        ValueError,
        "vars: p is not the covariate effects",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.CovariateShiftMetropolis,
            var="beta",
            model_fn=covariate_model,
            scale=float("nan"),
        ),
        ValueError,
        "scale",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.CovariateShiftMetropolis,
            var="beta",
            model_fn=covariate_model,
            shift_moves=1.5,
        ),  # fmt: skip
        TypeError,
        "shift_moves",
    ),
    (
        step_on,
        dict(step_cls=pmc.NonCentredHyperparameterMetropolis, var="p", model_fn=hpo_model),
        ValueError,
        "rho or tau of a model built",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.NonCentredHyperparameterMetropolis,
            var="rho",
            model_fn=hpo_model,
            noncentred_scale=float("nan"),
        ),
        ValueError,
        "noncentred_scale",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.NonCentredHyperparameterMetropolis,
            var="rho",
            model_fn=hpo_model,
            noncentred_scale="0.5",
        ),
        TypeError,
        "noncentred_scale must be a number",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.NonCentredHyperparameterMetropolis,
            var="tau",
            model_fn=hpo_model,
            scale=0.0,
        ),
        ValueError,
        "scale",
    ),
    (
        step_on,
        dict(step_cls=pmc.ReplicaExchange, var="U", model_fn=hpo_model),
        ValueError,
        "all the model's free variables",
    ),
    (
        step_on,
        dict(step_cls=pmc.ReplicaExchange, var="U", model_fn=hpo_model, betas=[1.0, 1.0]),
        ValueError,
        "betas must be strictly decreasing",
    ),
    (
        step_on,
        dict(step_cls=pmc.ReplicaExchange, var="U", model_fn=hpo_model, betas=[0.5, 0.1]),
        ValueError,
        "betas must start with 1",
    ),
    (
        step_on,
        dict(step_cls=pmc.ReplicaExchange, var="U", model_fn=hpo_model, betas=[1.0, -0.5]),
        ValueError,
        "betas must lie in",
    ),
    (
        step_on,
        dict(step_cls=pmc.ReplicaExchange, var="U", model_fn=hpo_model, n_temps=1),
        ValueError,
        "n_temps",
    ),
]


@pytest.mark.parametrize("fn, kwargs, error, match", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises(fn, kwargs, error, match):
    check_raises(fn, kwargs, error, match)


@pytest.mark.parametrize("cores", [1, 2])
def test_crp_gibbs_warns_when_max_clusters_is_too_small(caplog, cores):
    """Three well-separated groups and two slots: the truncation reaches the user."""
    rng = np.random.default_rng(1)
    y = np.r_[rng.normal(-10, 1, 8), rng.normal(0, 1, 8), rng.normal(10, 1, 8)]
    with pm.Model():
        z = pmc.CRP("z", 1.0, max_clusters=2, n=y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=2)
        pm.Normal("y", mu[z], 1.0, observed=y)
        with caplog.at_level(logging.WARNING, logger="pymc"):
            idata = pm.sample(
                draws=20,
                tune=20,
                chains=cores,
                cores=cores,
                random_seed=1,
                progressbar=False,
                compute_convergence_checks=False,
            )
    assert idata.sample_stats["slots_full"].values.all()
    assert np.all(idata.sample_stats["n_clusters"].values == 2)
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("increase max_clusters" in m and "slots_full" in m for m in messages)
    assert not any(np.isnan(idata.posterior["mu"].values).ravel())


def test_crp_gibbs_silent_when_max_clusters_suffices(caplog):
    """No truncation warning (and ``slots_full`` all False) with enough slots."""
    y = np.r_[np.full(6, -10.0), np.full(6, 10.0)]
    with pm.Model():
        z = pmc.CRP("z", 0.1, max_clusters=12, n=y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=12)
        pm.Normal("y", mu[z], 1.0, observed=y)
        with caplog.at_level(logging.WARNING, logger="pymc"):
            idata = pm.sample(
                draws=10,
                tune=10,
                chains=1,
                cores=1,
                random_seed=1,
                progressbar=False,
                compute_convergence_checks=False,
            )
    assert not idata.sample_stats["slots_full"].values.any()
    assert not any("increase max_clusters" in r.getMessage() for r in caplog.records)
