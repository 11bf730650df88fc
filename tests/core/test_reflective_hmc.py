"""Order-keeping Hamiltonian trajectories (pymc_crp.core.reflective_hmc.cone_trajectory).

A trajectory must leave the slot prior conditioned on the slot's dominance order invariant:
i.i.d. draws of that target (rejection oracle, ``tests/oracles.py``) are moved by one
trajectory each, and their first and second moments, each column's spread and the frequencies
of the columns' rank patterns compared with fresh oracle draws (tolerance 4.5 Monte Carlo
standard errors of the difference). With three columns two items can stay incomparable while
they cross in one column, so the rank patterns change within the order: a trajectory that
reflected at every wall (the target conditioned on the rank patterns, which the cell draws
keep) leaves the pattern frequencies of the copies at their start and fails. One that passed
every wall changes the order and fails the first check.
"""

import numpy as np
import pytest
from oracles import dominance_conditioned_equicorrelated_draws

from pymc_crp.core.reflective_hmc import cone_trajectory

DURATION = 0.5 * np.pi
CASES = {  # (prior means M x K, a start giving the dominance order, rho, scale)
    "three items, K=3, one pair incomparable": (
        np.array([[0.5, 0.0, 0.2], [0.0, 0.3, -0.4], [-0.2, 0.1, 0.3]]),
        np.array([[2.0, 2.0, 2.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]),
        0.4,
        0.9,
    ),
    "four items, K=3": (
        np.array([[0.3, -0.1, 0.0], [-0.5, 0.2, 0.1], [0.8, 0.0, -0.3], [0.0, 0.4, 0.2]]),
        np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 0.5], [2.0, 2.0, 0.0], [3.0, -1.0, 1.0]]),
        0.2,
        1.1,
    ),
}


def _dominance(u):
    return np.all(u[..., :, None, :] > u[..., None, :, :], axis=-1)


def _patterns(u):
    """Each copy's rank patterns of the columns, as one integer code per copy."""
    ranks = np.argsort(np.argsort(u, axis=1), axis=1)  # (copies, M, K)
    n_items = u.shape[1]
    return (ranks * n_items ** np.arange(ranks[0].size).reshape(ranks.shape[1:])).sum(axis=(1, 2))


def _statistics(u, codes):
    """Per copy: every entry, its square, each column's spread and an indicator per code."""
    pattern = _patterns(u)
    indicators = (pattern[:, None] == codes[None]).astype(float)
    return np.concatenate(
        [u.reshape(u.shape[0], -1), (u**2).reshape(u.shape[0], -1), u.std(axis=1), indicators],
        axis=1,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_trajectories_leave_the_prior_restricted_to_the_order_invariant(case):
    mean, start, rho, scale = CASES[case]
    moved = dominance_conditioned_equicorrelated_draws(mean, rho, scale, start, 600_000, seed=0)
    reference = dominance_conditioned_equicorrelated_draws(mean, rho, scale, start, 600_000, seed=1)
    moved, reference = moved[:20_000], reference[:20_000]
    assert min(moved.shape[0], reference.shape[0]) == 20_000
    before = moved.copy()
    rng = np.random.default_rng(2)
    n_items = mean.shape[0]
    rows = np.full(n_items, rho), np.full(n_items, scale**2)
    status = np.array([cone_trajectory(rng, u, mean, *rows, DURATION, 100_000) for u in moved])
    assert np.mean(status == 0) > 0.999
    # the order is kept, and the trajectories move the utilities and the rank patterns
    assert np.all(_dominance(moved) == _dominance(start)[None])
    assert np.median(np.abs(moved - before)) > 0.3
    changed = np.mean(_patterns(moved) != _patterns(before))
    assert changed > 0.2
    codes = np.unique(_patterns(reference))
    assert codes.size >= 4  # several rank patterns share the order
    got, want = _statistics(moved, codes), _statistics(reference, codes)
    se = np.sqrt(got.var(axis=0) / got.shape[0] + want.var(axis=0) / want.shape[0])
    assert np.all(np.abs(got.mean(axis=0) - want.mean(axis=0)) < 4.5 * se + 1e-12)


def test_a_chain_of_trajectories_keeps_the_order_and_a_tied_start_is_left():
    mean, start, rho, scale = CASES["four items, K=3"]
    u = start.copy()
    rng = np.random.default_rng(3)
    rows = np.full(4, rho), np.full(4, scale**2)
    seen = set()
    for _ in range(500):
        assert cone_trajectory(rng, u, mean, *rows, DURATION, 100_000) == 0
        assert np.array_equal(_dominance(u), _dominance(start))
        seen.add(int(_patterns(u[None])[0]))
    assert len(seen) > 4
    tied = np.zeros((4, 3))
    assert cone_trajectory(rng, tied, mean, *rows, DURATION, 100_000) == 3
    assert not tied.any()


def test_with_one_column_no_wall_is_passed():
    """One column: every meeting of neighbours changes the (total) order, so the ranks stay."""
    mean = np.array([[0.2], [0.0], [-0.3]])
    u = np.array([[1.0], [0.0], [-1.0]])
    rng = np.random.default_rng(4)
    for _ in range(200):
        cone_trajectory(rng, u, mean, np.zeros(3), np.ones(3), DURATION, 100_000)
        assert np.all(np.diff(u[:, 0]) < 0)
    assert list(np.argsort(-u[:, 0])) == [0, 1, 2]
