"""The sides of an annealed split--merge path: the pair components of ``g`` and the Gibbs
draws of the sides against a brute-force conditional over whole allocations."""

import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from pymc_crp.core.annealed_sides import (
    annealed_side_draws,
    list_positions,
    mixture_log_density,
    pair_side_logs,
)


def test_pair_side_logs_follow_the_pairs_the_anchors_order_apart():
    lists = np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2], [2, -1, -1], [0, 2, -1]])
    positions = list_positions(lists, 3)
    np.testing.assert_array_equal(positions[2], [1, 0, 2])
    np.testing.assert_array_equal(positions[3], [-1, -1, 0])
    log0, log1 = pair_side_logs(positions, 0.1)
    # anchors [0,1,2] and [2,1,0] order every pair apart: (0,1), (0,2), (1,2) after the
    # uniform component
    assert log1.shape == (5, 4)
    np.testing.assert_allclose(np.exp(log0) + np.exp(log1), 1.0)
    np.testing.assert_allclose(np.exp(log1[:, 0]), 0.5)
    np.testing.assert_allclose(np.exp(log1[2, 1:]), [0.9, 0.1, 0.1])  # 1 before 0 only
    np.testing.assert_allclose(np.exp(log1[3, 1:]), [0.5, 0.5, 0.5])  # one item: no pair
    np.testing.assert_allclose(np.exp(log1[4, 1:]), [0.5, 0.1, 0.5])  # 0 before 2
    np.testing.assert_allclose(np.exp(log1[1, 1:]), 0.9)  # b's side for b
    same = pair_side_logs(list_positions(lists[[0, 0, 2]], 3), 0.1)[1]
    assert same.shape == (3, 1)  # equal anchors order no pair apart: uniform sides only


def test_mixture_log_density_is_logsumexp():
    log_w = np.array([-np.inf, math.log(0.25), math.log(0.75)])
    log_g = np.array([3.0, -1.0, -2.5])
    assert math.isclose(mixture_log_density(log_w, log_g), logsumexp(log_w + log_g))
    assert mixture_log_density(np.array([-np.inf]), np.array([0.0])) == -np.inf


def _log_target(sides, ll_s, ll_t, g0, g1, log_w, beta, power, discount):
    """``log γ_β`` of a whole allocation, up to a constant (the module docstring)."""
    one = sides == 1
    lik = np.sum(ll_s[~one]) + np.sum(beta * ll_s[one] + (1.0 - beta) * ll_t[one])
    counts = np.array([np.sum(~one), np.sum(one)])
    eppf = np.sum(gammaln(counts - discount))
    free = np.arange(sides.size) >= 2
    log_g = np.sum(np.where(one[:, None], g1, g0)[free], axis=0)
    return lik + (1.0 - beta) * eppf + power * logsumexp(log_w + log_g)


@pytest.mark.parametrize("beta, discount", [(0.0, 0.0), (0.3, 0.4), (1.0, 0.2)])
def test_side_draws_follow_the_conditional_of_the_whole_allocation(beta, discount):
    rng = np.random.default_rng(11)
    n, n_comp = 6, 4
    ll_s, ll_t = rng.normal(-3.0, 2.0, n), rng.normal(-3.0, 2.0, n)
    prob_one = rng.uniform(0.05, 0.95, (n, n_comp))
    g0, g1 = np.log1p(-prob_one), np.log(prob_one)
    log_w = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    power = 0.7
    for start in itertools.product([0, 1], repeat=n - 2):
        sides = np.array([0, 1, *start], dtype=np.int64)
        r = 2 + int(rng.integers(n - 2))
        both = []
        for side in (0, 1):
            trial = sides.copy()
            trial[r] = side
            both.append(_log_target(trial, ll_s, ll_t, g0, g1, log_w, beta, power, discount))
        p_one = math.exp(both[1] - logsumexp(both))
        for uniform, expected in ((p_one - 1e-9, 1), (p_one + 1e-9, 0)):
            drawn = sides.copy()
            log_g = np.sum(np.where(drawn[:, None] == 1, g1, g0)[2:], axis=0)
            uniforms = np.full(n, 2.0)  # only r is drawn
            uniforms[r] = uniform
            annealed_side_draws(
                drawn, np.array([r]), uniforms, ll_s, ll_t, g0, g1, log_w, log_g, beta,
                power, discount,
            )  # fmt: skip
            assert drawn[r] == expected and np.array_equal(np.delete(drawn, r), np.delete(sides, r))
            np.testing.assert_allclose(
                log_g, np.sum(np.where(drawn[:, None] == 1, g1, g0)[2:], axis=0)
            )


def test_side_draws_leave_both_sides_infinite_to_the_counts():
    n = 4
    ll = np.full(n, -np.inf)
    zeros = np.zeros((n, 1))
    sides = np.array([0, 1, 1, 1], dtype=np.int64)
    log_g = np.zeros(1)
    # side 0 holds 1 list, side 1 two besides r = 3: P(1) = 2 / 3 at beta = 0, d = 0
    for uniform, expected in ((2 / 3 - 1e-9, 1), (2 / 3 + 1e-9, 0)):
        drawn = sides.copy()
        annealed_side_draws(
            drawn, np.array([3]), np.full(n, uniform), ll, ll, zeros, zeros, np.zeros(1),
            log_g, 0.0, 1.0, 0.0,
        )  # fmt: skip
        assert drawn[3] == expected
