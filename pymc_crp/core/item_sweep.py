r"""One compiled sweep of random-walk moves over the items of one slot of partial-order lists.

A sweep visits the items ``j`` of a slot ``a`` in a given order; each gets the move
(:class:`~pymc_crp.UtilityMetropolis`)

.. math::

    U'_{a,j} = U_{a,j} + σ ε, \qquad ε = \sqrt{1-ρ_j}\, z + \sqrt{ρ_j}\, z_0 \mathbf 1,
    \quad z \sim N(0, I_K),\ z_0 \sim N(0, 1)

(``ε = z`` unless ``0 < ρ_j < 1`` and ``K ≥ 2``), accepted with probability

.. math::

    \min\Big(1, \frac{N(U'_{a,j}; μ_j, s_j^2 Σ_{ρ_j})}{N(U_{a,j}; μ_j, s_j^2 Σ_{ρ_j})}
    \Big(\prod_{i \ni j,\ z_i = a} \frac{p(Y_i \mid h'_a, p)}{p(Y_i \mid h_a, p)}\Big)^{λ}\Big),

``h_a`` the dominance order of the slot's utilities, ``λ`` the likelihood temperature. The
equicorrelated row density is the closed form of
:func:`~pymc_crp.core.utility_hierarchy.equicorrelated_row_log_density`,

.. math::

    \log N(x; μ, s^2 Σ_ρ) = -\tfrac12\Big(c + \frac{1}{s^2}\Big(\frac{\lVert e \rVert^2}{1-ρ}
    + \frac{K \bar d^2}{1+(K-1)ρ}\Big)\Big), \qquad d = x - μ,\ e = d - \bar d \mathbf 1,

with the row's constants ``(c, 1-ρ, 1+(K-1)ρ, s^2)`` computed by the caller. The new order
``h'_a`` is ``h_a`` with ``j``'s relations rebuilt and the lists whose restricted order
changed are picked in ``O(M K)``
(:func:`~pymc_crp.core.restricted_orders.move_item_changed`); only those are counted, through
the lists' :class:`~pymc_crp.core.order_memo.OrderMemo`. An accepted move writes the new
order, the lists' log-likelihoods and the counted lists' ratios into the caller's arrays.

The draws come from the caller's ``numpy.random.Generator`` (Numba draws from its bit
generator with NumPy's algorithms) in the order of the step's Python moves, and every sum
is the one NumPy computes (:func:`numpy_sum`: pairwise, in blocks of 8), so the sweep is
the same Markov chain as one move at a time, bit for bit.

Compilation: :func:`item_sweep_kernel` links the kernels of
:mod:`pymc_crp.core.order_memo` and :mod:`pymc_crp.core.restricted_orders` in, and its disk
cache does not see edits there: after such an edit delete
``pymc_crp/core/__pycache__/item_sweep*`` as well. (Cached compiled code must not recurse,
hence the explicit stack of :func:`numpy_sum`.)
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.linext_support import _combine
from pymc_crp.core.order_memo import memo_ratios_kernel
from pymc_crp.core.restricted_orders import _move_item_changed
from pymc_crp.core.utility_hierarchy import equicorrelated_row_log_density

__all__ = ["item_sweep_kernel", "numpy_sum"]

_BLOCK = 128  # NumPy's pairwise-summation block


@njit(cache=True, nogil=True)
def _block_sum(a, lo, n):  # pragma: no cover - compiled
    """NumPy's ``pairwise_sum`` of ``a[lo:lo + n]``, ``n <= 128``: sequential below 8
    terms, else 8 interleaved partial sums combined pairwise, then the rest in turn."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r = np.empty(8)
    for q in range(8):
        r[q] = a[lo + q]
    i = 8
    while i < n - (n % 8):
        for q in range(8):
            r[q] += a[lo + i + q]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def numpy_sum(a):  # pragma: no cover - compiled
    """``a.sum()`` of a 1-D float64 array with NumPy's bits: ``0.0 + pairwise_sum(a)``, where
    ``pairwise_sum`` of more than 128 terms is that of its halves (split at a multiple of
    8) added, and of fewer :func:`_block_sum`. The halves are evaluated with an explicit
    stack (cached compiled code cannot recurse)."""
    lo = np.empty(128, np.int64)
    size = np.empty(128, np.int64)
    split = np.zeros(128, np.bool_)
    sums = np.empty(128)
    lo[0], size[0], split[0] = 0, a.shape[0], False
    top, n_sums = 1, 0
    while top > 0:
        f = top - 1
        if size[f] <= _BLOCK:
            sums[n_sums] = _block_sum(a, lo[f], size[f])
            n_sums += 1
            top -= 1
        elif split[f]:  # both halves summed
            n_sums -= 1
            sums[n_sums - 1] = sums[n_sums - 1] + sums[n_sums]
            top -= 1
        else:
            half = size[f] // 2
            half -= half % 8
            split[f] = True
            lo[top], size[top], split[top] = lo[f], half, False
            lo[top + 1], size[top + 1], split[top + 1] = lo[f] + half, size[f] - half, False
            top += 2
    return 0.0 + sums[0]


@njit(cache=True, nogil=True)
def _accept(log_ratio, rng):  # pragma: no cover - compiled
    """:func:`~pymc_crp.step_methods.metropolis.accept`: NaN rejects, ``±∞`` decide without a
    draw, else one uniform ``u`` and ``log u < log_ratio``."""
    if math.isnan(log_ratio):
        return False
    if math.isinf(log_ratio):
        return log_ratio > 0
    return math.log(rng.random()) < log_ratio


