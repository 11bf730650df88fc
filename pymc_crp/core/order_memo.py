r"""Count ratios of lists: short lists counted in rank space, all remembered by restricted order.

A list ``Y`` over the items ``S = \{Y_1, …, Y_m\}`` has count ratios (see
:func:`~pymc_crp.core.linext_kernels.ratios_kernel`)

.. math:: ρ_j = 1\{Y_j \text{ maximal in } h[T_j]\}\, C(h[T_j \setminus Y_j]) / C(h[T_j]),
    \qquad T_j = \{Y_j, …, Y_m\},

that depend on the order ``h`` only through its restriction ``h[S]``: the kernels compute
them by the same floating-point operations for every ``h`` with the same ``h[S]``, so equal
restrictions give equal ratios bit for bit. When the lists span many items, each over its own
few, a move of the utilities changes ``h`` everywhere but each list's ``h[S]`` rarely, and
back and forth between a few values. :class:`OrderMemo` remembers the ratios of a set of
lists keyed by the list's row and its restricted order, coded as the ``m`` words

.. math:: \mathrm{code}_b = \sum_{c < m} 2^c\, 1\{Y_c \text{ above } Y_b \text{ in } h\},
    \qquad b = 0..m-1

(``Y_c`` here the items of ``S`` in increasing order, their *ranks*; the words determine
``h[S]``: comparability is "above" either way), so that :func:`memo_ratios_kernel` counts
only lists whose restricted order it has not seen. The memo is an open-addressing hash table
of fixed capacity, emptied when full (a deterministic rule; the ratios never depend on what
it holds). Lists of more than 64 items bypass it.

Lists of at most :data:`MAX_SMALL_LENGTH` items are counted from the same words, with sets of
ranks as indices into an array of ``2^m`` counts (no hashing, no bitsets over all ``M``
items): ``C(T) = \sum_{x \text{ maximal in } T} C(T \setminus x)``, ``C(T) = 1`` for
``|T| \le 1``, counted forward over the down-sets of each ``T_j`` not yet counted, smallest
first (each down-set once, adding its count to the down-sets one item larger). A set whose
comparability graph falls apart into components ``A`` is counted by components,
``C(T) = |T|!/\prod |A|! \cdot \prod C(A)``: over ``\sum |D(A)|`` down-sets instead of
``\prod |D(A)|`` (sparse orders of many dimensions, with isolated items). Consecutive
lists over the same items share the counts (lists over one item set, as when all lists rank
the same items, count each set once); a run of more than ``2^m /`` :data:`TABLE_RUN_FACTOR`
such lists counts every subset of the ``m`` items at once, ``C(S) = \sum_{x \text{ maximal
in } S} C(S \setminus x)`` over the subsets in increasing order, and reads each list's
``C(T_j)`` from that table (once a list has put an item before one above it, its later
``T_j`` are not down-sets of the items, and each would otherwise be counted afresh).
The counts are integers below ``m! < 2^{53}``, so every sum is exact and the ratios have the
bits of the general kernel (:func:`~pymc_crp.core.linext_kernels.ratios_kernel`), which
counts the longer lists.

Compilation: :func:`memo_ratios_kernel` links the counting helpers of
:mod:`pymc_crp.core.linext_kernels` in, and :func:`~pymc_crp.core.item_sweep.item_sweep_kernel`
links it in; their disk caches do not see edits of what they link, so after such an edit
delete ``pymc_crp/core/__pycache__/order_memo*`` and ``item_sweep*`` as well.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.linext_kernels import (
    _ONE,
    _ZERO,
    _bit,
    _ctz,
    _grow,
    _hash,
    _jit,
    _leaf,
    _pop,
    _popcount,
    _ratio_rows,
)
from pymc_crp.core.linext_kernels import _new_memo as _new_count_memo
from pymc_crp.core.linext_support import MAX_KERNEL_ITEMS

__all__ = [
    "MAX_MEMO_LENGTH",
    "MAX_SMALL_LENGTH",
    "TABLE_RUN_FACTOR",
    "OrderMemo",
    "memo_ratios_kernel",
]

MAX_MEMO_LENGTH = 64
"""Longest list whose ratios the memo keeps (one 64-bit word per item of the code)."""
MAX_SMALL_LENGTH = 16
"""Longest list counted in rank space (``2^m`` counts; exact integers up to 18 items)."""
TABLE_RUN_FACTOR = 8
"""A run of more than ``2^m / TABLE_RUN_FACTOR`` lists over the same ``m`` items counts every
subset of them (:func:`_count_subsets`; the break-even of 10-item rankings under a total order,
where counting by down-sets is cheapest)."""

_ALL = ~np.uint64(0)


class OrderMemo:
    """The memo of one set of distinct lists ``steps`` ``(n_rows, m)`` (padded with ``-1``).

    ``keys`` ``(cap + 1, 1 + m)`` holds per entry the list's row and its code (the last row
    is scratch), ``vals`` ``(cap, m - 1)`` its ratios, ``table`` ``(2 cap,)`` the hash slots
    (-1 empty) and ``meta`` ``[entries, hits, misses, times emptied]``. The capacity is the
    largest power of two with ``keys``, ``vals`` and ``table`` within ``max_bytes`` and at
    most ``64 n_rows`` entries (0, no memo, for lists longer than :data:`MAX_MEMO_LENGTH`).
    """

    def __init__(self, n_rows: int, max_len: int, max_bytes: int):
        width = 1 + max_len
        per_entry = 8 * width + 8 * max(max_len - 1, 0) + 8
        cap = 0
        if 0 < max_len <= MAX_MEMO_LENGTH:
            limit = min(max_bytes // per_entry, 64 * max(n_rows, 1))
            cap = 1 << (int(limit).bit_length() - 1) if limit >= 16 else 0
        self.keys = np.zeros((cap + 1, width), dtype=np.uint64)
        self.vals = np.empty((cap, max(max_len - 1, 0)))
        self.table = np.full(2 * cap, -1, dtype=np.int32)
        self.meta = np.zeros(4, dtype=np.int64)
        self.nbytes = self.keys.nbytes + self.vals.nbytes + self.table.nbytes

    @property
    def arrays(self) -> tuple:
        """``(keys, vals, table, meta)`` as :func:`memo_ratios_kernel` takes them."""
        return self.keys, self.vals, self.table, self.meta


@_leaf
def _item_set(lists, i, n):
    """The first ``n`` items of list ``i`` as a two-word bitset ``(lo, hi)``."""
    lo, hi = _ZERO, _ZERO
    for b in range(n):
        blo, bhi = _bit(lists[i, b])
        lo |= blo
        hi |= bhi
    return lo, hi


@_leaf
def _canonical_code(rel, lists, i, n, ranked, rank_of, code):
    """The restricted order of list ``i`` (``n <= 64`` items) in rank space: ``ranked`` its
    items ascending, ``rank_of[x]`` the rank of item ``x`` and ``code[r]`` the ranks of the
    items above ``ranked[r]`` (one word each)."""
    lo, hi = _item_set(lists, i, n)
    for r in range(n):
        x, lo, hi = _pop(lo, hi)
        ranked[r] = x
        rank_of[x] = r
    for r in range(n):
        x = ranked[r]
        up_lo = rel[0, x]
        up_hi = rel[1, x]
        word = _ZERO
        for c in range(n):
            y = ranked[c]
            above = (up_lo >> np.uint64(y)) if y < 64 else (up_hi >> np.uint64(y - 64))
            word |= (above & _ONE) << np.uint64(c)
        code[r] = word


@_leaf
def _key(keys, row, code, n):
    """Write the key ``(row, code[:n])`` into the scratch row of ``keys``; return its hash."""
    scratch = keys.shape[0] - 1
    keys[scratch, 0] = np.uint64(row)
    h = _hash(np.uint64(row), np.uint64(n), _ALL)
    for r in range(n):
        keys[scratch, 1 + r] = code[r]
        h = _hash(h, code[r], _ALL)
    return h


@_leaf
def _find(keys, table, n, h):
    """The entry whose key equals the scratch key (``n`` code words), or ``-(slot + 1)`` of
    the empty hash slot where it would go."""
    mask = np.uint64(table.shape[0] - 1)
    scratch = keys.shape[0] - 1
    slot = h & mask
    while True:
        s = np.int64(table[slot])
        if s < 0:
            return -np.int64(slot) - 1
        same = keys[s, 0] == keys[scratch, 0]
        for b in range(1, n + 1):
            same = same and keys[s, b] == keys[scratch, b]
        if same:
            return s
        slot = (slot + _ONE) & mask


@_leaf
def _store(keys, vals, table, meta, n, h, ratios, i):
    """Store the scratch key with the ratios of list ``i`` (emptying the memo when full)."""
    if meta[0] == vals.shape[0]:
        for k in range(table.shape[0]):
            table[k] = -1
        meta[0] = 0
        meta[3] += 1
    found = _find(keys, table, n, h)
    if found >= 0:
        return
    s = meta[0]
    scratch = keys.shape[0] - 1
    for b in range(n + 1):
        keys[s, b] = keys[scratch, b]
    for b in range(n - 1):
        vals[s, b] = ratios[i, b]
    table[-found - 1] = s
    meta[0] = s + 1


@_leaf
def _count_small(code, full, cnt, stamp, gen, mark, queue, passes):
    """``C(S)`` of the set ``full`` of ranks (rank-space order: ``code[x]`` the ranks above
    ``x``), counted forward over the down-sets ``D`` of ``full`` by size: ``C(∅) = 1`` and
    each ``D`` adds ``C(D)`` to ``C(D ∪ x)`` for every ``x`` of ``full - D`` above no other
    item of ``full - D`` (so ``C(D) = sum_{x maximal in D} C(D - x)``, complete when ``D``
    leaves the queue: its subsets are smaller). Counts are kept in ``cnt[S]``, valid where
    ``stamp[S] == gen`` (also across calls: ``C(S)`` depends on ``S`` alone);
    ``mark[S] == passes[0]`` marks the sets queued by this call."""
    if _popcount(full) <= 1:
        return 1.0
    if stamp[full] == gen:
        return cnt[full]
    passes[0] += 1
    pass_id = passes[0]
    mark[0] = pass_id
    cnt[0] = 1.0
    queue[0] = 0
    head, tail = 0, 1
    while head < tail:
        d = queue[head]
        head += 1
        stamp[d] = gen
        c = cnt[d]
        rest = full & ~d
        blocked = np.int64(0)  # the items above an item of rest
        w = rest
        while w != 0:
            blocked |= code[_ctz(w)]
            w &= w - 1
        w = rest & ~blocked
        while w != 0:
            nd = d | (w & -w)
            w &= w - 1
            if mark[nd] != pass_id:  # first reached in this call
                mark[nd] = pass_id
                queue[tail] = nd
                tail += 1
                if stamp[nd] != gen:
                    cnt[nd] = c
            elif stamp[nd] != gen:
                cnt[nd] += c
    return cnt[full]


@_leaf
def _count_subsets(code, n, cnt, stamp, gen):
    r"""``C(S)`` of every subset ``S`` of the ``n`` ranks (rank-space order: ``code[x]`` the
    ranks above ``x``) into ``cnt``, stamped ``gen``: ``C(∅) = 1`` and
    ``C(S) = \sum_{x \in S,\ x \text{ maximal in } S} C(S \setminus x)``, the subsets in
    increasing order (each after its subsets). Exact integers below ``n! < 2^{53}``."""
    cnt[0] = 1.0
    stamp[0] = gen
    for full in range(1, np.int64(1) << n):
        total = 0.0
        w = full
        while w != 0:
            x = _ctz(w)
            w &= w - 1
            if (code[x] & full) == 0:
                total += cnt[full & ~(np.int64(1) << x)]
        cnt[full] = total
        stamp[full] = gen


@_leaf
def _table_ratios(lists, i, n, rank_of, code, cnt, ratios):
    """Count ratios of list ``i`` (``n`` items) read from the counts ``cnt`` of every subset
    of its ranks (:func:`_count_subsets`): ``ratios[i, j] = C(T_j - Y_j) / C(T_j)`` if ``Y_j``
    is maximal in ``T_j``, else 0 (the division of :func:`_small_ratios`, bit for bit)."""
    rest = (np.int64(1) << n) - 1  # T_j
    for j in range(n - 1):
        r = rank_of[lists[i, j]]
        bit = np.int64(1) << r
        ratio = 0.0
        if (code[r] & rest) == 0:
            ratio = cnt[rest & ~bit] / cnt[rest]
        ratios[i, j] = ratio
        rest &= ~bit


@_leaf
def _component(linked, start, within):
    """The connected component of the set ``start`` in the comparability graph on ``within``
    (``linked[x]`` the ranks comparable with ``x``)."""
    component = start
    frontier = start
    while frontier != 0:
        new = linked[_ctz(frontier)] & within & ~component
        frontier = (frontier & (frontier - 1)) | new
        component |= new
    return component


@_leaf
def _count_split(code, linked, full, scratch, gen, binom):
    """``C(S)`` of the set ``full`` of ranks as a product over the connected components ``A``
    of its comparability graph: ``C(S) = |S|!/∏|A|! · ∏ C(A)``, each ``C(A)`` by
    :func:`_count_small` (the down-sets of ``S`` are the products of those of its components,
    so this counts ``∑ |D(A)|`` down-sets instead of ``∏ |D(A)|``). Every partial product is
    an integer at most ``C(S) < 2^53``, so the result is exact."""
    cnt, stamp, mark, queue, passes = scratch
    left = _popcount(full)
    if left <= 1:
        return 1.0
    if stamp[full] == gen:
        return cnt[full]
    total = 1.0
    rest = full
    while rest != 0:
        component = _component(linked, rest & -rest, rest)
        rest &= ~component
        size = _popcount(component)
        if size > 1:
            total *= binom[left, size] * _count_small(
                code, component, cnt, stamp, gen, mark, queue, passes
            )
        else:
            total *= left
        left -= size
    cnt[full] = total  # C(S) depends on S alone: kept for the steps and lists that follow
    stamp[full] = gen
    return total


@_leaf
def _small_ratios(lists, i, n, rank_of, code, linked, split, scratch, gen, binom, ratios):
    """Count ratios of list ``i`` (``n <= MAX_SMALL_LENGTH`` items) from its rank-space order
    (``code[r]`` the ranks above rank ``r``, ``linked[r]`` those comparable with it):
    ``ratios[i, j] = C(T_j - Y_j) / C(T_j)`` if ``Y_j`` is maximal in ``T_j``, else 0.
    Counted by :func:`_count_small` when the order on the list's items is connected (its
    down-sets include the ``T_j`` that follow), else (``split``) by components
    (:func:`_count_split`);
    ``scratch = (cnt, stamp, mark, queue, passes)``. The counts are exact integers below
    ``2^53``, so the ratios equal the general kernel's bit for bit."""
    cnt, stamp, mark, queue, passes = scratch
    rest = (np.int64(1) << n) - 1  # T_j
    c_now = -1.0  # C(T_j) when known
    for j in range(n - 1):
        r = rank_of[lists[i, j]]
        bit = np.int64(1) << r
        ratio = 0.0
        if (code[r] & rest) == 0:
            if c_now < 0.0:
                c_now = (
                    _count_split(code, linked, rest, scratch, gen, binom)
                    if split
                    else _count_small(code, rest, cnt, stamp, gen, mark, queue, passes)
                )
            c_next = (
                _count_split(code, linked, rest & ~bit, scratch, gen, binom)
                if split
                else _count_small(code, rest & ~bit, cnt, stamp, gen, mark, queue, passes)
            )
            ratio = c_next / c_now
            c_now = c_next
        else:
            c_now = -1.0
        ratios[i, j] = ratio
        rest &= ~bit


