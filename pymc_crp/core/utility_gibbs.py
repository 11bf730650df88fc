r"""Numeric core of the exact coordinate Gibbs draw of one partial-order utility.

The list likelihood depends on a utility ``x = U^{(a)}_{jk}`` only through the dominance
order of slot ``a``, which changes only where ``x`` crosses another item's value
``U^{(a)}_{j'k}`` in the same dimension. With ``b_1 < … < b_{M-1}`` those values and
``I_0 = (-∞, b_1), …, I_{M-1} = (b_{M-1}, ∞)`` the intervals between them, the full
conditional of ``x`` is a mixture of truncated normals:

.. math::

    p(x \mid ·) \propto N(x; μ_c, σ_c^2) \sum_r 1\{x \in I_r\} L_r,
    \qquad P(x \in I_r \mid ·) \propto L_r \,[Φ(β_r) - Φ(α_r)],

where ``N(μ_c, σ_c²)`` is the Gaussian conditional of ``x`` given the rest of its row under
the slot prior ``N(m, s^2 Σ_ρ)`` (:func:`equicorrelated_conditional`), ``L_r`` the likelihood
of the slot's lists under the order with ``x ∈ I_r`` and ``α_r, β_r`` the standardised ends
of ``I_r``. The draw picks ``r`` and then ``x`` from the truncated normal on ``I_r`` by the
inverse CDF (computed in the upper tail by symmetry).

**Draws within the current interval** (:func:`cell_draws`). Given that ``x`` stays in its
current interval ``I_r`` the likelihood is constant, so ``x | x ∈ I_r, ·`` is the truncated
normal ``N(μ_c, σ_c^2)`` on ``I_r`` alone: a Gibbs draw from the target conditioned on the
cell of the partition ``{I_r}`` (which depends only on the other coordinates), exact and free
of list likelihoods. In a column ``k`` of one slot the items of even rank (or odd rank) in
that column have their neighbours, the ends of their intervals, among the other parity, and
each depends on the rest only through its own row: they are conditionally independent
given the rest and are drawn at once. No PyMC here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import log_ndtr

from pymc_crp.core.normal_cdf import truncated_normal_draw

__all__ = [
    "equicorrelated_conditional",
    "conditional_kernel",
    "interval_points",
    "intervals_of_cuts",
    "interval_log_masses",
    "sample_interval_mixture",
    "interval_mixture_log_density",
    "truncated_normal",
    "cell_draws",
    "cell_draws_kernel",
    "contiguous_rows",
]


def equicorrelated_conditional(row, mean, rho: float, scale: float, k: int):
    r"""Mean and standard deviation of ``x_k`` given ``x_{-k}`` for
    ``x ~ N(mean, s² ((1-ρ) I + ρ 1 1ᵀ))`` over ``K`` coordinates:

    .. math::

        μ_c = m_k + \frac{ρ}{1 + (K-2)ρ} \sum_{l \ne k} (x_l - m_l), \qquad
        σ_c^2 = s^2 (1-ρ) \frac{1 + (K-1)ρ}{1 + (K-2)ρ}.
    """
    row = np.ascontiguousarray(row, dtype=np.float64)
    mean = np.ascontiguousarray(mean, dtype=np.float64)
    mu, sd = conditional_kernel(row, mean, float(rho), float(scale), int(k))
    return float(mu), float(sd)


@njit(cache=True, nogil=True)
def conditional_kernel(row, mean, rho, scale, k):  # pragma: no cover - compiled
    """:func:`equicorrelated_conditional` on float64 arrays, for compiled callers."""
    n_dims = row.shape[0]
    if n_dims == 1:
        return mean[0], scale
    weight = rho / (1.0 + (n_dims - 2) * rho)
    others = 0.0
    for q in range(n_dims):
        if q != k:
            others += row[q] - mean[q]
    var = scale * scale * (1.0 - rho) * (1.0 + (n_dims - 1) * rho) / (1.0 + (n_dims - 2) * rho)
    return mean[k] + weight * others, math.sqrt(var)


def interval_points(others) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ends ``(low, high)`` of the intervals between the distinct values ``others`` and one
    point inside each (the midpoint; one unit beyond the outermost values at the ends)."""
    return intervals_of_cuts(np.unique(np.asarray(others, dtype=np.float64)))


