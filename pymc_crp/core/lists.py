r"""Ranked lists over items ``0..M-1``: their encoding and a cache of their likelihoods.

The NumPy side of :class:`pymc_crp.PartialOrderLists`. Lists are padded into int64 arrays
with ``-1`` (:func:`encode_lists`); :class:`ListLikelihoodCache` keeps, for one set of lists
and one partial order, the count ratios of the queue-jumping likelihood

.. math::

    \log p(Y \mid h, p) = \sum_{j=1}^{m-1} \log\Big(\frac{p}{m-j+1} + (1-p)\,ρ_j\Big),

so that moves of ``p``, and moves back to orders seen before, cost logarithms only. The PyMC
distribution and the step methods share the process-wide :func:`list_likelihood_cache`.

That cache stays a module-level instance on purpose: its one owner is the
:class:`ListLikelihoodCache` object (bounded by ``max_bytes``; ``len``, ``nbytes`` and
``clear()``), and the compiled log-likelihood op and the steps look it up when they run
rather than holding it, so pickled steps (``pm.sample(cores=2)``) start each worker with an
empty cache of its own and draws do not depend on what it holds.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from pymc_crp.core.linext_support import (
    float_binomials,
    loglik_from_ratios,
    utility_relation_words,
)
from pymc_crp.core.order_memo import OrderMemo, memo_ratios_kernel
from pymc_crp.core.posets import DEFAULT_MAX_STATES, _limit_error, validate_rankings
from pymc_crp.core.restricted_orders import copy_restricted_equal, item_masks

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "EncodedLists",
    "ListLikelihoodCache",
    "ListSet",
    "decode_lists",
    "encode_lists",
    "list_likelihood_cache",
    "order_words",
]


@dataclass(frozen=True, eq=False)
class EncodedLists:
    """Lists that :func:`encode_lists` has validated and padded for ``n_items`` items.

    :func:`encode_lists` returns the ``padded`` array of such lists as it is, so a model
    builder that validates the lists itself can pass them on (e.g. as the ``observed`` of
    :class:`pymc_crp.PartialOrderLists`) without a second validation.
    """

    padded: np.ndarray
    n_items: int

    @classmethod
    def encode(cls, lists, n_items: int, name: str = "lists") -> EncodedLists:
        """Validate and pad ``lists`` (see :func:`encode_lists`)."""
        return cls(encode_lists(lists, n_items, name=name), int(n_items))

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_lists, max_len)``."""
        return self.padded.shape


def encode_lists(lists, n_items: int, name: str = "lists") -> np.ndarray:
    """Validate lists of item indices and pad them into an int64 array with ``-1``.

    ``lists`` is a sequence of integer sequences (best first), an already padded integer
    array, or :class:`EncodedLists` for ``n_items`` items (returned without a second check).
    Raises ``ValueError`` naming ``name`` for repeated items, items outside
    ``0..n_items-1``, empty lists or non-integer values.
    """
    if isinstance(lists, EncodedLists):
        if lists.n_items == n_items:
            return lists.padded
        lists = lists.padded  # validated for other items: check again
    padded, lengths = validate_rankings(lists, n_items, name=name)
    out = np.full(padded.shape, -1, dtype=np.int64)
    for i, m in enumerate(lengths):
        out[i, :m] = padded[i, :m]
    return out


def decode_lists(padded) -> list[list[int]]:
    """Padded lists back to Python lists (dropping the ``-1`` padding)."""
    return [[int(x) for x in row if x >= 0] for row in np.asarray(padded)]


def _item_sets(padded: np.ndarray) -> np.ndarray:
    """The (sorted) item set of each padded list, padded the same way."""
    sets = np.sort(np.where(padded >= 0, padded, np.iinfo(np.int64).max), axis=1)
    return np.where(sets == np.iinfo(np.int64).max, -1, sets)


# --------------------------------------------------------------------------------------------
# Cache of count ratios
# --------------------------------------------------------------------------------------------
DEFAULT_CACHE_BYTES = 64 * 2**20
"""Default bound on the memory of the cached count ratios (64 MiB)."""

