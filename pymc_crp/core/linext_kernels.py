"""Numba kernels for linear extensions of partial orders on at most 128 items.

The compiled core behind :mod:`pymc_crp.core.posets` (which validates all input): counting
and the count ratios of the queue-jumping list likelihood. Preparation (bitsets, primes,
binomials, CRT) and the ratios-to-likelihood arithmetic live in
:mod:`pymc_crp.core.linext_support`; drawing lists and linear extensions in
:mod:`pymc_crp.core.linext_sampling`, built on the helpers here.

Compilation. The entry points have ``cache=True``: their machine code, helpers
linked in, is kept in ``__pycache__`` for later processes. Hence no jitclass (not
cacheable): the memo is plain arrays, and the wrappers always pass the same dtypes and
C-contiguous writable arrays, so each entry point compiles once. Helpers get no Python
wrappers and, but for the two that allocate, no reference counting (an atomic update
per array per call). Keep the helpers here: the cache does not see edits elsewhere (the
sampling entry point of :mod:`pymc_crp.core.linext_sampling` and the memo kernel of
:mod:`pymc_crp.core.order_memo` link them in too, so after an edit here delete
``pymc_crp/core/__pycache__/linext_sampling*`` and ``order_memo*`` as well).

Sets and orders. A set of items is two uint64 words ``(lo, hi)`` (item ``x`` is bit
``x`` of ``lo`` or ``x - 64`` of ``hi``). An order is ``rel``, uint64 ``(4, n)``: rows
``up_lo, up_hi`` hold ``up[x]``, the items above ``x`` (below it for the dual order, of
equal counts; ``x`` is maximal in ``S`` iff ``up[x] & S`` is empty), and rows
``cmp_lo, cmp_hi`` the items comparable to ``x``.

Counting. ``C(S)`` (linear extensions of the suborder on ``S``) is ``multinomial(|S|;
|A_1|, ...) * prod_i C(A_i)`` over the connected components ``A_i`` of ``S``; only
connected sets are memoised: chains have ``C = 1``, others ``C(A) = sum_{x maximal}
C(A - x)`` (explicit-stack depth-first search). Counts are float64 (``128! < 1e216``)
and, on request, residues modulo primes below ``2**32`` for the exact integer.

The memo ``m = (work, meta, keys, vals, table, stack)``: ``work`` (uint64 ``(9, 128)``,
scratch): rows 0-1 and 2-3 two component lists, 4 maximal items, 5-7 residues of the
last value, child sum and count, 8 primes; ``meta`` (int64): ``[n_states, max_states,
exceeded, full]``; ``keys`` (uint64 ``(cap, 2 + k)``): stored sets, then their ``k``
residues; ``vals`` (float64 ``(cap,)``): their counts, -1 while pending; ``table``
(int32 ``(2 cap,)``): hash slots, -1 empty; ``stack`` (uint64 ``(depth, 3)``): ``(lo,
hi, expanded)``. Helpers never allocate: when ``keys`` or ``stack`` is full they return
``_FULL`` (``meta[3]`` says which) and the entry point grows the memo (:func:`_grow`)
and resumes; entries left pending are expanded again. ``binom = (binom_f, binom_r)``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from pymc_crp.core.linext_support import MAX_KERNEL_ITEMS, loglik_from_ratios

_OPTIONS = {"nogil": True, "error_model": "numpy"}
_jit = njit(cache=True, **_OPTIONS)
# Helpers are only called from compiled code: no Python or C entry-point wrappers.
_helper = njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, **_OPTIONS)
# ... and those that never allocate need no reference counting either.
_leaf = njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, _nrt=False, **_OPTIONS)
# Inlined where hot: a call passes each memo array (7-11 words each) by value.
_inline = njit(inline="always", _nrt=False, **_OPTIONS)

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_SHIFT27 = np.uint64(27)
_SHIFT30 = np.uint64(30)
_SHIFT31 = np.uint64(31)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PENDING = -1.0
_FULL = -2.0
_INITIAL_CAPACITY = 256
_INITIAL_DEPTH = 64


@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of an integer (LLVM ``ctpop``)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.int64(x), codegen


@intrinsic
def _ctz(typingctx, x):
    """Index of the lowest set bit (LLVM ``cttz``; 64 for zero)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


@_leaf
def _bit(x):
    """The singleton set ``{x}`` as ``(lo, hi)``."""
    if x < 64:
        return _ONE << np.uint64(x), _ZERO
    return _ZERO, _ONE << np.uint64(x - 64)


