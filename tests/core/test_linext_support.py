"""The log-likelihood of lists from their count ratios (``linext_support.loglik_from_ratios``)
against the formula summed term by term in NumPy."""

import numpy as np
import pytest

from pymc_crp.core.linext_support import loglik_from_ratios


def _by_terms(ratios, lengths, p):
    """``sum_j log(p / r_j + (1 - p) ratio_j)`` and its ``d/dp``, ``r_j = m - j``, per row."""
    ll, dp = np.empty(len(lengths)), np.empty(len(lengths))
    for u, m in enumerate(lengths):
        r = m - np.arange(m - 1)
        term = p / r + (1.0 - p) * ratios[u, : m - 1]
        ll[u] = np.sum(np.log(term))
        dp[u] = np.sum((1.0 / r - ratios[u, : m - 1]) / term)
    return ll, dp


def _random_rows(rng, n_rows, longest):
    lengths = rng.integers(1, longest + 1, size=n_rows)
    ratios = rng.random((n_rows, longest - 1))
    ratios[rng.random(ratios.shape) < 0.5] = 0.0  # items not maximal: the term is p / r
    ratios[rng.random(ratios.shape) < 0.1] = 1.0
    return ratios, lengths.astype(np.int64)


@pytest.mark.parametrize("p", [1e-300, 1e-40, 1e-6, 0.05, 0.5, 0.999])
def test_loglik_from_ratios_matches_the_sum_of_logarithms(p):
    rng = np.random.default_rng(31)
    ratios, lengths = _random_rows(rng, 400, 130)
    index = rng.integers(0, 400, size=600)  # repeats are served from the rows' memory
    scratch = (np.empty(400), np.empty(400), np.zeros(400, dtype=bool))
    ll, dp = loglik_from_ratios(ratios, lengths, index, p, True, *scratch)
    want_ll, want_dp = _by_terms(ratios, lengths, p)
    assert np.all(np.isfinite(ll))
    np.testing.assert_allclose(ll, want_ll[index], rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(dp, want_dp[index], rtol=1e-12)


def test_loglik_from_ratios_does_not_underflow_with_every_term_tiny():
    # 199 terms of about 1e-302 each: their product underflows long before the end
    lengths = np.array([200], dtype=np.int64)
    ratios = np.zeros((1, 199))
    index = np.zeros(1, dtype=np.int64)
    scratch = (np.empty(1), np.empty(1), np.zeros(1, dtype=bool))
    ll = loglik_from_ratios(ratios, lengths, index, 1e-300, False, *scratch)[0]
    want = np.sum(np.log(1e-300 / (200 - np.arange(199))))
    np.testing.assert_allclose(ll, [want], rtol=1e-14)


def test_a_zero_term_gives_minus_infinity():
    ratios = np.array([[0.5, 0.0, 1.0]])
    scratch = (np.empty(1), np.empty(1), np.zeros(1, dtype=bool))
    ll, dp = loglik_from_ratios(
        ratios, np.array([4], dtype=np.int64), np.zeros(1, dtype=np.int64), 0.0, True, *scratch
    )
    assert ll[0] == -np.inf and dp[0] == np.inf
