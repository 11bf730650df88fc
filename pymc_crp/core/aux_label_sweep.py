r"""Numeric core of the auxiliary-slot label sweep (Neal's Algorithm 8, reused auxiliaries).

A Pitman--Yor (CRP) label vector ``c`` over ``L`` slots, slot ``j`` owning parameters
``φ_j`` (a row of ``params``). Each observation ``i`` in turn is removed from its slot and
given a new label drawn from

.. math::

    P(c_i = j) \propto (n_j - d)\, e^{ℓ_{ij}} \ (\text{occupied } j), \qquad
    P(c_i = \text{aux } t) \propto \frac{w(K)}{m}\, e^{ℓ^{aux}_{it}}, \quad t = 1..m,

where ``n_j`` and ``K`` are counted without ``i`` and ``ψ_1..ψ_m`` are auxiliary parameters
distributed as independent draws of the base (prior) distribution. The weight of a new cluster
``w(K)`` is ``θ + dK`` (:func:`new_cluster_weights`), or ``G(K+1)/G(K)`` when the label move
integrates the concentration out (:mod:`pymc_crp.core.integrated_concentration`). Only the
``K`` occupied slots and the ``m`` auxiliaries are scored: ``O(N (K + m))`` per sweep whatever
``L`` is.

The auxiliaries are *reused* (Favaro and Teh 2013, "ReUse"): when ``i`` was alone in its
slot, its parameter replaces a uniformly chosen auxiliary (exactly the auxiliary configuration
of Neal's Algorithm 8, whose other ``m - 1`` draws are prior draws independent of the state);
when ``i`` opens a new cluster from auxiliary ``t``, the cluster takes ``ψ_t`` into a uniformly
chosen free slot and ``ψ_t`` must be replaced by an independent prior draw. The auxiliary that
a singleton's parameter displaced is such a draw, which no visit reads afterwards: the sweep
keeps every one of them as a *spare* in a ring of ``S`` places (when ``S`` are held the oldest
gives way) and puts the newest one held in the taken auxiliary's place, and only when none is
held does the caller draw one afresh (the sweep returns). The exact enumeration of every
branch of the visits (``tests/core/test_aux_label_sweep.py``) finds this rule exact to
``10^{-16}``, while keeping a displaced auxiliary only while fewer than ``S`` are held
(dropping the newest) moved the law of the state by up to ``6 \cdot 10^{-4}`` with ``m = 1``:
the auxiliaries are independent of the state after each visit but not of the sweep's history
(the births, which their values influenced), and the number held records that history. A
list alone in its cluster that leaves it and opens a new one again (common where some lists
fit no cluster) then costs no new draw and no list likelihoods. Unchosen auxiliaries stay
independent prior draws, so the next visit may use them again: in the extended target of a
visit (Neal's Algorithm 8), given that the observation joined an occupied slot, the
auxiliaries' conditional is their prior, whatever the labels and parameters, so after each
visit the auxiliaries are independent prior draws, independent of the state (the one a new
cluster took replaced); a later sweep may reuse them, and the spares, too, if the
moves between do not read them. Which free slot a new cluster takes is uniform, so the slot
assignment of the blocks stays uniform as the label-vector prior ``EPPF / (L!/(L-K)!)``
requires. If no slot is free, new clusters are impossible (the CRP truncated at ``L``) and the
sweep counts it.

Nothing here imports PyMC: columns of log-likelihoods come in as arrays.

References
----------
.. [1] Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture
   models. *J. Comput. Graph. Stat.* 9(2), 249–265.
.. [2] Favaro, S. and Teh, Y. W. (2013). MCMC for normalized random measure mixture models.
   *Stat. Sci.* 28(3), 335–359.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.partition_math import draw_weighted

__all__ = ["SweepState", "aux_label_sweep", "new_cluster_weights"]

# Layout of the int64 ``state`` vector shared with the caller.
N_OCCUPIED, N_FREE, N_FULL, BORN_FROM, N_SPARE, SPARE_HEAD = 0, 1, 2, 3, 4, 5


def new_cluster_weights(theta: float, discount: float, n_slots: int) -> np.ndarray:
    """``w(K) = θ + dK`` for ``K = 0..L``: the Pitman--Yor weight of a new cluster when the
    other items hold ``K`` clusters (the array the label kernels read)."""
    return float(theta) + float(discount) * np.arange(int(n_slots) + 1, dtype=np.float64)


class SweepState:
    """Occupied and free slot lists of a label vector, as the compiled sweep keeps them.

    ``occupied[:K]`` and ``free[:L-K]`` list the slots; ``where[s]`` is the position of slot
    ``s`` in its list; ``state`` holds ``K``, ``L - K``, the number of visits at which a new
    cluster had prior mass but no slot was free, the auxiliary a new cluster came from, the
    number of spare auxiliaries held and the place of the oldest of them in the ring of spares
    (the last two set by the caller, see :func:`aux_label_sweep`).
    """

    def __init__(self, labels: np.ndarray, n_slots: int):
        counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
        if counts.shape[0] != n_slots:
            raise ValueError(f"labels must lie in 0..{n_slots - 1}, got {labels.max()}")
        self.counts = counts
        occupied = np.flatnonzero(counts > 0).astype(np.int64)
        free = np.flatnonzero(counts == 0).astype(np.int64)
        self.occupied = np.zeros(n_slots, np.int64)
        self.free = np.zeros(n_slots, np.int64)
        self.occupied[: occupied.size] = occupied
        self.free[: free.size] = free
        self.where = np.zeros(n_slots, np.int64)
        self.where[occupied] = np.arange(occupied.size)
        self.where[free] = np.arange(free.size)
        self.state = np.array([occupied.size, free.size, 0, -1, 0, 0], dtype=np.int64)


@njit(cache=True, nogil=True)
def _move(slot, src, dst, where, state, src_n, dst_n):  # pragma: no cover - compiled
    """Move ``slot`` from list ``src`` (length ``state[src_n]``) to the end of ``dst``."""
    last = src[state[src_n] - 1]
    pos = where[slot]
    src[pos] = last
    where[last] = pos
    state[src_n] -= 1
    dst[state[dst_n]] = slot
    where[slot] = state[dst_n]
    state[dst_n] += 1


@njit(cache=True, nogil=True)
def _keep_spare(column, row, spare_ll, spare_params, state):  # pragma: no cover - compiled
    """Put a displaced auxiliary (``column`` of ``aux_ll``, ``row`` of parameters) in the ring
    of spares as its newest; when the ring is full the oldest gives way."""
    size = spare_ll.shape[1]
    if size == 0:
        return
    held, head = state[N_SPARE], state[SPARE_HEAD]
    if held < size:
        place = (head + held) % size
        state[N_SPARE] = held + 1
    else:
        place = head
        state[SPARE_HEAD] = (head + 1) % size
    spare_ll[:, place] = column
    spare_params[place, :] = row


@njit(cache=True, nogil=True)
def aux_label_sweep(
    ll,
    aux_ll,
    params,
    aux_params,
    labels,
    counts,
    occupied,
    free,
    where,
    state,
    order,
    start,
    uniforms,
    new_weights,
    discount,
    logw,
    spare_ll,
    spare_params,
    reborn,
):  # pragma: no cover - compiled
    """Visit ``order[start:]`` (see the module docstring); stop after a new cluster is born
    when no spare auxiliary is left to take the place of the one it took.

    Parameters
    ----------
    ll : float64 (N, L)
        ``log p(y_i | φ_j)``; only the columns of occupied slots are read. The column of a
        new cluster is copied from its auxiliary's.
    aux_ll : float64 (N, m)
        ``log p(y_i | ψ_t)``; a column is overwritten when a singleton's parameter enters it.
    params, aux_params : float64 (L, P), (m, P)
        Slot and auxiliary parameters (rows copied along with the columns).
    labels, counts, occupied, free, where, state
        Label vector and :class:`SweepState` arrays, updated in place.
    order : int64 (N,)
        Visiting order; ``uniforms`` (N, 3) the uniforms of each visit (label draw, auxiliary
        taken by a singleton's parameter, free slot of a new cluster).
    new_weights : float64 (L + 1,)
        ``w(K)``, the weight of a new cluster when the other items hold ``K`` clusters.
    discount : float
        Pitman--Yor discount.
    logw : float64 (L + m,)
        Scratch.
    spare_ll, spare_params : float64 (N, S), (S, P)
        Ring of spare auxiliaries, ``state[4]`` of them held from place ``state[5]`` (the
        oldest) on: every auxiliary that a singleton's parameter displaces is kept there as the
        newest (the oldest giving way when ``S`` are held), and a new cluster's auxiliary is
        replaced by the newest one held. A displaced auxiliary is an independent prior draw
        that no visit reads afterwards, so it is still one, independent of the state, when it
        takes the place of a taken auxiliary (module docstring).
    reborn : bool (L,)
        Set for each slot where a new cluster is born (its column holds only the rows not yet
        visited at its auxiliary's last draw).

    Returns
    -------
    int
        The position after the last visit made: ``N`` at the end of the sweep, else a new
        cluster was born at the visit before it from auxiliary ``state[3]`` with no spare
        left, which the caller must refresh (rows ``order[position:]`` of its column) before
        resuming. A cluster born so at the last visit also returns ``N``: ``state[3]``
        (which the caller sets to ``-1`` before the call) tells whether one was.
    """
    n_obs = order.shape[0]
    n_aux = aux_ll.shape[1]
    for pos in range(start, n_obs):
        i = order[pos]
        old = labels[i]
        counts[old] -= 1
        if counts[old] == 0:  # a singleton: its parameter becomes a random auxiliary
            _move(old, occupied, free, where, state, N_OCCUPIED, N_FREE)
            t = min(int(uniforms[pos, 1] * n_aux), n_aux - 1)
            _keep_spare(aux_ll[:, t], aux_params[t, :], spare_ll, spare_params, state)
            aux_ll[:, t] = ll[:, old]
            aux_params[t, :] = params[old, :]
        n_occ = state[N_OCCUPIED]
        top = -np.inf
        for r in range(n_occ):
            j = occupied[r]
            logw[r] = math.log(counts[j] - discount) + ll[i, j]
            top = max(top, logw[r])
        new_mass = new_weights[n_occ]
        n_choices = n_occ
        if state[N_FREE] > 0 and new_mass > 0.0:
            log_new = math.log(new_mass / n_aux)
            for t in range(n_aux):
                logw[n_occ + t] = log_new + aux_ll[i, t]
                top = max(top, logw[n_occ + t])
            n_choices = n_occ + n_aux
        elif new_mass > 0.0:
            state[N_FULL] += 1
        if top == -np.inf:  # impossible everywhere: the prior decides
            top = 0.0
            for r in range(n_occ):
                logw[r] = math.log(counts[occupied[r]] - discount)
            for t in range(n_occ, n_choices):
                logw[t] = math.log(new_mass / n_aux)
        total = 0.0
        for r in range(n_choices):
            logw[r] = math.exp(logw[r] - top)
            total += logw[r]
        choice = draw_weighted(logw[:n_choices], total, uniforms[pos, 0])
        if choice < n_occ:
            j = occupied[choice]
            labels[i] = j
            counts[j] += 1
            continue
        t = choice - n_occ
        slot = free[min(int(uniforms[pos, 2] * state[N_FREE]), state[N_FREE] - 1)]
        _move(slot, free, occupied, where, state, N_FREE, N_OCCUPIED)
        labels[i] = slot
        counts[slot] = 1
        ll[:, slot] = aux_ll[:, t]
        params[slot, :] = aux_params[t, :]
        reborn[slot] = True
        held = state[N_SPARE]
        if held > 0:  # the newest spare takes the taken auxiliary's place
            newest = (state[SPARE_HEAD] + held - 1) % spare_ll.shape[1]
            aux_ll[:, t] = spare_ll[:, newest]
            aux_params[t, :] = spare_params[newest, :]
            state[N_SPARE] = held - 1
            continue
        state[BORN_FROM] = t
        return pos + 1
    return n_obs