@_leaf
def _pop(lo, hi):
    """``(x, lo', hi')``: the smallest item of a non-empty set and the set without it."""
    if lo != _ZERO:
        return _ctz(lo), lo & (lo - _ONE), hi
    return 64 + _ctz(hi), lo, hi & (hi - _ONE)


@_leaf
def _size(lo, hi):
    return _popcount(lo) + _popcount(hi)


@_leaf
def _full_set(n):
    """The set ``{0..n-1}`` (``n <= 128``) as ``(lo, hi)``."""
    lo = ~_ZERO if n >= 64 else (_ONE << np.uint64(n)) - _ONE
    hi = ~_ZERO if n >= 128 else (_ONE << np.uint64(max(n - 64, 0))) - _ONE
    return lo, hi


@_leaf
def _hash(lo, hi, mask):
    """SplitMix64 finaliser of the two words, reduced by ``mask``."""
    h = lo ^ (hi * _GOLDEN)
    h ^= h >> _SHIFT30
    h *= _MIX1
    h ^= h >> _SHIFT27
    h *= _MIX2
    h ^= h >> _SHIFT31
    return h & mask


# ------------------------------------------------------------------------------ memo


@_helper
def _new_memo(primes, max_states):
    """An empty memo ``(work, meta, keys, vals, table, stack)``."""
    work = np.zeros((9, MAX_KERNEL_ITEMS), np.uint64)
    for k in range(primes.shape[0]):
        work[8, k] = primes[k]
    meta = np.zeros(4, np.int64)
    meta[1] = max_states
    cap = _INITIAL_CAPACITY
    keys = np.empty((cap, 2 + primes.shape[0]), np.uint64)
    table = np.full(2 * cap, -1, np.int32)
    return work, meta, keys, np.empty(cap), table, np.empty((_INITIAL_DEPTH, 3), np.uint64)


@_leaf
def _place(keys, table, s):
    """Put entry ``s`` into the (large enough) hash ``table``."""
    mask = np.uint64(table.shape[0] - 1)
    h = _hash(keys[s, 0], keys[s, 1], mask)
    while table[h] >= 0:
        h = (h + _ONE) & mask
    table[h] = s


@_helper
def _grow(m):
    """The memo with its full array (``meta[3]``: 1 the entries, 2 the stack) doubled."""
    work, meta, keys, vals, table, stack = m
    full = meta[3]
    meta[3] = 0
    # Element loops: slice assignment compiles slow shape-error formatting code.
    if full == 2:
        bigger = np.empty((2 * stack.shape[0], 3), np.uint64)
        for t in range(stack.shape[0]):
            for k in range(3):
                bigger[t, k] = stack[t, k]
        return work, meta, keys, vals, table, bigger
    cap = 2 * keys.shape[0]
    new_keys = np.empty((cap, keys.shape[1]), np.uint64)
    new_vals = np.empty(cap)
    new_table = np.full(2 * cap, -1, np.int32)
    for s in range(meta[0]):
        for k in range(keys.shape[1]):
            new_keys[s, k] = keys[s, k]
        new_vals[s] = vals[s]
        _place(new_keys, new_table, s)
    return work, meta, new_keys, new_vals, new_table, stack


@_leaf
def _find(keys, table, lo, hi):
    """Index of the stored set ``(lo, hi)``, or -1."""
    mask = np.uint64(table.shape[0] - 1)
    h = _hash(lo, hi, mask)
    while True:
        s = np.int64(table[h])
        if s < 0 or (keys[s, 0] == lo and keys[s, 1] == hi):
            return s
        h = (h + _ONE) & mask


@_leaf
def _known(m, lo, hi):
    """Whether the set is stored with its count (not pending)."""
    s = _find(m[2], m[4], lo, hi)
    return s >= 0 and m[3][s] >= 0.0


@_leaf
def _insert(m, lo, hi, value):
    """Store the absent set with ``value`` and residues 1; its index, or -1 when full."""
    _, meta, keys, vals, table, _ = m
    s = meta[0]
    if s == keys.shape[0]:
        meta[3] = 1
        return -1
    keys[s, 0] = lo
    keys[s, 1] = hi
    for k in range(2, keys.shape[1]):
        keys[s, k] = _ONE
    vals[s] = value
    _place(keys, table, s)
    meta[0] = s + 1
    return s


# --------------------------------------------------------------------- set structure


