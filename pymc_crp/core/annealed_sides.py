r"""The sides of the members along an annealed split--merge path (numba core).

The annealed split--merge moves of clustered partial orders
(:mod:`pymc_crp.step_methods.po_annealed_split_merge`) give the ``n`` members of two clusters
*sides* ``σ_r ∈ \{0, 1\}`` (member 0, the anchor ``a``, always on side 0; member 1, the
anchor ``b``, on side 1) and move along distributions

.. math::

    γ_β(σ, …) \propto \prod_{σ_r = 0} e^{ℓ^s_r} \prod_{σ_r = 1} e^{β ℓ^s_r + (1-β) ℓ^t_r}
        \; g(σ)^{f}\; E(σ)^{1-β}, \qquad
    E(σ) \propto Γ(n_0 - d)\, Γ(n_1 - d),

``ℓ^s_r``, ``ℓ^t_r`` member ``r``'s tempered log-likelihoods under the two slots' orders,
``n_0``, ``n_1`` the sides' sizes, ``d`` the Pitman--Yor discount and ``g`` a mixture over
components ``c`` of independent sides,

.. math::

    g(σ) = \sum_c w_c \prod_{r \ge 2} g_{rc}(σ_r),

with ``g_{r0} = 1/2`` (uniform sides) and one component per item pair ``(i, j)`` that ``a``
orders ``i`` first and ``b`` orders ``j`` first: ``g_{rc}(1) = 1 - ε`` if list ``r`` puts
``j`` before ``i``, ``ε`` if ``i`` before ``j``, ``1/2`` if it lacks one of them
(:func:`pair_side_logs`). The Gibbs draw of one side given the others
(:func:`annealed_side_draws`) is

.. math::

    P(σ_r = 1 \mid σ_{-r}) \propto e^{β ℓ^s_r + (1-β) ℓ^t_r} (n^{-r}_1 - d)^{1-β}
        \Big(\sum_c w_c\, G^{-r}_c\, g_{rc}(1)\Big)^{f}, \qquad
    G^{-r}_c = \prod_{q \ne r, q \ge 2} g_{qc}(σ_q),

and ``e^{ℓ^s_r} (n^{-r}_0 - d)^{1-β} (\sum_c w_c G^{-r}_c g_{rc}(0))^f`` for side 0 (the
ratio ``Γ(n + 1 - d)/Γ(n - d) = n - d`` of the EPPF), with the likelihoods left out if both
are zero. The draws keep ``\log G_c`` of the whole allocation (``log_g``) up to date.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "annealed_side_draws",
    "list_positions",
    "mixture_log_density",
    "pair_side_logs",
]


def list_positions(lists: np.ndarray, n_items: int) -> np.ndarray:
    """``(N, M)`` position of each item in each padded list (``-1`` padding), ``-1`` where
    absent."""
    positions = np.full((lists.shape[0], n_items), -1, dtype=np.int64)
    rows, cols = np.nonzero(lists >= 0)
    positions[rows, lists[rows, cols]] = cols
    return positions


def pair_side_logs(positions: np.ndarray, flip: float) -> tuple[np.ndarray, np.ndarray]:
    r"""``(log g(0), log g(1))``, each ``(n, 1 + P)``, of the members (``positions`` of their
    lists, the anchors ``a``, ``b`` first) under the uniform component and the ``P`` item
    pairs ``(i, j)`` that ``a`` orders ``i`` first and ``b`` orders ``j`` first:

    .. math::

        g_k(1 \mid i, j) = 1 - ε \text{ if } k \text{ puts } j \text{ before } i, \quad
        ε \text{ if } i \text{ before } j, \quad 1/2 \text{ otherwise}.
    """
    a, b = positions[0], positions[1]
    both = (a[:, None] >= 0) & (a[None, :] >= 0) & (b[:, None] >= 0) & (b[None, :] >= 0)
    first_i, first_j = np.nonzero(both & (a[:, None] < a[None, :]) & (b[:, None] > b[None, :]))
    pi, pj = positions[:, first_i], positions[:, first_j]
    has = (pi >= 0) & (pj >= 0)
    one = np.where(has, np.where(pj < pi, 1.0 - flip, flip), 0.5)
    prob_one = np.concatenate([np.full((positions.shape[0], 1), 0.5), one], axis=1)
    return np.log(1.0 - prob_one), np.log(prob_one)


@njit(cache=True, nogil=True)
def mixture_log_density(log_weights, log_g):  # pragma: no cover - compiled
    r"""``\log \sum_c e^{\log w_c + \log G_c}`` (the components' ``log_weights`` may be
    ``-inf``)."""
    top = -np.inf
    for c in range(log_g.shape[0]):
        top = max(top, log_weights[c] + log_g[c])
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for c in range(log_g.shape[0]):
        total += math.exp(log_weights[c] + log_g[c] - top)
    return top + math.log(total)


@njit(cache=True, nogil=True)
def annealed_side_draws(
    sides, order, uniforms, ll_s, ll_t, g0, g1, log_weights, log_g, beta, power, discount
):  # pragma: no cover - compiled
    r"""Gibbs draws of ``sides[r]`` for ``r`` in ``order`` (never 0 or 1) at ``β = beta``,
    ``f = power`` (module docstring), in place; ``log_g`` ``(C,)`` (``\log G_c`` of the
    allocation, updated). Member ``r`` goes to side 1 if ``uniforms[r]`` is below its
    conditional probability.

    Parameters
    ----------
    sides : int64 (n,)
    ll_s, ll_t : float64 (n,)
        The members' tempered log-likelihoods under the two slots (``ℓ^s``, ``ℓ^t``).
    g0, g1 : float64 (n, C)
        ``\log g_{rc}(0)`` and ``\log g_{rc}(1)``.
    log_weights : float64 (C,)
        ``\log w_c``.
    """
    counts = np.zeros(2)
    for r in range(sides.shape[0]):
        counts[sides[r]] += 1.0
    without = np.empty(log_g.shape[0])
    with_side = np.empty(log_g.shape[0])
    for t in range(order.shape[0]):
        r = order[t]
        counts[sides[r]] -= 1.0
        for c in range(log_g.shape[0]):
            without[c] = log_g[c] - (g1[r, c] if sides[r] == 1 else g0[r, c])
        for c in range(log_g.shape[0]):
            with_side[c] = without[c] + g0[r, c]
        q0 = power * mixture_log_density(log_weights, with_side)
        for c in range(log_g.shape[0]):
            with_side[c] = without[c] + g1[r, c]
        q1 = power * mixture_log_density(log_weights, with_side)
        prior0 = (1.0 - beta) * math.log(counts[0] - discount)
        prior1 = (1.0 - beta) * math.log(counts[1] - discount)
        lik0 = ll_s[r]
        lik1 = 0.0
        if beta > 0.0:  # a zero weight ignores an infinite log-likelihood
            lik1 += beta * ll_s[r]
        if beta < 1.0:
            lik1 += (1.0 - beta) * ll_t[r]
        if lik0 == -np.inf and lik1 == -np.inf:
            lik0 = 0.0
            lik1 = 0.0
        log0 = lik0 + prior0 + q0
        log1 = lik1 + prior1 + q1
        top = max(log0, log1)
        p_one = math.exp(log1 - top) / (math.exp(log0 - top) + math.exp(log1 - top))
        side = 1 if uniforms[r] < p_one else 0
        sides[r] = side
        counts[side] += 1.0
        for c in range(log_g.shape[0]):
            log_g[c] = without[c] + (g1[r, c] if side == 1 else g0[r, c])
