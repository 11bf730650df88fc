"""The leave-one-out log-sums (pymc_crp.core.leave_one_out) against scipy's logsumexp over the
other columns, where the short cut would cancel and where it cannot."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pymc_crp.core.leave_one_out import logsumexp_without, row_logsumexp


def _direct(weights, column):
    return logsumexp(np.delete(weights, column, axis=1), axis=1)


def _weights(rng, n_rows=400, n_columns=9):
    """Log-weights with rows of every kind: one column dominating by up to 800 nats (the
    leave-one-out sum is then far below the total), near-ties, large negative values
    (log-likelihoods of long lists) and -inf entries."""
    weights = rng.normal(-300.0, 40.0, size=(n_rows, n_columns))
    dominant = rng.integers(n_columns, size=n_rows)
    lead = rng.choice([0.0, 1e-9, 0.5, 3.0, 40.0, 800.0], size=n_rows)
    rows = np.arange(n_rows)
    weights[rows, dominant] = np.delete(weights, 0, axis=1).max(axis=1) + lead
    weights[rng.random(weights.shape) < 0.05] = -np.inf
    return weights


def test_matches_the_direct_sum_over_the_other_columns():
    rng = np.random.default_rng(3)
    weights = _weights(rng)
    totals = row_logsumexp(weights)
    np.testing.assert_allclose(totals, logsumexp(weights, axis=1), rtol=1e-14)
    for column in range(weights.shape[1]):
        expected = _direct(weights, column)
        got = logsumexp_without(weights, totals, column)
        finite = np.isfinite(expected)
        assert np.array_equal(np.isfinite(got), finite)
        assert np.all(got[~finite] == expected[~finite])
        # one or two ulps of the log-sum's magnitude: the accuracy of a direct log-sum-exp
        np.testing.assert_allclose(got[finite], expected[finite], rtol=4e-15, atol=0)


def test_the_short_cut_alone_would_cancel_where_one_column_dominates():
    """A row whose column 0 holds all but e^-800 of its mass: log S + log1p(-share) would be
    -inf or garbage; the direct sum over the other columns is returned."""
    weights = np.array([[0.0, -800.0, -801.0], [0.0, 0.0, 0.0]])
    totals = row_logsumexp(weights)
    got = logsumexp_without(weights, totals, 0)
    np.testing.assert_allclose(got, [np.logaddexp(-800.0, -801.0), np.log(2.0)], rtol=1e-15)


def test_rows_without_mass_and_single_columns():
    weights = np.array([[-np.inf, -np.inf], [-np.inf, 2.0], [2.0, -np.inf]])
    totals = row_logsumexp(weights)
    assert totals[0] == -np.inf and totals[1] == 2.0 and totals[2] == 2.0
    assert np.array_equal(logsumexp_without(weights, totals, 0), [-np.inf, 2.0, -np.inf])
    one = np.array([[1.5], [-np.inf]])
    assert np.array_equal(logsumexp_without(one, row_logsumexp(one), 0), [-np.inf, -np.inf])


def test_bad_arguments_are_named():
    weights = np.zeros((3, 2))
    with pytest.raises(ValueError, match="column"):
        logsumexp_without(weights, row_logsumexp(weights), 2)
    with pytest.raises(ValueError, match="log_totals"):
        logsumexp_without(weights, np.zeros(2), 0)
