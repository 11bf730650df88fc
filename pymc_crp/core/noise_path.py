r"""Numeric core of the joint move of the list noise ``p`` and the labels along an annealed path.

The labels ``z`` of ``N`` lists over ``L`` slots (slot ``s`` with a fixed order ``h_s``) and the
noise ``p`` have the (tempered) target

.. math::

    π(z, p) \propto π_0(p)\, \mathrm{EPPF}(z; θ, d)\, \frac{(L - K)!}{L!}
        \prod_i p(Y_i \mid h_{z_i}, p)^{β}

(``K`` occupied slots; the slot factor makes every assignment of blocks to slots equally
likely). With the concentration integrated out (:mod:`pymc_crp.core.integrated_concentration`)
the EPPF is replaced by ``G(K) ∏_k (1 - d)_{n_k - 1}`` and ``θ + d K_{-i}`` below by the
new-cluster weight ``w(K_{-i}) = G(K_{-i} + 1)/G(K_{-i})``; the kernels read the weights only.
A proposal ``p' `` is joined to ``p`` by the path ``p_0 = p, p_1, …, p_T = p'`` and
the labels follow it: ``z^{(0)} = z`` and, for ``t = 1, …, T - 1``, ``z^{(t)}`` is one sweep of
a kernel reversible for ``π(\cdot, p_t)`` started at ``z^{(t-1)}``. The end point
``(z^{(T-1)}, p')`` is accepted with probability ``min(1, W)``,

.. math::

    \log W = \log\frac{π_0(p')}{π_0(p)}
        + β \sum_{t=0}^{T-1} \sum_i \big(\ell_i(z^{(t)}; p_{t+1}) - \ell_i(z^{(t)}; p_t)\big),

``ℓ_i(z; q) = \log p(Y_i \mid h_{z_i}, q)`` (non-equilibrium candidate Monte Carlo: Neal
1996's tempered transitions run one way, Nilmeier et al. 2011). It is exact when each sweep is
reversible for its ``π(\cdot, p_t)`` and the reverse path visits the same ``p_t`` in reverse
order (a symmetric proposal and a path that is a function of its end points, e.g. linear).

The sweep visits the lists in a uniformly random order (the reverse of a uniform order is
uniform, so the sweep is reversible when each visit is) and draws each label from its
conditional restricted to a *pool* of slots ``A`` that holds every occupied slot throughout:

.. math::

    P(z_i = s) \propto (n_{s,-i} - d)\, e^{β \ell_i(s)} \ (\text{occupied}),\qquad
    P(z_i = s) \propto \frac{θ + d K_{-i}}{L - K_{-i}}\, e^{β \ell_i(s)}
        \ (\text{empty}, s \in A),

a Gibbs draw over a set of values that is the same from each of them, hence reversible. The
pool is the occupied slots at the start plus a few empty ones (drawn by the caller, which
adds the Hastings factor of that draw); the orders of all slots stay fixed. The count ratios
of every list under every pool slot are computed once, so the path costs ``O(T N |A| m)``
arithmetic and no counting.

References
----------
.. [1] Neal, R. M. (1996). Sampling from multimodal distributions using tempered
   transitions. *Stat. Comput.* 6(4), 353–366.
.. [2] Nilmeier, J. P., Crooks, G. E., Minh, D. D. L. and Chodera, J. D. (2011).
   Nonequilibrium candidate Monte Carlo is an efficient tool for equilibrium simulation.
   *PNAS* 108(45), E1009–E1018.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.linext_support import _combine
from pymc_crp.core.partition_math import draw_log_weighted

__all__ = ["noise_path", "pool_loglik", "pool_sweep"]


@njit(cache=True, nogil=True)
def _loglik(ratios, lengths, memo, stamp, r, i, t, p):  # pragma: no cover - compiled
    """``ℓ_i`` under pool slot ``r`` at ``p`` (the ``t``-th point of the path), kept in
    ``memo``."""
    if stamp[r, i] != t:
        memo[r, i] = _combine(ratios[r], i, lengths[i], p, False)[0]
        stamp[r, i] = t
    return memo[r, i]


@njit(cache=True, nogil=True)
def _labels_loglik(ratios, lengths, labels, at, memo, stamp, t, p):  # pragma: no cover
    """``Σ_i ℓ_i(z_i)`` at ``p`` (``at[s]``: the position of slot ``s`` in the pool)."""
    total = 0.0
    for i in range(labels.shape[0]):
        total += _loglik(ratios, lengths, memo, stamp, at[labels[i]], i, t, p)
    return total


@njit(cache=True, nogil=True)
def _pool_sweep(
    rng, ratios, lengths, labels, counts, pool, n_slots, memo, stamp, t, p, beta, new_weights,
    discount, weights,
):  # fmt: skip  # pragma: no cover - compiled
    """One sweep, in a uniformly random order, of the restricted Gibbs draws of the labels
    over the ``pool`` slots at noise ``p`` (module docstring). Returns the visits that
    changed a label."""
    n_lists = labels.shape[0]
    order = np.arange(n_lists)
    for k in range(n_lists - 1, 0, -1):  # Fisher-Yates
        j = min(int(rng.random() * (k + 1)), k)
        order[k], order[j] = order[j], order[k]
    n_occupied = 0
    for r in range(pool.shape[0]):
        n_occupied += counts[pool[r]] > 0
    changed = 0
    for pos in range(n_lists):
        i = order[pos]
        old = labels[i]
        counts[old] -= 1
        k_rest = n_occupied - (counts[old] == 0)
        new_mass = 0.0  # every slot taken by the other lists: no empty slot to weigh
        if k_rest < n_slots:
            new_mass = new_weights[k_rest] / (n_slots - k_rest)
        for r in range(pool.shape[0]):
            s = pool[r]
            prior = counts[s] - discount if counts[s] > 0 else new_mass
            weights[r] = -np.inf  # the old slot's weight is finite (each term >= p/m > 0)
            if prior > 0.0:
                weights[r] = math.log(prior) + beta * _loglik(
                    ratios, lengths, memo, stamp, r, i, t, p
                )
        new = pool[draw_log_weighted(weights, rng.random())]
        if new != old:
            changed += 1
        n_occupied = k_rest + (counts[new] == 0)
        labels[i] = new
        counts[new] += 1
    return changed


@njit(cache=True, nogil=True)
def noise_path(
    rng, ratios, lengths, labels, counts, pool, n_slots, p_path, beta, new_weights, discount,
):  # fmt: skip  # pragma: no cover - compiled
    r"""Run the labels along the path ``p_path`` (``T + 1`` points) in place (module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
    ratios : float64 (A, N, m - 1)
        Count ratios of the lists under the order of each pool slot (``ratios[r]`` under
        slot ``pool[r]``).
    lengths : int64 (N,)
        The lists' lengths.
    labels, counts : int64 (N,), (L,)
        Labels and slot sizes, updated in place; every occupied slot is in ``pool``.
    pool : int64 (A,)
        The slots a label may take.
    n_slots : int
        ``L``.
    p_path : float64 (T + 1,)
        ``p_0 = p, …, p_T = p'``.
    beta : float
        Likelihood power.
    new_weights : float64 (L + 1,)
        ``w(K)``, the weight of a new cluster when the other lists hold ``K`` clusters
        (``θ + dK``, :func:`~pymc_crp.core.aux_label_sweep.new_cluster_weights`).
    discount : float
        Pitman--Yor discount.

    Returns
    -------
    (log_w, changed) : the likelihood part of ``log W``, ``β Σ_t Σ_i (ℓ_i(z^{(t)}; p_{t+1}) -
    ℓ_i(z^{(t)}; p_t))``, and the number of label changes along the path.
    """
    n_lists = labels.shape[0]
    at = np.full(n_slots, -1, np.int64)
    for r in range(pool.shape[0]):
        at[pool[r]] = r
    memo = np.empty((ratios.shape[0], n_lists))
    stamp = np.full((ratios.shape[0], n_lists), -1, np.int64)
    weights = np.empty(pool.shape[0])
    n_points = p_path.shape[0]
    log_w = 0.0
    changed = 0
    for t in range(n_points - 1):
        here = _labels_loglik(ratios, lengths, labels, at, memo, stamp, t, p_path[t])
        ahead = _labels_loglik(ratios, lengths, labels, at, memo, stamp, t + 1, p_path[t + 1])
        log_w += beta * (ahead - here)
        if t + 1 < n_points - 1:
            changed += _pool_sweep(
                rng, ratios, lengths, labels, counts, pool, n_slots, memo, stamp, t + 1,
                p_path[t + 1], beta, new_weights, discount, weights,
            )  # fmt: skip
    return log_w, changed


@njit(cache=True, nogil=True)
def pool_sweep(
    rng, ratios, lengths, labels, counts, pool, p, n_slots, beta, new_weights, discount
):  # fmt: skip  # pragma: no cover - compiled
    """One sweep of the restricted Gibbs draws of the labels over the ``pool`` slots at noise
    ``p`` (in place; arguments as for :func:`noise_path`): the kernel of one point of a path
    whose orders move between the points. Returns the visits that changed a label."""
    memo = np.empty((ratios.shape[0], labels.shape[0]))
    stamp = np.full((ratios.shape[0], labels.shape[0]), -1, np.int64)
    weights = np.empty(pool.shape[0])
    return _pool_sweep(
        rng, ratios, lengths, labels, counts, pool, n_slots, memo, stamp, 0, p, beta,
        new_weights, discount, weights,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def pool_loglik(ratios, lengths, labels, at, p):  # pragma: no cover - compiled
    """``Σ_i ℓ_i(z_i)`` at noise ``p``; ``ratios[at[s]]`` are the count ratios under slot
    ``s``."""
    total = 0.0
    for i in range(labels.shape[0]):
        total += _combine(ratios[at[labels[i]]], i, lengths[i], p, False)[0]
    return total
