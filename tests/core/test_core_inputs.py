"""Bad inputs to the numeric core: partial orders, linear extensions and list likelihoods.

Rows ``(callable, kwargs, error, match)`` (see ``tests/bad_inputs.py``); behaviours that are
not errors (documented defaults) are checked by the tests after the table.
"""

import math

import numpy as np
import pytest
from bad_inputs import (
    NAN,
    case_id,
    check_raises,
)

import pymc_crp as pmc
from pymc_crp import posets

CASES = [
    # ---- posets: counting and likelihood kernels --------------------------------------------
    (
        posets.count_linear_extensions,
        dict(adj=np.array([[0, 1], [1, 0]], bool)),
        ValueError,
        "adj has a cycle",
    ),
    (posets.count_linear_extensions, dict(adj=np.eye(2, dtype=bool)), ValueError, "irreflexive"),
    (posets.count_linear_extensions, dict(adj=np.zeros((2, 3), bool)), ValueError, "square"),
    (posets.count_linear_extensions, dict(adj=np.full((3, 3), NAN)), ValueError, "boolean"),
    (
        posets.count_linear_extensions,
        dict(adj=np.zeros((3, 3), bool), items=[0, 0]),
        ValueError,
        "items repeats item 0",
    ),
    (
        posets.count_linear_extensions,
        dict(adj=np.zeros((3, 3), bool), items=[5]),
        ValueError,
        "items contains item 5",
    ),
    (
        posets.count_linear_extensions,
        dict(adj=np.zeros((3, 3), bool), max_states=0),
        ValueError,
        "max_states",
    ),
    (
        posets.count_linear_extensions,
        dict(adj=posets.random_two_dimensional_order(60, np.random.default_rng(0)), max_states=50),
        posets.LinearExtensionLimitError,
        "max_states=50",
    ),
    (
        posets.partial_order_from_utilities,
        dict(eta=np.array([[NAN, 1.0], [0.0, 0.0]])),
        ValueError,
        "eta must be finite",
    ),
    (
        posets.list_log_likelihood,
        dict(adj=np.zeros((3, 3), bool), ranking=[0, 1, 2], p=2.0),
        ValueError,
        "p must be",
    ),
    (
        posets.list_log_likelihood,
        dict(adj=np.zeros((3, 3), bool), ranking=[0, 1, 1], p=0.1),
        ValueError,
        "ranking repeats item 1",
    ),
    (
        posets.list_log_likelihood,
        dict(adj=np.zeros((3, 3), bool), ranking=[], p=0.1),
        ValueError,
        "ranking is empty",
    ),
    (
        posets.sample_list,
        dict(adj=np.zeros((3, 3), bool), items=[0, 1, 2], p=0.1, rng=1),
        TypeError,
        "rng must be a numpy.random.Generator",
    ),
]


@pytest.mark.parametrize("fn, kwargs, error, match", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises(fn, kwargs, error, match):
    check_raises(fn, kwargs, error, match)


def test_relabel_by_appearance_treats_labels_as_names():
    """Any integers are block names; negative labels used to be wrapped around silently."""
    np.testing.assert_array_equal(pmc.relabel_by_appearance([0, -1, 0, 7]), [0, 1, 0, 2])
    np.testing.assert_array_equal(pmc.relabel_by_appearance([2.0, 2.0, 5.0]), [0, 0, 1])
    assert pmc.relabel_by_appearance(np.zeros((2, 0), dtype=int)).shape == (2, 0)


@pytest.mark.parametrize(
    "orders, expected",
    [
        (("antichain", 30), math.factorial(30)),
        (("chains", (60, 60)), math.comb(120, 60)),
        (("chains", (50, 50, 50)), math.comb(150, 50) * math.comb(100, 50)),
        (("grid", 40), math.comb(80, 40) // 41),
    ],
    ids=["antichain30", "two-chains-120", "three-chains-150", "grid-2x40"],
)
def test_linear_extension_counts_do_not_wrap_around(orders, expected):
    """Counts far above ``2**64`` are exact Python integers (no int64/uint64 wrap-around)."""
    kind, size = orders
    if kind == "antichain":
        adj = posets.antichain_order(size)
    elif kind == "grid":
        adj = posets.grid_order(2, size)
    else:
        total = sum(size)
        adj = np.zeros((total, total), dtype=bool)
        start = 0
        for length in size:
            block = np.arange(start, start + length)
            adj[np.ix_(block, block)] = block[:, None] < block[None, :]
            start += length
    count = posets.count_linear_extensions(adj)
    assert expected > 2**64
    assert isinstance(count, int) and count == expected
    assert math.isclose(posets.log_count_linear_extensions(adj), math.log(expected), rel_tol=1e-12)
