r"""One compiled scan of exact coordinate Gibbs draws of a slot's utilities given weighted lists.

A scan visits coordinates ``(j, k)`` of a utility matrix ``ψ`` ``(M, K)`` in a given order
and draws each from its full conditional (:mod:`pymc_crp.core.utility_gibbs`)

.. math::

    p(ψ_{jk} \mid ·) \propto N(ψ_{jk}; μ_c, σ_c^2)
        \sum_r 1\{ψ_{jk} \in I_r\} \exp\Big(\sum_{i \ni j} w_i \log p(Y_i \mid h_r, p)\Big),

``I_r`` the intervals between the other items' values in column ``k``, ``h_r`` the dominance
order of ``ψ`` with ``ψ_{jk} ∈ I_r``, ``w_i > 0`` each list's weight (a tempering power)
and ``N(μ_c, σ_c^2)`` the conditional of the coordinate under the row's equicorrelated prior
(:func:`~pymc_crp.core.utility_gibbs.equicorrelated_conditional`; the intervals as
:func:`~pymc_crp.core.utility_gibbs.interval_points` takes them). Lists without item ``j``
do not depend on ``ψ_{jk}``. The scan steps through the intervals in increasing order: from
one interval to the next ``ψ_{jk}`` passes the items whose value is the cut between them, and
only its relations to those items can change (each relation of ``j`` changes at most once
along the column), so the order is updated pair by pair and only the lists containing ``j``
and an item whose relation changed are counted, through the lists'
:class:`~pymc_crp.core.order_memo.OrderMemo`; a coordinate costs ``O(M log M)`` for the cuts,
``O(n_j)`` per interval for the ``n_j`` lists containing ``j`` and the counts of the lists
whose restricted order changes (over 100 items 4--14 times less than recomputing ``j``'s
relations and comparing each interval's order with all earlier ones). With a
target the scan moves to it instead of drawing and returns the log-density of reaching it
(the reverse proposal of a split--merge move), ``-∞`` if a target value lies on an interval's
end:

.. math::

    \log q = \sum_{(j, k)} \Big(\log L_{r} - \tfrac12 z^2 - \log σ_c - \tfrac12 \log 2π
        - \log \sum_c L_c [Φ(β_c) - Φ(α_c)]\Big),
    \qquad z = (ψ_{jk} - μ_c)/σ_c.

The draws and the interval masses are those of :mod:`pymc_crp.core.normal_cdf`.
Compilation: :func:`coordinate_scan_kernel` links :mod:`pymc_crp.core.order_memo`,
:mod:`pymc_crp.core.restricted_orders`, :mod:`pymc_crp.core.normal_cdf`,
:mod:`pymc_crp.core.utility_gibbs` and :mod:`pymc_crp.core.partition_math` in, and its
disk cache does not see edits there: after such an edit delete
``pymc_crp/core/__pycache__/coordinate_scan*`` as well. No PyMC here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.item_sweep import _move_logliks
from pymc_crp.core.normal_cdf import log_interval_mass, normal_log_pdf, truncated_normal_draw
from pymc_crp.core.partition_math import draw_weighted
from pymc_crp.core.restricted_orders import (
    _move_item_changed,
    _move_item_words,
    _set_pair_relation,
)
from pymc_crp.core.utility_gibbs import conditional_kernel, intervals_of_cuts

__all__ = ["coordinate_scan_kernel", "SCAN_OK", "SCAN_TOO_MANY_STATES", "SCAN_ZERO_WEIGHT"]

SCAN_OK, SCAN_TOO_MANY_STATES, SCAN_ZERO_WEIGHT = 0, 1, 2


@njit(cache=True, nogil=True)
def coordinate_scan_kernel(
    psi, words, coordinates, uniforms, target, mean, rho, scale,
    rows, weights, by_item, starts, dual, masks, steps, lengths, inverse, p, binom_f,
    max_states, memo,
):  # fmt: skip  # pragma: no cover - compiled
    """The exact coordinate draws of ``psi`` (module docstring), in place.

    ``psi`` ``(M, K)`` and its bitset order ``words`` ``(4, M)`` (the dual order with
    ``dual``) are updated; ``coordinates`` ``(C, 2)`` the ``(j, k)`` in visiting order,
    ``uniforms`` ``(C, 2)`` the draws' uniforms (interval, value), ``target`` ``(M, K)`` the
    values to move to instead (``(0, 0)``: draw). The prior rows: ``mean`` ``(M, K)``,
    ``rho`` and ``scale`` ``(M,)``. The lists ``rows`` (list indices, ascending) with weights
    ``weights > 0``; ``by_item[starts[j]:starts[j + 1]]`` the positions in ``rows`` of those
    that contain ``j``. ``masks`` every list's item set, ``steps``, ``lengths``, ``inverse``
    the list set (:class:`~pymc_crp.core.lists.ListSet`), ``p`` the noise, ``binom_f`` the
    binomial table, ``memo`` the ``OrderMemo`` arrays. Returns ``(log_q, counted, status)``:
    the log-density of the scan's result, the lists counted and :data:`SCAN_OK`, or
    :data:`SCAN_TOO_MANY_STATES` if a count passed ``max_states`` or
    :data:`SCAN_ZERO_WEIGHT` if every interval of a coordinate had zero weight (the scan stops
    there).
    """
    n_items = psi.shape[0]
    has_target = target.shape[0] > 0
    loglik, _, ok = _move_logliks(
        words, steps, lengths, inverse, rows, p, binom_f, max_states, memo
    )
    counted = rows.shape[0]
    if not ok:
        return 0.0, counted, SCAN_TOO_MANY_STATES
    others = np.empty(max(n_items - 1, 0))
    other_items = np.empty(max(n_items - 1, 0), np.int64)
    log_q = 0.0
    for c in range(coordinates.shape[0]):
        j, k = coordinates[c, 0], coordinates[c, 1]
        mu, sd = conditional_kernel(psi[j], mean[j], rho[j], scale[j], k)
        positions = by_item[starts[j] : starts[j + 1]]
        n_pos = positions.shape[0]
        rows_j = np.empty(n_pos, np.int64)
        for u in range(n_pos):
            rows_j[u] = rows[positions[u]]
        m = 0
        for item in range(n_items):
            if item != j:
                others[m] = psi[item, k]
                other_items[m] = item
                m += 1
        low, high, inside = intervals_of_cuts(np.unique(others) if n_pos else others[:0])
        by_value = np.argsort(others) if n_pos else other_items[:0]  # the order j passes them
        first = 0  # the first of them (by value) not below the interval before's point
        n_int = low.shape[0]
        table = np.empty((n_int, n_pos))  # each interval's log-likelihoods of the lists
        log_lik = np.zeros(n_int)
        log_w = np.empty(n_int)
        at = psi[j, k]
        top = -math.inf
        for r in range(n_int):
            if n_pos:
                psi[j, k] = inside[r]
                if r == 0:  # from the state's order
                    current, changed = _move_item_changed(words, psi, j, dual, masks, rows_j)
                else:  # from the interval before: only j's relations to the items whose
                    # value lies between the two intervals' points can change (those at the
                    # cut low[r]; also any equal to a point, where adjacent cuts round it)
                    flip_lo = np.uint64(0)
                    flip_hi = np.uint64(0)
                    while first < m and others[by_value[first]] < inside[r - 1]:
                        first += 1
                    q = first
                    while q < m and others[by_value[q]] <= inside[r]:
                        other = other_items[by_value[q]]
                        q += 1
                        if _set_pair_relation(current, psi, j, other, dual):
                            if other < 64:
                                flip_lo |= np.uint64(1) << np.uint64(other)
                            else:
                                flip_hi |= np.uint64(1) << np.uint64(other - 64)
                    changed = np.empty(n_pos, np.int64)
                    n_changed = 0
                    for t in range(n_pos):
                        u = rows_j[t]
                        if ((masks[u, 0] & flip_lo) | (masks[u, 1] & flip_hi)) != 0:
                            changed[n_changed] = t
                            n_changed += 1
                    changed = changed[:n_changed]
                if r == 0 or (low[r] < at < high[r] and low[r] < inside[r] < high[r]):
                    # (the state's interval: the state's order, its lists' values at hand)
                    for u in range(n_pos):
                        table[r, u] = loglik[positions[u]]
                    if r > 0:
                        changed = changed[:0]
                else:
                    table[r] = table[r - 1]
                if changed.shape[0]:
                    moved = np.empty(changed.shape[0], np.int64)
                    for v in range(changed.shape[0]):
                        moved[v] = rows_j[changed[v]]
                    ll, _, ok = _move_logliks(
                        current, steps, lengths, inverse, moved, p, binom_f, max_states, memo
                    )
                    counted += moved.shape[0]
                    if not ok:
                        return log_q, counted, SCAN_TOO_MANY_STATES
                    for v in range(changed.shape[0]):
                        table[r, changed[v]] = ll[v]
                for u in range(n_pos):
                    log_lik[r] += weights[positions[u]] * table[r, u]
            log_w[r] = log_lik[r] + log_interval_mass(low[r], high[r], mu, sd)
            top = max(top, log_w[r])
        if not math.isfinite(top):
            return log_q, counted, SCAN_ZERO_WEIGHT
        weights_r = np.empty(n_int)  # exp(log_w - top)
        total = 0.0
        for r in range(n_int):
            weights_r[r] = math.exp(log_w[r] - top)
            total += weights_r[r]
        if has_target:
            x = target[j, k]
            chosen = -1
            for r in range(n_int):
                if low[r] < x < high[r]:
                    chosen = r
            if chosen < 0:  # a tie with another item: probability zero
                log_q = -math.inf
                chosen = 0
        else:
            chosen = draw_weighted(weights_r, total, uniforms[c, 0])
            x = truncated_normal_draw(low[chosen], high[chosen], mu, sd, uniforms[c, 1])
        log_q += log_lik[chosen] + normal_log_pdf(x, mu, sd) - top - math.log(total)
        psi[j, k] = x
        words[:, :] = _move_item_words(words, psi, j, dual)
        for u in range(n_pos):
            loglik[positions[u]] = table[chosen, u]
    return log_q, counted, SCAN_OK
