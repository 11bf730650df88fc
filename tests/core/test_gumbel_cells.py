"""``gumbel_cell_draws``: the Gumbel score and its inverse, the orders kept, the stationary law
against rejection sampling from the prior."""

import numpy as np
import pytest
from mc_checks import z_scores
from scipy import special

from pymc_crp.core.gumbel_cells import gumbel_cell_draws, gumbel_score, inverse_gumbel_score


def scores(u, shift):
    return -np.log(-special.log_ndtr(u)) + shift[:, None]


def test_score_and_inverse_match_scipy_in_both_tails():
    u = np.concatenate([np.linspace(-37.0, 30.0, 671), [8.5, 9.3, 12.0]])
    expected = -np.log(-special.log_ndtr(u))
    got = np.array([gumbel_score(v) for v in u])
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    back = np.array([inverse_gumbel_score(v) for v in expected])
    np.testing.assert_allclose(back, u, atol=1e-12)
    assert inverse_gumbel_score(np.inf) == np.inf and inverse_gumbel_score(-np.inf) == -np.inf


def test_draws_keep_the_score_orders_and_follow_the_restricted_prior():
    """One slot of 3 items in 2 correlated columns with covariate shifts: every scan keeps
    each column's rank pattern of the scores, and the draws' means and the probability of a
    coordinate below a level match the prior restricted to those patterns (rejection sampling
    from the prior); the unrestricted prior's means are rejected (power)."""
    rng = np.random.default_rng(0)
    shift = np.array([0.8, 0.0, -0.8])
    mean = np.array([[[0.3, -0.1], [-0.2, 0.4], [0.1, 0.0]]])
    rho, scale = 0.4, 0.9
    utilities = mean.copy()  # the patterns of the scores at the prior mean
    pattern = np.argsort(scores(utilities[0], shift), axis=0)
    n_draws = 20_000
    draws = np.empty((n_draws, 3, 2))
    rows = np.full((1, 3), rho), np.full((1, 3), scale)
    for t in range(n_draws):
        gumbel_cell_draws(utilities, mean, *rows, shift, rng.random((2, 2, 1, 3)))
        assert np.array_equal(np.argsort(scores(utilities[0], shift), axis=0), pattern)
        draws[t] = utilities[0]
    prior = mean[0] + scale * (
        np.sqrt(1 - rho) * rng.standard_normal((1_000_000, 3, 2))
        + np.sqrt(rho) * rng.standard_normal((1_000_000, 3, 1))
    )
    keep = np.all(np.argsort(scores(prior, shift), axis=1) == pattern, axis=(1, 2))
    reference = prior[keep]
    assert keep.sum() > 20_000
    chain = draws.reshape(1, n_draws, 6)
    exact = reference.reshape(-1, 6).mean(axis=0)
    assert np.all(np.abs(z_scores(chain, exact, indicators=False)) < 4.5)
    below = (chain < 0.0).astype(float)
    assert np.all(np.abs(z_scores(below, (reference.reshape(-1, 6) < 0.0).mean(axis=0))) < 4.5)
    free = mean[0].reshape(6)
    assert np.max(np.abs(z_scores(chain, free, indicators=False))) > 4.5


def test_tied_scores_and_empty_input_are_left_alone():
    tied = np.zeros((1, 3, 1))
    before = tied.copy()
    accepted = gumbel_cell_draws(
        tied, np.zeros((1, 3, 1)), np.zeros((1, 3)), np.ones((1, 3)), np.zeros(3),
        np.full((1, 2, 1, 3), 0.5),
    )  # fmt: skip
    assert accepted == 0 and np.array_equal(tied, before)
    assert (
        gumbel_cell_draws(np.zeros((0, 3, 1)), 0.0, 0.0, 1.0, np.zeros(3), np.zeros((1, 2, 0, 3)))
        == 0
    )


@pytest.mark.parametrize("shift", [np.array([40.0, 0.0, -40.0]), np.array([0.0, 1e-9, 0.0])])
def test_extreme_shifts_keep_the_orders(shift):
    """Shifts that push scores far into a tail, and a near-tie: the orders still hold."""
    rng = np.random.default_rng(3)
    utilities = rng.normal(size=(2, 3, 2))
    pattern = [np.argsort(scores(u, shift), axis=0) for u in utilities]
    for _ in range(200):
        gumbel_cell_draws(
            utilities, np.zeros_like(utilities), np.full((2, 3), 0.3), np.ones((2, 3)), shift,
            rng.random((2, 2, 2, 3)),
        )  # fmt: skip
        for u, p in zip(utilities, pattern, strict=True):
            assert np.array_equal(np.argsort(scores(u, shift), axis=0), p)
