"""Input validation for :mod:`pymc_crp.core.posets` (and its callers), plus the closure.

Every public function of :mod:`pymc_crp.core.posets` checks its arguments with these helpers,
which raise ``ValueError`` (``TypeError`` for a wrong generator type) naming the
offending argument. All public names are re-exported by :mod:`pymc_crp.core.posets`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from pymc_crp.core.checks import positive_int

_DIRECTIONS = ("top-down", "bottom-up")


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


def _check_max_states(max_states) -> int:
    positive_int(max_states, "max_states", type_error=ValueError)
    return int(max_states)


def _check_size(size) -> int:
    if size is None:
        return 1
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise ValueError(f"size must be None or a non-negative integer, got {size!r}")
    return int(size)


def _restrict(closed: np.ndarray, items, name: str = "items"):
    """``(sub_order, items)`` for the suborder on ``items`` (default all)."""
    if items is None:
        return closed, np.arange(closed.shape[0])
    idx = validate_ranking(items, closed.shape[0], name, allow_empty=True)
    return closed[np.ix_(idx, idx)], idx


def _kernel_array(values, dtype) -> np.ndarray:
    """``values`` as a C-contiguous, writable array of ``dtype``.

    The compiled kernels are specialised (and cached) per argument type, and numba types
    read-only or non-contiguous arrays differently: normalising keeps one compilation.
    """
    arr = np.ascontiguousarray(values, dtype=dtype)
    return arr if arr.flags.writeable else arr.copy()
