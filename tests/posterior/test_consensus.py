"""Tests of posterior relation probabilities and consensus partial orders."""

from __future__ import annotations

import itertools

import arviz as az
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_crp.posets import transitive_closure, validate_partial_order
from pymc_crp.posterior.consensus import consensus_order, relation_probabilities, threshold_order

# two clusters with known orders: A has 0 on top, 1 and 2 incomparable, then 3, then 4
U_A = np.array([[4.0, 4.0], [3.0, 1.0], [1.0, 3.0], [0.0, 0.0], [-1.0, -1.0]])
U_B = np.array([[0.0, 0.0], [2.0, 2.0], [2.5, -3.0], [4.0, 3.0], [-2.0, 1.0]])


def dominance(u):
    m = u.shape[0]
    return np.array([[bool(np.all(u[i] > u[j])) for j in range(m)] for i in range(m)])


def clustered_idata(seed=0, chains=2, draws=150, n_slots=4, noise=0.1, label_noise=0.03):
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1], 10)
    s = chains * draws
    u = rng.normal(size=(s, n_slots, 5, 2))
    z = np.empty((s, truth.size), dtype=np.int64)
    for d in range(s):
        perm = rng.permutation(n_slots)
        u[d, perm[0]] = U_A + rng.normal(0, noise, U_A.shape)
        u[d, perm[1]] = U_B + rng.normal(0, noise, U_B.shape)
        comp = truth.copy()
        flip = rng.random(truth.size) < label_noise
        comp[flip] = rng.integers(0, 2, flip.sum())
        z[d] = perm[comp]
    posterior = {
        "U": u.reshape(chains, draws, n_slots, 5, 2),
        "cluster": z.reshape(chains, draws, -1),
    }
    return az.from_dict(posterior=posterior), truth


def test_consensus_recovers_planted_orders():
    idata, truth = clustered_idata()
    result = consensus_order(idata, utilities="U", labels="cluster")
    np.testing.assert_array_equal(result.partition, truth)
    for g, u in enumerate([U_A, U_B]):
        true = dominance(u)
        probs = result.probabilities[g]
        assert probs[true].min() > 0.95
        assert probs[~true].max() < 0.05
        np.testing.assert_array_equal(result.orders[g], true)
        assert result.dropped[g] == []
    # a given partition (any labels) gives the same answer
    given_part = consensus_order(idata, partition=np.where(truth == 0, 7, 3))
    np.testing.assert_array_equal(given_part.probabilities[1], result.probabilities[1])


def test_consensus_transform_and_single_order():
    idata, _ = clustered_idata(draws=40)
    flipped = consensus_order(idata, transform=lambda u: -u)
    plain = consensus_order(idata)
    np.testing.assert_allclose(flipped.probabilities[0], plain.probabilities[0].T)
    # a covariate shift per item and draw changes the order: item 4 raised to the top
    shift = np.array([0.0, 0, 0, 0, 10.0])
    raised = consensus_order(idata, transform=lambda u: u + shift[None, :, None])
    assert raised.probabilities[0][4, 0] > 0.95

    rng = np.random.default_rng(5)
    u = U_A + rng.normal(0, 0.1, size=(2, 50, 5, 2))
    single = consensus_order(az.from_dict(posterior={"V": u}), utilities="V", labels=None)
    assert single.partition is None
    np.testing.assert_array_equal(single.orders[0], dominance(U_A))


def test_relation_probabilities_match_loop():
    rng = np.random.default_rng(2)
    u = rng.normal(size=(30, 6, 3))
    u[:, 0] += 2.0
    expected = np.mean([dominance(x) for x in u], axis=0)
    np.testing.assert_allclose(relation_probabilities(u, chunk=7), expected, atol=1e-15)


def test_condorcet_cycle_is_broken():
    # the three cyclic linear orders a>b>c, b>c>a, c>a>b with equal weight
    orders = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    u = np.array([[[3.0 - order.index(j)] for j in range(3)] for order in orders])
    probs = relation_probabilities(u)
    assert probs[0, 1] == probs[1, 2] == probs[2, 0] == pytest.approx(2 / 3)
    order, dropped = threshold_order(probs, 0.5)
    validate_partial_order(order)
    np.testing.assert_array_equal(transitive_closure(order), order)
    assert len(dropped) == 1
    assert order.sum() == 3  # two cycle relations kept plus the one they imply
    # above 1 - 1/3 no cycle can occur
    assert not threshold_order(probs, 2 / 3)[0].any()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda m: st.lists(st.permutations(list(range(m))), min_size=1, max_size=8)
    ),
    st.floats(0.5, 0.95),
)
def test_threshold_order_is_strict_partial_order(perms, threshold):
    """Mixtures of linear orders (worst case for cycles): the result is always a strict order."""
    m = len(perms[0])
    u = np.array([[[float(m - p.index(j))] for j in range(m)] for p in perms])
    probs = relation_probabilities(u)
    order, dropped = threshold_order(probs, threshold)
    validate_partial_order(order)
    np.testing.assert_array_equal(transitive_closure(order), order)
    above = probs > threshold
    kept = above & order
    assert kept.sum() + len(dropped) == above.sum()
    if not dropped:  # then exactly the closure of the thresholded relation
        np.testing.assert_array_equal(order, transitive_closure(above))
    if threshold >= 1 - 1 / m:
        assert not dropped


def test_consensus_errors():
    idata, _ = clustered_idata(draws=5)
    with pytest.raises(ValueError, match="utilities"):
        consensus_order(idata, utilities="W")
    with pytest.raises(ValueError, match="5 dims"):
        consensus_order(idata, labels="cluster", utilities="cluster")
    with pytest.raises(ValueError, match="partition"):
        consensus_order(idata, partition=[0, 1])
    with pytest.raises(ValueError, match="threshold"):
        threshold_order(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="square"):
        threshold_order(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="transform"):
        relation_probabilities(np.zeros((2, 3, 1)), transform=lambda u: u[0])
    with pytest.raises(TypeError, match="InferenceData"):
        consensus_order({"U": 1})


def test_all_three_element_mixtures_with_threshold_half():
    """Exhaustive over mixtures of up to 3 linear orders of 3 items: always a strict order."""
    perms = list(itertools.permutations(range(3)))
    for combo in itertools.combinations_with_replacement(perms, 3):
        u = np.array([[[3.0 - p.index(j)] for j in range(3)] for p in combo])
        order, _ = threshold_order(relation_probabilities(u), 0.5)
        validate_partial_order(order)
        np.testing.assert_array_equal(transitive_closure(order), order)


@pytest.mark.slow
def test_consensus_end_to_end_hpo_model():
    """Clustered partial-order model sampled by pm.sample: two groups of opposite lists."""
    import pymc as pm

    from pymc_crp.models import clustered_partial_orders

    lists = [[0, 1, 2, 3, 4]] * 6 + [[4, 3, 2, 1, 0]] * 6
    model = clustered_partial_orders(lists, n_items=5, n_dims=2, max_clusters=4)
    with model:
        idata = pm.sample(
            draws=200,
            tune=200,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    result = consensus_order(idata)
    np.testing.assert_array_equal(result.partition, np.repeat([0, 1], 6))
    chain = np.triu(np.ones((5, 5), dtype=bool), 1)  # 0 > 1 > 2 > 3 > 4
    np.testing.assert_array_equal(result.orders[0], chain)
    np.testing.assert_array_equal(result.orders[1], chain.T)
    assert result.probabilities[0][chain].min() > 0.8
