"""The weight move of two clusters' split (pymc_crp.core.pair_weights) against enumeration.

Oracles (tests/oracles.py): the labellings of a few observations over two clusters with both
non-empty under the Pitman--Yor EPPF, and the weight's log density with the labels summed out
by enumeration.
"""

import math

import numpy as np
import pytest
from oracles import two_cluster_split_posterior, two_cluster_weight_log_density

import pymc_crp.core.pair_weights as pair_weights
from pymc_crp.core.pair_weights import log_pair_weight_density, pair_weight_move, pick_pairs


def _log_likelihoods(n, seed):
    rng = np.random.default_rng(seed)
    ll_a = rng.normal(-5.0, 1.5, n)
    return ll_a, ll_a + rng.normal(0.0, 1.0, n)


@pytest.mark.parametrize("discount", [0.0, 0.6])
def test_density_matches_enumeration(discount):
    ll_a, ll_b = _log_likelihoods(5, 1)
    etas = np.array([-30.0, -4.0, -0.5, 0.0, 1.3, 6.0, 30.0])
    got = np.array([log_pair_weight_density(e, ll_a, ll_b, discount) for e in etas])
    want = np.array([two_cluster_weight_log_density(e, ll_a, ll_b, discount) for e in etas])
    np.testing.assert_allclose(got - got[3], want - want[3], rtol=1e-9, atol=1e-9)


def test_density_accurate_in_the_tails():
    """Far into either tail the density falls linearly in η (the one-sided labellings are
    subtracted without cancellation): log p(η) ≈ (1 - d) η + const as η → -∞."""
    ll_a, ll_b = _log_likelihoods(6, 2)
    far = [log_pair_weight_density(e, ll_a, ll_b, 0.3) for e in (-200.0, -201.0, 200.0, 201.0)]
    assert np.all(np.isfinite(far))
    np.testing.assert_allclose([far[0] - far[1], far[3] - far[2]], [0.7, -0.7], atol=1e-6)


def _total_variation(p, q):
    return 0.5 * float(np.sum(np.abs(p - q)))


@pytest.mark.parametrize(
    "discount, rejections",
    [(0.0, pair_weights.REJECTIONS), pytest.param(0.8, 20, marks=pytest.mark.slow), (0.4, 0)],
)
def test_stationary_law_matches_enumeration(discount, rejections, monkeypatch):
    """Repeated moves from one labelling visit the labellings with the EPPF posterior's
    frequencies; ``rejections=0`` draws every side member by member (the fallback). The
    total variation to the truth is a few times its Monte Carlo size (about 0.006 for 50,000
    nearly independent moves over 14 labellings); the other discount is 0.05--0.07 away, and
    at ``d = 0.8`` a weight drawn from ``Beta(n_a, n_b)`` (the discount left out) gives 0.036."""
    monkeypatch.setattr(pair_weights, "REJECTIONS", rejections)
    ll_a, ll_b = _log_likelihoods(4, 3)
    sides, probs = two_cluster_split_posterior(ll_a, ll_b, discount)
    index = {tuple(s): k for k, s in enumerate(sides)}
    rng = np.random.default_rng(4)
    on_a = np.array([True, False, False, False])
    n_moves = 50_000
    visits = np.zeros(len(sides))
    for _ in range(n_moves):
        on_a = pair_weight_move(ll_a, ll_b, on_a, discount, rng)
        visits[index[tuple(on_a)]] += 1
    freq = visits / n_moves
    assert _total_variation(freq, probs) < 0.015, np.c_[freq, probs]
    wrong = two_cluster_split_posterior(ll_a, ll_b, 0.6 if discount == 0.0 else 0.0)[1]
    assert _total_variation(freq, wrong) > 0.03  # the comparison sees the discount


@pytest.mark.parametrize("discount", [0.0, 0.5])
def test_moves_cross_the_share_in_one_step(discount):
    """Observations fitting both clusters equally: the one-list sweep moves their share by a
    random walk, the move redraws it from its whole posterior — successive shares are nearly
    uncorrelated and spread as the EPPF says, ``P(n_a = k) ∝ C(n, k) Γ(k - d) Γ(n - k - d)``."""
    n = 400
    k = np.arange(1, n)
    log_p = np.array(
        [math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
         + math.lgamma(j - discount) + math.lgamma(n - j - discount) for j in k]
    )  # fmt: skip
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    sd = np.sqrt(np.sum(p * (k / n) ** 2) - np.sum(p * k / n) ** 2)
    rng = np.random.default_rng(5)
    on_a = np.arange(n) < n // 2
    shares = []
    for _ in range(1000):
        on_a = pair_weight_move(np.zeros(n), np.zeros(n), on_a, discount, rng)
        shares.append(on_a.mean())
    shares = np.array(shares)
    assert abs(shares.std() / sd - 1.0) < 0.1
    assert abs(np.corrcoef(shares[:-1], shares[1:])[0, 1]) < 0.2


def test_pairs_follow_the_rows_two_best_columns():
    rng = np.random.default_rng(6)
    ll = rng.normal(0.0, 0.1, (300, 4))
    ll[:, 1] += 5.0
    ll[:, 3] += 4.0  # every row's two best columns are 1 and 3
    pairs = pick_pairs(ll, 2000, rng)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    frequent = np.mean((pairs[:, 0] == 1) & (pairs[:, 1] == 3))
    assert abs(frequent - (300 + 300 / 60) / (300 + 300 / 10)) < 0.03
    assert len({tuple(p) for p in pairs}) == 6  # the floor keeps every pair possible
