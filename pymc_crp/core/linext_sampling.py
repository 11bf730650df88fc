"""Numba kernel drawing queue-jumping lists and linear extensions of a partial order.

The sampling entry point of the linear-extension kernels (:mod:`pymc_crp.core.linext_kernels`
holds the sets, the memo and the counting helpers it links in, and describes them);
:mod:`pymc_crp.core.posets` validates all input and calls :func:`sample_lists_kernel`.

Compilation: ``cache=True`` like the other entry points. The on-disk cache is keyed on this
file only: after editing a helper in :mod:`pymc_crp.core.linext_kernels`, delete
``pymc_crp/core/__pycache__/linext_sampling*`` so that this kernel is compiled again.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.linext_kernels import (
    _FULL,
    _bit,
    _count,
    _full_set,
    _grow,
    _jit,
    _leaf,
    _maximal,
    _new_memo,
    _pop,
)

__all__ = ["sample_lists_kernel"]


# Allocation-free loops stop at the draw or list needing a bigger memo; the entry point
# grows it and resumes there.


@_leaf
def _sample_rows(rel, m, binom, p, uniforms, s, out, cand, w):
    """Draw ``out[s:]`` (see :func:`sample_lists_kernel`); scratch ``cand`` uint64
    ``(1, n)`` and ``w`` float64 ``(n,)``. Returns the number of draws done: all, or fewer
    when the memo must grow first; -1 past ``max_states``."""
    n = out.shape[1]
    while s < out.shape[0]:
        lo, hi = _full_set(n)
        for step in range(n):
            r = n - step
            if uniforms[s, step, 0] < p:
                tlo, thi = lo, hi  # the remaining item number floor(r * u)
                for _ in range(min(np.int64(uniforms[s, step, 1] * r), r - 1)):
                    _, tlo, thi = _pop(tlo, thi)
                chosen, _, _ = _pop(tlo, thi)
            else:
                nm = _maximal(rel, lo, hi, cand, np.int64(0))
                chosen = np.int64(cand[0, nm - 1])
                if nm > 1:
                    total = 0.0
                    for c in range(nm):
                        blo, bhi = _bit(np.int64(cand[0, c]))
                        w[c] = _count(rel, m, binom, lo & ~blo, hi & ~bhi)
                        if w[c] == _FULL:
                            return s
                        if m[1][2] != 0:
                            return -1
                        total += w[c]
                    u = uniforms[s, step, 1] * total
                    acc = 0.0
                    for c in range(nm):
                        acc += w[c]
                        if u < acc:
                            chosen = np.int64(cand[0, c])
                            break
            out[s, step] = chosen
            blo, bhi = _bit(chosen)
            lo &= ~blo
            hi &= ~bhi
        s += 1
    return s


@_jit
def sample_lists_kernel(rel, p, uniforms, binom_f, max_states):
    """Top-down queue-jumping lists over all ``n`` items of the order ``rel``.

    With ``p = 0`` these are uniform linear extensions. Step ``t`` (remaining set
    ``T``, ``r = |T|``): if ``uniforms[s, t, 0] < p`` the next item is ``T``'s item
    number ``floor(r * uniforms[s, t, 1])``; otherwise it is a maximal ``j`` drawn with
    probability ``C(T - j) / C(T)`` using ``uniforms[s, t, 1]``. (Top-down lists of the
    dual order are reversed bottom-up lists of the order.)
    Returns ``(out, exceeded)`` with ``out`` of shape ``(size, n)``.
    """
    n = rel.shape[1]
    m = _new_memo(np.empty(0, np.uint64), max_states)
    binom = (binom_f, np.empty((0, 1, 1), np.uint64))
    out = np.empty((uniforms.shape[0], n), np.int64)
    cand = np.empty((1, max(n, 1)), np.uint64)
    w = np.empty(max(n, 1))
    s = _sample_rows(rel, m, binom, p, uniforms, 0, out, cand, w)
    while 0 <= s < out.shape[0]:
        m = _grow(m)
        s = _sample_rows(rel, m, binom, p, uniforms, s, out, cand, w)
    return out, s < 0
