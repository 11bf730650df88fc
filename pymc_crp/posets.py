"""Partial orders, linear extensions and the queue-jumping list likelihood.

The pure numeric core of the hierarchical partial-order (HPO) model (DESIGN.md
section 5); no PyMC or PyTensor here. The compiled kernels live in
:mod:`pymc_crp._linext`.

Conventions
-----------
A partial order on ``M`` items is a boolean ``(M, M)`` array ``adj`` with
``adj[i, j]`` True iff item ``i`` is above item ``j`` (``i ≻ j``: ``i`` comes before
``j`` in every linear extension). Inputs may be transitively closed or reduced; every
function closes them. A ranking (list) is an integer array of distinct 0-based item
indices, best first, over a subset ``S`` of the items; ``h[S]`` is the suborder on
``S`` and ``C(H)`` the number of linear extensions of the order ``H``.

Orders of any size can be counted when their connected components (of the
comparability graph) have at most 128 items; sampling and likelihoods work on sets of
at most 128 items (the batched likelihood needs ``M <= 128``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
from scipy.sparse.csgraph import connected_components

from pymc_crp import _linext

__all__ = [
    "DEFAULT_MAX_STATES",
    "LinearExtensionLimitError",
    "antichain_order",
    "chain_order",
    "count_linear_extensions",
    "crown_order",
    "grid_order",
    "is_linear_extension",
    "list_log_likelihood",
    "list_log_likelihoods",
    "list_log_likelihoods_padded",
    "list_log_likelihoods_stacked",
    "log_count_linear_extensions",
    "partial_order_from_utilities",
    "random_two_dimensional_order",
    "sample_linear_extension",
    "sample_list",
    "transitive_closure",
    "transitive_reduction",
    "validate_partial_order",
    "validate_probability",
    "validate_ranking",
    "validate_rankings",
]

DEFAULT_MAX_STATES = 20_000_000
"""Default limit on memoised sets (about 50 bytes each) before giving up."""

MAX_ITEMS = _linext.MAX_KERNEL_ITEMS
_DIRECTIONS = ("top-down", "bottom-up")


class LinearExtensionLimitError(ValueError):
    """A linear-extension computation would exceed its state (memory/time) limit."""


# ----------------------------------------------------------------------------------
# Validation


def validate_partial_order(adj, name: str = "adj") -> np.ndarray:
    """Check that ``adj`` is a strict partial order and return its transitive closure.

    Parameters
    ----------
    adj : array_like of bool, shape (M, M)
        ``adj[i, j]`` True iff item ``i`` is above item ``j``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    numpy.ndarray of bool, shape (M, M)
        The transitive closure ``adj⁺`` (a new array).

    Raises
    ------
    ValueError
        If ``adj`` is not a square boolean matrix, is reflexive somewhere
        (``adj[i, i]`` True) or has a cycle (``adj⁺[i, i]`` True).
    """
    closed = transitive_closure(adj, name=name)
    arr = np.asarray(adj)
    diag = np.flatnonzero(np.diagonal(arr))
    if diag.size:
        i = int(diag[0])
        raise ValueError(
            f"{name}[{i}, {i}] is True: a strict partial order is irreflexive "
            f"(an item is never above itself)"
        )
    cyc = np.flatnonzero(np.diagonal(closed))
    if cyc.size:
        raise ValueError(
            f"{name} has a cycle through item {int(cyc[0])}: it is not a partial order"
        )
    return closed


def validate_probability(p, name: str = "p") -> float:
    """Return ``p`` as a float after checking that it is a finite number in [0, 1]."""
    if isinstance(p, bool | np.bool_) or not isinstance(p, numbers.Real | np.ndarray):
        raise ValueError(f"{name} must be a real number in [0, 1], got {p!r}")
    arr = np.asarray(p)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be a real scalar in [0, 1], got {p!r}")
    value = float(arr)
    if not np.isfinite(value) or value < 0.0 or value > 1.0:
        raise ValueError(f"{name} must be a finite probability in [0, 1], got {value!r}")
    return value


def _validate_direction(direction) -> bool:
    """True for "top-down", False for "bottom-up"."""
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be 'top-down' or 'bottom-up', got {direction!r}")
    return direction == "top-down"


def _validate_rng(rng, name: str = "rng") -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_integers(values: np.ndarray, raw, name: str) -> np.ndarray:
    if values.dtype == object:
        for v in values.ravel():
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral):
                raise ValueError(f"{name} contains non-integer value {v!r}")
        return values.astype(np.int64)
    if values.dtype == np.bool_ or not np.issubdtype(values.dtype, np.integer):
        if values.size == 0 and not isinstance(raw, np.ndarray):
            return values.astype(np.int64)
        bad = values.ravel()[0] if values.size else raw
        raise ValueError(f"{name} must contain integers, got {values.dtype} value {bad!r}")
    return values.astype(np.int64, copy=False)


def validate_ranking(ranking, n_items: int, name: str = "ranking", allow_empty=False):
    """Check one ranking (distinct integer items in ``0..n_items-1``) and return it.

    Returns
    -------
    numpy.ndarray of int64, shape (m,)

    Raises
    ------
    ValueError
        Naming ``name`` if the ranking is not one-dimensional, is empty (unless
        ``allow_empty``), holds non-integers, items outside ``0..n_items-1`` or repeats.
    """
    if isinstance(ranking, list | tuple):
        for v in ranking:
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral):
                if isinstance(v, list | tuple | np.ndarray):
                    break  # a nested sequence: reported as not one-dimensional below
                raise ValueError(f"{name} contains non-integer value {v!r}")
    try:
        values = np.asarray(ranking)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} must be a sequence of integers: {err}") from None
    if values.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {values.shape}")
    values = _check_integers(values, ranking, name)
    if values.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty")
    bad = (values < 0) | (values >= n_items)
    if bad.any():
        v = int(values[np.argmax(bad)])
        raise ValueError(f"{name} contains item {v} outside 0..{n_items - 1}")
    if values.size:
        counts = np.bincount(values, minlength=n_items)
        if counts.max() > 1:
            raise ValueError(f"{name} repeats item {int(np.argmax(counts > 1))}")
    return values


def validate_rankings(lists, n_items: int, name: str = "lists"):
    """Check many rankings and return them padded.

    Parameters
    ----------
    lists : sequence of sequences of int, or int array (n_lists, max_len)
        The rankings, best first; an array is padded at the end of each row with -1.
    n_items : int
        Number of items ``M``; items must lie in ``0..M-1``.
    name : str
        Argument name used in error messages (``"lists[3] repeats item 5"``).

    Returns
    -------
    padded : numpy.ndarray of int64, shape (n_lists, max_len)
        Rankings padded with -1.
    lengths : numpy.ndarray of int64, shape (n_lists,)
    """
    if isinstance(lists, np.ndarray):
        if lists.ndim != 2:
            raise ValueError(f"{name} as an array must be 2-D (n_lists, max_len) padded with -1")
        if lists.shape[0] == 0:
            raise ValueError(f"{name} holds no lists")
        padded = _check_integers(lists, lists, name).copy()
        pad = padded == -1
        lengths = (~pad).sum(axis=1).astype(np.int64)
        cols = np.arange(padded.shape[1])
        misplaced = pad & (cols[None, :] < lengths[:, None])
        rows = np.flatnonzero(misplaced.any(axis=1))
        if rows.size:
            raise ValueError(f"{name}[{int(rows[0])}] has -1 padding before the end of the list")
        rankings = padded
    else:
        if isinstance(lists, str | bytes) or not isinstance(lists, Sequence):
            raise ValueError(f"{name} must be a list of integer sequences or a padded array")
        rankings = list(lists)
        if not rankings:
            raise ValueError(f"{name} holds no lists")
        padded, lengths = _pad_fast(rankings)
        if padded is None:  # something unusual: check list by list for the message
            for i, r in enumerate(rankings):
                validate_ranking(r, n_items, f"{name}[{i}]")
            padded, lengths = _pad_checked(rankings, n_items, name)
    # Vectorised checks; the first offending list is re-checked alone for the message.
    cols = np.arange(padded.shape[1])
    valid = cols[None, :] < lengths[:, None]
    bad = (lengths == 0) | np.any(valid & ((padded < 0) | (padded >= n_items)), axis=1)
    keys = np.sort(np.where(valid, padded, -1 - cols[None, :]), axis=1)
    bad |= np.any((keys[:, 1:] == keys[:, :-1]) & (keys[:, 1:] >= 0), axis=1)
    rows = np.flatnonzero(bad)
    if rows.size:
        i = int(rows[0])
        validate_ranking(rankings[i][: lengths[i]], n_items, f"{name}[{i}]")
        raise AssertionError("unreachable: the list should have failed validation")
    return padded, lengths


def _pad_fast(rankings):
    """Pad lists of plain integers quickly; ``(None, None)`` if anything is unusual."""
    try:
        lengths = np.array([len(r) for r in rankings], dtype=np.int64)
        flat = [v for r in rankings for v in r]
    except TypeError:
        return None, None
    for t in set(map(type, flat)):
        if issubclass(t, bool | np.bool_) or not issubclass(t, numbers.Integral):
            return None, None
    values = np.array(flat, dtype=np.int64)
    padded = np.full((len(rankings), max(int(lengths.max()), 1)), -1, dtype=np.int64)
    valid = np.arange(padded.shape[1])[None, :] < lengths[:, None]
    padded[valid] = values
    return padded, lengths


def _pad_checked(rankings, n_items, name):
    checked = [validate_ranking(r, n_items, f"{name}[{i}]") for i, r in enumerate(rankings)]
    lengths = np.array([r.size for r in checked], dtype=np.int64)
    padded = np.full((len(checked), max(int(lengths.max()), 1)), -1, dtype=np.int64)
    for i, r in enumerate(checked):
        padded[i, : r.size] = r
    return padded, lengths


def _square_bool(adj, name: str) -> np.ndarray:
    arr = np.asarray(adj)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (M, M) matrix, got shape {arr.shape}")
    if arr.dtype != np.bool_:
        raise ValueError(f"{name} must be a boolean matrix, got dtype {arr.dtype}")
    return arr


def _restrict(closed: np.ndarray, items, name: str = "items"):
    """``(sub_order, items)`` for the suborder on ``items`` (default all)."""
    if items is None:
        return closed, np.arange(closed.shape[0])
    idx = validate_ranking(items, closed.shape[0], name, allow_empty=True)
    return closed[np.ix_(idx, idx)], idx


# ----------------------------------------------------------------------------------
# Orders


def partial_order_from_utilities(eta) -> np.ndarray:
    """The partial order induced by latent utilities.

    ``i ≻ j`` iff ``eta[i, k] > eta[j, k]`` for every dimension ``k`` (strict, so ties
    leave items incomparable). The result is transitively closed.

    Parameters
    ----------
    eta : array_like of float, shape (M, K), or (L, M, K) for a stack of orders

    Returns
    -------
    numpy.ndarray of bool, shape (M, M) (or (L, M, M))
    """
    arr = np.asarray(eta)
    if arr.ndim not in (2, 3):
        raise ValueError(f"eta must be a 2-D (M, K) array of utilities, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"eta must hold real numbers, got dtype {arr.dtype}")
    if arr.shape[-1] == 0:
        raise ValueError("eta must have at least one latent dimension (K >= 1)")
    if not np.all(np.isfinite(arr)):
        raise ValueError("eta must be finite (found NaN or infinity)")
    return np.all(arr[..., :, None, :] > arr[..., None, :, :], axis=-1)


def transitive_closure(adj, name: str = "adj") -> np.ndarray:
    """Transitive closure ``adj⁺`` of a square boolean relation.

    ``adj⁺[i, j]`` is True iff there is a path ``i = k_0 ≻ k_1 ≻ ... ≻ k_r = j``
    with ``r >= 1``; computed by repeated squaring ``R ← R ∨ (R·R > 0)``.
    """
    closed = _square_bool(adj, name).copy()
    m = closed.shape[0]
    if m == 0:
        return closed
    while True:
        f = closed.astype(np.float32)
        nxt = closed | ((f @ f) > 0)
        if np.array_equal(nxt, closed):
            return closed
        closed = nxt


def transitive_reduction(adj) -> np.ndarray:
    """Transitive reduction (Hasse diagram) of a partial order.

    ``i ⋗ j`` (cover) iff ``i ≻ j`` in the closure and there is no ``k`` with
    ``i ≻ k ≻ j``: ``R = adj⁺ ∧ ¬(adj⁺·adj⁺ > 0)``.
    """
    closed = validate_partial_order(adj)
    f = closed.astype(np.float32)
    return closed & ~((f @ f) > 0)


def is_linear_extension(adj, ranking) -> bool:
    """Whether ``ranking`` (over a subset ``S``) is a linear extension of ``h[S]``.

    True iff no later item is above an earlier one: ``not (Y_b ≻ Y_a)`` for all
    positions ``a < b``.
    """
    closed = validate_partial_order(adj)
    y = validate_ranking(ranking, closed.shape[0])
    sub = closed[np.ix_(y, y)]
    return not bool(np.tril(sub, -1).any())


# ----------------------------------------------------------------------------------
# Counting


def _components(closed: np.ndarray) -> list[np.ndarray]:
    n_comp, labels = connected_components(closed | closed.T, directed=False)
    return [np.flatnonzero(labels == c) for c in range(n_comp)]


def _is_chain(closed: np.ndarray) -> bool:
    n = closed.shape[0]
    return bool(np.all(closed | closed.T | np.eye(n, dtype=bool)))


def _limit_error(n_items: int, max_states: int) -> LinearExtensionLimitError:
    return LinearExtensionLimitError(
        f"counting linear extensions of this {n_items}-item order needs more than "
        f"max_states={max_states} memoised sets; raise max_states (about 50 bytes "
        f"each) or simplify the order"
    )


def _check_max_states(max_states) -> int:
    if isinstance(max_states, bool) or not isinstance(max_states, numbers.Integral):
        raise ValueError(f"max_states must be a positive integer, got {max_states!r}")
    if max_states < 1:
        raise ValueError(f"max_states must be a positive integer, got {max_states!r}")
    return int(max_states)


def _kernel_count(closed: np.ndarray, exact: bool, max_states: int):
    """``C`` of a closed order with at most 128 items: an int if ``exact`` else a float."""
    n = closed.shape[0]
    if exact:
        sizes = _linext.chain_partition_sizes(closed)
        log2_bound = (math.lgamma(n + 1) - sum(math.lgamma(s + 1) for s in sizes)) / math.log(2)
        primes, binom_r = _linext.residue_tables(_linext.primes_needed(log2_bound))
    else:
        primes = np.empty(0, dtype=np.uint64)
        binom_r = np.empty((0, 1, 1), dtype=np.uint64)
    f, residues, _, exceeded = _linext.count_kernel(
        np.ascontiguousarray(closed), primes, _linext.float_binomials(), binom_r, max_states
    )
    if exceeded:
        raise _limit_error(n, max_states)
    if not exact:
        return f
    value = _linext.crt(residues, primes)
    if abs(value - int(f)) * 10**9 > value:
        raise RuntimeError(
            f"exact linear-extension count {value} disagrees with its float estimate {f!r}"
        )
    return value


def _count_parts(closed: np.ndarray):
    """Yield ``(size, closed_sub)`` per connected component (for orders above 128 items)."""
    for comp in _components(closed):
        sub = closed[np.ix_(comp, comp)]
        if comp.size > MAX_ITEMS and not _is_chain(sub):
            raise LinearExtensionLimitError(
                f"a connected component of the order has {comp.size} items and is not a "
                f"chain; at most {MAX_ITEMS} items per component are supported"
            )
        yield comp.size, sub


def count_linear_extensions(adj, items=None, *, max_states: int = DEFAULT_MAX_STATES) -> int:
    """Exact number ``C(h[S])`` of linear extensions of the suborder on ``items``.

    ``C(∅) = 1`` and ``C(H) = Σ_{j maximal in H} C(H − j)``, memoised over sets, with
    disconnected sets split into components ``A ⊔ B``:
    ``C(A ⊔ B) = binom(|A| + |B|, |A|) · C(A) · C(B)``. The recursion runs in float64
    and modulo enough primes below ``2**32`` that their product exceeds a chain-partition
    upper bound ``n! / Π c_i!`` on the count; the exact integer is rebuilt by the Chinese
    remainder theorem and checked against the float value (relative 1e-9).

    Parameters
    ----------
    adj : array_like of bool, shape (M, M)
        Partial order (closed or not).
    items : sequence of int, optional
        The subset ``S`` (default: all items).
    max_states : int
        Raise :class:`LinearExtensionLimitError` rather than memoise more sets.

    Returns
    -------
    int
        Exact count (a Python int; it may exceed ``2**64``).
    """
    closed = validate_partial_order(adj)
    max_states = _check_max_states(max_states)
    sub, _ = _restrict(closed, items)
    n = sub.shape[0]
    if n <= 1:
        return 1
    if n <= MAX_ITEMS:
        return _kernel_count(sub, True, max_states)
    total, seen = 1, 0
    for size, part in _count_parts(sub):
        seen += size
        value = 1 if size > MAX_ITEMS else _kernel_count(part, True, max_states)
        total *= math.comb(seen, size) * value
    return total


def log_count_linear_extensions(adj, items=None, *, max_states: int = DEFAULT_MAX_STATES) -> float:
    """Natural logarithm of ``C(h[S])``, computed in float64 (no big integers).

    Same recursion as :func:`count_linear_extensions`; relative accuracy about
    ``1e-14`` (components above 128 items combine as
    ``log C = Σ log C(A_i) + log(n! / Π |A_i|!)``).
    """
    closed = validate_partial_order(adj)
    max_states = _check_max_states(max_states)
    sub, _ = _restrict(closed, items)
    n = sub.shape[0]
    if n <= 1:
        return 0.0
    if n <= MAX_ITEMS:
        return math.log(_kernel_count(sub, False, max_states))
    total = math.lgamma(n + 1)
    for size, part in _count_parts(sub):
        total -= math.lgamma(size + 1)
        if size <= MAX_ITEMS:
            total += math.log(_kernel_count(part, False, max_states))
    return total


# ----------------------------------------------------------------------------------
# Sampling


def _sample_extensions(sub: np.ndarray, rng, size: int, max_states: int) -> np.ndarray:
    """``(size, n)`` uniform linear extensions (positions in ``sub``) of a closed order."""
    n = sub.shape[0]
    if n == 0:
        return np.empty((size, 0), dtype=np.int64)
    if n <= MAX_ITEMS:
        uniforms = rng.random((size, n, 2))
        out, exceeded = _linext.sample_lists_kernel(
            np.ascontiguousarray(sub), 0.0, uniforms, _linext.float_binomials(), max_states
        )
        if exceeded:
            raise _limit_error(n, max_states)
        return out
    # Above the kernel size: uniform extensions of each component, uniformly interleaved.
    comps = _components(sub)
    labels = np.concatenate([np.full(c.size, k) for k, c in enumerate(comps)])
    for c in comps:
        if c.size > MAX_ITEMS and not _is_chain(sub[np.ix_(c, c)]):
            raise LinearExtensionLimitError(
                f"a connected component of the order has {c.size} items and is not a "
                f"chain; at most {MAX_ITEMS} items per component are supported"
            )
    parts = []
    for c in comps:
        part = sub[np.ix_(c, c)]
        if c.size > MAX_ITEMS:
            # A chain: its only extension lists items with more items below first.
            order = c[np.argsort(-part.sum(axis=1), kind="stable")]
            parts.append(np.broadcast_to(order, (size, c.size)))
        else:
            parts.append(c[_sample_extensions(part, rng, size, max_states)])
    shuffled = rng.permuted(np.broadcast_to(labels, (size, n)), axis=1)
    positions = np.argsort(shuffled, axis=1, kind="stable")
    out = np.empty((size, n), dtype=np.int64)
    rows = np.arange(size)[:, None]
    start = 0
    for c, part in zip(comps, parts, strict=True):
        out[rows, positions[:, start : start + c.size]] = part
        start += c.size
    return out


def sample_linear_extension(
    adj, rng, items=None, *, size: int | None = None, max_states: int = DEFAULT_MAX_STATES
) -> np.ndarray:
    """Draw linear extensions of ``h[S]`` exactly uniformly.

    From the top: with ``H`` the items not yet placed, the next item is a maximal
    ``j ∈ H`` with probability ``C(H − j) / C(H)``, so each extension has probability
    ``Π C(H_{t+1}) / C(H_t) = 1 / C(h[S])``. All randomness comes from ``rng``.

    Parameters
    ----------
    adj : array_like of bool, shape (M, M)
    rng : numpy.random.Generator
    items : sequence of int, optional
        The subset ``S`` (default: all items).
    size : int, optional
        Number of independent draws; ``None`` for a single one.

    Returns
    -------
    numpy.ndarray of int64, shape (|S|,) or (size, |S|)
        Item indices, best first.
    """
    closed = validate_partial_order(adj)
    rng = _validate_rng(rng)
    max_states = _check_max_states(max_states)
    n_draws = _check_size(size)
    sub, idx = _restrict(closed, items)
    out = idx[_sample_extensions(sub, rng, n_draws, max_states)]
    return out[0] if size is None else out


def _check_size(size) -> int:
    if size is None:
        return 1
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise ValueError(f"size must be None or a non-negative integer, got {size!r}")
    return int(size)


def sample_list(
    adj,
    items,
    p,
    rng,
    direction: str = "top-down",
    *,
    size: int | None = None,
    max_states: int = DEFAULT_MAX_STATES,
) -> np.ndarray:
    """Draw lists over ``items`` from the queue-jumping model.

    Top-down: with ``T`` the items not yet listed, the next item is, with probability
    ``p``, uniform on ``T``; otherwise the first item of a uniform linear extension of
    ``h[T]`` (a maximal ``j`` with probability ``C(T − j) / C(T)``). Bottom-up fills
    the list from the end with the mirror rule (minimal items of ``h[T]``). The
    probability of a list is ``exp(list_log_likelihood(adj, list, p, direction))``.

    Parameters
    ----------
    adj : array_like of bool, shape (M, M)
    items : sequence of int
        The set ``S`` of listed items (order irrelevant), at most 128 items.
    p : float
        Queue-jumping (error) probability in [0, 1].
    rng : numpy.random.Generator
    direction : {"top-down", "bottom-up"}
    size : int, optional
        Number of independent lists; ``None`` for one.

    Returns
    -------
    numpy.ndarray of int64, shape (|S|,) or (size, |S|)
    """
    closed = validate_partial_order(adj)
    idx = validate_ranking(items, closed.shape[0], "items")
    p = validate_probability(p)
    rng = _validate_rng(rng)
    top_down = _validate_direction(direction)
    max_states = _check_max_states(max_states)
    n_draws = _check_size(size)
    if idx.size > MAX_ITEMS:
        raise ValueError(f"items holds {idx.size} items; at most {MAX_ITEMS} are supported")
    sub = closed[np.ix_(idx, idx)]
    if not top_down:
        sub = sub.T
    uniforms = rng.random((n_draws, idx.size, 2))
    out, exceeded = _linext.sample_lists_kernel(
        np.ascontiguousarray(sub), p, uniforms, _linext.float_binomials(), max_states
    )
    if exceeded:
        raise _limit_error(idx.size, max_states)
    if not top_down:
        out = out[:, ::-1]
    out = idx[out]
    return out[0] if size is None else out


# ----------------------------------------------------------------------------------
# List likelihood


def list_log_likelihood(
    adj, ranking, p, direction: str = "top-down", *, max_states: int = DEFAULT_MAX_STATES
) -> float:
    """Log-probability of one list under the queue-jumping model (DESIGN.md §5).

    Top-down, with ``m = |Y|`` and ``T_j = {Y_j, ..., Y_m}``::

        p(Y | h, p) = Π_{j=1}^{m} [ p/(m−j+1)
                                    + (1−p) · 1{Y_j maximal in h[T_j]} · C(h[T_{j+1}]) / C(h[T_j]) ]

    Bottom-up, with ``B_j = {Y_1, ..., Y_j}``::

        p(Y | h, p) = Π_{j=1}^{m} [ p/j
                                    + (1−p) · 1{Y_j minimal in h[B_j]} · C(h[B_{j−1}]) / C(h[B_j]) ]

    At ``p = 0`` this is ``−log C(h[S])`` for a linear extension of ``h[S]`` and
    ``−inf`` for any other list.

    Parameters
    ----------
    adj : array_like of bool, shape (M, M)
    ranking : sequence of int
        Distinct items, best first (at most 128).
    p : float
        Queue-jumping probability in [0, 1].
    direction : {"top-down", "bottom-up"}

    Returns
    -------
    float
        ``log p(Y | h, p)`` in ``[−inf, 0]``.
    """
    closed = validate_partial_order(adj)
    y = validate_ranking(ranking, closed.shape[0])
    p = validate_probability(p)
    top_down = _validate_direction(direction)
    max_states = _check_max_states(max_states)
    return _restricted_log_likelihood(closed, y, p, top_down, max_states, "ranking")


def _restricted_log_likelihood(closed, y, p, top_down, max_states, name):
    """Log-likelihood of one validated list, computed on the suborder ``h[S]`` alone."""
    if y.size > MAX_ITEMS:
        raise ValueError(f"{name} holds {y.size} items; at most {MAX_ITEMS} are supported")
    sub = np.ascontiguousarray(closed[np.ix_(y, y)])
    lists = np.arange(y.size, dtype=np.int64)[None, :]
    lengths = np.array([y.size], dtype=np.int64)
    return float(
        list_log_likelihoods_padded(sub, lists, lengths, p, top_down, max_states=max_states)[0]
    )


def list_log_likelihoods(
    adj, lists, p, direction: str = "top-down", *, max_states: int = DEFAULT_MAX_STATES
) -> np.ndarray:
    """Log-probabilities of many lists under one order (see :func:`list_log_likelihood`).

    Counts ``C(h[T])`` are memoised per call by item set, so lists sharing items and
    suffixes share work.

    Parameters
    ----------
    adj : array_like of bool, shape (M, M)
    lists : sequence of sequences of int, or int array (n_lists, max_len) padded with -1
    p : float
    direction : {"top-down", "bottom-up"}

    Returns
    -------
    numpy.ndarray of float64, shape (n_lists,)
    """
    closed = validate_partial_order(adj)
    padded, lengths = validate_rankings(lists, closed.shape[0])
    p = validate_probability(p)
    top_down = _validate_direction(direction)
    max_states = _check_max_states(max_states)
    if closed.shape[0] <= MAX_ITEMS:
        return list_log_likelihoods_padded(
            closed, padded, lengths, p, top_down, max_states=max_states
        )
    # More than 128 items: each list on its own suborder (no sharing between lists).
    return np.array(
        [
            _restricted_log_likelihood(closed, row[:m], p, top_down, max_states, f"lists[{i}]")
            for i, (row, m) in enumerate(zip(padded, lengths, strict=True))
        ]
    )


def list_log_likelihoods_padded(
    closed,
    padded,
    lengths,
    p: float,
    top_down: bool = True,
    *,
    max_states: int = DEFAULT_MAX_STATES,
    return_grad: bool = False,
):
    """Low-level batched likelihood: no validation (for hot loops such as a PyMC Op).

    Parameters
    ----------
    closed : bool array (M, M), M <= 128
        A transitively closed, acyclic order (e.g. from
        :func:`partial_order_from_utilities` or :func:`validate_partial_order`).
    padded : int64 array (n_lists, max_len)
        Lists of distinct items in ``0..M-1``, padded with anything after ``lengths``.
    lengths : int64 array (n_lists,)
    p : float in [0, 1]
    top_down : bool
        True for "top-down", False for "bottom-up".
    return_grad : bool
        Also return ``d log p(Y_i | h, p) / dp = Σ_j (1/r_j − ρ_j) / term_j`` where
        ``r_j`` is the number of items left and ``ρ_j`` the count ratio of step ``j``.

    Returns
    -------
    loglik : float64 array (n_lists,)
    dloglik_dp : float64 array (n_lists,), only if ``return_grad``
    """
    closed = np.asarray(closed, dtype=np.bool_)
    if closed.ndim != 2:
        raise ValueError(f"closed must be a 2-D (M, M) matrix, got shape {closed.shape}")
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    return list_log_likelihoods_stacked(
        closed[None],
        padded,
        lengths,
        np.zeros(lengths.shape[0], dtype=np.int64),
        p,
        top_down,
        max_states=max_states,
        return_grad=return_grad,
    )


def list_log_likelihoods_stacked(
    closed_stack,
    padded,
    lengths,
    labels,
    p: float,
    top_down: bool = True,
    *,
    max_states: int = DEFAULT_MAX_STATES,
    return_grad: bool = False,
):
    """Low-level batched likelihood where list ``i`` follows order ``labels[i]``.

    Like :func:`list_log_likelihoods_padded` with ``closed_stack`` a bool array
    ``(L, M, M)`` of transitively closed orders and ``labels`` an int64 array
    ``(n_lists,)`` with values in ``0..L-1``. Orders that no list uses are skipped.
    Only shapes and the range of ``labels`` are checked (cheaply); the lists and the
    orders are trusted.
    """
    closed_stack = np.ascontiguousarray(closed_stack, dtype=np.bool_)
    padded = np.ascontiguousarray(padded, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    if closed_stack.ndim != 3 or closed_stack.shape[1] != closed_stack.shape[2]:
        raise ValueError(f"closed_stack must have shape (L, M, M), got {closed_stack.shape}")
    n_orders, m_items = closed_stack.shape[0], closed_stack.shape[2]
    if m_items > MAX_ITEMS:
        raise ValueError(f"closed_stack has M = {m_items} items; at most {MAX_ITEMS} supported")
    n_lists = padded.shape[0]
    if padded.ndim != 2 or lengths.shape != (n_lists,) or labels.shape != (n_lists,):
        raise ValueError(
            f"padded (n_lists, max_len), lengths and labels (n_lists,) disagree: shapes "
            f"{padded.shape}, {lengths.shape}, {labels.shape}"
        )
    if n_lists and (labels.min() < 0 or labels.max() >= n_orders):
        raise ValueError(f"labels must lie in 0..{n_orders - 1}")
    ll, dp, ok = _linext.loglik_stacked_kernel(
        closed_stack,
        padded,
        lengths,
        labels,
        float(p),
        bool(top_down),
        bool(return_grad),
        _linext.float_binomials(),
        int(max_states),
    )
    if not ok:
        raise _limit_error(int(np.shape(closed_stack)[-1]), max_states)
    return (ll, dp) if return_grad else ll


# ----------------------------------------------------------------------------------
# Example orders


def _check_count(n, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    return int(n)


def random_two_dimensional_order(n: int, rng) -> np.ndarray:
    """Random 2-dimensional order: the intersection of two uniform random permutations.

    ``i ≻ j`` iff ``i`` precedes ``j`` in both permutations. Returns a closed
    ``(n, n)`` boolean matrix.
    """
    n = _check_count(n)
    rng = _validate_rng(rng)
    pos1 = rng.permutation(n)
    pos2 = rng.permutation(n)
    return (pos1[:, None] < pos1[None, :]) & (pos2[:, None] < pos2[None, :])


def crown_order(n: int) -> np.ndarray:
    """The crown on ``2n`` items: ``a_i = i`` is above ``b_j = n + j`` for all ``i ≠ j``.

    It has ``(n + 1) · n! · (n − 1)!`` linear extensions for ``n >= 1``.
    """
    n = _check_count(n)
    adj = np.zeros((2 * n, 2 * n), dtype=bool)
    adj[:n, n:] = ~np.eye(n, dtype=bool)
    return adj


def chain_order(n: int) -> np.ndarray:
    """The chain ``0 ≻ 1 ≻ ... ≻ n−1`` (closed); one linear extension."""
    n = _check_count(n)
    return np.triu(np.ones((n, n), dtype=bool), 1)


def antichain_order(n: int) -> np.ndarray:
    """``n`` pairwise incomparable items; ``n!`` linear extensions."""
    n = _check_count(n)
    return np.zeros((n, n), dtype=bool)


def grid_order(rows: int, cols: int) -> np.ndarray:
    """Product of two chains: item ``r·cols + c`` is above ``r'·cols + c'`` iff
    ``r <= r'`` and ``c <= c'`` (not both equal). Closed.

    ``grid_order(2, n)`` has Catalan(n) ``= binom(2n, n) / (n + 1)`` linear extensions.
    """
    rows = _check_count(rows, "rows")
    cols = _check_count(cols, "cols")
    r, c = np.divmod(np.arange(rows * cols), cols) if cols else (np.array([]), np.array([]))
    adj = (r[:, None] <= r[None, :]) & (c[:, None] <= c[None, :])
    np.fill_diagonal(adj, False)
    return adj
