r"""Conjugate split--merge moves for the labels (numba): sequentially-allocated merge--split.

With the slot parameters integrated out (the conjugate families of
:mod:`pymc_crp.core.conjugate_math`), one move picks two observations ``i ≠ j`` uniformly:

* if they share slot ``s``, it proposes a **split**: ``i`` stays in ``s``, ``j`` opens an empty
  slot ``t`` drawn uniformly among the ``E`` empty slots, and the other members of ``s`` are
  allocated in random order to ``i``'s or ``j``'s side with probability
  ``∝ n_side · p(y_k | side so far)`` (Dahl, 2003); ``q`` is the product of those choices;
* otherwise it proposes the **merge** of ``j``'s slot into ``i``'s; ``q`` is then the
  probability that the split from the merged state (same ``i``, ``j``, visiting order)
  recreates the current pair of clusters, and ``E`` the number of empty slots after merging.

The split is accepted with probability

.. math::

    \min\Big(1,\ \frac{p(c')}{p(c)}\,\frac{m(y_A)\, m(y_B)}{m(y_{A \cup B})}\,\frac{E}{q}\Big)

(``p(c)`` the partition prior of the *label vector*, ``m`` the marginal likelihoods) and the
merge with the reciprocal form. Label-vector prior ratios of a split of ``n`` into
``n_A + n_B`` with ``K`` occupied slots before it: CRP
``(θ + Kd) Γ(n_A - d) Γ(n_B - d) / (Γ(n - d) Γ(1 - d)) / (L - K)``; Dirichlet--multinomial
``Γ(n_A + γ/A) Γ(n_B + γ/A) / (Γ(n + γ/A) Γ(γ/A))``. The moves leave the collapsed posterior
of the labels invariant (Metropolis--Hastings) and only change labels of the two clusters.

References
----------
.. [1] Jain, S. and Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure for
   the Dirichlet process mixture model. *J. Comput. Graph. Stat.* 13(1), 158–182.
.. [2] Dahl, D. B. (2003). An improved merge-split sampler for conjugate Dirichlet process
   mixture models. Technical report 1086, Dept. of Statistics, University of Wisconsin.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.conjugate_math import _add, _log_pred
from pymc_crp.core.partition_math import CRP_PRIOR

__all__ = ["split_merge_moves"]


@njit(cache=True, nogil=True)
def _log_split_prior_ratio(n_a, n_b, n_occupied, n_slots, prior_code, a, b):  # pragma: no cover
    """log p(c_split)/p(c_merged) for label vectors (see the module docstring)."""
    n = n_a + n_b
    if prior_code == CRP_PRIOR:
        return (
            math.log(a + n_occupied * b)
            + math.lgamma(n_a - b)
            + math.lgamma(n_b - b)
            - math.lgamma(n - b)
            - math.lgamma(1.0 - b)
            - math.log(n_slots - n_occupied)
        )
    alpha = a / n_slots
    return (
        math.lgamma(n_a + alpha)
        + math.lgamma(n_b + alpha)
        - math.lgamma(n + alpha)
        - math.lgamma(alpha)
    )


@njit(cache=True, nogil=True)
def _log_marginal(family, y, aux, hyper, slot, members, count):  # pragma: no cover
    """log m(y_members) in ``slot`` by the chain rule of predictive densities."""
    st = np.zeros((1, 2))
    out = 0.0
    for k in range(count):
        idx = members[k]
        out += _log_pred(family, hyper[slot, 0], hyper[slot, 1], st[0, 0], st[0, 1],
                         y[idx], aux[idx, slot])  # fmt: skip
        _add(family, st, 0, y[idx], aux[idx, slot], 1.0)
    return out


@njit(cache=True, nogil=True)
def _one_move(
    family,
    y,
    aux,
    hyper,
    labels,
    counts,
    i,
    j,
    order,
    uniforms,
    u_slot,
    u_accept,
    prior_code,
    a,
    b,
    members,
    side,
):  # pragma: no cover
    """One split or merge proposal; returns 1 (split accepted), 2 (merge accepted), 0."""
    n_slots = counts.shape[0]
    s = labels[i]
    t = labels[j]
    n_empty = 0
    n_occupied = 0
    for k in range(n_slots):
        if counts[k] == 0:
            n_empty += 1
        else:
            n_occupied += 1
    splitting = s == t
    if splitting:
        if n_empty == 0:
            return 0
        pick = min(int(u_slot * n_empty), n_empty - 1)
        for k in range(n_slots):
            if counts[k] == 0:
                if pick == 0:
                    t = k
                    break
                pick -= 1
        empty_after = n_empty
    else:
        empty_after = n_empty + 1
    # members of the (merged) cluster: i, j, then the others in visiting order
    count = 2
    members[0] = i
    members[1] = j
    for r in range(order.shape[0]):
        k = order[r]
        if k != i and k != j and (labels[k] == s or labels[k] == labels[j]):
            members[count] = k
            count += 1
    st_a = np.zeros((1, 2))
    st_b = np.zeros((1, 2))
    log_ma = _log_pred(family, hyper[s, 0], hyper[s, 1], 0.0, 0.0, y[i], aux[i, s])
    log_mb = _log_pred(family, hyper[t, 0], hyper[t, 1], 0.0, 0.0, y[j], aux[j, t])
    _add(family, st_a, 0, y[i], aux[i, s], 1.0)
    _add(family, st_b, 0, y[j], aux[j, t], 1.0)
    n_a = 1
    n_b = 1
    side[0] = 0
    side[1] = 1
    log_q = 0.0
    for r in range(2, count):
        k = members[r]
        pa = _log_pred(family, hyper[s, 0], hyper[s, 1], st_a[0, 0], st_a[0, 1], y[k], aux[k, s])
        pb = _log_pred(family, hyper[t, 0], hyper[t, 1], st_b[0, 0], st_b[0, 1], y[k], aux[k, t])
        la = math.log(n_a) + pa
        lb = math.log(n_b) + pb
        top = max(la, lb)
        log_norm = top + math.log(math.exp(la - top) + math.exp(lb - top))
        if splitting:
            to_a = math.log(uniforms[r]) < la - log_norm
        else:
            to_a = labels[k] == s
        if to_a:
            log_q += la - log_norm
            log_ma += pa
            _add(family, st_a, 0, y[k], aux[k, s], 1.0)
            n_a += 1
            side[r] = 0
        else:
            log_q += lb - log_norm
            log_mb += pb
            _add(family, st_b, 0, y[k], aux[k, t], 1.0)
            n_b += 1
            side[r] = 1
    log_m_merged = _log_marginal(family, y, aux, hyper, s, members, count)
    k_merged = n_occupied if splitting else n_occupied - 1
    log_ratio = (
        _log_split_prior_ratio(n_a, n_b, k_merged, n_slots, prior_code, a, b)
        + log_ma
        + log_mb
        - log_m_merged
        + math.log(empty_after)
        - log_q
    )
    if splitting:
        if math.log(u_accept) < log_ratio:
            for r in range(count):
                if side[r] == 1:
                    labels[members[r]] = t
            counts[s] = n_a
            counts[t] = n_b
            return 1
        return 0
    if math.log(u_accept) < -log_ratio:
        for r in range(count):
            labels[members[r]] = s
        counts[s] = count
        counts[t] = 0
        return 2
    return 0


def split_merge_moves(
    family: int,
    y: np.ndarray,
    aux: np.ndarray,
    hyper: np.ndarray,
    labels: np.ndarray,
    counts: np.ndarray,
    n_moves: int,
    prior_code: int,
    concentration: float,
    discount: float,
    rng: np.random.Generator,
) -> int:
    """``n_moves`` split--merge proposals on ``labels``/``counts`` (in place, int64).

    Arrays as for :func:`pymc_crp.core.conjugate_math.collapsed_label_sweep`; all randomness from
    ``rng``. Returns the number of accepted moves.
    """
    n_obs = y.shape[0]
    if n_obs < 2 or n_moves < 1:
        return 0
    n_moves = int(n_moves)
    first = rng.integers(n_obs, size=n_moves)
    second = (first + 1 + rng.integers(n_obs - 1, size=n_moves)) % n_obs  # uniform, != first
    orders = rng.permuted(np.tile(np.arange(n_obs, dtype=np.int64), (n_moves, 1)), axis=1)
    uniforms = rng.random((n_moves, n_obs))
    extra = rng.random((n_moves, 2))
    return _moves(
        int(family), y, aux, hyper, labels, counts, first.astype(np.int64),
        second.astype(np.int64), orders, uniforms, extra, int(prior_code), float(concentration),
        float(discount),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _moves(
    family,
    y,
    aux,
    hyper,
    labels,
    counts,
    first,
    second,
    orders,
    uniforms,
    extra,
    prior_code,
    a,
    b,
):  # pragma: no cover
    n_obs = y.shape[0]
    members = np.empty(n_obs, dtype=np.int64)
    side = np.empty(n_obs, dtype=np.int64)
    accepted = 0
    for m in range(first.shape[0]):
        result = _one_move(
            family, y, aux, hyper, labels, counts, first[m], second[m], orders[m],
            uniforms[m], extra[m, 0], extra[m, 1], prior_code, a, b, members, side,
        )  # fmt: skip
        if result > 0:
            accepted += 1
    return accepted
