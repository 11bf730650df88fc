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

import numpy as np

from pymc_crp.core.utility_gibbs import column_conditionals, truncated_normal

__all__ = ["column_moves", "column_swaps"]


def column_moves(utilities, mean, rho, scale, normals, uniforms) -> np.ndarray:
    r"""One shift and one scale move of every column of every slot (see the module
    docstring), in place.

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
    accepted = np.zeros((n_dims, n_slots), dtype=bool)
    if n_slots == 0 or n_items < 2:
        return accepted
    for k in range(n_dims):
        column = utilities[:, :, k]
        ranked = np.sort(column, axis=1)
        untied = np.all(ranked[:, 1:] > ranked[:, :-1], axis=1)
        mu, sd = column_conditionals(utilities, mean, rho, scale, k)
        w = np.broadcast_to(1.0 / sd**2, column.shape)
        w_sum = w.sum(axis=1)
        centre = np.sum(w * column, axis=1) / w_sum
        resid = column - centre[:, None]
        # shift: the weighted centre given the residuals, an exact normal draw
        centre_new = np.sum(w * (mu - resid), axis=1) / w_sum + normals[k, 0] / np.sqrt(w_sum)
        centre = np.where(untied, centre_new, centre)
        # scale of the residuals about the centre
        a = np.sum(w * resid**2, axis=1)
        b = np.sum(w * resid * (mu - centre[:, None]), axis=1)
        factor, ok = _scale_draws(a, b, n_items, normals[k, 1], uniforms[k])
        ok &= untied
        accepted[k] = ok
        scaled = centre[:, None] + np.where(ok, factor, 1.0)[:, None] * resid
        utilities[:, :, k] = np.where(untied[:, None], scaled, column)
    return accepted


def _scale_draws(a, b, n_items: int, normal, uniform):
    """The scale moves of one column of every slot: ``(c, accepted)`` from the log-density
    ``g(c) = (M-2) log c - A c²/2 + B c`` (see the module docstring); ``A = 0`` (a tied
    column) is never accepted."""
    good = a > 0
    a = np.where(good, a, 1.0)
    if n_items == 2:  # N(B/A, 1/A) on c > 0, drawn exactly
        factor = truncated_normal(0.0, np.inf, b / a, 1.0 / np.sqrt(a), uniform)
        return np.maximum(factor, np.finfo(float).tiny), good
    power = n_items - 2.0
    mode = (b + np.sqrt(b**2 + 4.0 * a * power)) / (2.0 * a)
    kappa = a + power / mode**2
    factor = mode + normal / np.sqrt(kappa)
    positive = factor > 0
    c = np.where(positive, factor, 1.0)
    log_ratio = (
        power * np.log(c) - 0.5 * a * (c**2 - 1.0) + b * (c - 1.0)  # g(c') - g(1)
        + 0.5 * kappa * ((c - mode) ** 2 - (1.0 - mode) ** 2)  # log q(1) - log q(c')
    )  # fmt: skip
    return c, good & positive & (np.log(uniform) < log_ratio)


def column_swaps(utilities, mean, rho, scale, pairs, uniforms) -> np.ndarray:
    r"""One Metropolis swap of two columns of every slot (see the module docstring), in place.

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
    accepted = np.zeros(n_slots, dtype=bool)
    if n_dims < 2 or n_slots == 0:
        return accepted
    first, second = np.triu_indices(n_dims, k=1)
    k, l = first[pairs], second[pairs]
    slots = np.arange(n_slots)
    x_k, x_l = utilities[slots, :, k], utilities[slots, :, l]  # (S, M)
    m_k, m_l = mean[slots, :, k], mean[slots, :, l]
    log_ratio = np.sum((x_l - x_k) * (m_k - m_l) / (scale**2 * (1.0 - rho)), axis=1)
    accepted = np.log(uniforms) < log_ratio
    swap = slots[accepted]
    utilities[swap, :, k[accepted]], utilities[swap, :, l[accepted]] = (
        x_l[accepted],
        x_k[accepted],
    )
    return accepted
