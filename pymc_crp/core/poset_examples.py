"""Example partial orders: random 2-dimensional orders, crowns, chains, grids.

All are returned as closed boolean ``(M, M)`` matrices (``adj[i, j]``: item ``i`` above
item ``j``) and are re-exported by :mod:`pymc_crp.core.posets`.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.checks import integer_at_least
from pymc_crp.core.poset_validation import _validate_rng


def random_two_dimensional_order(n: int, rng) -> np.ndarray:
    """Random 2-dimensional order: the intersection of two uniform random permutations.

    ``i ≻ j`` iff ``i`` precedes ``j`` in both permutations. Returns a closed
    ``(n, n)`` boolean matrix.
    """
    n = integer_at_least(n, "n", type_error=ValueError)
    rng = _validate_rng(rng)
    pos1 = rng.permutation(n)
    pos2 = rng.permutation(n)
    return (pos1[:, None] < pos1[None, :]) & (pos2[:, None] < pos2[None, :])


def crown_order(n: int) -> np.ndarray:
    """The crown on ``2n`` items: ``a_i = i`` is above ``b_j = n + j`` for all ``i ≠ j``.

    It has ``(n + 1) · n! · (n − 1)!`` linear extensions for ``n >= 1``.
    """
    n = integer_at_least(n, "n", type_error=ValueError)
    adj = np.zeros((2 * n, 2 * n), dtype=bool)
    adj[:n, n:] = ~np.eye(n, dtype=bool)
    return adj


def chain_order(n: int) -> np.ndarray:
    """The chain ``0 ≻ 1 ≻ ... ≻ n−1`` (closed); one linear extension."""
    n = integer_at_least(n, "n", type_error=ValueError)
    return np.triu(np.ones((n, n), dtype=bool), 1)


def antichain_order(n: int) -> np.ndarray:
    """``n`` pairwise incomparable items; ``n!`` linear extensions."""
    n = integer_at_least(n, "n", type_error=ValueError)
    return np.zeros((n, n), dtype=bool)


def grid_order(rows: int, cols: int) -> np.ndarray:
    """Product of two chains: item ``r·cols + c`` is above ``r'·cols + c'`` iff
    ``r <= r'`` and ``c <= c'`` (not both equal). Closed.

    ``grid_order(2, n)`` has Catalan(n) ``= binom(2n, n) / (n + 1)`` linear extensions.
    """
    rows = integer_at_least(rows, "rows", type_error=ValueError)
    cols = integer_at_least(cols, "cols", type_error=ValueError)
    r, c = np.divmod(np.arange(rows * cols), cols) if cols else (np.array([]), np.array([]))
    adj = (r[:, None] <= r[None, :]) & (c[:, None] <= c[None, :])
    np.fill_diagonal(adj, False)
    return adj
