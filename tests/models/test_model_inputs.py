"""Bad inputs to the model builders and the data sets.

Rows ``(callable, kwargs, error, match)`` (see ``tests/bad_inputs.py``); behaviours that are
not errors (documented defaults) are checked by the tests after the table.
"""

import numpy as np
import pytest
from bad_inputs import (
    CPO,
    HEAD,
    INF,
    LISTS,
    MAXCLUSTERS,
    MEM,
    MIXPRIOR,
    NAN,
    PO,
    Y2,
    Y,
    case_id,
    check_raises,
    preflib,
)

import pymc_crp as pmc

ALBURY = pmc.datasets.load_albury_ballots

CASES = [
    # ---- model builders ---------------------------------------------------------------------
    (PO, dict(lists=[[0, 1, 1]], n_items=4), ValueError, r"lists\[0\] repeats item 1"),
    (PO, dict(lists=[[0, 1, 9]], n_items=4), ValueError, r"lists\[0\] contains item 9"),
    (PO, dict(lists=[[0, -1]], n_items=4), ValueError, r"lists\[0\] contains item -1"),
    (PO, dict(lists=[[0, 1], []], n_items=4), ValueError, r"lists\[1\] is empty"),
    (PO, dict(lists=[], n_items=4), ValueError, "lists holds no lists"),
    (PO, dict(lists=[[0, NAN]], n_items=4), ValueError, r"lists\[0\] contains non-integer"),
    (PO, dict(lists=[[0]], n_items=1), ValueError, "n_items"),
    (PO, dict(lists=LISTS, n_items=4.0), ValueError, "n_items"),
    (PO, dict(lists=LISTS, n_items=4, n_dims=0), ValueError, "n_dims"),
    (PO, dict(lists=LISTS, n_items=4, direction="up"), ValueError, "direction"),
    (PO, dict(lists=LISTS, n_items=4, noise=1.5), ValueError, "noise"),
    (PO, dict(lists=LISTS, n_items=4, noise=NAN), ValueError, "noise"),
    (PO, dict(lists=LISTS, n_items=4, noise="high"), ValueError, "noise"),
    (PO, dict(lists=LISTS, n_items=4, rho_prior=(-1.0, 1.0)), ValueError, "rho_prior"),
    (PO, dict(lists=LISTS, n_items=4, rho_prior=(NAN, 1.0)), ValueError, "rho_prior"),
    (PO, dict(lists=LISTS, n_items=4, rho_prior=(1.0, 1.0, 1.0)), ValueError, "rho_prior"),
    (PO, dict(lists=LISTS, n_items=4, covariates=np.full((4, 1), NAN)), ValueError, "covariates"),
    (PO, dict(lists=LISTS, n_items=4, covariates=np.ones((3, 1))), ValueError, "covariates"),
    (PO, dict(lists=LISTS, n_items=4, item_names=["a", "b"]), ValueError, "item_names"),
    (PO, dict(lists=LISTS, n_items=4, item_names=list("aabc")), ValueError, "item_names"),
    (PO, dict(lists=LISTS, n_items=4, item_names=5), TypeError, "item_names"),
    (PO, dict(lists=LISTS, n_items=4, item_names="abcd"), TypeError, "item_names"),
    (CPO, dict(lists=LISTS, n_items=4, discount="0.5"), TypeError, "discount"),
    (CPO, dict(lists=LISTS, n_items=4, partition="dp"), ValueError, "partition"),
    (CPO, dict(lists=LISTS, n_items=4, max_clusters=0), ValueError, "max_clusters"),
    (CPO, dict(lists=LISTS, n_items=4, max_clusters=2.0), ValueError, "max_clusters"),
    (CPO, dict(lists=LISTS, n_items=4, concentration=0.0), ValueError, "concentration"),
    (CPO, dict(lists=LISTS, n_items=4, concentration=NAN), ValueError, "concentration"),
    (CPO, dict(lists=LISTS, n_items=4, concentration="a"), TypeError, "concentration"),
    (
        CPO,
        dict(lists=LISTS, n_items=4, partition="dirichlet-multinomial", concentration=-1.0),
        ValueError,
        "concentration",
    ),
    (CPO, dict(lists=[[0, 0]], n_items=4), ValueError, r"lists\[0\] repeats item 0"),
    (CPO, dict(lists=LISTS, n_items=4, rho_prior=(0.0, 1.0)), ValueError, "rho_prior"),
    (MEM, dict(y=np.r_[Y, NAN]), ValueError, r"y must be finite; rows \[10\]"),
    (MIXPRIOR, dict(y=np.ones((2, 2, 2))), ValueError, "y must have shape"),
    (MAXCLUSTERS, dict(n_lists=0), ValueError, "n_lists must be a positive integer"),
    (MAXCLUSTERS, dict(n_lists=2.5), ValueError, "n_lists must be a positive integer"),
    (MEM, dict(y=np.r_[Y, INF]), ValueError, r"y must be finite; rows \[10\]"),
    (MEM, dict(y=np.ones((2, 2, 2))), ValueError, "y must have shape"),
    (MEM, dict(y=np.ones(0)), ValueError, "y must hold at least one"),
    (MEM, dict(y=["a", "b"]), TypeError, "y must be a numeric array"),
    (MEM, dict(y=Y, V=-1.0), ValueError, "V must be positive definite"),
    (MEM, dict(y=Y2, V=np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError, "V must be positive"),
    (MEM, dict(y=Y2, V=np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError, "V must be symmetric"),
    (MEM, dict(y=Y, V=np.r_[np.ones(9), NAN]), ValueError, "V must be finite"),
    (MEM, dict(y=Y, V=np.ones(7)), ValueError, "V must be None/0"),
    (MEM, dict(y=Y, V=np.r_[0.0, np.ones(9)]), ValueError, "V must be positive definite"),
    (MEM, dict(y=Y2, V=2.0), ValueError, "scalar V is only accepted for 1-D data"),
    (MEM, dict(y=Y, partition="xx"), ValueError, "partition must be one of"),
    (MEM, dict(y=Y, partition="finite"), ValueError, "needs n_components"),
    (MEM, dict(y=Y, n_components=3), ValueError, "n_components applies to"),
    (MEM, dict(y=Y, max_clusters=0), ValueError, "max_clusters"),
    (MEM, dict(y=Y, max_clusters=2.0), TypeError, "max_clusters"),
    (MEM, dict(y=Y, concentration=0.0), ValueError, "concentration"),
    (MEM, dict(y=Y, concentration=-1.0), ValueError, "concentration"),
    (
        MEM,
        dict(y=Y, partition="finite", n_components=2, concentration=[1.0, 0.0]),
        ValueError,
        "concentration",
    ),
    (
        MEM,
        dict(y=Y, partition="finite", n_components=2, concentration=[1.0, 1.0, 1.0]),
        ValueError,
        "concentration",
    ),
    (MEM, dict(y=Y, max_clusters=2, labels=[0] * 9 + [2]), ValueError, "labels must lie in"),
    (MEM, dict(y=Y, max_clusters=2, labels=[0] * 9), ValueError, "labels must be an integer"),
    (MEM, dict(y=Y, max_clusters=2, labels=[0.5] * 10), ValueError, "labels must be an integer"),
    (MEM, dict(y=Y, prior={"foo": 1}), ValueError, "prior has unknown keys"),
    (MEM, dict(y=Y, prior=[1]), TypeError, "prior must be a dict"),
    (MEM, dict(y=Y, prior={"nu": -1.0}), ValueError, r"prior\['nu'\]"),
    (MEM, dict(y=Y2, prior={"nu": 0.5}), ValueError, r"prior\['nu'\] must exceed"),
    (MEM, dict(y=Y, prior={"kappa0": 0.0}), ValueError, r"prior\['kappa0'\]"),
    (MEM, dict(y=Y, prior={"Omega": [[-1.0]]}), ValueError, r"prior\['Omega'\] must be positive"),
    (MEM, dict(y=Y2, prior={"Omega": np.eye(3)}), ValueError, r"prior\['Omega'\] must be a"),
    (MEM, dict(y=Y, prior={"m0": [NAN]}), ValueError, r"prior\['m0'\]"),
    (MEM, dict(y=Y, prior={"alpha_shape": 0.0}), ValueError, r"prior\['alpha_shape'\]"),
    # ---- datasets ---------------------------------------------------------------------------
    (preflib, dict(tmp_text=HEAD + "1: 1,2,9\n"), ValueError, "item 9 outside .*1..3"),
    (preflib, dict(tmp_text=HEAD + "1: 0,1,2\n"), ValueError, "item 0 outside"),
    (preflib, dict(tmp_text=HEAD + "1: 1,2,2\n"), ValueError, "data line 1 repeats item 2"),
    (preflib, dict(tmp_text=HEAD + "1: 1,x,3\n"), ValueError, "data line 1 has a bad item 'x'"),
    (preflib, dict(tmp_text=HEAD + "1: {1,2},3\n"), ValueError, "data line 1 has a tie"),
    (preflib, dict(tmp_text=HEAD + "-2: 1,2,3\n"), ValueError, "cannot read data line 1"),
    (preflib, dict(tmp_text=HEAD + "0: 1,2,3\n"), ValueError, "holds no rankings"),
    (preflib, dict(tmp_text=HEAD), ValueError, "holds no rankings"),
    (preflib, dict(tmp_text="1: 1,2,3\n"), ValueError, "cannot read the header"),
    (preflib, dict(tmp_text=HEAD + "1: 1,2,3\n", ties="x"), ValueError, "ties must be"),
    (ALBURY, dict(min_length=0), ValueError, "min_length must be an integer from 1 to 5"),
    (ALBURY, dict(min_length=6), ValueError, "min_length must be an integer from 1 to 5"),
    (ALBURY, dict(min_length=2.0), ValueError, "min_length"),
    (ALBURY, dict(min_length=True), ValueError, "min_length"),
    (ALBURY, dict(n_ballots=0), ValueError, "n_ballots must be a positive integer"),
    (ALBURY, dict(n_ballots=-5), ValueError, "n_ballots must be a positive integer"),
    (ALBURY, dict(n_ballots=10.0), ValueError, "n_ballots must be a positive integer"),
    (ALBURY, dict(n_ballots=False), ValueError, "n_ballots must be a positive integer"),
    (ALBURY, dict(n_ballots=18_622), ValueError, r"n_ballots=18,622 is more than the 18,621"),
    (ALBURY, dict(min_length=5, n_ballots=14_760), ValueError, r"n_ballots.*min_length=5"),
    (ALBURY, dict(n_ballots=10, seed=-1), ValueError, "seed must be a non-negative integer"),
    (ALBURY, dict(n_ballots=10, seed=1.5), ValueError, "seed must be a non-negative integer"),
]


@pytest.mark.parametrize("fn, kwargs, error, match", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises(fn, kwargs, error, match):
    check_raises(fn, kwargs, error, match)


def test_measurement_error_zero_V_means_no_error():
    """``V=0`` (or all-zero variances) is documented as no measurement error: no ``theta``."""
    for v in (0, np.zeros(Y.size)):
        model = pmc.models.measurement_error_mixture(Y, V=v)
        assert "theta" not in model.named_vars
