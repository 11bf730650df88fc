"""The exact coordinate Gibbs scan of one slot's utilities given weighted lists, as the
split--merge moves of :class:`~pymc_crp.PartialOrderLabelGibbs` make it
(:mod:`pymc_crp.step_methods.po_split_merge`, :mod:`pymc_crp.step_methods.po_annealed_split_merge`):
one call of :func:`~pymc_crp.core.coordinate_scan.coordinate_scan_kernel` per scan.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.coordinate_scan import (
    SCAN_TOO_MANY_STATES,
    SCAN_ZERO_WEIGHT,
    coordinate_scan_kernel,
)
from pymc_crp.core.linext_support import float_binomials
from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.core.posets import DEFAULT_MAX_STATES, _limit_error

__all__ = ["coordinate_scan"]


def coordinate_scan(
    term, psi: np.ndarray, rows: np.ndarray, weights: np.ndarray, prior, noise: float,
    rng: np.random.Generator | None, *, reverse: bool = False, target: np.ndarray | None = None,
) -> float:  # fmt: skip
    r"""One scan of exact Gibbs draws of every coordinate of ``psi`` ``(M, K)`` in place, item
    by item and dimension by dimension (reversed with ``reverse``), given the lists ``rows`` of
    ``term`` with log-likelihood weights ``weights`` (lists of weight 0 are ignored) and the
    slot prior ``prior`` (``mean`` ``(M, K)``, ``rho`` and ``scale`` ``(M,)``); with
    ``target`` ``psi`` moves to it instead. Returns the log-density of the scan's result
    (:mod:`pymc_crp.core.coordinate_scan`); the draws take ``2 M K`` uniforms from ``rng``.
    """
    psi_out = psi
    psi = np.ascontiguousarray(psi, dtype=np.float64)
    n_items, n_dims = psi.shape
    rows = np.asarray(rows, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    keep = weights > 0.0
    rows, weights = rows[keep], weights[keep]
    contains = term.contains[rows]  # positions of the lists with each item, item by item
    items, positions = np.nonzero(contains.T)
    starts = np.searchsorted(items, np.arange(n_items + 1)).astype(np.int64)
    grid = np.stack(np.divmod(np.arange(n_items * n_dims), n_dims), axis=1).astype(np.int64)
    coordinates = np.ascontiguousarray(grid[::-1] if reverse else grid)
    if target is None:
        uniforms = rng.random((n_items * n_dims, 2))
        target = np.empty((0, 0))
    else:
        uniforms = np.zeros((n_items * n_dims, 2))
        target = np.ascontiguousarray(target, dtype=np.float64)
    words = np.ascontiguousarray(order_words(psi[None], term.top_down)[0])
    cache = list_likelihood_cache()
    list_set = term.list_set
    log_q, counted, status = coordinate_scan_kernel(
        psi, words, coordinates, uniforms, target,
        np.ascontiguousarray(prior.mean, dtype=np.float64),
        np.ascontiguousarray(prior.rho, dtype=np.float64),
        np.ascontiguousarray(prior.scale, dtype=np.float64),
        rows, weights, positions.astype(np.int64), starts, not term.top_down, term.item_words,
        list_set.steps, list_set.lengths, list_set.inverse, float(noise), float_binomials(),
        DEFAULT_MAX_STATES, cache.order_memo(list_set).arrays,
    )  # fmt: skip
    cache.computed += counted
    if status == SCAN_TOO_MANY_STATES:
        raise _limit_error(n_items, DEFAULT_MAX_STATES)
    if status == SCAN_ZERO_WEIGHT:
        raise FloatingPointError("every interval has zero weight")
    psi_out[...] = psi
    return float(log_q)
