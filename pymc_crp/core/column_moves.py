r"""Numeric core of the column moves of partial-order utilities: shifts and scalings that keep
every order.

The dominance order of a slot's utilities ``U`` (``M × K``) depends only on the ranking of
the items within each column: an increasing affine map of one column,
``x ↦ x̄ + c (x - x̄) + b`` with ``c > 0``, leaves every order, hence every list likelihood,
unchanged. Within an order the utilities are confined to a product of cones, which the draws
of one coordinate at a time (:func:`~pymc_crp.core.utility_gibbs.cell_draws`) cross slowly
along the directions where every item of a column moves together; the two moves below are
Gibbs updates along exactly those directions (Liu and Sabatti 2000, generalised Gibbs along
the translation and the scale group).

For one column ``x`` of one slot, given the other columns, the rows are independent under the
slot prior, ``x_j ~ N(μ_j, σ_j^2)`` (:func:`~pymc_crp.core.utility_gibbs.
equicorrelated_conditional`); write ``w_j = σ_j^{-2}``. Decompose
``x = x̄ 1 + r`` with ``x̄ = Σ w_j x_j / Σ w_j`` (so ``Σ w_j r_j = 0``, a fixed hyperplane):

* **shift** — ``x̄`` given ``r`` is ``N(Σ w_j (μ_j - r_j) / Σ w_j, 1 / Σ w_j)``: an exact draw;
* **scale** — in polar coordinates of the hyperplane, ``r = t ω``, the radius given the
  direction has density ``∝ t^{M-2} π(x̄ 1 + t ω)`` (the Jacobian of polar coordinates in
  ``M - 1`` dimensions). Relative to the current ``r``, ``c = t / ‖r‖`` has log-density

  .. math::

      g(c) = (M - 2) \log c - \tfrac12 A c^2 + B c, \qquad
      A = \sum_j w_j r_j^2, \quad B = \sum_j w_j r_j (μ_j - x̄),

  strictly concave, with mode ``c^* = (B + \sqrt{B^2 + 4 A (M-2)}) / (2A)``. The move proposes
  ``c' ~ N(c^*, 1/κ)``, ``κ = A + (M-2)/c^{*2} = -g''(c^*)`` (the Laplace approximation, which
  depends only on the ray, so it is an independence proposal along the ray), and accepts
  with ``min(1, e^{g(c') - g(1)} q(1) / q(c'))``; ``c' ≤ 0`` is rejected. With ``M = 2`` the
  density is the normal ``N(B/A, 1/A)`` on ``c > 0`` and the draw is exact.

Either update leaves the slot prior restricted to the current orders invariant (Gibbs, or
Metropolis-within-Gibbs, in the coordinates ``(x̄, t, ω)``), and neither evaluates a list.
Columns are visited in turn (each conditions on the current values of the others). Columns
with tied values (e.g. an initial point of zeros) are left alone.

**Swaps of two columns** (:func:`column_swaps`). The dominance order is the intersection of
the columns' orders, so it does not depend on which column holds which ranking: exchanging
two columns of a slot keeps its order, while the moves above cannot reach the exchanged
matrix (it lies in another cell of the rank patterns, and the continuous moves between the
two cross walls where the order changes). For a row ``x ~ N(m, s^2 Σ_ρ)`` with the
equicorrelated ``Σ_ρ^{-1} = (I - \tfrac{ρ}{1+(K-1)ρ}\mathbf 1\mathbf 1^\top)/(1-ρ)``,
exchanging entries ``k`` and ``l`` keeps ``x^\top Σ_ρ^{-1} x`` and ``\mathbf 1^\top x``, so only
the cross term changes:

.. math::

    \log\frac{π(x^{(kl)})}{π(x)} = \frac{(x_l - x_k)(m_k - m_l)}{s^2 (1-ρ)},

summed over the rows of the slot. The pair ``{k, l}`` is drawn uniformly (a symmetric
proposal) and the swap is accepted with the Metropolis probability; no list is evaluated.
The swap matters where the slots' prior means differ between the columns (in the
hierarchical model ``τ U0``): a slot whose columns are matched to the wrong columns of
``U0`` pulls ``τ`` down, and without the swap it stays so. No PyMC here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.normal_cdf import truncated_normal_draw
from pymc_crp.core.utility_gibbs import conditional_kernel, contiguous_rows

__all__ = ["column_moves", "column_swaps"]

_TINY = float(np.finfo(np.float64).tiny)


def column_moves(utilities, mean, rho, scale, normals, uniforms) -> np.ndarray:
    r"""One shift and one scale move of every column of every slot (see the module
    docstring), in place; one compiled call.

    Parameters
    ----------
    utilities, mean, rho, scale
        As for :func:`~pymc_crp.core.utility_gibbs.cell_draws` (``utilities`` updated in
        place).
    normals : float64 (K, 2, S)
        Standard normal draws: the shift and the proposed scale of each column.
    uniforms : float64 (K, S)
        Uniforms of the scale moves' acceptance (and of the exact draw when ``M = 2``).

    Returns
    -------
    accepted : bool (K, S)
        Which scale moves were accepted.
    """
    n_slots, n_items, n_dims = utilities.shape
    accepted = np.zeros((n_dims, n_slots), dtype=np.bool_)
    if n_slots == 0 or n_items < 2:
        return accepted
    work, mean, rho, scale = contiguous_rows(utilities, mean, rho, scale)
    _column_moves_kernel(
        work,
        mean,
        rho,
        scale,
        np.ascontiguousarray(normals, dtype=np.float64),
        np.ascontiguousarray(uniforms, dtype=np.float64),
        accepted,
    )
    if work is not utilities:
        utilities[...] = work
    return accepted


@njit(cache=True, nogil=True)
def _untied(column):  # pragma: no cover - compiled
    """Whether the values of ``column`` are distinct."""
    ranked = np.sort(column)
    for r in range(1, ranked.shape[0]):
        if not ranked[r] > ranked[r - 1]:
            return False
    return True


@njit(cache=True, nogil=True)
def _column_moves_kernel(utilities, mean, rho, scale, normals, uniforms, accepted):
    # pragma: no cover - compiled
    """:func:`column_moves` on contiguous arrays: for each column ``k`` (in turn) and slot,
    the shift drawn exactly and the scale by :func:`_scale_draw`."""
    n_slots, n_items, n_dims = utilities.shape
    mu, w, resid = np.empty(n_items), np.empty(n_items), np.empty(n_items)
    for k in range(n_dims):
        for s in range(n_slots):
            column = utilities[s, :, k]
            if not _untied(column):
                continue
            w_sum = centre = 0.0
            for j in range(n_items):
                mu[j], sd = conditional_kernel(
                    utilities[s, j], mean[s, j], rho[s, j], scale[s, j], k
                )
                w[j] = 1.0 / (sd * sd)
                w_sum += w[j]
                centre += w[j] * column[j]
            centre /= w_sum
            shift = 0.0
            for j in range(n_items):
                resid[j] = column[j] - centre
                shift += w[j] * (mu[j] - resid[j])
            # shift: the weighted centre given the residuals, an exact normal draw
            centre = shift / w_sum + normals[k, 0, s] / math.sqrt(w_sum)
            a = b = 0.0
            for j in range(n_items):
                a += w[j] * resid[j] * resid[j]
                b += w[j] * resid[j] * (mu[j] - centre)
            factor, ok = _scale_draw(a, b, n_items, normals[k, 1, s], uniforms[k, s])
            accepted[k, s] = ok
            if not ok:
                factor = 1.0
            for j in range(n_items):
                utilities[s, j, k] = centre + factor * resid[j]


@njit(cache=True, nogil=True)
def _scale_draw(a, b, n_items, normal, uniform):  # pragma: no cover - compiled
    """The scale move of one column: ``(c, accepted)`` from the log-density ``g(c) = (M-2)
    log c - A c²/2 + B c`` (see the module docstring); ``A = 0`` (a tied column) is never
    accepted."""
    good = a > 0.0
    if not good:
        a = 1.0
    if n_items == 2:  # N(B/A, 1/A) on c > 0, drawn exactly
        factor = truncated_normal_draw(0.0, np.inf, b / a, 1.0 / math.sqrt(a), uniform)
        return max(factor, _TINY), good
    power = n_items - 2.0
    mode = (b + math.sqrt(b * b + 4.0 * a * power)) / (2.0 * a)
    kappa = a + power / (mode * mode)
    factor = mode + normal / math.sqrt(kappa)
    if not factor > 0.0:
        return 1.0, False
    log_ratio = (
        power * math.log(factor) - 0.5 * a * (factor * factor - 1.0) + b * (factor - 1.0)
        + 0.5 * kappa * ((factor - mode) ** 2 - (1.0 - mode) ** 2)  # log q(1) - log q(c')
    )  # fmt: skip
    return factor, good and math.log(uniform) < log_ratio


def column_swaps(utilities, mean, rho, scale, pairs, uniforms) -> np.ndarray:
    r"""One Metropolis swap of two columns of every slot (see the module docstring), in place;
    one compiled call.

    Parameters
    ----------
    utilities, mean, rho, scale
        As for :func:`column_moves` (``utilities`` ``(S, M, K)`` updated in place; ``rho``
        and ``scale`` ``(S, M)``, ``rho < 1``).
    pairs : int (S,)
        Uniform draws from ``0 .. K(K-1)/2 - 1``: which pair of columns each slot proposes to
        swap (pairs in lexicographic order).
    uniforms : float64 (S,)
        Uniforms of the acceptance.

    Returns
    -------
    accepted : bool (S,)
        Which swaps were accepted (none when ``K = 1``).
    """
    n_slots, _, n_dims = utilities.shape
    accepted = np.zeros(n_slots, dtype=np.bool_)
    if n_dims < 2 or n_slots == 0:
        return accepted
    first, second = np.triu_indices(n_dims, k=1)
    pairs = np.asarray(pairs)
    work, mean, rho, scale = contiguous_rows(utilities, mean, rho, scale)
    _column_swaps_kernel(
        work,
        mean,
        rho,
        scale,
        np.ascontiguousarray(first[pairs], dtype=np.int64),
        np.ascontiguousarray(second[pairs], dtype=np.int64),
        np.ascontiguousarray(uniforms, dtype=np.float64),
        accepted,
    )
    if work is not utilities:
        utilities[...] = work
    return accepted


@njit(cache=True, nogil=True)
def _column_swaps_kernel(utilities, mean, rho, scale, first, second, uniforms, accepted):
    # pragma: no cover - compiled
    """:func:`column_swaps` on contiguous arrays, columns ``first[s]`` and ``second[s]`` of
    slot ``s``."""
    n_slots, n_items, _ = utilities.shape
    for s in range(n_slots):
        k, l = first[s], second[s]
        log_ratio = 0.0
        for j in range(n_items):
            x_k, x_l = utilities[s, j, k], utilities[s, j, l]
            log_ratio += (
                (x_l - x_k)
                * (mean[s, j, k] - mean[s, j, l])
                / (scale[s, j] ** 2 * (1.0 - rho[s, j]))
            )
        if math.log(uniforms[s]) < log_ratio:
            accepted[s] = True
            for j in range(n_items):
                utilities[s, j, k], utilities[s, j, l] = utilities[s, j, l], utilities[s, j, k]
