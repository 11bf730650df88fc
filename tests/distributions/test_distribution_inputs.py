"""Bad inputs to the distributions: partition priors, EquicorrelatedNormal, InverseWishart,
BatchedMvNormal and PartialOrderLists.

Rows ``(callable, kwargs, error, match)`` (see ``tests/bad_inputs.py``); behaviours that are
not errors (documented defaults) are checked by the tests after the table.
"""

import numpy as np
import pymc as pm
import pytest
from bad_inputs import (
    BMV,
    CRP,
    DMP,
    EQN,
    INF,
    IW,
    LISTS,
    NAN,
    SYM,
    case_id,
    check_raises,
    draw,
    in_model,
    lists_in_model,
    lists_logp,
    logp_eval,
)
from pymc.logprob.utils import ParameterValueError

import pymc_crp as pmc

CASES = [
    # ---- CRP --------------------------------------------------------------------------------
    (CRP, dict(concentration=0.0, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=-1.0, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=NAN, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=INF, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=[1.0, -2.0], max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=1.0, discount=1.0, max_clusters=3, n=4), ValueError, "discount"),
    (CRP, dict(concentration=1.0, discount=-0.1, max_clusters=3, n=4), ValueError, "discount"),
    (CRP, dict(concentration=1.0, discount=NAN, max_clusters=3, n=4), ValueError, "discount"),
    (
        CRP,
        dict(concentration=-0.5, discount=0.5, max_clusters=3, n=4),
        ValueError,
        "concentration must be greater than -discount",
    ),
    (CRP, dict(concentration=1.0, max_clusters=0, n=4), ValueError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=2.5, n=4), TypeError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=True, n=4), TypeError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=SYM(np.int64(3)), n=4), TypeError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=3, n=0), ValueError, "n must"),
    (CRP, dict(concentration=1.0, max_clusters=3, n=-2), ValueError, "n must"),
    (CRP, dict(concentration=1.0, max_clusters=3), TypeError, "needs n"),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, 1, 3]),
        ValueError,
        "observed labels of .* must lie in 0..2",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, -1, 1]),
        ValueError,
        "observed labels of .* must lie in 0..2",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, NAN, 1]),
        ValueError,
        "observed labels of .* must be finite",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, 0.5, 1]),
        ValueError,
        "observed labels of .* must be integer",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=["a", "b"]),
        TypeError,
        "observed labels of .* must be an array of integer labels",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, n=4, observed=[0, 1, 1]),
        ValueError,
        "observed must hold label vectors of length n=4",
    ),
    (
        logp_eval,
        dict(dist=CRP(SYM(-1.0), max_clusters=3, n=3), value=np.array([0, 1, 1])),
        ParameterValueError,
        r"\A0 <= discount < 1, concentration > -discount",
    ),
    # ---- Dirichlet-multinomial partition ----------------------------------------------------
    (DMP, dict(gamma=0.0, n_groups=3, n=4), ValueError, "gamma must be positive"),
    (DMP, dict(gamma=-1.0, n_groups=3, n=4), ValueError, "gamma must be positive"),
    (DMP, dict(gamma=NAN, n_groups=3, n=4), ValueError, "gamma must be finite"),
    (DMP, dict(gamma=INF, n_groups=3, n=4), ValueError, "gamma must be finite"),
    (DMP, dict(gamma=1.0, n_groups=0, n=4), ValueError, "n_groups"),
    (DMP, dict(gamma=1.0, n_groups=1.5, n=4), TypeError, "n_groups"),
    (
        in_model,
        dict(dist=pmc.DirichletMultinomialPartition, gamma=1.0, n_groups=2, observed=[0, 2]),
        ValueError,
        "observed labels of .* must lie in 0..1",
    ),
    (
        logp_eval,
        dict(dist=DMP(SYM(-1.0), n_groups=3, n=3), value=np.array([0, 1, 1])),
        ParameterValueError,
        r"\Agamma > 0",
    ),
    # ---- EquicorrelatedNormal ---------------------------------------------------------------
    (EQN, dict(mu=np.zeros(3), rho=1.0), ValueError, "rho must lie in"),
    (EQN, dict(mu=np.zeros(3), rho=-0.1), ValueError, "rho must lie in"),
    (EQN, dict(mu=np.zeros(3), rho=NAN), ValueError, "rho must lie in"),
    (EQN, dict(mu=np.zeros(3), rho=0.2, scale=0.0), ValueError, "scale must be positive"),
    (EQN, dict(mu=np.zeros(3), rho=0.2, scale=-1.0), ValueError, "scale must be positive"),
    (EQN, dict(mu=np.array([0.0, NAN]), rho=0.2), ValueError, "mu must be finite"),
    (EQN, dict(mu=0.0, rho=0.2), ValueError, "mu must have at least one dimension"),
    (draw, dict(dist=EQN(np.zeros(3), SYM(1.5))), ValueError, r"\Arho must lie in"),
    (draw, dict(dist=EQN(np.zeros(3), 0.5, SYM(-1.0))), ValueError, r"\Ascale must be positive"),
    (
        logp_eval,
        dict(dist=EQN(np.zeros(3), SYM(1.0)), value=np.zeros(3)),
        ParameterValueError,
        r"\A0 <= rho < 1",
    ),
    # ---- InverseWishart ---------------------------------------------------------------------
    (IW, dict(nu=5.0, scale=np.array([[1.0, NAN], [NAN, 1.0]])), ValueError, "scale must be"),
    (IW, dict(nu=NAN, scale=np.eye(2)), ValueError, "nu must be finite"),
    (IW, dict(nu=5.0, scale=np.ones(3)), ValueError, "scale must be a"),
    pytest.param(
        IW,
        dict(nu=1.0, scale=np.eye(3)),
        ValueError,
        "nu",
    ),
    pytest.param(
        IW,
        dict(nu=5.0, scale=-np.eye(3)),
        ValueError,
        "scale",
    ),
    pytest.param(
        IW,
        dict(nu=5.0, scale=np.array([[1.0, 0.5], [0.0, 1.0]])),
        ValueError,
        "scale",
    ),
    pytest.param(
        IW,
        dict(nu=5.0, scale=np.ones((2, 3))),
        ValueError,
        "scale",
    ),
    # ---- BatchedMvNormal --------------------------------------------------------------------
    (BMV, dict(mean=np.zeros(3), cov=np.ones(3)), ValueError, r"cov must be a \(..., D, D\)"),
    # ---- PartialOrderLists ------------------------------------------------------------------
    (lists_in_model, dict(observed=[[0, 1, 1]]), ValueError, r"observed\[0\] repeats item 1"),
    (lists_in_model, dict(observed=[[0, 9]]), ValueError, "observed.*item 9 outside 0..3"),
    (lists_in_model, dict(observed=[[0, 1], []]), ValueError, r"observed\[1\] is empty"),
    (lists_in_model, dict(observed=[]), ValueError, "observed holds no lists"),
    (lists_in_model, dict(observed=[[0, 1.5]]), ValueError, "observed.*non-integer"),
    (lists_in_model, dict(items=[[0, 0]]), ValueError, "items.*repeats"),
    (lists_in_model, dict(), TypeError, "needs observed lists"),
    (lists_in_model, dict(n_items=5, observed=LISTS), ValueError, "n_items=5"),
    (lists_in_model, dict(direction="up", observed=LISTS), ValueError, "direction"),
    (
        lists_in_model,
        dict(utilities_shape=(2, 4, 2), observed=LISTS),
        ValueError,
        "labels are required",
    ),
    (
        lists_in_model,
        dict(utilities_shape=(2, 4, 2), labels=np.array([0.0, 1.0, 0.0]), observed=LISTS),
        TypeError,
        "labels must be integers",
    ),
    (
        lists_in_model,
        dict(utilities_shape=(1, 1, 4, 2), n_items=4, observed=LISTS),
        ValueError,
        "utilities must have shape",
    ),
    (
        lists_logp,
        dict(utilities=np.zeros((1, 4, 2)), noise=2.0),
        ParameterValueError,
        r"\A0 <= noise <= 1",
    ),
    (
        lists_logp,
        dict(utilities=np.zeros((2, 4, 2)), labels=np.array([0, 1, 5])),
        ValueError,
        r"\Alabels must lie in 0..1",
    ),
    pytest.param(
        lists_logp,
        dict(utilities=np.zeros((2, 4, 2)), labels=np.array([0, 1])),
        ValueError,
        r"\Alabels",
    ),
    pytest.param(
        lists_logp,
        dict(utilities=np.full((1, 4, 2), NAN)),
        ValueError,
        r"\A(utilities|eta)",
    ),
]


