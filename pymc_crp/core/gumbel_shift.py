r"""The shift of item-covariate effects that keeps every order: ``U ↦ G⁻¹(G(U) - c)``.

With item covariates the partial-order models order the items by
``η = g(U) + xβ``, ``g(u) = G⁻¹(Φ(u)) = -\log(-\log Φ(u))`` (``G`` the standard Gumbel
CDF; ``docs/mathematics.md``, item covariates). Moving ``β`` by ``δ`` and every utility by

.. math:: u' = g^{-1}(g(u) - x_j δ), \qquad g^{-1}(v) = Φ^{-1}(\exp(-e^{-v})),

leaves each ``η_j`` and so every order and every list's likelihood as they were. The map is
strictly increasing in ``u`` with derivative ``g'(u) / g'(u')``,

.. math:: \log g'(u) = \log φ(u) - \log Φ(u) - \log(-\log Φ(u)),

computed from ``log Φ`` (SciPy's ``log_ndtr`` and ``ndtri_exp``), accurate in both tails.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["gumbel_scores", "log_gumbel_slope", "shift_gumbel_scores"]

_LOG_ROOT_TWO_PI = 0.5 * np.log(2.0 * np.pi)


def gumbel_scores(u: np.ndarray) -> np.ndarray:
    """``g(u) = -log(-log Φ(u))``, the Gumbel score of a standard normal utility."""
    return -np.log(-special.log_ndtr(u))


def log_gumbel_slope(u: np.ndarray) -> np.ndarray:
    """``log g'(u) = log φ(u) - log Φ(u) - log(-log Φ(u))``."""
    log_cdf = special.log_ndtr(u)
    return -0.5 * u * u - _LOG_ROOT_TWO_PI - log_cdf - np.log(-log_cdf)


def shift_gumbel_scores(u: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, float]:
    r"""``(u', log|det ∂u'/∂u|)`` with ``u' = g^{-1}(g(u) - \text{shift})`` elementwise.

    ``shift`` broadcasts against ``u`` (e.g. ``x δ`` of shape ``(M, 1)`` against utilities
    ``(..., M, K)``). The log-determinant is ``Σ log g'(u) - log g'(u')``. Entries whose
    image is not finite (a shift beyond the float range of ``g``) make it ``-inf``.
    """
    u = np.asarray(u, dtype=np.float64)
    scores = gumbel_scores(u) - shift
    moved = special.ndtri_exp(-np.exp(-scores))
    if not np.all(np.isfinite(moved)):
        return moved, -np.inf
    return moved, float(np.sum(log_gumbel_slope(u) - log_gumbel_slope(moved)))