@_leaf
def _components(rel, lo, hi, work, row):
    """Connected components of the set into ``work[row], work[row + 1]``; their number."""
    nc = 0
    while (lo | hi) != _ZERO:
        x, _, _ = _pop(lo, hi)
        clo, chi = _bit(x)
        flo, fhi = clo, chi  # the frontier: found, neighbours not yet added
        while (flo | fhi) != _ZERO:
            y, flo, fhi = _pop(flo, fhi)
            nlo = rel[2, y] & lo & ~clo
            nhi = rel[3, y] & hi & ~chi
            clo |= nlo
            chi |= nhi
            flo |= nlo
            fhi |= nhi
        work[row, nc] = clo
        work[row + 1, nc] = chi
        nc += 1
        lo &= ~clo
        hi &= ~chi
    return nc


@_leaf
def _is_chain(rel, lo, hi, size):
    """Whether the set (of ``size`` items) is totally ordered."""
    wlo, whi = lo, hi
    while (wlo | whi) != _ZERO:
        x, wlo, whi = _pop(wlo, whi)
        if _size(rel[2, x] & lo, rel[3, x] & hi) != size - 1:
            return False
    return True


@_leaf
def _maximal(rel, lo, hi, out, row):
    """Write the maximal items of the set into ``out[row]``; return their number."""
    nm = 0
    wlo, whi = lo, hi
    while (wlo | whi) != _ZERO:
        x, wlo, whi = _pop(wlo, whi)
        if (rel[0, x] & lo) == _ZERO and (rel[1, x] & hi) == _ZERO:
            out[row, nm] = x
            nm += 1
    return nm


# -------------------------------------------------------------------------- counting


@_leaf
def _residues(work, r, keys, idx, binom_r, cum, s):
    """Exact counts: ``work[r] =`` residues of entry ``idx`` (or 1) if ``cum < 0``, else
    ``work[r] *= binom(cum, s) (if cum > 0) * residues of idx (if idx >= 0)``."""
    for k in range(keys.shape[1] - 2):
        if cum < 0:
            work[r, k] = keys[idx, 2 + k] if idx >= 0 else _ONE
            continue
        v = work[r, k]
        if cum > 0:
            v = (v * binom_r[k, cum, s]) % work[8, k]
        if idx >= 0:
            v = (v * keys[idx, 2 + k]) % work[8, k]
        work[r, k] = v


@_inline
def _lookup(rel, m, binom, lo, hi, row, r, nc):
    """``C(S)`` if ``S`` or each of its components is stored, else ``-1 - nc``.

    Residues go to ``work[r]``, the ``nc`` components to ``work[row], work[row + 1]``
    (pass ``nc >= 0`` if they are there already, -1 otherwise).
    """
    work, _, keys, vals, table, _ = m
    binom_f, binom_r = binom
    exact = keys.shape[1] > 2
    if nc < 0:
        idx = _find(keys, table, lo, hi)
        if idx >= 0 and vals[idx] >= 0.0:
            if exact:
                _residues(work, r, keys, idx, binom_r, np.int64(-1), np.int64(0))
            return vals[idx]
        nc = 0 if _size(lo, hi) <= 1 else _components(rel, lo, hi, work, row)
    if exact:
        _residues(work, r, keys, np.int64(-1), binom_r, np.int64(-1), np.int64(0))
    f = 1.0
    cum = 0
    for c in range(nc):
        s = _size(work[row, c], work[row + 1, c])
        cum += s
        idx = np.int64(-1)
        if s >= 2:
            idx = _find(keys, table, work[row, c], work[row + 1, c])
            if idx < 0 or vals[idx] < 0.0:
                return -1.0 - nc
            f *= vals[idx]
        if c > 0:
            f *= binom_f[cum, s]
        if exact and (c > 0 or idx >= 0):
            _residues(work, r, keys, idx, binom_r, np.int64(cum if c > 0 else 0), s)
    return f


@_leaf
def _sum_children(rel, m, binom, lo, hi):
    """``sum_{x maximal} C(S - x)``, all of them stored; residues in ``work[6]``."""
    work = m[0]
    n_res = m[2].shape[1] - 2
    for k in range(n_res):
        work[6, k] = 0
    f = 0.0
    for t in range(_maximal(rel, lo, hi, work, np.int64(4))):
        blo, bhi = _bit(np.int64(work[4, t]))
        f += _lookup(rel, m, binom, lo & ~blo, hi & ~bhi, np.int64(0), np.int64(5), np.int64(-1))
        for k in range(n_res):
            v = work[6, k] + work[5, k]
            work[6, k] = v - work[8, k] if v >= work[8, k] else v
    return f