@pytest.mark.parametrize("fn, kwargs, error, match", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises(fn, kwargs, error, match):
    check_raises(fn, kwargs, error, match)


def test_crp_boundary_parameters_are_valid():
    """``θ`` just above ``-d`` is allowed and gives finite log-densities and valid draws."""
    dist = pmc.CRP.dist(-0.4, 0.5, max_clusters=6, n=6)
    draws = pm.draw(dist, draws=20, random_seed=3)
    assert draws.min() >= 0 and draws.max() < 6
    assert np.isfinite(logp_eval(dist, draws[0]))


def test_crp_logp_of_out_of_range_labels_is_minus_inf():
    """Unobserved values outside ``0..L-1`` have zero prior probability (not an error)."""
    dist = pmc.CRP.dist(1.0, max_clusters=3, n=3)
    assert logp_eval(dist, np.array([0, 1, 5])) == -np.inf
    assert logp_eval(dist, np.array([0, -1, 1])) == -np.inf


def test_equicorrelated_normal_boundary_draws_are_finite():
    """``rho = 1`` and ``scale = 0`` reached symbolically give degenerate, finite draws."""
    x = pm.draw(pmc.EquicorrelatedNormal.dist(np.zeros(3), SYM(1.0), SYM(0.5)), random_seed=2)
    assert np.all(np.isfinite(x)) and np.ptp(x) == 0.0
    x = pm.draw(pmc.EquicorrelatedNormal.dist(np.ones(3), 0.3, SYM(0.0)), random_seed=2)
    np.testing.assert_array_equal(x, np.ones(3))
