r"""Numeric core of the multivariate normal-mean conjugate pair: posterior draws and the
collapsed label sweep (numba). Nothing here imports PyMC.

Slot means ``μ_j ~ N(m_j, S_j)`` (``D``-vectors), observations ``y_i | c_i = j ~ N(μ_j, Σ)``
with ``Σ`` known and common. With ``n_j`` members summing to ``s_j``, and ``W = Σ⁻¹``:

.. math::

    P_j = S_j^{-1} + n_j W,\qquad
    μ_j \mid y \sim N\big(P_j^{-1}(S_j^{-1} m_j + W s_j),\ P_j^{-1}\big),

and the posterior predictive of a new member is ``N(P_j⁻¹(S_j⁻¹ m_j + W s_j), P_j⁻¹ + Σ)``
(an empty slot gives the prior predictive ``N(m_j, S_j + Σ)``). The collapsed sweep is Neal's
(2000) Algorithm 3 with these predictive densities, as in
:func:`pymc_crp.core.conjugate_math.collapsed_label_sweep`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.partition_math import CRP_PRIOR, conditional_slot_weights, draw_log_weighted

__all__ = ["mvn_collapsed_sweep", "mvn_posterior", "mvn_sample_posterior", "mvn_slot_sums"]

_LOG_2PI = math.log(2.0 * math.pi)


def mvn_slot_sums(y: np.ndarray, labels: np.ndarray, n_slots: int) -> tuple:
    """``(n (L,), s (L, D))``: members and sum of the observations of every slot."""
    counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
    sums = np.zeros((n_slots, y.shape[1]))
    np.add.at(sums, labels, y)
    return counts, sums


def mvn_posterior(prior_mean, prior_cov, sigma, counts, sums) -> tuple:
    """Posterior mean ``(L, D)`` and covariance ``(L, D, D)`` of every slot mean."""
    prior_prec = np.linalg.inv(prior_cov)
    w = np.linalg.inv(sigma)
    prec = prior_prec + counts[:, None, None] * w[None]
    h = np.einsum("lab,lb->la", prior_prec, prior_mean) + sums @ w.T
    cov = np.linalg.inv(prec)
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    return np.einsum("lab,lb->la", cov, h), cov


def mvn_sample_posterior(prior_mean, prior_cov, sigma, counts, sums, rng) -> np.ndarray:
    """One exact draw ``(L, D)`` of every slot mean from its posterior."""
    mean, cov = mvn_posterior(prior_mean, prior_cov, sigma, counts, sums)
    chol = np.linalg.cholesky(cov)
    return mean + np.einsum("lab,lb->la", chol, rng.standard_normal(mean.shape))


@njit(cache=True, nogil=True)
def _predictive(
    prior_prec, prior_prec_mean, w, sigma, n, s, mean_out, chol_out
):  # pragma: no cover
    """Predictive mean and Cholesky factor of ``P⁻¹ + Σ`` of one slot; returns log det."""
    prec = prior_prec + n * w
    cov = np.linalg.inv(prec)
    h = prior_prec_mean + w @ s
    mean_out[:] = cov @ h
    pred = 0.5 * (cov + cov.T) + sigma
    chol_out[:, :] = np.linalg.cholesky(pred)
    logdet = 0.0
    for d in range(chol_out.shape[0]):
        logdet += 2.0 * math.log(chol_out[d, d])
    return logdet


@njit(cache=True, nogil=True)
def _logpdf(x, mean, chol, logdet):  # pragma: no cover
    dim = x.shape[0]
    z = np.empty(dim)
    quad = 0.0
    for a in range(dim):  # forward substitution L z = x - mean
        acc = x[a] - mean[a]
        for b in range(a):
            acc -= chol[a, b] * z[b]
        z[a] = acc / chol[a, a]
        quad += z[a] * z[a]
    return -0.5 * (dim * _LOG_2PI + logdet + quad)


@njit(cache=True, nogil=True)
def mvn_collapsed_sweep(
    y,
    sigma,
    prior_mean,
    prior_cov,
    labels,
    counts,
    sums,
    order,
    uniforms,
    prior_code,
    concentration,
    discount,
):  # pragma: no cover
    """One collapsed Gibbs sweep of the labels (in place) for the multivariate normal mean.

    ``y (N, D)``, ``sigma (D, D)``, ``prior_mean (L, D)``, ``prior_cov (L, D, D)``,
    ``counts (L,)`` and ``sums (L, D)`` consistent with ``labels`` (updated in place).
    Returns the number of visits at which every slot was occupied (CRP truncation).
    """
    n_obs, dim = y.shape
    n_slots = counts.shape[0]
    w = np.linalg.inv(sigma)
    prior_prec = np.empty((n_slots, dim, dim))
    prior_prec_mean = np.empty((n_slots, dim))
    means = np.empty((n_slots, dim))
    chols = np.empty((n_slots, dim, dim))
    logdets = np.empty(n_slots)
    for j in range(n_slots):
        prior_prec[j] = np.linalg.inv(prior_cov[j])
        prior_prec_mean[j] = prior_prec[j] @ prior_mean[j]
        logdets[j] = _predictive(prior_prec[j], prior_prec_mean[j], w, sigma, counts[j],
                                 sums[j], means[j], chols[j])  # fmt: skip
    prior_w = np.empty(n_slots)
    logp = np.empty(n_slots)
    n_full = 0
    for t in range(n_obs):
        i = order[t]
        old = labels[i]
        counts[old] -= 1
        sums[old] -= y[i]
        if counts[old] == 0:
            sums[old] = 0.0
        logdets[old] = _predictive(prior_prec[old], prior_prec_mean[old], w, sigma, counts[old],
                                   sums[old], means[old], chols[old])  # fmt: skip
        n_occupied = conditional_slot_weights(counts, prior_code, concentration, discount, prior_w)
        if prior_code == CRP_PRIOR and n_occupied == n_slots:
            n_full += 1
        for j in range(n_slots):
            if prior_w[j] > 0.0:
                logp[j] = math.log(prior_w[j]) + _logpdf(y[i], means[j], chols[j], logdets[j])
            else:
                logp[j] = -np.inf
        choice = draw_log_weighted(logp, uniforms[t])
        labels[i] = choice
        counts[choice] += 1
        sums[choice] += y[i]
        logdets[choice] = _predictive(prior_prec[choice], prior_prec_mean[choice], w, sigma,
                                      counts[choice], sums[choice], means[choice],
                                      chols[choice])  # fmt: skip
    return n_full