_ENTRY_OVERHEAD = 256  # bytes charged per entry for its key, dict slot and array headers


def order_words(utilities, top_down: bool = True, slots=None) -> np.ndarray:
    """Bitset form ``(L, 4, M)`` of the dominance orders of ``utilities`` ``(L, M, K)``, as
    the list kernels read them (the dual orders for bottom-up lists).

    With ``slots`` (e.g. the labels of the lists) only those orders are built (``O(M^2 K)``
    each); the others are left zero, so only ``slots`` may be used with the result.
    """
    if slots is None:
        return utility_relation_words(utilities, dual=not top_down)
    utilities = np.asarray(utilities)
    slots = np.asarray(slots, dtype=np.int64).ravel()
    if slots.size and slots.min() >= 0 and slots.max() < utilities.shape[0]:
        used = np.flatnonzero(np.bincount(slots, minlength=utilities.shape[0]))  # = np.unique
    else:
        used = np.unique(slots)
    words = np.zeros((utilities.shape[0], 4, utilities.shape[1]), dtype=np.uint64)
    if used.size:
        words[used] = utility_relation_words(utilities[used], dual=not top_down)
    return words


class ListSet:
    """Lists prepared for :class:`ListLikelihoodCache`: in step order, without repeats.

    Row ``i`` of the padded ``lists`` (``-1`` after its length) is read best first
    (``top_down``) or backwards; ``steps`` holds the distinct rows so read, sorted (lists
    sharing their first steps are neighbours), ``inverse[i]`` the row of list ``i``, ``masks``
    the item set of each distinct row as two uint64 words and ``token`` a digest of the
    content (lists with equal content share cache entries).
    """

    def __init__(self, lists, top_down: bool = True):
        lists = np.asarray(lists, dtype=np.int64)
        if lists.ndim != 2:
            raise ValueError(f"lists must be a padded 2-D array, got shape {lists.shape}")
        lengths = np.sum(lists >= 0, axis=1)
        cols = np.arange(lists.shape[1])
        valid = cols < lengths[:, None]
        if not top_down:
            lists = np.take_along_axis(lists, np.where(valid, lengths[:, None] - 1 - cols, 0), 1)
        steps = np.where(valid, lists, -1)
        if steps.shape[0]:
            unique, inverse = np.unique(steps, axis=0, return_inverse=True)
        else:
            unique, inverse = steps, np.zeros(0, dtype=np.int64)
        self.top_down = bool(top_down)
        self.n_lists = steps.shape[0]
        self.steps = np.ascontiguousarray(unique, dtype=np.int64)
        self.lengths = np.sum(self.steps >= 0, axis=1).astype(np.int64)
        self.inverse = np.ascontiguousarray(inverse.ravel(), dtype=np.int64)
        self.masks = item_masks(self.steps)
        self.row_ids = np.arange(self.steps.shape[0], dtype=np.int64)
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.array([self.top_down, *steps.shape], dtype=np.int64).tobytes())
        digest.update(steps.tobytes())
        self.token = digest.digest()
        arrays = (self.steps, self.lengths, self.inverse, self.masks, self.row_ids)
        self.nbytes = sum(a.nbytes for a in arrays)


