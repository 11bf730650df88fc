r"""Log-sums over a mixture's components with one component left out (numba). Nothing here
imports PyMC.

For log-weights ``w_{ik}`` (row ``i``: one list, column ``k``: one component) and the row
totals ``\log S_i = \log \sum_k e^{w_{ik}}``, the sum over the components other than ``j`` is

.. math::

    \log \sum_{k \ne j} e^{w_{ik}} = \log S_i + \log\big(1 - e^{w_{ij} - \log S_i}\big),

which costs one ``exp`` and one ``log1p`` per row instead of a sum over the ``K - 1`` other
columns. While component ``j`` holds at most half of the row's mass
(``e^{w_{ij} - \log S_i} \le 1/2``) the subtraction loses at most one bit; rows where it holds
more are summed afresh over ``k \ne j`` (shifted by their largest term), so every value has
the accuracy of a direct log-sum-exp. A move that visits the components one after another
(the summed-out utility moves of :mod:`pymc_crp.step_methods.po_marginal_utilities`) thus pays
``O(N)`` per component instead of ``O(N K)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["logsumexp_without", "row_logsumexp"]


@njit(cache=True, nogil=True)
def _row_sum_without(weights, i, skip):  # pragma: no cover - compiled
    """``log Σ_{k ≠ skip} exp(w_ik)`` summed directly (``skip = -1``: every column)."""
    largest = -np.inf
    for k in range(weights.shape[1]):
        if k != skip and weights[i, k] > largest:
            largest = weights[i, k]
    if not math.isfinite(largest):  # every weight -inf (or +inf)
        return largest
    total = 0.0
    for k in range(weights.shape[1]):
        if k != skip:
            total += math.exp(weights[i, k] - largest)
    return largest + math.log(total)


@njit(cache=True, nogil=True)
def _row_logsumexp(weights, out):  # pragma: no cover - compiled
    for i in range(weights.shape[0]):
        out[i] = _row_sum_without(weights, i, -1)
    return out


@njit(cache=True, nogil=True)
def _logsumexp_without(weights, log_totals, column, out):  # pragma: no cover - compiled
    for i in range(weights.shape[0]):
        share = math.exp(weights[i, column] - log_totals[i])
        if share <= 0.5:  # also -inf weights (share 0); NaN totals go the direct way
            out[i] = log_totals[i] + math.log1p(-share)
        else:
            out[i] = _row_sum_without(weights, i, column)
    return out


def row_logsumexp(weights: np.ndarray) -> np.ndarray:
    r"""``\log \sum_k e^{w_{ik}}`` of each row of the ``(N, K)`` array ``weights`` (``-inf``
    where every weight is ``-inf``)."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    return _row_logsumexp(weights, np.empty(weights.shape[0]))


def logsumexp_without(weights: np.ndarray, log_totals: np.ndarray, column: int) -> np.ndarray:
    r"""``\log \sum_{k \ne j} e^{w_{ik}}`` of each row of ``weights`` ``(N, K)``, ``j =
    column``, from the row totals ``log_totals`` (:func:`row_logsumexp`, or kept up to date by
    the caller) as in the module docstring: ``\log S_i + \operatorname{log1p}(-e^{w_{ij} -
    \log S_i})`` where column ``j`` holds at most half of row ``i``'s mass, else summed
    directly over the other columns."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if not 0 <= column < weights.shape[1]:
        raise ValueError(f"column must be in [0, {weights.shape[1]}), got {column!r}")
    log_totals = np.ascontiguousarray(log_totals, dtype=np.float64)
    if log_totals.shape != (weights.shape[0],):
        raise ValueError(
            f"log_totals must have shape ({weights.shape[0]},), got {log_totals.shape}"
        )
    return _logsumexp_without(weights, log_totals, int(column), np.empty(weights.shape[0]))
