r"""Numeric core of the collapsed label step: one Gibbs sweep over the labels (numba).

Given the log-likelihood matrix ``ℓ[i, j] = log p(y_i | φ_j)`` of every observation under the
parameters of every slot (fixed during a sweep), each observation ``i`` in turn is removed
from its slot and given a new label drawn from

.. math:: P(c_i = j \mid c_{-i}, φ, y) \propto w_j(c_{-i})\, \exp(ℓ[i, j]),

where ``w_j`` are the prior's conditional weights (:func:`pymc_crp.core.partition_math.
conditional_slot_weights`): ``n_j - d`` for an occupied slot and ``(θ + dK)/(L - K)`` for an
empty one (CRP), or ``n_a + γ/A`` (Dirichlet--multinomial). This is an exact Gibbs update of
the joint ``(c, φ)``; nothing is accepted or rejected. The cost is ``O(N L)`` per sweep:
``exp(ℓ - max_j ℓ)`` is formed once, so the loop itself does no transcendental functions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.partition_math import CRP_PRIOR, conditional_slot_weights, draw_weighted

__all__ = ["full_conditionals", "gibbs_label_sweep", "likelihood_weights"]


def likelihood_weights(loglik: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-scaled likelihoods ``E[i, j] = exp(ℓ[i, j] - max_j ℓ[i, j])``.

    Rows that are ``-inf`` everywhere (an observation impossible under every slot) get
    ``E = 1`` so that their label follows the prior; the second output flags them.
    Raises ``FloatingPointError`` on NaN or ``+inf`` entries. One compiled pass per row
    (the row maximum, then the exponentials), no temporaries.
    """
    loglik = np.ascontiguousarray(loglik, dtype=np.float64)
    weights = np.empty(loglik.shape)
    impossible = np.empty(loglik.shape[0], dtype=bool)
    if not _weights_kernel(loglik, weights, impossible):
        raise FloatingPointError(
            "the log-likelihood matrix of the labels has NaN or +inf entries; check the model's "
            "parameters and data"
        )
    return weights, impossible


@njit(cache=True, nogil=True)
def _weights_kernel(loglik, weights, impossible):  # pragma: no cover
    """Fill ``weights`` and ``impossible`` (see :func:`likelihood_weights`); False on NaN or
    ``+inf`` entries."""
    n_obs, n_slots = loglik.shape
    for i in range(n_obs):
        row_max = -np.inf
        for j in range(n_slots):
            v = loglik[i, j]
            if np.isnan(v) or v == np.inf:
                return False
            row_max = max(row_max, v)
        impossible[i] = row_max == -np.inf
        for j in range(n_slots):
            weights[i, j] = 1.0 if impossible[i] else math.exp(loglik[i, j] - row_max)
    return True


@njit(cache=True, nogil=True)
def gibbs_label_sweep(
    lik_weights, labels, counts, order, uniforms, prior_code, concentration, discount, probs_out
):  # pragma: no cover
    """One sweep of single-site Gibbs updates of the labels, in place.

    Parameters
    ----------
    lik_weights : (N, L) float64
        ``exp(ℓ[i, j] - max_j ℓ[i, j])`` (see :func:`likelihood_weights`).
    labels : (N,) int64
        Current labels, updated in place.
    counts : (L,) int64
        Slot sizes consistent with ``labels``, updated in place.
    order : (N,) int64
        Visiting order (a permutation of ``0..N-1``).
    uniforms : (N,) float64
        Uniform draws on ``[0, 1)``, one per visit.
    prior_code, concentration, discount
        Prior and its parameters as in ``conditional_slot_weights``.
    probs_out : (N, L) float64 or (0, 0)
        If it has ``N`` rows, receives each observation's conditional probabilities.

    Returns
    -------
    int
        Number of visits at which every slot was occupied by the other observations, so the
        CRP's mass for a new cluster could not be given to any slot (truncation bites).
    """
    n_obs, n_slots = lik_weights.shape
    prior_w = np.empty(n_slots)
    probs = np.empty(n_slots)
    record = probs_out.shape[0] == n_obs
    n_full = 0
    for t in range(n_obs):
        i = order[t]
        counts[labels[i]] -= 1
        n_occupied = conditional_slot_weights(counts, prior_code, concentration, discount, prior_w)
        if prior_code == CRP_PRIOR and n_occupied == n_slots:
            n_full += 1
        total = 0.0
        for j in range(n_slots):
            probs[j] = prior_w[j] * lik_weights[i, j]
            total += probs[j]
        choice = draw_weighted(probs, total, uniforms[t])
        labels[i] = choice
        counts[choice] += 1
        if record:
            for j in range(n_slots):
                probs_out[i, j] = probs[j] / total
    return n_full


@njit(cache=True, nogil=True)
def full_conditionals(
    lik_weights, labels, counts, prior_code, concentration, discount, out
):  # pragma: no cover
    r"""Every label's full conditional at the current state, ``out[i, j] = P(c_i = j | c_{-i}, φ)``.

    .. math:: P(c_i = j \mid c_{-i}, φ, y) = \frac{w_j(c_{-i})\, E[i, j]}
        {\sum_{j'} w_{j'}(c_{-i})\, E[i, j']}

    with the prior weights of :func:`pymc_crp.core.partition_math.conditional_slot_weights` and
    ``E`` from :func:`likelihood_weights`. Evaluated at the end of a sweep, these are the
    conditionals of the draw that is stored, so their average over draws is an unbiased
    (Rao--Blackwellised) estimate of the membership probabilities, also after relabelling
    each draw by its own labels (:func:`pymc_crp.membership_probabilities`). ``counts`` is
    restored on return.
    """
    n_obs, n_slots = lik_weights.shape
    prior_w = np.empty(n_slots)
    for i in range(n_obs):
        counts[labels[i]] -= 1
        conditional_slot_weights(counts, prior_code, concentration, discount, prior_w)
        counts[labels[i]] += 1
        total = 0.0
        for j in range(n_slots):
            out[i, j] = prior_w[j] * lik_weights[i, j]
            total += out[i, j]
        for j in range(n_slots):
            out[i, j] /= total