@_leaf
def _count_missing(rel, m, binom, lo, hi, nc):
    """``C(S)`` after storing each of the ``nc`` components of ``S`` (in ``work[2],
    work[3]``, as left by :func:`_lookup`; ``nc = -1`` to find them) not stored yet.

    Chains are stored directly, others by an explicit-stack depth-first search: a set
    is inserted as pending and expanded (its unknown children, the components of
    ``S - x`` for ``x`` maximal, pushed above it); when it is on top again its children
    are known and it gets its value. Returns ``_FULL`` when ``keys`` or ``stack`` is
    full and NaN (with ``meta[2]`` set) past ``max_states``; residues in ``work[7]``.
    """
    work, meta, keys, vals, table, stack = m
    if nc < 0:
        nc = 0 if _size(lo, hi) <= 1 else _components(rel, lo, hi, work, np.int64(2))
    for c in range(nc):
        clo = work[2, c]
        chi = work[3, c]
        s = _size(clo, chi)
        if s < 2 or _known(m, clo, chi):
            continue
        if _is_chain(rel, clo, chi, s):
            if _insert(m, clo, chi, 1.0) < 0:
                return _FULL
            continue
        stack[0, 0] = clo
        stack[0, 1] = chi
        stack[0, 2] = _ZERO
        sp = 1
        while sp > 0:
            slo = stack[sp - 1, 0]
            shi = stack[sp - 1, 1]
            idx = _find(keys, table, slo, shi)
            if idx >= 0 and vals[idx] >= 0.0:
                sp -= 1
                continue
            if stack[sp - 1, 2] == _ZERO:  # not expanded yet
                if idx < 0:
                    if meta[0] >= meta[1]:
                        meta[2] = 1
                        return np.nan
                    idx = _insert(m, slo, shi, _PENDING)
                    if idx < 0:
                        return _FULL
                stack[sp - 1, 2] = _ONE
                sp_before = sp
                for t in range(_maximal(rel, slo, shi, work, np.int64(4))):
                    blo, bhi = _bit(np.int64(work[4, t]))
                    if _known(m, slo & ~blo, shi & ~bhi):
                        continue
                    for q in range(_components(rel, slo & ~blo, shi & ~bhi, work, np.int64(0))):
                        klo = work[0, q]
                        khi = work[1, q]
                        sk = _size(klo, khi)
                        if sk < 2 or _known(m, klo, khi):
                            continue
                        if _is_chain(rel, klo, khi, sk):
                            if _insert(m, klo, khi, 1.0) < 0:
                                return _FULL
                        elif sp == stack.shape[0]:
                            meta[3] = 2
                            return _FULL
                        else:
                            stack[sp, 0] = klo
                            stack[sp, 1] = khi
                            stack[sp, 2] = _ZERO
                            sp += 1
                if sp > sp_before:
                    continue
            vals[idx] = _sum_children(rel, m, binom, slo, shi)
            for k in range(keys.shape[1] - 2):
                keys[idx, 2 + k] = work[6, k]
            sp -= 1
    return _lookup(rel, m, binom, lo, hi, np.int64(2), np.int64(7), nc)


@_inline
def _count(rel, m, binom, lo, hi):
    """``C(S)`` for any set (:func:`_lookup`, else :func:`_count_missing`)."""
    f = _lookup(rel, m, binom, lo, hi, np.int64(2), np.int64(7), np.int64(-1))
    return f if f >= 0.0 else _count_missing(rel, m, binom, lo, hi, np.int64(-1.0 - f))


@_jit
def count_kernel(rel, primes, binom_f, binom_r, max_states):
    """``C`` of the order ``rel`` as a float and modulo ``primes``.

    Returns ``(count_float, residues, n_states, exceeded)``.
    """
    m = _new_memo(primes, max_states)
    lo, hi = _full_set(rel.shape[1])
    f = _count_missing(rel, m, (binom_f, binom_r), lo, hi, np.int64(-1))
    while f == _FULL:
        m = _grow(m)
        f = _count_missing(rel, m, (binom_f, binom_r), lo, hi, np.int64(-1))
    meta = m[1]
    return f, m[0][7, : primes.shape[0]].copy(), meta[0], meta[2] != 0


