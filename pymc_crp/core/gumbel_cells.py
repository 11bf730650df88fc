r"""Draws of utilities within the cells that keep the orders of their Gumbel scores.

With item covariates the partial-order models order the items of a slot by
``η_jk = g(U_jk) + s_j``, ``g(u) = G⁻¹(Φ(u)) = -\log(-\log Φ(u))``, ``s = xβ``
(``docs/mathematics.md``, item covariates). Given the other items of its column, ``η_jk``
keeps its rank while it stays between its neighbours' scores ``η_lo < η_jk < η_hi``; ``g`` is
increasing, so that is the interval

.. math:: g^{-1}(η_{lo} - s_j) < U_{jk} < g^{-1}(η_{hi} - s_j),
    \qquad g^{-1}(v) = Φ^{-1}(\exp(-e^{-v})).

:func:`gumbel_cell_draws` redraws, column by column and by rank parity (items of one parity
are never each other's neighbours), each ``U_jk`` from its conditional under the row prior
``N(m, s² Σ_ρ)`` restricted to that interval. The ends are computed in floating point, so a
draw is a Metropolis--Hastings proposal: the truncated normal on the computed interval ``I'``
(which depends on the neighbours only, not on ``U_jk``), accepted when its score falls strictly
between the neighbours' and the current value lies in ``I'`` too. The ratio of target and
proposal densities is then 1, so the move leaves the prior restricted to the current rank
patterns of ``η`` invariant whatever the rounding of ``g`` and ``g^{-1}``; no list is evaluated.
No PyMC here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.normal_cdf import log_ndtr, ndtri, truncated_normal_draw
from pymc_crp.core.utility_gibbs import conditional_kernel, contiguous_rows, untied_order

__all__ = ["gumbel_cell_draws", "gumbel_score", "inverse_gumbel_score"]


@njit(cache=True, nogil=True)
def gumbel_score(u: float) -> float:  # pragma: no cover - compiled
    """``g(u) = -log(-log Φ(u))`` (``±∞`` at ``±∞``)."""
    if u == math.inf:
        return math.inf
    return -math.log(-log_ndtr(u))


@njit(cache=True, nogil=True)
def inverse_gumbel_score(v: float) -> float:  # pragma: no cover - compiled
    """``g⁻¹(v) = Φ⁻¹(exp(-e^{-v}))``; above the median as ``-Φ⁻¹(-expm1(-e^{-v}))`` so that
    the upper tail keeps its digits."""
    if v == math.inf:
        return math.inf
    if v == -math.inf:
        return -math.inf
    log_q = -math.exp(-v)
    if log_q < -math.log(2.0):
        return ndtri(math.exp(log_q))
    return -ndtri(-math.expm1(log_q))


def gumbel_cell_draws(utilities, mean, rho, scale, shift, uniforms) -> int:
    """One scan of draws within the cells of the scores ``η = g(U) + shift`` (module
    docstring), in place; returns the number of draws accepted. ``utilities`` ``(S, M, K)``,
    ``mean``, ``rho``, ``scale`` and ``uniforms`` as for
    :func:`~pymc_crp.core.utility_gibbs.cell_draws`; ``shift`` ``(M,)`` the covariate effects
    ``x_j β`` added to every column's scores."""
    n_slots, n_items, _ = utilities.shape
    if n_slots == 0 or n_items == 0:
        return 0
    work, mean, rho, scale = contiguous_rows(utilities, mean, rho, scale)
    accepted = gumbel_cell_draws_kernel(
        work,
        mean,
        rho,
        scale,
        np.ascontiguousarray(shift, dtype=np.float64),
        np.ascontiguousarray(uniforms, dtype=np.float64),
    )
    if work is not utilities:
        utilities[...] = work
    return int(accepted)


@njit(cache=True, nogil=True)
def gumbel_cell_draws_kernel(utilities, mean, rho, scale, shift, uniforms):
    # pragma: no cover - compiled
    """:func:`gumbel_cell_draws` on contiguous float64 arrays (``utilities`` in place). A
    column whose scores tie keeps its values (no interval keeps a tie; ties have probability
    zero under the target)."""
    n_slots, n_items, n_dims = utilities.shape
    scores = np.empty(n_items)
    accepted = 0
    for k in range(n_dims):
        for s in range(n_slots):
            for j in range(n_items):
                scores[j] = gumbel_score(utilities[s, j, k]) + shift[j]
            order, untied = untied_order(scores)
            if not untied:
                continue
            for parity in range(2):
                for r in range(parity, n_items, 2):
                    j = order[r]
                    below = scores[order[r - 1]] if r > 0 else -np.inf
                    above = scores[order[r + 1]] if r < n_items - 1 else np.inf
                    low = inverse_gumbel_score(below - shift[j])
                    high = inverse_gumbel_score(above - shift[j])
                    current = utilities[s, j, k]
                    if not (low < current < high):
                        continue  # the reverse proposal could not return here: reject
                    mu, sd = conditional_kernel(
                        utilities[s, j], mean[s, j], rho[s, j], scale[s, j], k
                    )
                    proposal = truncated_normal_draw(low, high, mu, sd, uniforms[k, parity, s, j])
                    score = gumbel_score(proposal) + shift[j]
                    if below < score < above:
                        utilities[s, j, k] = proposal
                        scores[j] = score
                        accepted += 1
    return accepted