@njit(cache=True, nogil=True)
def _move_logliks(words, steps, lengths, inverse, counted, p, binom_f, max_states, memo):
    """``(loglik, ratios, ok)`` of lists ``counted`` under the order ``words`` ``(4, M)``,
    counted through the memo (as ``ListLikelihoodCache.move_log_likelihoods``)."""
    keys, vals, table, meta = memo
    n = counted.shape[0]
    index = np.empty(n, np.int64)
    for t in range(n):
        index[t] = inverse[counted[t]]
    sub_steps = np.empty((n, steps.shape[1]), np.int64)
    sub_lengths = np.empty(n, np.int64)
    for t in range(n):
        sub_lengths[t] = lengths[index[t]]
        for b in range(steps.shape[1]):
            sub_steps[t, b] = steps[index[t], b]
    ratios = np.empty((n, max(steps.shape[1] - 1, 0)))
    order = np.arange(n)
    ok = memo_ratios_kernel(
        words, sub_steps, sub_lengths, order, index, binom_f, max_states, ratios,
        keys, vals, table, meta,
    )  # fmt: skip
    loglik = np.empty(n)
    for t in range(n):
        loglik[t] = _combine(ratios, t, sub_lengths[t], p, False)[0]
    return loglik, ratios, ok


@njit(cache=True, nogil=True)
def item_sweep_kernel(
    rng, perm, utilities, mean, rho, constants, rw_scale, temperature,
    words, dual, masks, by_item, starts, logliks, slot_rows, slot_ratios,
    steps, lengths, inverse, p, binom_f, max_states, memo,
):  # fmt: skip  # pragma: no cover - compiled
    """The random-walk moves of the items ``perm`` of one slot, in order (module docstring).

    ``utilities`` ``(M, K)`` (the slot's, updated in place), ``mean`` its prior mean,
    ``rho`` ``(M,)`` each row's correlation and ``constants`` ``(M, 4)`` each row's
    ``(c, 1-ρ, 1+(K-1)ρ, s^2)``; ``rw_scale`` ``σ``, ``temperature`` ``λ``. The slot's
    lists: ``words`` ``(4, M)`` their order (``dual`` for bottom-up lists), ``masks`` every
    list's item set (two uint64 words), ``by_item[starts[j]:starts[j + 1]]`` those of the
    slot that contain ``j``, ``logliks`` every list's log-likelihood, ``slot_ratios`` the
    count ratios of the slot's lists ``slot_rows`` (ascending) at ``words``, all updated as
    moves are accepted. ``steps``, ``lengths``, ``inverse`` the list set
    (:class:`~pymc_crp.core.lists.ListSet`), ``p`` the noise, ``binom_f`` the binomial table,
    ``memo`` its ``OrderMemo`` arrays. Returns ``(accepted, counted, ok)``: the moves
    accepted, the lists counted, and False if a count passed ``max_states`` (the sweep stops
    there).
    """
    n_dims = utilities.shape[1]
    old = np.empty(n_dims)
    noise = np.empty(n_dims)
    n_accepted = 0
    n_counted = 0
    for t in range(perm.shape[0]):
        j = perm[t]
        for q in range(n_dims):
            noise[q] = rng.standard_normal()
        r = rho[j]
        if n_dims >= 2 and 0.0 < r < 1.0:
            a = math.sqrt(1.0 - r)
            b = math.sqrt(r) * rng.standard_normal()
            for q in range(n_dims):
                noise[q] = a * noise[q] + b
        for q in range(n_dims):
            old[q] = utilities[j, q]
            utilities[j, q] = old[q] + rw_scale * noise[q]
        c = constants[j]
        log_ratio = equicorrelated_row_log_density(utilities[j], mean[j], c[0], c[1], c[2], c[3])
        log_ratio -= equicorrelated_row_log_density(old, mean[j], c[0], c[1], c[2], c[3])
        rows = by_item[starts[j] : starts[j + 1]] if j < starts.shape[0] - 1 else by_item[:0]
        new_words, changed = _move_item_changed(words, utilities, j, dual, masks, rows)
        new = np.empty(rows.shape[0])
        counted = np.empty(changed.shape[0], np.int64)
        ratios = np.empty((0, 0))
        if rows.shape[0]:
            for u in range(rows.shape[0]):
                new[u] = logliks[rows[u]]
            current = numpy_sum(new)
            if changed.shape[0]:
                for u in range(changed.shape[0]):
                    counted[u] = rows[changed[u]]
                loglik, ratios, ok = _move_logliks(
                    new_words, steps, lengths, inverse, counted, p, binom_f, max_states, memo
                )
                if not ok:
                    return n_accepted, n_counted, False
                n_counted += counted.shape[0]
                for u in range(changed.shape[0]):
                    new[changed[u]] = loglik[u]
            delta = numpy_sum(new) - current
            if temperature == 0.0:
                delta = 0.0
            elif temperature != 1.0:
                delta = temperature * delta
            log_ratio += delta
        if _accept(log_ratio, rng):
            n_accepted += 1
            for u in range(rows.shape[0]):
                logliks[rows[u]] = new[u]
            words[:, :] = new_words
            for u in range(counted.shape[0]):
                at = np.searchsorted(slot_rows, counted[u])
                slot_ratios[at, :] = ratios[u]
        else:
            for q in range(n_dims):
                utilities[j, q] = old[q]
    return n_accepted, n_counted, True