@_leaf
def _ratio_rows(rel, m, binom, lists, lengths, perm, t0, t, stop, top_down, ratios):
    """Count ratios of lists ``perm[t:stop]`` into ``ratios`` (see :func:`ratios_kernel`).

    A list with the item set of the list before it (``perm[t - 1]``, ``t > t0``) copies
    the ratios of their common first steps. Returns the position reached: ``stop``, or an
    earlier one when the memo must grow first; -1 past ``max_states``."""
    while t < stop:
        i = perm[t]
        n = lengths[i]
        lo, hi = _ZERO, _ZERO
        for b in range(n):
            blo, bhi = _bit(lists[i, b])
            lo |= blo
            hi |= bhi
        start = 0
        j = perm[t - 1] if t > t0 else i
        same = j != i and lengths[j] == n
        for b in range(n if same else 0):  # the same item set?
            blo, bhi = _bit(lists[j, b])
            same = same and ((blo & lo) | (bhi & hi)) != _ZERO
        while same and start < n - 1:  # then share the steps of a common beginning
            y = lists[i, start] if top_down else lists[i, n - 1 - start]
            if y != (lists[j, start] if top_down else lists[j, n - 1 - start]):
                break
            ratios[i, start] = ratios[j, start]
            blo, bhi = _bit(y)
            lo &= ~blo
            hi &= ~bhi
            start += 1
        c_now = -1.0  # C(T_j) when known from the previous step
        for step in range(start, n - 1):
            y = lists[i, step] if top_down else lists[i, n - 1 - step]
            blo, bhi = _bit(y)
            ratio = 0.0
            if (rel[0, y] & lo) == _ZERO and (rel[1, y] & hi) == _ZERO:
                for which in range(2):  # C(T_j) unless known, then C(T_j - Y_j)
                    if which == 0 and c_now >= 0.0:
                        continue
                    tlo = lo & ~blo if which else lo
                    c = _count(rel, m, binom, tlo, hi & ~bhi if which else hi)
                    if c == _FULL:
                        return t
                    if m[1][2] != 0:
                        return -1
                    ratio = c / c_now if which else 0.0
                    c_now = c
            else:
                c_now = -1.0
            ratios[i, step] = ratio
            lo &= ~blo
            hi &= ~bhi
        t += 1
    return t


@_jit
def ratios_kernel(rel_stack, lists, lengths, perm, starts, top_down, binom_f, max_states, ratios):
    """Count ratios ``ratios[i, j] = 1{Y_j maximal in T_j} C(T_j - Y_j) / C(T_j)`` (top-down,
    ``T_j = {Y_j..Y_m}``, ``j = 0..m-2``) of lists ``i = perm[starts[a]:starts[a + 1]]``
    under the order ``rel_stack[a]``; bottom-up lists are read backwards (pass the dual
    orders). Lists of one order share a memo of counts; a list shares the ratios of its
    first steps with the list before it if both have the same item set (so sort them).
    The ratios do not depend on ``p``. Returns ``ok`` (False past ``max_states``).
    """
    binom = (binom_f, np.empty((0, 1, 1), np.uint64))
    for a in range(rel_stack.shape[0]):
        t = starts[a]
        if t == starts[a + 1]:
            continue
        m = _new_memo(np.empty(0, np.uint64), max_states)
        while True:
            t = _ratio_rows(
                rel_stack[a], m, binom, lists, lengths, perm, starts[a], t, starts[a + 1],
                top_down, ratios,
            )  # fmt: skip
            if not 0 <= t < starts[a + 1]:
                break
            m = _grow(m)  # and resume
        if t < 0:
            return False
    return True


def loglik_stacked_kernel(
    rel_stack, lists, lengths, perm, starts, p, top_down, want_grad, binom_f, max_states
):
    """Log-likelihoods (and ``d/dp``) of lists ``perm[starts[a]:starts[a + 1]]`` under
    orders ``rel_stack[a]``: :func:`ratios_kernel`, then ``loglik_from_ratios``
    (``log L = sum_j log(p / r_j + (1 - p) ratio_j)``). Returns ``(ll, dp, ok)``."""
    n_lists = lists.shape[0]
    ll, dp = np.zeros(n_lists), np.zeros(n_lists)
    ratios = np.zeros((n_lists, max(lists.shape[1] - 1, 0)))
    if p < 1.0 or want_grad:  # at p = 1 every term is 1 / r_j: no counts needed
        args = (lists, lengths, perm, starts, top_down, binom_f, max_states, ratios)
        if not ratios_kernel(rel_stack, *args):
            return ll, dp, False
    rows = perm[starts[0] : starts[-1]]
    scratch = (np.empty(n_lists), np.empty(n_lists), np.zeros(n_lists, dtype=np.bool_))
    ll[rows], dp[rows] = loglik_from_ratios(ratios, lengths, rows, p, want_grad, *scratch)
    return ll, dp, True