@_jit
def memo_ratios_kernel(
    rel, lists, lengths, perm, row_ids, binom_f, max_states, ratios, keys, vals, table, meta
):
    """The count ratios of lists ``perm`` under the order ``rel`` ``(4, M)`` into ``ratios``
    (as :func:`~pymc_crp.core.linext_kernels.ratios_kernel` with ``top_down``, bit for bit),
    taken from the memo ``(keys, vals, table, meta)`` (:class:`OrderMemo`) where it holds
    list ``i`` (row ``row_ids[i]`` of its list set) under the same restricted order, else
    counted and stored. Lists of at most :data:`MAX_SMALL_LENGTH` items are counted in rank
    space (:func:`_small_ratios`; consecutive lists over the same items share the counts, so
    only the first of them looks in the memo: with full rankings, where every order is new
    to the memo, the look-ups cost more than the counting; a long run of them reads every
    subset's count from one table, :data:`TABLE_RUN_FACTOR`), longer ones by the general
    kernel. Returns ``ok`` (False past ``max_states``)."""
    width = lists.shape[1]
    n_items = rel.shape[1]
    longest = 0  # of the short lists asked for: 2^longest counts
    for t in range(perm.shape[0]):
        if longest < lengths[perm[t]] <= MAX_SMALL_LENGTH:
            longest = lengths[perm[t]]
    size = np.int64(1) << longest
    scratch = (  # of _count_small: cnt, stamp, mark, queue, passes
        np.empty(size),
        np.zeros(size, np.int32),
        np.zeros(size, np.int32),
        np.empty(size, np.int64),
        np.zeros(1, np.int64),
    )
    n_code = min(width, MAX_MEMO_LENGTH)
    ranked = np.empty(n_code, np.int64)
    rank_of = np.empty(MAX_KERNEL_ITEMS, np.int64)
    code = np.empty(n_code, np.uint64)
    small = np.empty(n_code, np.int64)
    linked = np.empty(n_code, np.int64)
    binom = (binom_f, np.empty((0, 1, 1), np.uint64))
    m = _new_count_memo(np.empty(0, np.uint64), max_states)
    use = vals.shape[0] > 0
    gen = 0
    run_end = 0  # the lists perm[t..run_end) share the item set whose code is in `code`
    split = False
    by_table = False  # every subset of the run's items counted
    for t in range(perm.shape[0]):
        i = perm[t]
        n = lengths[i]
        fresh = n > MAX_MEMO_LENGTH or t >= run_end
        if fresh:
            run_end = t + 1
            by_table = False
        if n <= MAX_MEMO_LENGTH and fresh:
            while run_end < perm.shape[0] and (
                (n == n_items and lengths[perm[run_end]] == n)  # both rank every item
                or _same_items(lists, lengths, perm[run_end], i)
            ):
                run_end += 1
            _canonical_code(rel, lists, i, n, ranked, rank_of, code)
            n_small = n if n <= MAX_SMALL_LENGTH else 0
            for r in range(n_small):
                small[r] = np.int64(code[r])
                linked[r] = small[r]
            for r in range(n_small):  # comparable: above or below
                w = small[r]
                while w != 0:
                    linked[_ctz(w)] |= np.int64(1) << r
                    w &= w - 1
            if n_small:  # the comparability graph falls apart: count by components
                every = (np.int64(1) << n_small) - 1
                split = _component(linked, np.int64(1), every) != every
            gen += 1  # counts of other items (or another order) are stale
            if n_small and (run_end - t) * TABLE_RUN_FACTOR > (np.int64(1) << n_small):
                by_table = True
                _count_subsets(small, n_small, scratch[0], scratch[1], gen)
        h = _ZERO
        memo = use and (fresh or n > MAX_SMALL_LENGTH)  # else the counts are at hand
        if memo:
            h = _key(keys, row_ids[i], code, n)
            s = _find(keys, table, n, h)
            if s >= 0:
                for b in range(n - 1):
                    ratios[i, b] = vals[s, b]
                meta[1] += 1
                continue
            meta[2] += 1
        if by_table:
            _table_ratios(lists, i, n, rank_of, small, scratch[0], ratios)
        elif n <= MAX_SMALL_LENGTH:
            _small_ratios(lists, i, n, rank_of, small, linked, split, scratch, gen, binom_f, ratios)
        else:
            reached = _ratio_rows(rel, m, binom, lists, lengths, perm, 0, t, t + 1, True, ratios)
            while 0 <= reached <= t:
                m = _grow(m)
                reached = _ratio_rows(
                    rel, m, binom, lists, lengths, perm, 0, t, t + 1, True, ratios
                )
            if reached < 0:
                return False
        if memo:
            _store(keys, vals, table, meta, n, h, ratios, i)
    return True


@_leaf
def _same_items(lists, lengths, i, j):
    """Whether lists ``i`` and ``j`` have the same item set."""
    n = lengths[i]
    if lengths[j] != n:
        return False
    lo, hi = _item_set(lists, i, n)
    for b in range(n):
        blo, bhi = _bit(lists[j, b])
        if ((blo & lo) | (bhi & hi)) == _ZERO:
            return False
    return True
