"""Tables for the linear-extension kernels: binomials, primes, CRT, bitset orders.

Exact counts are carried modulo a few primes below ``2**32`` (so that products of two
residues fit in a ``uint64``) and rebuilt by the Chinese remainder theorem. Orders enter
the kernels as bitsets (:func:`relation_words`). Two small self-contained numba kernels
(cached on disk; they call nothing in :mod:`pymc_crp.core.linext_kernels`) live here too:
:func:`utility_relation_words` builds the bitsets straight from utilities and
:func:`loglik_from_ratios` turns count ratios into list log-likelihoods at a given ``p``.

The tables are memoised with :func:`functools.lru_cache` and stay so: they are constants
(pure functions of their small integer arguments, bounded in number), identical in every
process, so they need no owner, no clearing and nothing when steps are pickled to workers.
Callers must not write into the arrays returned.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

MAX_KERNEL_ITEMS = 128
"""Largest number of items a kernel call can handle (two 64-bit words per set)."""


@lru_cache(maxsize=1)
def float_binomials():
    """``binom(a, b)`` for ``0 <= b <= a <= 128`` as a float64 ``(129, 129)`` array."""
    size = MAX_KERNEL_ITEMS + 1
    table = np.zeros((size, size))
    for a in range(size):
        for b in range(a + 1):
            table[a, b] = float(math.comb(a, b))
    return table


def _is_prime(n):
    """Deterministic Miller-Rabin for ``n < 3.3e24``."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for q in small:
        if n % q == 0:
            return n == q
    d = n - 1
    s = 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@lru_cache(maxsize=1)
def _prime_list():
    primes = []
    candidate = 2**32 - 1
    while len(primes) < 40:
        if _is_prime(candidate):
            primes.append(candidate)
        candidate -= 2
    return tuple(primes)


@lru_cache(maxsize=64)
def residue_tables(n_primes):
    """The first ``n_primes`` primes below ``2**32`` and Pascal's triangle modulo each.

    Returns ``(primes, binom_r)``: a uint64 array ``(n_primes,)`` and a uint64 array
    ``(n_primes, 129, 129)`` with ``binom_r[i, a, b] = binom(a, b) mod primes[i]``.
    """
    if n_primes > len(_prime_list()):
        raise ValueError(f"at most {len(_prime_list())} primes are available")
    primes = np.array(_prime_list()[:n_primes], dtype=np.uint64)
    size = MAX_KERNEL_ITEMS + 1
    table = np.zeros((n_primes, size, size), dtype=np.uint64)
    table[:, :, 0] = 1
    mod = primes[:, None]
    for a in range(1, size):
        table[:, a, 1 : a + 1] = (table[:, a - 1, 0:a] + table[:, a - 1, 1 : a + 1]) % mod
    return primes, table


@lru_cache(maxsize=1)
def no_residues():
    """Empty ``(primes, binom_r)`` for float-only counting (same dtypes, no residues)."""
    return np.empty(0, dtype=np.uint64), np.empty((0, 1, 1), dtype=np.uint64)


def primes_needed(log2_bound, margin_bits=64):
    """How many of the primes (each above ``2**31``) give a product above ``2**(bound+margin)``."""
    return max(1, math.ceil((log2_bound + margin_bits) / 31.0))


def crt(residues, primes):
    """The integer ``0 <= x < prod(primes)`` with ``x = residues[i] (mod primes[i])``."""
    x = 0
    modulus = 1
    for r, q in zip(residues, primes, strict=True):
        r = int(r)
        q = int(q)
        # Garner step: find t with x + modulus * t = r (mod q).
        t = ((r - x) * pow(modulus, -1, q)) % q
        x += modulus * t
        modulus *= q
    return x


def _words(sets: np.ndarray, half: int) -> np.ndarray:
    """Word ``half`` (items ``64 half .. 64 half + 63``) of each row of boolean ``sets``."""
    part = sets[..., 64 * half : 64 * half + 64]
    bits = np.left_shift(np.uint64(1), np.arange(part.shape[-1], dtype=np.uint64))
    return (part * bits).sum(axis=-1, dtype=np.uint64)  # distinct bits: sum = bitwise or


