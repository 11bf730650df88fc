"""Tests of the numba label sweep of ``CRPGibbs`` (:mod:`pymc_crp.core.label_sweep`) alone.

The sweep's stationary distribution is compared with the exact label-vector posterior
(enumerated in tests/oracles.py) by a chi-square test on thinned draws, and the conditional
probabilities it records with the exact full conditionals; ``likelihood_weights`` against its
NumPy formula.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import (
    all_label_vectors,
    crp_label_prob,
    dirichlet_multinomial_label_prob,
    exact_label_posterior,
)
from scipy import stats

from pymc_crp.core.label_sweep import gibbs_label_sweep, likelihood_weights
from pymc_crp.core.partition_math import CRP_PRIOR, DIRICHLET_MULTINOMIAL_PRIOR


def test_likelihood_weights_unit():
    loglik = np.array(
        [[0.0, -1.0, -np.inf], [-np.inf, -np.inf, -np.inf], [-1000.0, -1001.0, -999.0]]
    )
    w, impossible = likelihood_weights(loglik)
    np.testing.assert_allclose(w[0], [1.0, np.exp(-1.0), 0.0])
    np.testing.assert_array_equal(w[1], 1.0)  # an impossible row follows the prior
    np.testing.assert_allclose(w[2], [np.exp(-1.0), np.exp(-2.0), 1.0])  # no underflow
    np.testing.assert_array_equal(impossible, [False, True, False])
    for bad in (np.nan, np.inf):
        loglik_bad = np.zeros((3, 2))
        loglik_bad[1, 0] = bad
        with pytest.raises(FloatingPointError, match="NaN or \\+inf"):
            likelihood_weights(loglik_bad)


def test_likelihood_weights_kernel_matches_the_numpy_formula():
    from pymc_crp.core import label_sweep

    rng = np.random.default_rng(5)
    loglik = rng.normal(size=(500, 7)) * 40.0
    loglik[3] = -np.inf
    loglik[4, 2] = -np.inf
    loglik[5] = [-1e308, -np.inf, -1e308, 0.0, 5.0, -np.inf, 1e300]
    w, impossible = likelihood_weights(loglik)
    row_max = loglik.max(axis=1, keepdims=True)
    row_max[~np.isfinite(row_max)] = 0.0
    want = np.exp(loglik - row_max)
    want[3] = 1.0
    np.testing.assert_allclose(w, want, rtol=1e-15, atol=0.0)  # libm exp vs NumPy's: 1 ulp
    np.testing.assert_array_equal(impossible, np.arange(500) == 3)
    assert w.flags.c_contiguous and w.dtype == np.float64
    likelihood_weights(np.asfortranarray(loglik[:, :3]).astype(np.float32))
    assert len(label_sweep._weights_kernel.signatures) == 1


# --------------------------------------------------------------------------------------------
# The numba sweep alone against the exact label-vector target
# --------------------------------------------------------------------------------------------
SWEEP_CASES = [
    # (prior code, param a, param b, N, L)
    (CRP_PRIOR, 1.0, 0.0, 4, 4),
    (CRP_PRIOR, 0.7, 0.5, 4, 4),
    (CRP_PRIOR, 2.0, 0.3, 4, 2),  # truncated: K <= 2
    (DIRICHLET_MULTINOMIAL_PRIOR, 1.5, 0.0, 4, 3),
    (DIRICHLET_MULTINOMIAL_PRIOR, 0.5, 0.0, 3, 4),
]


def sweep_log_prior(prior_code, a, b, n_slots, wrong=False):
    if prior_code == DIRICHLET_MULTINOMIAL_PRIOR:
        return lambda c: math.log(dirichlet_multinomial_label_prob(c, a, n_slots))

    def crp(c):
        p = crp_label_prob(c, a, b, n_slots)
        if wrong:  # EPPF as a label-vector probability (docs/mathematics.md, *Partition priors*)
            p *= math.perm(n_slots, len(np.unique(c)))
        return math.log(p)

    return crp


def run_sweeps(lik_weights, prior_code, a, b, n_samples, thin, seed):
    """Label vectors (as integers, first label most significant) after every ``thin`` sweeps."""
    rng = np.random.default_rng(seed)
    n_obs, n_slots = lik_weights.shape
    labels = np.zeros(n_obs, dtype=np.int64)
    counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
    no_probs = np.empty((0, 0))
    powers = n_slots ** np.arange(n_obs)[::-1]
    codes = np.empty(n_samples, dtype=np.int64)
    for s in range(n_samples):
        for _ in range(thin):
            order = rng.permutation(n_obs).astype(np.int64)
            gibbs_label_sweep(
                lik_weights, labels, counts, order, rng.random(n_obs), prior_code, a, b, no_probs
            )
        codes[s] = labels @ powers
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=n_slots))
    return codes


def chi_square_p(codes, expected_probs):
    """Goodness of fit, pooling the cells with expected count below 5."""
    observed = np.bincount(codes, minlength=expected_probs.size).astype(float)
    expected = expected_probs * codes.size
    small = expected < 5
    assert observed[expected_probs == 0].sum() == 0  # impossible label vectors never appear
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep]).pvalue


@pytest.mark.parametrize("prior_code, a, b, n, n_slots", SWEEP_CASES)
def test_sweep_stationary_distribution(prior_code, a, b, n, n_slots):
    rng = np.random.default_rng(100 + n_slots)
    loglik = rng.normal(0.0, 1.0, size=(n, n_slots))
    target = exact_label_posterior(
        all_label_vectors(n, n_slots), sweep_log_prior(prior_code, a, b, n_slots), loglik
    )
    # Thinning by 4 sweeps makes successive kept states nearly independent (N <= 4), as the
    # chi-square test assumes.
    codes = run_sweeps(likelihood_weights(loglik)[0], prior_code, a, b, 20_000, 4, seed=n)
    assert chi_square_p(codes, target) > 0.001
    if prior_code == CRP_PRIOR and n_slots > 2:  # power: the label-vector bug is rejected
        # (with L = 2 the factor L!/(L-K)! = 2 is the same for K = 1, 2: no bug to see)
        wrong = exact_label_posterior(
            all_label_vectors(n, n_slots),
            sweep_log_prior(prior_code, a, b, n_slots, wrong=True),
            loglik,
        )
        assert chi_square_p(codes, wrong) < 1e-6


@pytest.mark.parametrize("prior_code, a, b, n, n_slots", SWEEP_CASES)
def test_sweep_recorded_probabilities_are_exact_conditionals(prior_code, a, b, n, n_slots):
    """``probs_out`` of the last observation visited is its exact full conditional.

    When the last observation is visited every other label already has its final value, so
    the recorded row must equal p(c_i = j | c_-i) ∝ p(c with c_i = j) exp(loglik[i, j]).
    """
    rng = np.random.default_rng(7)
    loglik = rng.normal(0.0, 1.0, size=(n, n_slots))
    log_prior = sweep_log_prior(prior_code, a, b, n_slots)
    lik_weights = likelihood_weights(loglik)[0]
    labels = rng.integers(0, min(n_slots, 2), size=n).astype(np.int64)
    counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
    for _ in range(20):
        order = rng.permutation(n).astype(np.int64)
        probs_out = np.full((n, n_slots), np.nan)
        gibbs_label_sweep(
            lik_weights, labels, counts, order, rng.random(n), prior_code, a, b, probs_out
        )
        np.testing.assert_allclose(probs_out.sum(axis=1), 1.0, rtol=1e-12)
        i = order[-1]
        logs = []
        for j in range(n_slots):
            c = labels.copy()
            c[i] = j
            logs.append(log_prior(c) + loglik[i, j])
        want = np.exp(np.array(logs) - max(logs))
        np.testing.assert_allclose(probs_out[i], want / want.sum(), rtol=1e-10, atol=1e-14)


def test_sweep_reports_full_slots_for_the_crp_only():
    lik = np.ones((4, 2))
    labels = np.array([0, 0, 1, 1], dtype=np.int64)
    args = (np.arange(4, dtype=np.int64), np.full(4, 0.5))
    counts = np.bincount(labels, minlength=2).astype(np.int64)
    n_full = gibbs_label_sweep(
        lik, labels.copy(), counts, *args, CRP_PRIOR, 1.0, 0.0, np.empty((0, 0))
    )
    assert n_full >= 1  # removing observation 0 leaves both slots occupied
    counts = np.bincount(labels, minlength=2).astype(np.int64)
    n_full = gibbs_label_sweep(
        lik, labels.copy(), counts, *args, DIRICHLET_MULTINOMIAL_PRIOR, 1.0, 0.0, np.empty((0, 0))
    )
    assert n_full == 0
    with_space = np.ones((4, 5))
    counts = np.bincount(labels, minlength=5).astype(np.int64)
    n_full = gibbs_label_sweep(
        with_space, labels.copy(), counts, *args, CRP_PRIOR, 1.0, 0.0, np.empty((0, 0))
    )
    assert n_full == 0