@njit(cache=True, nogil=True)
def intervals_of_cuts(cuts):  # pragma: no cover - compiled
    """:func:`interval_points` given the sorted distinct values ``cuts`` (float64)."""
    n = cuts.shape[0]
    low = np.empty(n + 1)
    high = np.empty(n + 1)
    inside = np.empty(n + 1)
    low[0], high[n] = -np.inf, np.inf
    for r in range(n):
        low[r + 1] = cuts[r]
        high[r] = cuts[r]
    if n == 0:
        inside[0] = 0.0
    else:
        inside[0] = cuts[0] - 1.0
        inside[n] = cuts[n - 1] + 1.0
        for r in range(1, n):
            inside[r] = 0.5 * (cuts[r - 1] + cuts[r])
    return low, high, inside


def _log_mass(alpha, beta):
    """``log(Φ(β) - Φ(α))`` for ``α < β`` elementwise, accurate in both tails."""
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    upper = alpha > 0.0  # use 1 - Φ(t) = Φ(-t): the difference of two small numbers
    hi = np.where(upper, log_ndtr(-alpha), log_ndtr(beta))
    lo = np.where(upper, log_ndtr(-beta), log_ndtr(alpha))
    with np.errstate(divide="ignore"):
        return hi + np.log1p(-np.exp(lo - hi))


def interval_log_masses(low, high, mu: float, sd: float) -> np.ndarray:
    """``log P(low_r < X < high_r)`` for ``X ~ N(mu, sd²)``."""
    return _log_mass((np.asarray(low) - mu) / sd, (np.asarray(high) - mu) / sd)


def sample_interval_mixture(log_lik, low, high, mu: float, sd: float, u_pick, u_draw):
    """One exact draw from ``N(mu, sd²)`` restricted to the intervals with weights
    ``exp(log_lik)`` (see the module docstring), from two uniforms. Returns ``(x, r)``, the
    value and its interval."""
    log_w = np.asarray(log_lik, dtype=float) + interval_log_masses(low, high, mu, sd)
    top = np.max(log_w)
    if not np.isfinite(top):
        raise FloatingPointError("every interval has zero weight")
    w = np.exp(log_w - top)
    cum = np.cumsum(w)
    r = min(int(np.searchsorted(cum, u_pick * cum[-1], side="right")), w.shape[0] - 1)
    x = truncated_normal(low[r], high[r], mu, sd, u_draw)
    return float(x), r


def interval_mixture_log_density(log_lik, low, high, mu: float, sd: float, x: float) -> float:
    r"""Log-density at ``x`` of the draw of :func:`sample_interval_mixture`:

    .. math::

        \log p(x) = \log L_r + \log φ\big(\tfrac{x - μ}{σ}\big) - \log σ
            - \log \sum_c L_c \,[Φ(β_c) - Φ(α_c)], \qquad x \in I_r,

    ``-∞`` where ``x`` is on an end (a tie: another order, of probability zero)."""
    r = int(np.searchsorted(np.asarray(high, dtype=float), x, side="left"))
    if r >= len(high) or not low[r] < x < high[r]:
        return -math.inf
    log_w = np.asarray(log_lik, dtype=float) + interval_log_masses(low, high, mu, sd)
    top = float(np.max(log_w))
    if not math.isfinite(top):
        return -math.inf
    log_norm = top + math.log(float(np.sum(np.exp(log_w - top))))
    z = (x - mu) / sd
    return float(log_lik[r]) - 0.5 * z * z - 0.5 * math.log(2 * math.pi) - math.log(sd) - log_norm


def truncated_normal(low: float, high: float, mu: float, sd: float, uniform: float) -> float:
    r"""One draw of ``N(mu, sd²)`` restricted to ``(low, high)`` by the inverse CDF:
    ``x = μ + σ Φ^{-1}(Φ(α) + u (Φ(β) - Φ(α)))`` with ``α, β`` the standardised ends
    (mirrored, ``x = μ - σ Φ^{-1}(…)`` of ``-β, -α``, when ``α > 0``, so that the upper tail
    keeps its digits). Strictly inside the interval (at an end an item would tie with
    another one, a different order); where the interval's mass underflows (beyond about 37
    standard deviations), its nearest end. The compiled
    :func:`~pymc_crp.core.normal_cdf.truncated_normal_draw`, for Python callers."""
    return float(
        truncated_normal_draw(float(low), float(high), float(mu), float(sd), float(uniform))
    )


