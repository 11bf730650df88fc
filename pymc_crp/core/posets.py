"""Partial orders, linear extensions and the queue-jumping list likelihood.

The pure numeric core of the hierarchical partial-order (HPO) model (docs/mathematics.md,
*Partial orders*); no PyMC or PyTensor here. The compiled kernels live in
:mod:`pymc_crp.core.linext_kernels` (cached on disk after the first compilation), input
checks in :mod:`pymc_crp.core.poset_validation` and example orders in
:mod:`pymc_crp.core.poset_examples`; all public names are importable from here (and from
:mod:`pymc_crp.posets`).

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

import numpy as np

from pymc_crp.core import linext_kernels as _linext
from pymc_crp.core import linext_sampling as _sampling
from pymc_crp.core import linext_support as _tables
from pymc_crp.core.poset_examples import (
    antichain_order,
    chain_order,
    crown_order,
    grid_order,
    random_two_dimensional_order,
)
from pymc_crp.core.poset_validation import (
    _check_max_states,
    _check_size,
    _kernel_array,
    _restrict,
    _square_bool,  # noqa: F401  (kept importable from here)
    _validate_direction,
    _validate_rng,
    transitive_closure,
    validate_partial_order,
    validate_probability,
    validate_ranking,
    validate_rankings,
)

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

MAX_ITEMS = _tables.MAX_KERNEL_ITEMS


class LinearExtensionLimitError(ValueError):
    """A linear-extension computation would exceed its state (memory/time) limit."""


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
    from scipy.sparse.csgraph import connected_components  # only for orders above 128 items

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


def _kernel_count(closed: np.ndarray, exact: bool, max_states: int):
    """``C`` of a closed order with at most 128 items: an int if ``exact`` else a float."""
    n = closed.shape[0]
    if exact:
        sizes = _tables.chain_partition_sizes(closed)
        log2_bound = (math.lgamma(n + 1) - sum(math.lgamma(s + 1) for s in sizes)) / math.log(2)
        primes, binom_r = _tables.residue_tables(_tables.primes_needed(log2_bound))
    else:
        primes, binom_r = _tables.no_residues()
    f, residues, _, exceeded = _linext.count_kernel(
        _tables.relation_words(closed), primes, _tables.float_binomials(), binom_r, int(max_states)
    )
    if exceeded:
        raise _limit_error(n, max_states)
    if not exact:
        return f
    value = _tables.crt(residues, primes)
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
        out, exceeded = _sampling.sample_lists_kernel(
            _tables.relation_words(sub), 0.0, uniforms, _tables.float_binomials(), int(max_states)
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
    uniforms = rng.random((n_draws, idx.size, 2))
    out, exceeded = _sampling.sample_lists_kernel(
        _tables.relation_words(sub, dual=not top_down),
        p,
        uniforms,
        _tables.float_binomials(),
        int(max_states),
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
    """Log-probability of one list under the queue-jumping model (docs/mathematics.md).

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
    lengths = np.asarray(lengths, dtype=np.int64)
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
    closed_stack = np.asarray(closed_stack, dtype=np.bool_)
    padded = _kernel_array(padded, np.int64)
    lengths = _kernel_array(lengths, np.int64)
    labels = _kernel_array(labels, np.int64)
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
    perm, starts = _tables.group_by_label(labels, n_orders)
    ll, dp, ok = _linext.loglik_stacked_kernel(
        _tables.relation_words(closed_stack, dual=not top_down),
        padded,
        lengths,
        perm,
        starts,
        float(p),
        bool(top_down),
        bool(return_grad),
        _tables.float_binomials(),
        int(max_states),
    )
    if not ok:
        raise _limit_error(int(np.shape(closed_stack)[-1]), max_states)
    return (ll, dp) if return_grad else ll