def relation_words(closed: np.ndarray, dual: bool = False) -> np.ndarray:
    """The kernels' bitset form ``rel`` ``(..., 4, n)`` of closed orders ``(..., n, n)``.

    ``closed[i, j]`` means item ``i`` is above item ``j``. Rows ``up_lo, up_hi, cmp_lo,
    cmp_hi``: ``up[x]`` is the set of items above ``x`` (below ``x`` when ``dual``: the
    dual order) and ``cmp[x]`` the set of items comparable to ``x``, as two uint64 words.
    """
    above = np.swapaxes(closed, -1, -2)  # above[x, i] = closed[i, x]
    up = closed if dual else above
    comparable = closed | above
    words = [_words(up, 0), _words(up, 1), _words(comparable, 0), _words(comparable, 1)]
    return np.ascontiguousarray(np.stack(words, axis=-2))


@njit(cache=True, nogil=True)
def _utility_words(eta, dual):  # pragma: no cover - compiled
    n_orders, n_items, n_dims = eta.shape
    rel = np.zeros((n_orders, 4, n_items), np.uint64)
    one = np.uint64(1)
    for a in range(n_orders):
        for x in range(n_items):
            xbit = one << np.uint64(x % 64)
            xword = x // 64
            for y in range(x + 1, n_items):  # each pair once: y above x, or x above y
                above = True
                below = True
                for k in range(n_dims):
                    above &= eta[a, y, k] > eta[a, x, k]
                    below &= eta[a, x, k] > eta[a, y, k]
                if not (above or below):
                    continue
                ybit = one << np.uint64(y % 64)
                yword = y // 64
                rel[a, 2 + yword, x] |= ybit
                rel[a, 2 + xword, y] |= xbit
                if below if dual else above:  # y in up[x] (the items below x if dual)
                    rel[a, yword, x] |= ybit
                if above if dual else below:  # x in up[y]
                    rel[a, xword, y] |= xbit
    return rel


@njit(cache=True, nogil=True)
def _strict_sets(values, order, out, descending):  # pragma: no cover - compiled
    """``out[:, x]``: the items whose value is strictly below ``values[x]`` (strictly above
    if ``descending``) as two uint64 words, given ``order`` the ascending argsort of
    ``values``; NaN compares false with everything (an empty set, in no other set)."""
    one = np.uint64(1)
    lo = np.uint64(0)
    hi = np.uint64(0)
    n = values.shape[0]
    i = 0
    while i < n:
        t = n - 1 - i if descending else i
        v = values[order[t]]
        if v != v:
            out[0, order[t]] = np.uint64(0)
            out[1, order[t]] = np.uint64(0)
            i += 1
            continue
        j = i  # the items tied with v get the set of those passed before them
        while j < n:
            s = n - 1 - j if descending else j
            if values[order[s]] != v:
                break
            out[0, order[s]] = lo
            out[1, order[s]] = hi
            j += 1
        for r in range(i, j):
            y = order[n - 1 - r if descending else r]
            if y < 64:
                lo |= one << np.uint64(y)
            else:
                hi |= one << np.uint64(y - 64)
        i = j


@njit(cache=True, nogil=True)
def _sorted_utility_words(eta, dual):  # pragma: no cover - compiled
    """:func:`_utility_words` in ``O(L K M log M)``: per coordinate ``k``, the sets of items
    strictly above and below each item from one sort; ``y`` is above ``x`` iff it lies in
    the set above ``x`` of every coordinate (word operations, ``O(L K M)``)."""
    n_orders, n_items, n_dims = eta.shape
    rel = np.zeros((n_orders, 4, n_items), np.uint64)
    above = np.empty((2, n_items), np.uint64)
    below = np.empty((2, n_items), np.uint64)
    values = np.empty(n_items)
    for a in range(n_orders):  # rows 0-1: the items above x, rows 2-3: the items below x
        for k in range(n_dims):
            for y in range(n_items):
                values[y] = eta[a, y, k]
            order = np.argsort(values)
            _strict_sets(values, order, below, False)
            _strict_sets(values, order, above, True)
            for x in range(n_items):
                for w in range(2):
                    if k == 0:
                        rel[a, w, x] = above[w, x]
                        rel[a, 2 + w, x] = below[w, x]
                    else:
                        rel[a, w, x] &= above[w, x]
                        rel[a, 2 + w, x] &= below[w, x]
        for x in range(n_items):  # to up (below if dual) and comparable
            for w in range(2):
                up, down = rel[a, w, x], rel[a, 2 + w, x]
                rel[a, w, x] = down if dual else up
                rel[a, 2 + w, x] = up | down
    return rel


_SORTED_FROM = 32  # items from which sorting beats comparing every pair