class ListLikelihoodCache:
    r"""Bounded LRU cache of the count ratios of lists under partial orders.

    List ``Y`` (``m`` items) has, under the order ``h``, the ratios
    ``ρ_j = 1\{Y_j \text{ maximal in } h[T_j]\}\, C(h[T_j \setminus Y_j]) / C(h[T_j])``
    (``T_j = \{Y_j, …, Y_m\}``, ``j = 1..m-1``), so that for every ``p``

    .. math:: \log p(Y \mid h, p) = \sum_{j=1}^{m-1} \log\Big(\frac{p}{m-j+1}
        + (1-p)\,ρ_j\Big).

    An entry holds the ratios of the distinct lists of one :class:`ListSet` under one order
    (keyed by the order's bitset form and the lists' digest), filled in as lists are asked
    for. A Metropolis move back to an order seen before, a move of ``p``, and lists whose
    order did not change cost the logarithms only; repeated lists are counted once. The
    values are those of :func:`pymc_crp.core.posets.list_log_likelihoods_stacked`, bit for bit.
    Entries are evicted least recently used first, so they never take more than
    ``max_bytes``; at most ``max_list_sets`` prepared list sets are remembered (by the
    identity of the array: a remembered array must not be modified in place).

    A list's ratios depend on ``h`` only through ``h`` restricted to the list's items, so a
    list missing from the entry of ``h`` takes them from a *hint* entry of another order
    ``h'`` when ``h[S] = h'[S]`` (:func:`~pymc_crp.core.restricted_orders.
    copy_restricted_equal`): moves of some items' utilities, and maps of all of them that
    keep most lists' restricted orders (``ρ``, ``τ``), count only the lists whose restricted
    order changed. The hint is an order the caller names, else the order last asked for the
    same slot of the same lists. Any entry gives the same ratios, so the values never depend
    on the hint.

    Lists are counted through :class:`~pymc_crp.core.order_memo.OrderMemo` (one per list set,
    within ``max_bytes``): the ratios of each list under each restricted order ``h[S]`` it was
    counted under, which serve the list under any order with the same restriction (over many
    items, a one-item move changes few lists' restrictions, and back and forth).

    Proposals that are most likely left again (one-item Metropolis moves) go through
    :meth:`proposal_log_likelihoods`: their lists are counted without a full entry and kept
    compactly (at most a quarter of ``max_bytes``, counted in the bound), so that they do not
    evict the entries of the current states; :meth:`fill` and :meth:`store` make the entry of
    an accepted order.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, max_list_sets: int = 8):
        self.max_bytes = int(max_bytes)
        self.max_list_sets = int(max_list_sets)
        self._entries: OrderedDict = OrderedDict()
        self._sets: OrderedDict = OrderedDict()
        self.entry_bytes = 0
        self._last: dict = {}  # (list token, slot) -> key of the order last asked for
        self._pending: dict = {}  # list token -> (key, rows, ratios) of its last proposal
        self._proposals: OrderedDict = OrderedDict()  # key -> (rows, ratios, nbytes)
        self._memos: OrderedDict = OrderedDict()  # list token -> OrderMemo
        self.memo_bytes = 0
        self.proposal_bytes = 0
        self.computed = 0  # distinct lists whose ratios were counted
        self.reused = 0  # lists served from an entry
        self.copied = 0  # distinct lists whose ratios were taken from a hint entry

    @property
    def nbytes(self) -> int:
        """Bytes held: the entries, the kept proposals and the remembered list sets."""
        sets = sum(s.nbytes for _, s in self._sets.values())
        return self.entry_bytes + self.proposal_bytes + self.memo_bytes + sets

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._sets.clear()
        self._last.clear()
        self._pending.clear()
        self._proposals.clear()
        self._memos.clear()
        self.memo_bytes = 0
        self.proposal_bytes = 0
        self.entry_bytes = 0

    def list_set(self, lists, top_down: bool = True) -> ListSet:
        """The :class:`ListSet` of ``lists``, remembered by the array's identity."""
        key = (id(lists), bool(top_down))
        found = self._sets.get(key)
        if found is not None and found[0]() is lists:
            self._sets.move_to_end(key)
            return found[1]
        prepared = ListSet(lists, top_down)
        if isinstance(lists, np.ndarray):
            self._sets[key] = (weakref.ref(lists), prepared)
            while len(self._sets) > self.max_list_sets:
                self._sets.popitem(last=False)
        return prepared

    def log_likelihoods(
        self,
        list_set: ListSet,
        words,
        labels,
        p: float,
        *,
        rows=None,
        want_grad: bool = False,
        max_states: int = DEFAULT_MAX_STATES,
        hint=None,
    ):
        """``log p(Y_i | h_{labels}, p)`` for lists ``rows`` (default: all).

        ``words`` is :func:`order_words` of the slots' utilities (same direction as
        ``list_set``), ``labels`` the slot of each requested list. ``hint`` is a ``(4, M)``
        order whose entry lends the ratios of the lists it leaves unchanged, ``None`` (the
        order last asked for the same slot, and remember these) or ``False`` (no hint).
        Returns the log-likelihoods, and ``d/dp`` of them with ``want_grad``.
        """
        words = np.ascontiguousarray(words, dtype=np.uint64)
        index = list_set.inverse if rows is None else list_set.inverse[rows]
        labels = np.asarray(labels, dtype=np.int64).reshape(-1)
        if labels.shape != index.shape or words.ndim != 3 or words.shape[1] != 4:
            raise ValueError(
                f"labels {labels.shape} must match the lists {index.shape} and words be "
                f"(L, 4, M), got {words.shape}"
            )
        ll = np.empty(index.shape[0])
        dp = np.empty(index.shape[0])
        if index.size and (labels.min() < 0 or labels.max() >= words.shape[0]):
            raise ValueError(f"labels must lie in 0..{words.shape[0] - 1}")
        if index.size and labels.min() == labels.max():
            groups = [(int(labels[0]), slice(None))]
        else:
            small = words.shape[0] <= np.iinfo(np.int16).max  # radix sort: same order, faster
            order = np.argsort(labels.astype(np.int16) if small else labels, kind="stable")
            bounds = np.searchsorted(labels[order], np.arange(words.shape[0] + 1))
            groups = [
                (a, order[bounds[a] : bounds[a + 1]])
                for a in range(words.shape[0])
                if bounds[a + 1] > bounds[a]
            ]
        zeros = scratch = None
        for slot, sel in groups:
            needed = index[sel]
            if p < 1.0 or want_grad:
                entry = self._entry(list_set, words, slot, needed, max_states, hint)
                ratios, combined = entry.ratios, entry.combined(p, want_grad)
            else:  # every term is 1 / r_j: no counts needed
                if zeros is None:
                    zeros = np.zeros(_Entry.ratio_shape(list_set))
                    n_rows = zeros.shape[0]
                    scratch = (np.empty(n_rows), np.empty(n_rows), np.zeros(n_rows, dtype=bool))
                ratios, combined = zeros, scratch
            ll[sel], dp[sel] = loglik_from_ratios(
                ratios, list_set.lengths, needed, float(p), bool(want_grad), *combined
            )
        return (ll, dp) if want_grad else ll

    def order_log_likelihoods(
        self,
        list_set: ListSet,
        words,
        rows,
        p: float,
        *,
        hint=False,
        max_states: int = DEFAULT_MAX_STATES,
    ) -> np.ndarray:
        """``log p(Y_i | h, p)`` for lists ``rows`` under the one order ``words`` ``(4, M)``
        (or ``(1, 4, M)``): :meth:`log_likelihoods` with every label 0, without grouping the
        lists by label (the path of one-item Metropolis moves)."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(1, 4, -1)
        index = list_set.inverse[rows]
        if p < 1.0:
            entry = self._entry(list_set, words, 0, index, max_states, hint)
            ratios, combined = entry.ratios, entry.combined(p, False)
        else:  # every term is 1 / r_j: no counts needed
            ratios = np.zeros(_Entry.ratio_shape(list_set))
            n_rows = ratios.shape[0]
            combined = (np.empty(n_rows), np.empty(n_rows), np.zeros(n_rows, dtype=bool))
        return loglik_from_ratios(ratios, list_set.lengths, index, float(p), False, *combined)[0]

    def proposal_log_likelihoods(
        self, list_set: ListSet, words, rows, p: float, *, max_states: int = DEFAULT_MAX_STATES
    ) -> np.ndarray:
        """:meth:`order_log_likelihoods` for a proposed order that will most likely be left:
        served from its entry if that holds the lists already, otherwise counted without
        creating one (the ratios are kept aside until the next call, so that :meth:`fill` of
        the same order stores them when the proposal is accepted)."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(1, 4, -1)
        index = list_set.inverse[rows]
        if p >= 1.0 or not index.size:
            return self.order_log_likelihoods(list_set, words, rows, p, max_states=max_states)
        key = (list_set.token, words[0].tobytes())
        entry = self._entries.get(key)
        if entry is not None and entry.done[index].all():
            self._entries.move_to_end(key)
            self.reused += index.size
            self._pending[list_set.token] = (key, index, entry.ratios[index])
            return loglik_from_ratios(
                entry.ratios, list_set.lengths, index, float(p), False, *entry.combined(p, False)
            )[0]
        n = index.size
        lengths = list_set.lengths[index]
        order = np.arange(n, dtype=np.int64)
        scratch = (np.empty(n), np.empty(n), np.zeros(n, dtype=bool))
        kept = self._proposals.get(key)  # a proposal of this order before, of these lists?
        if kept is not None:
            where = np.minimum(np.searchsorted(kept[0], index), kept[0].size - 1)
            if np.array_equal(kept[0][where], index):
                self._proposals.move_to_end(key)
                self.reused += n
                ratios = kept[1][where]
                self._pending[list_set.token] = (key, index, ratios)
                return loglik_from_ratios(ratios, lengths, order, float(p), False, *scratch)[0]
        loglik, ratios = self._counted(list_set, words[0], index, p, max_states)
        self._pending[list_set.token] = (key, index, ratios)
        self._keep_proposal(key, index, ratios)
        return loglik

    def move_log_likelihoods(
        self, list_set: ListSet, words, rows, p: float, *, max_states: int = DEFAULT_MAX_STATES
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(loglik, ratios)`` of lists ``rows`` under the order ``words`` ``(4, M)`` (or
        ``(1, 4, M)``), ``p < 1``: counted through the list set's
        :class:`~pymc_crp.core.order_memo.OrderMemo` only, with no entry, kept proposal or
        pending ratios (for a caller that keeps the ratios of the lists it moves itself, as
        the item sweeps of :class:`~pymc_crp.UtilityMetropolis` do; lists seen under the same
        restricted order cost a memo look-up). The values are those of
        :meth:`proposal_log_likelihoods`, bit for bit."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(-1, words.shape[-1])
        return self._counted(list_set, words, list_set.inverse[rows], p, max_states)

    def _counted(self, list_set, rel, index, p, max_states) -> tuple[np.ndarray, np.ndarray]:
        """``(loglik, ratios)`` of the distinct lists ``index`` under ``rel`` ``(4, M)``,
        counted (:meth:`_count`) without an entry."""
        n = index.size
        lengths = list_set.lengths[index]
        order = np.arange(n, dtype=np.int64)
        # (a repeated list is counted twice: rare, and cheaper than sorting)
        ratios = np.empty((n, _Entry.ratio_shape(list_set)[1]))
        self._count(list_set, rel, list_set.steps[index], lengths, order, index, ratios,
                    max_states)  # fmt: skip
        scratch = (np.empty(n), np.empty(n), np.zeros(n, dtype=bool))
        return loglik_from_ratios(ratios, lengths, order, float(p), False, *scratch)[0], ratios

    def _count(self, list_set, rel, lists, lengths, perm, row_ids, ratios, max_states) -> None:
        """Count ratios of lists ``perm`` (rows ``row_ids`` of ``list_set``) of the padded
        ``lists`` under the order ``rel`` ``(4, M)`` into ``ratios``, through the list set's
        :class:`~pymc_crp.core.order_memo.OrderMemo` (lists seen before under the same
        restricted order are not counted again)."""
        memo = self._order_memo(list_set)
        ok = memo_ratios_kernel(
            rel, lists, lengths, perm, row_ids, float_binomials(), int(max_states), ratios,
            *memo.arrays,
        )  # fmt: skip
        if not ok:
            raise _limit_error(rel.shape[1], max_states)
        self.computed += perm.size

    def order_memo(self, list_set) -> OrderMemo:
        """The :class:`~pymc_crp.core.order_memo.OrderMemo` of ``list_set``, for compiled
        callers that count through it themselves (:mod:`pymc_crp.core.item_sweep`)."""
        return self._order_memo(list_set)

    def _order_memo(self, list_set) -> OrderMemo:
        """The restricted-order memo of ``list_set``: each within a sixteenth of ``max_bytes``,
        all within an eighth (the oldest evicted), entries evicted to keep the bound."""
        memo = self._memos.get(list_set.token)
        if memo is not None:
            self._memos.move_to_end(list_set.token)
            return memo
        memo = OrderMemo(*list_set.steps.shape, self.max_bytes // 16)
        while self._memos and self.memo_bytes + memo.nbytes > self.max_bytes // 8:
            self.memo_bytes -= self._memos.popitem(last=False)[1].nbytes
        self._memos[list_set.token] = memo
        self.memo_bytes += memo.nbytes
        while self._entries and self.entry_bytes + self.proposal_bytes + self.memo_bytes > (
            self.max_bytes
        ):
            self.entry_bytes -= self._entries.popitem(last=False)[1].nbytes
        return memo

    def _keep_proposal(self, key, index, ratios) -> None:
        """Remember the ratios of a proposal's lists (sorted by row), bounded by a quarter of
        ``max_bytes``: moves back to a proposed order are common when the lists span few
        items."""
        sort = np.argsort(index, kind="stable")
        kept = (index[sort], ratios[sort])
        size = kept[0].nbytes + kept[1].nbytes + len(key[1]) + _ENTRY_OVERHEAD
        old = self._proposals.pop(key, None)
        if old is not None:
            self.proposal_bytes -= old[2]
        while self._proposals and self.proposal_bytes + size > self.max_bytes // 4:
            self.proposal_bytes -= self._proposals.popitem(last=False)[1][2]
        if size <= self.max_bytes // 4:
            self._proposals[key] = (*kept, size)
            self.proposal_bytes += size

    def fill(self, list_set: ListSet, words, rows, hint, max_states: int = DEFAULT_MAX_STATES):
        """Make the entry of the order ``words`` ``(4, M)`` hold lists ``rows``, taking what it
        can from the entry of ``hint`` ``(4, M)`` (e.g. after a move from ``hint`` to ``words``
        is accepted, so that the entry of the new state holds all the lists of the old)."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(1, 4, -1)
        needed = list_set.inverse[np.asarray(rows, dtype=np.int64)]
        pending = self._pending.get(list_set.token)
        if pending is not None and pending[0] == (list_set.token, words[0].tobytes()):
            _, counted, ratios = self._pending.pop(list_set.token)  # counted for the proposal
            self._entry(list_set, words, 0, counted, max_states, False, given=ratios)
        self._entry(list_set, words, 0, needed, max_states, hint)

    def pending_ratios(self, list_set: ListSet, words, rows):
        """The count ratios ``(len(rows), m - 1)`` of lists ``rows`` under the order ``words``,
        from the last :meth:`proposal_log_likelihoods` of ``list_set`` if it was for these
        lists and this order, else through the order's entry (:meth:`ratios`)."""
        pending = self._pending.get(list_set.token)
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(1, 4, -1)
        index = list_set.inverse[np.asarray(rows, dtype=np.int64)]
        if (
            pending is not None
            and pending[0] == (list_set.token, words[0].tobytes())
            and np.array_equal(pending[1], index)
        ):
            return pending[2]
        return self.ratios(list_set, words, rows)

    def ratios(self, list_set: ListSet, words, rows, max_states: int = DEFAULT_MAX_STATES):
        """The count ratios ``(len(rows), m - 1)`` of lists ``rows`` under the order ``words``
        ``(4, M)`` (a copy; counted into the order's entry where missing)."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(1, 4, -1)
        index = list_set.inverse[np.asarray(rows, dtype=np.int64)]
        return self._entry(list_set, words, 0, index, max_states, False).ratios[index]

    def store(self, list_set: ListSet, words, rows, ratios) -> None:
        """Put the count ratios ``ratios`` of lists ``rows`` under the order ``words`` into its
        entry (they must be those :meth:`ratios` would give: e.g. kept by a step while it
        moved from order to order)."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(1, 4, -1)
        index = list_set.inverse[np.asarray(rows, dtype=np.int64)]
        self._entry(list_set, words, 0, index, DEFAULT_MAX_STATES, False, given=ratios)

    def _entry(self, list_set, words, slot, needed, max_states, hint=None, given=None):
        """The entry of order ``words[slot]``, with the ratios of rows ``needed`` filled
        (``given``: the ratios of the rows ``needed``, already counted)."""
        key = (list_set.token, words[slot].tobytes())
        if hint is None:
            hint_key = self._last.get((list_set.token, slot))
            if len(self._last) > 4096:
                self._last.clear()
            self._last[(list_set.token, slot)] = key
        elif hint is False:
            hint_key = None
        else:
            hint_key = (list_set.token, np.ascontiguousarray(hint, dtype=np.uint64).tobytes())
        entry = self._entries.get(key)
        if entry is not None and given is None and entry.done[needed].all():  # all counted
            self._entries.move_to_end(key)
            self.reused += needed.size
            return entry
        source = None if hint_key is None or hint_key == key else self._entries.get(hint_key)
        if entry is None:
            entry = _Entry(list_set, len(key[1]))
            room = self.max_bytes - self.proposal_bytes - self.memo_bytes  # the others: 3/8
            if entry.nbytes <= room:
                while self._entries and self.entry_bytes + entry.nbytes > room:
                    self.entry_bytes -= self._entries.popitem(last=False)[1].nbytes
                self._entries[key] = entry
                self.entry_bytes += entry.nbytes
        else:
            self._entries.move_to_end(key)
        mask = np.zeros(entry.done.shape[0], dtype=bool)
        mask[needed] = True
        mask &= ~entry.done
        missing = np.flatnonzero(mask)  # sorted: neighbours share their first steps
        n_missing = missing.size
        if given is not None:
            entry.ratios[needed] = given
            entry.done[needed] = True
            return entry
        if missing.size and source is not None:
            n_words = words.shape[2]
            copied = copy_restricted_equal(
                np.frombuffer(hint_key[1], dtype=np.uint64).reshape(4, n_words),
                words[slot],
                list_set.steps,
                list_set.lengths,
                list_set.masks,
                missing,
                source.ratios,
                source.done,
                entry.ratios,
                entry.done,
            )
            if copied:
                missing = missing[~entry.done[missing]]
            self.copied += copied
        if missing.size:
            self._count(list_set, words[slot], list_set.steps, list_set.lengths, missing,
                        list_set.row_ids, entry.ratios, max_states)  # fmt: skip
            entry.done[missing] = True
        self.reused += needed.size - n_missing
        return entry


class _Entry:
    """The count ratios of a list set's distinct lists under one order (rows ``done``), and
    their log-likelihoods at the last ``p`` asked for (rows ``seen``)."""

    def __init__(self, list_set, key_bytes):
        self.ratios = np.empty(self.ratio_shape(list_set))
        n_rows = self.ratios.shape[0]
        self.done = np.zeros(n_rows, dtype=bool)
        self.p = None
        self.row_ll, self.row_dp = np.empty(n_rows), np.empty(n_rows)
        self.seen = np.zeros(n_rows, dtype=bool)
        arrays = (self.ratios, self.done, self.row_ll, self.row_dp, self.seen)
        self.nbytes = sum(a.nbytes for a in arrays) + key_bytes + _ENTRY_OVERHEAD

    @staticmethod
    def ratio_shape(list_set):
        return list_set.steps.shape[0], max(list_set.steps.shape[1] - 1, 0)

    def combined(self, p, want_grad):
        """``(row_ll, row_dp, seen)`` for ``p`` (forgotten when ``p`` or ``want_grad``
        changes)."""
        if self.p != (p, want_grad):
            self.seen[:] = False
            self.p = (p, want_grad)
        return self.row_ll, self.row_dp, self.seen


_CACHE = ListLikelihoodCache()


def list_likelihood_cache() -> ListLikelihoodCache:
    """The process-wide cache used by :class:`PartialOrderListsLogLikelihood` and
    :class:`~pymc_crp.UtilityMetropolis` (set its ``max_bytes`` to change the bound)."""
    return _CACHE
