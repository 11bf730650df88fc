"""Numba kernels for linear extensions of partial orders on at most 128 items.

This private module holds the compiled core behind :mod:`pymc_crp.posets`: counting,
uniform sampling and the queue-jumping list likelihood. Nothing here validates its
input; the public functions in :mod:`pymc_crp.posets` do.

Representation
--------------
A set of items ``{0..n-1}`` (``n <= 128``) is a pair of ``uint64`` words ``(lo, hi)``:
item ``x < 64`` is bit ``x`` of ``lo``, item ``x >= 64`` is bit ``x - 64`` of ``hi``.
An order is given by, for each item ``x``, the set ``up[x]`` of the items above it and
the set ``cmp[x]`` of the items comparable to it (both from the transitive closure).
The kernels only ever look for *maximal* elements (``x`` is maximal in ``S`` iff
``up[x] & S`` is empty), so passing the sets of items *below* as ``up`` runs every
algorithm on the dual order, which has the same counts.

Counting
--------
``C(S)``, the number of linear extensions of the suborder on ``S``, is memoised in an
open-addressing hash table keyed by the set. A set is first split into the connected
components ``A_1..A_r`` of its comparability graph,

    C(S) = multinomial(|S|; |A_1|, ..., |A_r|) * prod_i C(A_i),

and only connected sets are stored; a connected set that is a chain has ``C = 1``, and
any other connected set uses ``C(A) = sum_{x maximal in A} C(A - x)``, evaluated by an
explicit-stack depth-first search. Every count is kept as a float64 (``C <= 128! <
1e216`` cannot overflow) and, on request, modulo a few primes below ``2**32`` so that
the exact integer can be rebuilt by the Chinese remainder theorem.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.experimental import jitclass
from numba.extending import intrinsic

MAX_KERNEL_ITEMS = 128
"""Largest number of items a kernel call can handle (two 64-bit words per set)."""

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_SHIFT27 = np.uint64(27)
_SHIFT30 = np.uint64(30)
_SHIFT31 = np.uint64(31)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PENDING = -1.0


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


@njit(cache=False)
def _bit(x):
    """The singleton set ``{x}`` as ``(lo, hi)``."""
    if x < 64:
        return _ONE << np.uint64(x), _ZERO
    return _ZERO, _ONE << np.uint64(x - 64)


@njit(cache=False)
def _full_set(n):
    """The set ``{0..n-1}`` as ``(lo, hi)``."""
    if n >= 128:
        return ~_ZERO, ~_ZERO
    if n >= 64:
        if n == 64:
            return ~_ZERO, _ZERO
        return ~_ZERO, (_ONE << np.uint64(n - 64)) - _ONE
    if n == 0:
        return _ZERO, _ZERO
    return (_ONE << np.uint64(n)) - _ONE, _ZERO


@njit(cache=False)
def _hash(lo, hi, mask):
    """SplitMix64 finaliser of the two words, reduced by ``mask``."""
    h = lo ^ (hi * _GOLDEN)
    h ^= h >> _SHIFT30
    h *= _MIX1
    h ^= h >> _SHIFT27
    h *= _MIX2
    h ^= h >> _SHIFT31
    return h & mask


@njit(cache=False)
def relation_bits(closed):
    """Bitsets ``(above_lo, above_hi, below_lo, below_hi)`` of a closed ``(n, n)`` order.

    ``above[x]`` is the set ``{i : closed[i, x]}`` of items above ``x`` and ``below[x]``
    the set ``{j : closed[x, j]}``; ``n <= 128``.
    """
    n = closed.shape[0]
    above_lo = np.zeros(n, np.uint64)
    above_hi = np.zeros(n, np.uint64)
    below_lo = np.zeros(n, np.uint64)
    below_hi = np.zeros(n, np.uint64)
    for i in range(n):
        ilo, ihi = _bit(i)
        for j in range(n):
            if closed[i, j]:
                jlo, jhi = _bit(j)
                above_lo[j] |= ilo
                above_hi[j] |= ihi
                below_lo[i] |= jlo
                below_hi[i] |= jhi
    return above_lo, above_hi, below_lo, below_hi


_memo_spec = [
    ("up_lo", types.uint64[::1]),
    ("up_hi", types.uint64[::1]),
    ("cmp_lo", types.uint64[::1]),
    ("cmp_hi", types.uint64[::1]),
    ("primes", types.uint64[::1]),
    ("n_res", types.int64),
    ("binom_f", types.float64[:, ::1]),
    ("binom_r", types.uint64[:, :, ::1]),
    ("max_states", types.int64),
    ("n_states", types.int64),
    ("exceeded", types.boolean),
    ("keys_lo", types.uint64[::1]),
    ("keys_hi", types.uint64[::1]),
    ("vals", types.float64[::1]),
    ("res", types.uint64[:, ::1]),
    ("table", types.int32[::1]),
    ("mask", types.uint64),
    ("stack_lo", types.uint64[::1]),
    ("stack_hi", types.uint64[::1]),
    ("buf1_lo", types.uint64[::1]),
    ("buf1_hi", types.uint64[::1]),
    ("buf2_lo", types.uint64[::1]),
    ("buf2_hi", types.uint64[::1]),
    ("maxbuf", types.int64[::1]),
    ("r_val", types.uint64[::1]),
    ("r_acc", types.uint64[::1]),
    ("r_set", types.uint64[::1]),
]


@jitclass(_memo_spec)
class CountMemo:
    """Memo of linear-extension counts ``C(A)`` of connected item sets of one order.

    Parameters
    ----------
    up_lo, up_hi : uint64 arrays (n,)
        ``up[x]``, the items above ``x`` (pass the items below for the dual order).
    cmp_lo, cmp_hi : uint64 arrays (n,)
        ``cmp[x]``, the items comparable to ``x``.
    primes : uint64 array (k,)
        Primes below ``2**32`` for exact residues (empty for float counts only).
    binom_f : float64 array (n + 1, n + 1)
        ``binom(a, b)`` as floats.
    binom_r : uint64 array (k, n + 1, n + 1)
        ``binom(a, b) mod primes[i]``.
    max_states : int
        Stop (``exceeded = True``) rather than store more sets than this.
    """

    def __init__(self, up_lo, up_hi, cmp_lo, cmp_hi, primes, binom_f, binom_r, max_states):
        self.up_lo = up_lo
        self.up_hi = up_hi
        self.cmp_lo = cmp_lo
        self.cmp_hi = cmp_hi
        self.primes = primes
        self.n_res = primes.shape[0]
        self.binom_f = binom_f
        self.binom_r = binom_r
        self.max_states = max_states
        self.n_states = 0
        self.exceeded = False
        cap = 256
        self.keys_lo = np.empty(cap, np.uint64)
        self.keys_hi = np.empty(cap, np.uint64)
        self.vals = np.empty(cap, np.float64)
        self.res = np.empty((cap, self.n_res), np.uint64)
        self.table = np.full(2 * cap, -1, np.int32)
        self.mask = np.uint64(2 * cap - 1)
        self.stack_lo = np.empty(16, np.uint64)
        self.stack_hi = np.empty(16, np.uint64)
        self.buf1_lo = np.empty(128, np.uint64)
        self.buf1_hi = np.empty(128, np.uint64)
        self.buf2_lo = np.empty(128, np.uint64)
        self.buf2_hi = np.empty(128, np.uint64)
        self.maxbuf = np.empty(128, np.int64)
        self.r_val = np.ones(self.n_res, np.uint64)
        self.r_acc = np.ones(self.n_res, np.uint64)
        self.r_set = np.ones(self.n_res, np.uint64)

    # ------------------------------------------------------------------ hash table
    def find(self, lo, hi):
        """Index of the stored set ``(lo, hi)``, or -1."""
        h = _hash(lo, hi, self.mask)
        while True:
            s = self.table[h]
            if s < 0:
                return -1
            if self.keys_lo[s] == lo and self.keys_hi[s] == hi:
                return np.int64(s)
            h = (h + _ONE) & self.mask

    def _grow(self):
        cap = self.keys_lo.shape[0]
        new_cap = min(2 * cap, max(self.max_states, cap) + 1)
        keys_lo = np.empty(new_cap, np.uint64)
        keys_hi = np.empty(new_cap, np.uint64)
        vals = np.empty(new_cap, np.float64)
        res = np.empty((new_cap, self.n_res), np.uint64)
        # Element loops: slice assignment compiles slow shape-error formatting code.
        for s in range(cap):
            keys_lo[s] = self.keys_lo[s]
            keys_hi[s] = self.keys_hi[s]
            vals[s] = self.vals[s]
            for k in range(self.n_res):
                res[s, k] = self.res[s, k]
        self.keys_lo = keys_lo
        self.keys_hi = keys_hi
        self.vals = vals
        self.res = res

    def _rehash(self, size):
        self.table = np.full(size, -1, np.int32)
        self.mask = np.uint64(size - 1)
        for s in range(self.n_states):
            h = _hash(self.keys_lo[s], self.keys_hi[s], self.mask)
            while self.table[h] >= 0:
                h = (h + _ONE) & self.mask
            self.table[h] = s

    def insert(self, lo, hi):
        """Store the (absent) set ``(lo, hi)`` as pending; return its index."""
        if self.n_states == self.keys_lo.shape[0]:
            self._grow()
        if 2 * (self.n_states + 1) > self.table.shape[0]:
            self._rehash(2 * self.table.shape[0])
        s = self.n_states
        self.keys_lo[s] = lo
        self.keys_hi[s] = hi
        self.vals[s] = _PENDING
        h = _hash(lo, hi, self.mask)
        while self.table[h] >= 0:
            h = (h + _ONE) & self.mask
        self.table[h] = s
        self.n_states += 1
        return s

    def _push(self, sp, lo, hi):
        if sp == self.stack_lo.shape[0]:
            stack_lo = np.empty(2 * sp, np.uint64)
            stack_hi = np.empty(2 * sp, np.uint64)
            for t in range(sp):
                stack_lo[t] = self.stack_lo[t]
                stack_hi[t] = self.stack_hi[t]
            self.stack_lo = stack_lo
            self.stack_hi = stack_hi
        self.stack_lo[sp] = lo
        self.stack_hi[sp] = hi
        return sp + 1

    # ------------------------------------------------------------- set structure
    def components(self, lo, hi, out_lo, out_hi):
        """Connected components of the comparability graph on the set; their number."""
        nc = 0
        rlo = lo
        rhi = hi
        while (rlo | rhi) != _ZERO:
            if rlo != _ZERO:
                clo = rlo & (~rlo + _ONE)
                chi = _ZERO
            else:
                clo = _ZERO
                chi = rhi & (~rhi + _ONE)
            flo = clo
            fhi = chi
            while (flo | fhi) != _ZERO:
                if flo != _ZERO:
                    y = _ctz(flo)
                    flo &= flo - _ONE
                else:
                    y = 64 + _ctz(fhi)
                    fhi &= fhi - _ONE
                nlo = self.cmp_lo[y] & rlo & ~clo
                nhi = self.cmp_hi[y] & rhi & ~chi
                clo |= nlo
                chi |= nhi
                flo |= nlo
                fhi |= nhi
            out_lo[nc] = clo
            out_hi[nc] = chi
            nc += 1
            rlo &= ~clo
            rhi &= ~chi
        return nc

    def is_chain(self, lo, hi, size):
        """Whether the set (of ``size`` items) is totally ordered."""
        wlo = lo
        while wlo != _ZERO:
            x = _ctz(wlo)
            wlo &= wlo - _ONE
            if _popcount(self.cmp_lo[x] & lo) + _popcount(self.cmp_hi[x] & hi) != size - 1:
                return False
        whi = hi
        while whi != _ZERO:
            x = 64 + _ctz(whi)
            whi &= whi - _ONE
            if _popcount(self.cmp_lo[x] & lo) + _popcount(self.cmp_hi[x] & hi) != size - 1:
                return False
        return True

    def maximal(self, lo, hi, out):
        """Write the maximal items of the set into ``out``; return their number."""
        nm = 0
        wlo = lo
        while wlo != _ZERO:
            x = _ctz(wlo)
            wlo &= wlo - _ONE
            if (self.up_lo[x] & lo) == _ZERO and (self.up_hi[x] & hi) == _ZERO:
                out[nm] = x
                nm += 1
        whi = hi
        while whi != _ZERO:
            x = 64 + _ctz(whi)
            whi &= whi - _ONE
            if (self.up_lo[x] & lo) == _ZERO and (self.up_hi[x] & hi) == _ZERO:
                out[nm] = x
                nm += 1
        return nm

    def _store_chain(self, lo, hi):
        idx = self.insert(lo, hi)
        self.vals[idx] = 1.0
        for k in range(self.n_res):
            self.res[idx, k] = 1
        return idx

    # ---------------------------------------------------------------- counting
    def _value_known(self, lo, hi):
        """``C(S)`` when every component of ``S`` is stored; residues in ``r_val``."""
        idx = self.find(lo, hi)
        if idx >= 0:
            for k in range(self.n_res):
                self.r_val[k] = self.res[idx, k]
            return self.vals[idx]
        for k in range(self.n_res):
            self.r_val[k] = 1
        if _popcount(lo) + _popcount(hi) <= 1:
            return 1.0
        nc = self.components(lo, hi, self.buf1_lo, self.buf1_hi)
        f = 1.0
        cum = 0
        for c in range(nc):
            clo = self.buf1_lo[c]
            chi = self.buf1_hi[c]
            s = _popcount(clo) + _popcount(chi)
            cum += s
            if c > 0:
                f *= self.binom_f[cum, s]
                for k in range(self.n_res):
                    self.r_val[k] = (self.r_val[k] * self.binom_r[k, cum, s]) % self.primes[k]
            if s >= 2:
                idx = self.find(clo, chi)
                f *= self.vals[idx]
                for k in range(self.n_res):
                    self.r_val[k] = (self.r_val[k] * self.res[idx, k]) % self.primes[k]
        return f

    def _expand(self, lo, hi, sp):
        """Push the unknown components of ``S - x`` (x maximal) above the stack top."""
        nm = self.maximal(lo, hi, self.maxbuf)
        for t in range(nm):
            blo, bhi = _bit(self.maxbuf[t])
            if self.find(lo & ~blo, hi & ~bhi) >= 0:
                continue
            nc = self.components(lo & ~blo, hi & ~bhi, self.buf1_lo, self.buf1_hi)
            for c in range(nc):
                clo = self.buf1_lo[c]
                chi = self.buf1_hi[c]
                s = _popcount(clo) + _popcount(chi)
                if s < 2 or self.find(clo, chi) >= 0:
                    continue
                if self.is_chain(clo, chi, s):
                    self._store_chain(clo, chi)
                else:
                    sp = self._push(sp, clo, chi)
        return sp

    def _sum_children(self, lo, hi):
        """``sum_{x maximal} C(S - x)``; residues in ``r_acc``."""
        for k in range(self.n_res):
            self.r_acc[k] = 0
        nm = self.maximal(lo, hi, self.maxbuf)
        f = 0.0
        for t in range(nm):
            blo, bhi = _bit(self.maxbuf[t])
            f += self._value_known(lo & ~blo, hi & ~bhi)
            for k in range(self.n_res):
                v = self.r_acc[k] + self.r_val[k]
                if v >= self.primes[k]:
                    v -= self.primes[k]
                self.r_acc[k] = v
        return f

    def _dfs(self, lo, hi):
        """Store ``C`` of a connected non-chain set and of all it needs; its index or -1."""
        sp = self._push(0, lo, hi)
        while sp > 0:
            slo = self.stack_lo[sp - 1]
            shi = self.stack_hi[sp - 1]
            idx = self.find(slo, shi)
            if idx >= 0 and self.vals[idx] != _PENDING:
                sp -= 1
                continue
            if idx < 0:
                if self.n_states >= self.max_states:
                    self.exceeded = True
                    return -1
                idx = self.insert(slo, shi)
                sp_before = sp
                sp = self._expand(slo, shi, sp)
                if sp > sp_before:
                    continue
            f = self._sum_children(slo, shi)
            self.vals[idx] = f
            for k in range(self.n_res):
                self.res[idx, k] = self.r_acc[k]
            sp -= 1
        return self.find(lo, hi)

    def count_set(self, lo, hi):
        """``C(S)`` for any set, computing what is missing; residues in ``r_set``.

        Returns NaN (and sets ``exceeded``) when ``max_states`` would be passed.
        """
        idx = self.find(lo, hi)
        if idx >= 0 and self.vals[idx] != _PENDING:
            for k in range(self.n_res):
                self.r_set[k] = self.res[idx, k]
            return self.vals[idx]
        for k in range(self.n_res):
            self.r_set[k] = 1
        if _popcount(lo) + _popcount(hi) <= 1:
            return 1.0
        nc = self.components(lo, hi, self.buf2_lo, self.buf2_hi)
        f = 1.0
        cum = 0
        for c in range(nc):
            clo = self.buf2_lo[c]
            chi = self.buf2_hi[c]
            s = _popcount(clo) + _popcount(chi)
            cum += s
            if c > 0:
                f *= self.binom_f[cum, s]
                for k in range(self.n_res):
                    self.r_set[k] = (self.r_set[k] * self.binom_r[k, cum, s]) % self.primes[k]
            if s >= 2:
                idx = self.find(clo, chi)
                if idx < 0:
                    if self.is_chain(clo, chi, s):
                        idx = self._store_chain(clo, chi)
                    else:
                        idx = self._dfs(clo, chi)
                        if idx < 0:
                            return np.nan
                f *= self.vals[idx]
                for k in range(self.n_res):
                    self.r_set[k] = (self.r_set[k] * self.res[idx, k]) % self.primes[k]
        return f


@njit(cache=False)
def _new_memo(up_lo, up_hi, cmp_lo, cmp_hi, binom_f, max_states):
    """A float-only memo (no residues)."""
    return CountMemo(
        up_lo,
        up_hi,
        cmp_lo,
        cmp_hi,
        np.empty(0, np.uint64),
        binom_f,
        np.empty((0, 1, 1), np.uint64),
        max_states,
    )


@njit(cache=False)
def count_kernel(closed, primes, binom_f, binom_r, max_states):
    """``C`` of a closed ``(n, n)`` order (n <= 128), as a float and modulo ``primes``.

    Returns ``(count_float, residues, n_states, exceeded)``.
    """
    n = closed.shape[0]
    above_lo, above_hi, below_lo, below_hi = relation_bits(closed)
    memo = CountMemo(
        above_lo,
        above_hi,
        above_lo | below_lo,
        above_hi | below_hi,
        primes,
        binom_f,
        binom_r,
        max_states,
    )
    lo, hi = _full_set(n)
    f = memo.count_set(lo, hi)
    return f, memo.r_set.copy(), memo.n_states, memo.exceeded


@njit(cache=False)
def _kth_item(lo, hi, k):
    """The ``k``-th smallest item of the set (0-based)."""
    wlo = lo
    while wlo != _ZERO:
        x = _ctz(wlo)
        wlo &= wlo - _ONE
        if k == 0:
            return x
        k -= 1
    whi = hi
    while whi != _ZERO:
        x = 64 + _ctz(whi)
        whi &= whi - _ONE
        if k == 0:
            return x
        k -= 1
    return -1


@njit(cache=False)
def sample_lists_kernel(closed, p, uniforms, binom_f, max_states):
    """Top-down queue-jumping lists over all ``n`` items of a closed ``(n, n)`` order.

    With ``p = 0`` these are uniform linear extensions. Step ``t`` (remaining set
    ``T``, ``r = |T|``): if ``uniforms[s, t, 0] < p`` the next item is ``T``'s item
    number ``floor(r * uniforms[s, t, 1])``; otherwise it is a maximal ``j`` drawn with
    probability ``C(T - j) / C(T)`` using ``uniforms[s, t, 1]``.
    Returns ``(out, exceeded)`` with ``out`` of shape ``(size, n)``.
    """
    n = closed.shape[0]
    size = uniforms.shape[0]
    above_lo, above_hi, below_lo, below_hi = relation_bits(closed)
    memo = _new_memo(
        above_lo, above_hi, above_lo | below_lo, above_hi | below_hi, binom_f, max_states
    )
    out = np.empty((size, n), np.int64)
    cand = np.empty(max(n, 1), np.int64)
    weights = np.empty(max(n, 1), np.float64)
    for s in range(size):
        lo, hi = _full_set(n)
        for step in range(n):
            r = n - step
            if uniforms[s, step, 0] < p:
                k = min(np.int64(uniforms[s, step, 1] * r), r - 1)
                chosen = _kth_item(lo, hi, k)
            else:
                nm = memo.maximal(lo, hi, cand)
                chosen = cand[nm - 1]
                if nm > 1:
                    total = 0.0
                    for c in range(nm):
                        blo, bhi = _bit(cand[c])
                        weights[c] = memo.count_set(lo & ~blo, hi & ~bhi)
                        if memo.exceeded:
                            return out, True
                        total += weights[c]
                    u = uniforms[s, step, 1] * total
                    acc = 0.0
                    for c in range(nm):
                        acc += weights[c]
                        if u < acc:
                            chosen = cand[c]
                            break
            out[s, step] = chosen
            blo, bhi = _bit(chosen)
            lo &= ~blo
            hi &= ~bhi
    return out, False


@njit(cache=False)
def _loglik_rows(memo, lists, lengths, rows, p, top_down, want_grad, out_ll, out_dp):
    """Queue-jumping log-likelihoods of ``lists[rows]`` under the order held by ``memo``.

    For top-down lists (the memo built on the order itself) term ``j`` is
    ``p / (m - j + 1) + (1 - p) * 1{Y_j maximal in T_j} * C(T_j - Y_j) / C(T_j)`` with
    ``T_j = {Y_j..Y_m}``; bottom-up lists are read backwards with a memo built on the
    dual order. Also writes ``d log L / dp = sum_j (1 / r_j - ratio_j) / term_j``.
    Returns False when the memo exceeded its state limit.
    """
    for t in range(rows.shape[0]):
        i = rows[t]
        m = lengths[i]
        lo = _ZERO
        hi = _ZERO
        for a in range(m):
            blo, bhi = _bit(lists[i, a])
            lo |= blo
            hi |= bhi
        ll = 0.0
        dp = 0.0
        known = False
        c_now = 1.0
        need_counts = p < 1.0 or want_grad
        for step in range(m - 1):
            if top_down:
                y = lists[i, step]
            else:
                y = lists[i, m - 1 - step]
            r = m - step
            blo, bhi = _bit(y)
            ratio = 0.0
            if need_counts and (memo.up_lo[y] & lo) == _ZERO and (memo.up_hi[y] & hi) == _ZERO:
                if not known:
                    c_now = memo.count_set(lo, hi)
                c_next = memo.count_set(lo & ~blo, hi & ~bhi)
                if memo.exceeded:
                    return False
                ratio = c_next / c_now
                c_now = c_next
                known = True
            else:
                known = False
            term = p / r + (1.0 - p) * ratio
            if term <= 0.0:
                ll = -np.inf
                dp = np.inf
                break
            ll += np.log(term)
            dp += (1.0 / r - ratio) / term
            lo &= ~blo
            hi &= ~bhi
        out_ll[i] = ll
        out_dp[i] = dp
    return True


@njit(cache=False)
def _memo_for_order(closed, top_down, binom_f, max_states):
    above_lo, above_hi, below_lo, below_hi = relation_bits(closed)
    cmp_lo = above_lo | below_lo
    cmp_hi = above_hi | below_hi
    if top_down:
        return _new_memo(above_lo, above_hi, cmp_lo, cmp_hi, binom_f, max_states)
    return _new_memo(below_lo, below_hi, cmp_lo, cmp_hi, binom_f, max_states)


@njit(cache=False)
def loglik_stacked_kernel(
    closed_stack, lists, lengths, labels, p, top_down, want_grad, binom_f, max_states
):
    """Per-list log-likelihoods where list ``i`` follows order ``closed_stack[labels[i]]``.

    Each order that some list uses gets its own memo, shared by all its lists.
    Returns ``(loglik, dloglik_dp, ok)``.
    """
    n_lists = lists.shape[0]
    n_orders = closed_stack.shape[0]
    out_ll = np.zeros(n_lists)
    out_dp = np.zeros(n_lists)
    perm = np.argsort(labels, kind="mergesort")
    start = 0
    for a in range(n_orders):
        stop = start
        while stop < n_lists and labels[perm[stop]] == a:
            stop += 1
        if stop > start:
            memo = _memo_for_order(closed_stack[a], top_down, binom_f, max_states)
            rows = perm[start:stop]
            ok = _loglik_rows(memo, lists, lengths, rows, p, top_down, want_grad, out_ll, out_dp)
            if not ok:
                return out_ll, out_dp, False
        start = stop
    return out_ll, out_dp, True


@njit(cache=False)
def chain_partition_sizes(closed):
    """Sizes of a greedy partition of a closed ``(n, n)`` order into chains.

    Items are visited in a linear extension (by increasing number of items above);
    each joins the first chain whose current lowest item is above it.
    """
    n = closed.shape[0]
    n_above = np.zeros(n, np.int64)
    for i in range(n):
        for j in range(n):
            if closed[i, j]:
                n_above[j] += 1
    visit = np.argsort(n_above, kind="mergesort")
    bottoms = np.empty(n, np.int64)
    sizes = np.zeros(n, np.int64)
    n_chains = 0
    for t in range(n):
        x = visit[t]
        placed = False
        for c in range(n_chains):
            if closed[bottoms[c], x]:
                bottoms[c] = x
                sizes[c] += 1
                placed = True
                break
        if not placed:
            bottoms[n_chains] = x
            sizes[n_chains] = 1
            n_chains += 1
    return sizes[:n_chains]


# ----------------------------------------------------------------------------------
# Pure-Python helpers: tables, primes, Chinese remainder theorem.


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