def utility_relation_words(eta, dual: bool = False) -> np.ndarray:
    """``relation_words(partial_order_from_utilities(eta), dual)`` without the boolean matrices.

    ``eta`` is ``(L, M, K)`` float (``M <= 128``); item ``y`` is above ``x`` in order ``a``
    iff ``eta[a, y, k] > eta[a, x, k]`` for every ``k``. Returns uint64 ``(L, 4, M)``, by
    comparing every pair (``O(L M^2 K)``) or, from 32 items on, from one sort per coordinate
    (:func:`_sorted_utility_words`, the same bits).
    """
    eta = np.ascontiguousarray(eta, dtype=np.float64)
    if eta.ndim != 3 or eta.shape[1] > MAX_KERNEL_ITEMS:
        raise ValueError(f"eta must be (L, M, K) with M <= {MAX_KERNEL_ITEMS}, got {eta.shape}")
    if eta.shape[1] >= _SORTED_FROM and eta.shape[2] >= 1:
        return _sorted_utility_words(eta, bool(dual))
    return _utility_words(eta, bool(dual))


def chain_partition_sizes(closed: np.ndarray) -> np.ndarray:
    """Sizes of a greedy partition of a closed ``(n, n)`` order into chains.

    Items are visited in a linear extension (by increasing number of items above); each
    joins the first chain whose current lowest item is above it. The chain sizes ``c_i``
    bound the number of linear extensions by ``n! / prod(c_i!)``.
    """
    bottoms: list[int] = []
    sizes: list[int] = []
    for x in np.argsort(closed.sum(axis=0), kind="stable"):
        above_x = np.flatnonzero(closed[bottoms, x]) if bottoms else ()
        if len(above_x):
            bottoms[above_x[0]] = x
            sizes[above_x[0]] += 1
        else:
            bottoms.append(x)
            sizes.append(1)
    return np.array(sizes, dtype=np.int64)


def group_by_label(labels: np.ndarray, n_groups: int):
    """``(perm, starts)``: rows ``perm[starts[a]:starts[a + 1]]`` have label ``a``."""
    perm = np.argsort(labels, kind="stable").astype(np.int64)
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=n_groups), out=starts[1:])
    return perm, starts


# The terms of a list are multiplied and their product's logarithm taken once the product
# falls below _FLUSH_BELOW (one logarithm for several terms); a term below its square root is
# taken alone, so no product underflows (the terms are at most 1, so none overflows).
_FLUSH_BELOW = 1e-150
_ALONE_BELOW = 1e-75


@njit(nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True, _nrt=False)
def _combine(ratios, u, n, p, want_grad):  # pragma: no cover - compiled
    """``(sum_j log term_j, sum_j (1/r_j - ratio_j) / term_j)`` of row ``u``, ``term_j = p / r_j
    + (1 - p) ratio_j``; the logarithms summed as logarithms of partial products."""
    ll = 0.0
    dp = 0.0
    product = 1.0
    for step in range(n - 1):
        r = n - step
        ratio = ratios[u, step]
        term = p / r + (1.0 - p) * ratio
        if term <= 0.0:
            return -np.inf, np.inf
        if term < _ALONE_BELOW:
            ll += math.log(term)
        else:
            product *= term
            if product < _FLUSH_BELOW:
                ll += math.log(product)
                product = 1.0
        if want_grad:
            dp += (1.0 / r - ratio) / term
    return ll + math.log(product), dp


@njit(cache=True, nogil=True)
def loglik_from_ratios(ratios, lengths, index, p, want_grad, row_ll, row_dp, seen):
    """``(loglik, dloglik_dp)`` at ``p`` of lists ``index`` (rows of ``ratios`` and
    ``lengths``, with repeats) from their count ratios (``ratios_kernel`` in
    :mod:`pymc_crp.core.linext_kernels`)::

        log L = sum_j log(p / r_j + (1 - p) ratio_j),   r_j = m - j,
        d log L / dp = sum_j (1 / r_j - ratio_j) / term_j   (only if ``want_grad``, else 0).

    Row ``u`` is combined once and kept in ``row_ll[u], row_dp[u]`` (``seen[u]`` set):
    pass the same arrays again for the same ``p`` and ``want_grad``.
    """
    ll = np.empty(index.shape[0])
    dp = np.empty(index.shape[0])
    for t in range(index.shape[0]):
        u = index[t]
        if not seen[u]:
            row_ll[u], row_dp[u] = _combine(ratios, u, lengths[u], p, want_grad)
            seen[u] = True
        ll[t] = row_ll[u]
        dp[t] = row_dp[u]
    return ll, dp
