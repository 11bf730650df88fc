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
inverse CDF (computed in the upper tail by symmetry). No PyMC here.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

__all__ = [
    "equicorrelated_conditional",
    "interval_points",
    "interval_log_masses",
    "sample_interval_mixture",
]


def equicorrelated_conditional(row, mean, rho: float, scale: float, k: int):
    r"""Mean and standard deviation of ``x_k`` given ``x_{-k}`` for
    ``x ~ N(mean, s² ((1-ρ) I + ρ 1 1ᵀ))`` over ``K`` coordinates:

    .. math::

        μ_c = m_k + \frac{ρ}{1 + (K-2)ρ} \sum_{l \ne k} (x_l - m_l), \qquad
        σ_c^2 = s^2 (1-ρ) \frac{1 + (K-1)ρ}{1 + (K-2)ρ}.
    """
    row = np.asarray(row, dtype=float)
    mean = np.asarray(mean, dtype=float)
    n_dims = row.shape[0]
    if n_dims == 1:
        return float(mean[0]), float(scale)
    weight = rho / (1.0 + (n_dims - 2) * rho)
    others = float(np.sum(row - mean) - (row[k] - mean[k]))
    var = scale**2 * (1.0 - rho) * (1.0 + (n_dims - 1) * rho) / (1.0 + (n_dims - 2) * rho)
    return float(mean[k] + weight * others), math.sqrt(var)


def interval_points(others) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ends ``(low, high)`` of the intervals between the distinct values ``others`` and one
    point inside each (the midpoint; one unit beyond the outermost values at the ends)."""
    cuts = np.unique(np.asarray(others, dtype=float))
    low = np.concatenate([[-np.inf], cuts])
    high = np.concatenate([cuts, [np.inf]])
    inside = np.empty(low.shape[0])
    if cuts.size == 0:
        inside[0] = 0.0
    else:
        inside[0] = cuts[0] - 1.0
        inside[-1] = cuts[-1] + 1.0
        inside[1:-1] = 0.5 * (cuts[:-1] + cuts[1:])
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
    alpha, beta = (low[r] - mu) / sd, (high[r] - mu) / sd
    if alpha > 0.0:  # upper tail: draw -X from the mirrored interval
        a, b = ndtr(-beta), ndtr(-alpha)
        z = -float(ndtri(a + u_draw * (b - a)))
    else:
        a, b = ndtr(alpha), ndtr(beta)
        z = float(ndtri(a + u_draw * (b - a)))
    x = mu + sd * z
    if not np.isfinite(x):  # the interval's mass underflowed: its nearest end
        x = low[r] if np.isfinite(low[r]) else high[r]
    # Strictly inside: at an end the item would tie with another one (a different order).
    x = min(max(x, np.nextafter(low[r], np.inf)), np.nextafter(high[r], -np.inf))
    return float(x), r
