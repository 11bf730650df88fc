r"""Numeric core of the Dirichlet--categorical pair: posterior draws and the collapsed label
sweep (numba). Nothing here imports PyMC.

Slot probability vectors ``p_j ~ Dirichlet(α_j)`` over ``C`` categories, observations
``y_i | c_i = j ~ Categorical(p_j)``. With ``n_{jc}`` members of slot ``j`` in category ``c``
and ``n_j = Σ_c n_{jc}``:

.. math::

    p_j \mid y \sim \mathrm{Dirichlet}(α_j + n_{j\cdot}),\qquad
    P(y_{new} = c \mid y) = \frac{α_{jc} + n_{jc}}{\sum_{c'} α_{jc'} + n_j},

so an empty slot's predictive is ``α_{jc} / Σ α_j``. The collapsed sweep is Neal's (2000)
Algorithm 3 with these predictive probabilities.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pymc_crp.core.partition_math import CRP_PRIOR, conditional_slot_weights, draw_weighted

__all__ = ["categorical_collapsed_sweep", "category_counts", "dirichlet_sample_posterior"]


def category_counts(y: np.ndarray, labels: np.ndarray, n_slots: int, n_categories: int):
    """``(L, C)`` number of members of each slot in each category."""
    out = np.zeros((n_slots, n_categories), dtype=np.int64)
    np.add.at(out, (labels, y), 1)
    return out


def dirichlet_sample_posterior(alpha: np.ndarray, counts: np.ndarray, rng) -> np.ndarray:
    """One exact draw ``(L, C)`` of ``p_j ~ Dirichlet(α_j + n_j)`` (normalised gammas)."""
    g = rng.standard_gamma(alpha + counts)
    total = g.sum(axis=-1, keepdims=True)
    out = np.where(total > 0, g / np.where(total > 0, total, 1.0), 0.0)
    bad = ~(total[:, 0] > 0)  # every gamma underflowed (tiny α): one category at random
    if bad.any():
        weights = (alpha + counts)[bad]
        for row, w in zip(np.flatnonzero(bad), weights, strict=True):
            out[row] = 0.0
            out[row, rng.choice(w.size, p=w / w.sum())] = 1.0
    return out


@njit(cache=True, nogil=True)
def categorical_collapsed_sweep(
    y, alpha, labels, counts, cat_counts, order, uniforms, prior_code, concentration, discount
):  # pragma: no cover
    """One collapsed Gibbs sweep of the labels (in place) for Dirichlet--categorical slots.

    ``y (N,)`` int categories, ``alpha (L, C)``, ``counts (L,)`` and ``cat_counts (L, C)``
    consistent with ``labels`` (updated in place). Returns the number of visits at which
    every slot was occupied (CRP truncation).
    """
    n_obs = y.shape[0]
    n_slots = counts.shape[0]
    alpha_sum = np.empty(n_slots)
    for j in range(n_slots):
        alpha_sum[j] = alpha[j].sum()
    prior_w = np.empty(n_slots)
    probs = np.empty(n_slots)
    n_full = 0
    for t in range(n_obs):
        i = order[t]
        c = y[i]
        old = labels[i]
        counts[old] -= 1
        cat_counts[old, c] -= 1
        n_occupied = conditional_slot_weights(counts, prior_code, concentration, discount, prior_w)
        if prior_code == CRP_PRIOR and n_occupied == n_slots:
            n_full += 1
        total = 0.0
        for j in range(n_slots):
            probs[j] = prior_w[j] * (alpha[j, c] + cat_counts[j, c]) / (alpha_sum[j] + counts[j])
            total += probs[j]
        choice = draw_weighted(probs, total, uniforms[t])
        labels[i] = choice
        counts[choice] += 1
        cat_counts[choice, c] += 1
    return n_full
