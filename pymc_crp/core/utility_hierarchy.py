r"""Numeric core of the utility hierarchy with ``U0`` integrated out (no PyMC).

Given ``τ`` and ``ρ``, the ``n`` occupied slots' utilities of one item,
``U^{(a)}_j = τ U0_j + \sqrt{1-τ^2} ε_a`` with ``U0_j ~ N(0, Σ_ρ)`` and ``ε_a ~ N(0, Σ_ρ)``,
have mean ``\bar U_j ~ N(0, v Σ_ρ)``, ``v = τ^2 + (1-τ^2)/n``, and deviations
``U^{(a)}_j - \bar U_j`` independent of it with ``n - 1`` degrees of freedom of covariance
``(1-τ^2) Σ_ρ``. Up to a constant (the Jacobian of the map to mean and deviations),

.. math::

    \log p(U_O \mid τ, ρ) = -\tfrac12 \sum_j \Big[(n-1)(K\log(2π(1-τ^2)) + \log|Σ_ρ|)
        + \frac{\sum_a q(U^{(a)}_j - \bar U_j)}{1-τ^2} + K\log(2πv) + \log|Σ_ρ|
        + \frac{q(\bar U_j)}{v}\Big],

``q(x) = x^\top Σ_ρ^{-1} x`` (:func:`equicorrelated_quadratic`),
``\log|Σ_ρ| = (K-1)\log(1-ρ) + \log(1+(K-1)ρ)``. With ``n = 1`` this is ``N(0, Σ_ρ)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = [
    "HierarchyStatistics",
    "collapsed_log_density",
    "equicorrelated_quadratic",
    "equicorrelated_row_log_density",
    "hierarchy_statistics",
    "last_axis_mean",
]

_SEQUENTIAL_BELOW = 8  # NumPy sums fewer terms one after the other (pairwise from 8 on)


def last_axis_mean(x: np.ndarray) -> np.ndarray:
    r"""``x.mean(axis=-1, keepdims=True)`` with NumPy's bits, by columns when the last axis
    is short: ``\bar x = (((0 + x_0) + x_1) + … + x_{K-1}) / K`` for ``K < 8`` (the order in
    which NumPy reduces fewer than 8 terms), a few passes over the array instead of a
    reduction along an axis of length ``K``, which NumPy does slowly."""
    k = x.shape[-1]
    if not 0 < k < _SEQUENTIAL_BELOW:
        return x.mean(axis=-1, keepdims=True)
    total = 0.0 + x[..., 0]
    for column in range(1, k):
        total += x[..., column]
    return (total / k)[..., None]


def equicorrelated_quadratic(x, rho):
    r"""``xᵀ Σ_ρ⁻¹ x`` over the last axis, from the eigen-decomposition of ``Σ_ρ``:

    .. math:: q(x) = \frac{\lVert x - \bar x \mathbf 1\rVert^2}{1-ρ}
        + \frac{K \bar x^2}{1+(K-1)ρ}.

    Computed so, and not as ``(‖x‖² - ρ(1ᵀx)²/(1+(K-1)ρ))/(1-ρ)``, which subtracts two
    numbers of order ``‖x‖²`` and loses every digit once ``1 - ρ`` is below about ``1e-8``.
    ``x`` may be a NumPy array or a PyTensor tensor (only their common methods are used).
    """
    spread, level = _quadratic_parts(x)
    return spread / (1.0 - rho) + level / (1.0 + (x.shape[-1] - 1) * rho)


def _quadratic_parts(x):
    """``(‖x - x̄ 1‖², K x̄²)`` over the last axis: the two parts of ``q`` that do not depend
    on ``ρ`` (NumPy arrays or PyTensor tensors)."""
    k = x.shape[-1]
    mean = x.mean(axis=-1, keepdims=True)
    return ((x - mean) ** 2).sum(axis=-1), k * mean[..., 0] ** 2


@njit(cache=True, nogil=True)
def equicorrelated_row_log_density(x, mean, head, one_minus, one_plus, scale2):  # pragma: no cover
    r"""``log N(x; μ, s² Σ_ρ)`` of one row ``x`` ``(K,)`` from its constants
    ``c = K log 2π + (K-1) log(1-ρ) + log(1+(K-1)ρ) + 2K log s``, ``1-ρ``, ``1+(K-1)ρ``, ``s²``:

    .. math:: -\tfrac12\Big(c + \frac{1}{s^2}\Big(\frac{\lVert e \rVert^2}{1-ρ}
        + \frac{K \bar d^2}{1+(K-1)ρ}\Big)\Big), \qquad d = x - μ,\ e = d - \bar d \mathbf 1,

    summing left to right (NumPy's order for ``K < 8``), so that it has the bits of
    :func:`~pymc_crp.distributions.equicorrelated_normal.equicorrelated_logpdf`."""
    k = x.shape[0]
    total = x[0] - mean[0]
    for q in range(1, k):
        total += x[q] - mean[q]
    centre = total / k
    deviations = ((x[0] - mean[0]) - centre) * ((x[0] - mean[0]) - centre)
    for q in range(1, k):
        deviations += ((x[q] - mean[q]) - centre) * ((x[q] - mean[q]) - centre)
    quad = (deviations / one_minus + k * (centre * centre) / one_plus) / scale2
    return -0.5 * (head + quad)


class HierarchyStatistics(NamedTuple):
    r"""What :func:`collapsed_log_density` needs of the occupied slots ``(n, M, K)``: their
    shape and the two parts of ``q`` (:func:`equicorrelated_quadratic`) of the deviations
    ``U^{(a)}_j - \bar U_j`` and of the means ``\bar U_j``, each summed over slots and items:
    ``q = \text{spread}/(1-ρ) + \text{level}/(1+(K-1)ρ)``."""

    n: int
    n_items: int
    k: int
    within_spread: float
    within_level: float
    between_spread: float
    between_level: float


def _summed_parts(x: np.ndarray) -> tuple[float, float]:
    """:func:`_quadratic_parts` of ``x`` summed over all rows."""
    spread, level = _quadratic_parts(x)
    return float(np.sum(spread)), float(np.sum(level))


def hierarchy_statistics(slots: np.ndarray) -> HierarchyStatistics:
    """The :class:`HierarchyStatistics` of occupied slots ``(n, M, K)`` (they do not depend
    on ``τ`` or ``ρ``, so many moves of those reuse them)."""
    n, n_items, k = slots.shape
    mean = slots.mean(axis=0)
    return HierarchyStatistics(n, n_items, k, *_summed_parts(slots - mean), *_summed_parts(mean))


def collapsed_log_density(slots: np.ndarray | HierarchyStatistics, tau: float, rho: float) -> float:
    """``log p(U_O | τ, ρ)`` of occupied slots ``(n, M, K)`` (or their
    :func:`hierarchy_statistics`) with ``U0`` integrated out (see the module docstring);
    ``-inf`` outside ``0 <= τ < 1``, ``0 <= ρ < 1``."""
    if not (0.0 <= tau < 1.0 and 0.0 <= rho < 1.0):
        return -math.inf
    stats = slots if isinstance(slots, HierarchyStatistics) else hierarchy_statistics(slots)
    n, n_items, k = stats.n, stats.n_items, stats.k
    s2 = 1.0 - tau**2
    v = tau**2 + s2 / n
    one_minus, one_plus = 1.0 - rho, 1.0 + (k - 1) * rho
    logdet = (k - 1) * math.log1p(-rho) + math.log1p((k - 1) * rho)
    within = stats.within_spread / one_minus + stats.within_level / one_plus
    between = stats.between_spread / one_minus + stats.between_level / one_plus
    log_2pi = math.log(2.0 * math.pi)
    out = (n - 1) * n_items * (k * (log_2pi + math.log(s2)) + logdet) + within / s2
    out += n_items * (k * (log_2pi + math.log(v)) + logdet) + between / v
    return -0.5 * out