def cell_draws(utilities, mean, rho, scale, uniforms) -> None:
    r"""One scan of draws within the current intervals (see the module docstring), in place.

    For each column ``k`` and each parity, every item ``j`` of that rank parity in column
    ``k`` of its slot is redrawn from ``N(μ_c, σ_c^2)`` (:func:`equicorrelated_conditional`)
    restricted to the open interval between its neighbours in the column, so no slot's
    dominance order changes. A slot whose column holds tied values (e.g. an initial point of
    zeros) keeps that column: no interval keeps its order, and ties have probability zero under
    the target. One compiled call (:func:`cell_draws_kernel`).

    Parameters
    ----------
    utilities : float64 (S, M, K)
        The slots' utilities, updated in place.
    mean : float64 (S, M, K)
        Prior means of the rows.
    rho, scale : float64 (S, M)
        Prior correlation and scale of each row: ``row ~ N(mean, scale² Σ_ρ)``.
    uniforms : float64 (K, 2, S, M)
        The uniforms of the draws (those of items not drawn are unused).
    """
    n_slots, n_items, n_dims = utilities.shape
    if n_slots == 0 or n_items == 0:
        return
    work, mean, rho, scale = contiguous_rows(utilities, mean, rho, scale)
    cell_draws_kernel(work, mean, rho, scale, np.ascontiguousarray(uniforms, dtype=np.float64))
    if work is not utilities:
        utilities[...] = work


def contiguous_rows(utilities, mean, rho, scale):
    """``(work, mean, rho, scale)`` as the compiled moves of the slots' rows take them:
    contiguous float64 arrays of shapes ``(S, M, K)``, ``(S, M, K)``, ``(S, M)``, ``(S, M)``
    (``mean``, ``rho`` and ``scale`` broadcast to them, always writable: a broadcast view that is
    already contiguous, e.g. of one slot, is read-only, and numba compiles a kernel again for
    read-only arrays; ``work`` is ``utilities`` itself when it already is one, else a copy the
    caller writes back)."""
    shape = utilities.shape[:2]
    return (
        np.ascontiguousarray(utilities, dtype=np.float64),
        np.require(np.broadcast_to(mean, utilities.shape), np.float64, ("C", "W")),
        np.require(np.broadcast_to(rho, shape), np.float64, ("C", "W")),
        np.require(np.broadcast_to(scale, shape), np.float64, ("C", "W")),
    )


@njit(cache=True, nogil=True)
def untied_order(values):  # pragma: no cover - compiled
    """``(order, untied)``: the stable ``argsort`` of ``values`` and whether no two of them
    tie (a tied column has no interval that keeps its order)."""
    order = np.argsort(values, kind="mergesort")
    for r in range(1, values.shape[0]):
        if values[order[r]] == values[order[r - 1]]:
            return order, False
    return order, True


@njit(cache=True, nogil=True)
def cell_draws_kernel(utilities, mean, rho, scale, uniforms):  # pragma: no cover - compiled
    """:func:`cell_draws` on contiguous float64 arrays (``utilities`` in place). Within one
    pass (a column and a parity) the items drawn are never each other's neighbours and their
    conditionals read the other columns only, so drawing them one after another is drawing
    them at once; the slots are independent, and a draw stays strictly inside its interval,
    so each slot's column is sorted once for both parities."""
    n_slots, n_items, n_dims = utilities.shape
    column = np.empty(n_items)
    for k in range(n_dims):
        for s in range(n_slots):
            for j in range(n_items):
                column[j] = utilities[s, j, k]
            order, untied = untied_order(column)
            if not untied:
                continue
            for parity in range(2):
                for r in range(parity, n_items, 2):
                    j = order[r]
                    low = column[order[r - 1]] if r > 0 else -np.inf
                    high = column[order[r + 1]] if r < n_items - 1 else np.inf
                    mu, sd = conditional_kernel(
                        utilities[s, j], mean[s, j], rho[s, j], scale[s, j], k
                    )
                    column[j] = truncated_normal_draw(low, high, mu, sd, uniforms[k, parity, s, j])
                    utilities[s, j, k] = column[j]
