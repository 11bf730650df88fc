r"""Partial orders restricted to the item sets of lists, and orders after a one-item move.

A list ``Y`` over the items ``S`` has a likelihood that depends on the order ``h`` only
through its restriction ``h[S]``. In the bitset form of
:func:`~pymc_crp.core.linext_support.relation_words` (``rel[w, x]``: ``w = 0, 1`` the items
above ``x``, ``w = 2, 3`` the items comparable to ``x``, as two 64-bit words) two orders
``h, h'`` agree on ``S`` iff

.. math:: \big(\mathrm{rel}_h[w, x] \oplus \mathrm{rel}_{h'}[w, x]\big) \wedge S_{w \bmod 2}
    = 0 \quad \text{for every } x \in S,\ w = 0..3,

which costs ``O(|S|)`` word operations per list (:func:`copy_restricted_equal`, used by
:class:`~pymc_crp.core.lists.ListLikelihoodCache` to take the count ratios of such lists
from an entry of another order).

When only item ``j``'s utilities move, only row ``j`` and bit ``j`` of every other row of the
bitsets can change: :func:`move_item_words` rebuilds them in ``O(M K)`` instead of the
``O(M^2 K)`` of :func:`~pymc_crp.core.linext_support.utility_relation_words`, with the same
result bit for bit (item ``y`` is above ``x`` iff ``η_{y,k} > η_{x,k}`` for every ``k``).
:func:`move_item_changed` also picks, in the same compiled call, the lists containing ``j``
whose restricted order changed: those whose item set meets a changed bit of row ``j``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["copy_restricted_equal", "item_masks", "move_item_changed", "move_item_words"]


def item_masks(steps: np.ndarray) -> np.ndarray:
    """The item set of each padded row of ``steps`` (``-1`` padding, items ``< 128``) as two
    uint64 words ``(n_rows, 2)``: bit ``x % 64`` of word ``x // 64`` marks item ``x``."""
    steps = np.asarray(steps, dtype=np.int64)
    masks = np.zeros((steps.shape[0], 2), dtype=np.uint64)
    rows = np.repeat(np.arange(steps.shape[0]), steps.shape[1] if steps.ndim == 2 else 0)
    flat = steps.ravel()
    present = flat >= 0
    np.bitwise_or.at(
        masks,
        (rows[present], flat[present] // 64),
        np.left_shift(np.uint64(1), (flat[present] % 64).astype(np.uint64)),
    )
    return masks


@njit(cache=True, nogil=True)
def copy_restricted_equal(
    old, new, steps, lengths, masks, rows, src_ratios, src_done, dst_ratios, dst_done
):  # pragma: no cover - compiled
    """Copy the ratio rows ``rows`` that ``src`` holds (``src_done``) into ``dst`` for the
    lists whose restricted order is the same under ``old`` and ``new`` (``(4, M)`` words, see
    the module docstring); marks them ``dst_done``. Returns the number of rows copied."""
    copied = 0
    for t in range(rows.shape[0]):
        u = rows[t]
        if not src_done[u] or dst_done[u]:
            continue
        lo = masks[u, 0]
        hi = masks[u, 1]
        same = True
        for b in range(lengths[u]):
            x = steps[u, b]
            if (
                ((old[0, x] ^ new[0, x]) & lo)
                | ((old[1, x] ^ new[1, x]) & hi)
                | ((old[2, x] ^ new[2, x]) & lo)
                | ((old[3, x] ^ new[3, x]) & hi)
            ) != 0:
                same = False
                break
        if same:
            for s in range(dst_ratios.shape[1]):
                dst_ratios[u, s] = src_ratios[u, s]
            dst_done[u] = True
            copied += 1
    return copied


@njit(cache=True, nogil=True)
def _set_bit(words, word, row, bit, related, comparable):  # pragma: no cover - compiled
    """Set ``bit`` of ``row`` in the relation rows (``word``) to ``related`` and in the
    comparability rows (``2 + word``) to ``comparable``."""
    words[word, row] &= ~bit
    words[2 + word, row] &= ~bit
    if related:
        words[word, row] |= bit
    if comparable:
        words[2 + word, row] |= bit


@njit(cache=True, nogil=True)
def _set_pair_relation(words, eta, j, x, dual):  # pragma: no cover - compiled
    """Set the relation of items ``j`` and ``x`` in ``words`` (in place) from ``eta``: bit ``j``
    of row ``x`` and bit ``x`` of row ``j``. Returns whether the relation changed (read from
    row ``x``'s two bits, which determine it)."""
    n_dims = eta.shape[1]
    above = True  # j above x
    below = True  # j below x
    for k in range(n_dims):
        above = above and eta[j, k] > eta[x, k]
        below = below and eta[x, k] > eta[j, k]
    jbit = np.uint64(1) << np.uint64(j % 64)
    jword = j // 64
    xbit = np.uint64(1) << np.uint64(x % 64)
    xword = x // 64
    before = (words[jword, x] & jbit, words[2 + jword, x] & jbit)
    _set_bit(words, jword, x, jbit, below if dual else above, above or below)  # bit j of row x
    _set_bit(words, xword, j, xbit, above if dual else below, above or below)  # x of row j
    after = (words[jword, x] & jbit, words[2 + jword, x] & jbit)
    return before != after


@njit(cache=True, nogil=True)
def _move_item_words(words, eta, item, dual):  # pragma: no cover - compiled
    out = words.copy()
    for w in range(4):
        out[w, item] = np.uint64(0)
    for x in range(eta.shape[0]):
        if x != item:
            _set_pair_relation(out, eta, item, x, dual)
    return out


def move_item_words(words: np.ndarray, eta: np.ndarray, item: int, dual: bool) -> np.ndarray:
    r"""The bitset order ``(4, M)`` of utilities ``eta`` ``(M, K)`` given ``words``, the bitset
    order of utilities that differ from ``eta`` in row ``item`` only.

    Equal to ``utility_relation_words(eta[None], dual)[0]``: only the relations of ``item``
    (``y`` above ``x`` iff ``η_{y,k} > η_{x,k}`` for all ``k``) are recomputed, in ``O(M K)``.
    """
    words = np.ascontiguousarray(words, dtype=np.uint64)
    eta = np.ascontiguousarray(eta, dtype=np.float64)
    return _move_item_words(words, eta, int(item), bool(dual))


@njit(cache=True, nogil=True)
def _move_item_changed(words, eta, item, dual, masks, rows):  # pragma: no cover - compiled
    out = _move_item_words(words, eta, item, dual)
    flip_lo = (words[0, item] ^ out[0, item]) | (words[2, item] ^ out[2, item])
    flip_hi = (words[1, item] ^ out[1, item]) | (words[3, item] ^ out[3, item])
    changed = np.empty(rows.shape[0], np.int64)
    n = 0
    for t in range(rows.shape[0]):
        u = rows[t]
        if ((masks[u, 0] & flip_lo) | (masks[u, 1] & flip_hi)) != 0:
            changed[n] = t
            n += 1
    return out, changed[:n]


def move_item_changed(
    words: np.ndarray, eta: np.ndarray, item: int, dual: bool, masks: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(new, changed)``: ``new`` the order :func:`move_item_words` gives, and ``changed`` the
    positions ``t`` (ascending) of the lists ``rows[t]``, all containing ``item``, whose order
    restricted to their items differs between ``words`` and ``new``.

    ``masks`` ``(n, 2)`` holds the item set of each list as two uint64 words
    (:func:`item_masks`), ``rows`` int64 indices into it. Only ``item``'s relations move, so
    a list containing it changes iff its item set meets a changed bit of row ``item``: its
    items above it (``w = 0, 1``) or comparable to it (``w = 2, 3``).
    """
    words = np.ascontiguousarray(words, dtype=np.uint64)
    eta = np.ascontiguousarray(eta, dtype=np.float64)
    return _move_item_changed(words, eta, int(item), bool(dual), masks, rows)
