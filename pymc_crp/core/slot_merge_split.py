r"""Merge--split moves for labels whose slots carry non-conjugate parameters (numba core).

A Pitman--Yor (CRP) label vector ``c`` over ``L`` slots, slot ``j`` owning parameters
``φ_j``; empty slots hold draws of the base (prior) distribution ``G_0``, and
``ℓ_{kj} = log p(y_k | φ_j)``. One move picks an ordered pair of observations ``i ≠ j``
uniformly and the other members ``S`` of their clusters in uniformly random order:

* **split** (``c_i = c_j = s``): ``j`` opens a uniformly chosen empty slot ``t`` whose parameter
  is a fresh draw ``ψ ~ G_0`` (it replaces the empty slot's prior draw); the members of ``S``
  are allocated in turn to ``i``'s side (parameter ``φ_s``) or ``j``'s (``ψ``) with probability
  ``∝ n_side e^{ℓ}`` given the sides so far (Dahl's sequential allocation, with the slot
  parameters held fixed); ``q`` is the product of these probabilities;
* **merge** (``c_i = s ≠ c_j = t``): the members of ``t`` join ``s`` (which keeps ``φ_s``) and
  ``φ_t`` becomes an empty slot's parameter, a fresh draw of ``G_0``; ``q`` is the probability
  that the split from the merged state (same pair, same order, ``ψ = φ_t``) recreates the
  present two clusters.

Because the split draws ``ψ`` from ``G_0`` and the merge puts a ``G_0`` draw into the freed
slot, the prior densities of ``ψ`` and of the empty slot's parameter cancel, and so do the
``1/E`` of the uniform empty-slot choice and the ``1/(L - K)`` of the label-vector prior
``EPPF / (L!/(L-K)!)``. The split is accepted with probability

.. math::

    \min\Big(1,\ \frac{\mathrm{EPPF}(c')}{\mathrm{EPPF}(c)}
    \prod_{k \in B} \frac{p(y_k \mid ψ)}{p(y_k \mid φ_s)}\ \frac{1}{q}\Big),
    \qquad
    \frac{\mathrm{EPPF}(c')}{\mathrm{EPPF}(c)}
    = \frac{(θ + Kd)\,Γ(n_A - d)\,Γ(n_B - d)}{Γ(n_A + n_B - d)\,Γ(1 - d)},

(``B`` the members that moved, ``K`` the number of clusters before the split; with the
concentration integrated out ``θ + Kd`` becomes ``G(K+1)/G(K)``,
:mod:`pymc_crp.core.integrated_concentration`) and the merge
with the reciprocal of the same expression evaluated at the present split. The moves change
only the labels of the two clusters and the parameter of the opened slot, and they leave the
joint posterior of the labels and the slot parameters invariant (Metropolis--Hastings), for any
likelihood: the caller supplies the log-likelihood columns.

Merges are what cross between the modes that one-at-a-time label moves cannot leave (a group
of observations spread over several clusters with similar parameters must otherwise be
dissolved one observation at a time against the prior's rich-get-richer pull); a split's
``ψ`` is a blind prior draw, as in Neal's (2000) Algorithm 8 births.

References
----------
.. [1] Dahl, D. B. (2003). An improved merge-split sampler for conjugate Dirichlet process
   mixture models. Technical report 1086, Dept. of Statistics, University of Wisconsin.
.. [2] Jain, S. and Neal, R. M. (2007). Splitting and merging components of a nonconjugate
   Dirichlet process mixture model. *Bayesian Analysis* 2(3), 445–472.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["log_split_eppf_ratio", "sequential_allocation"]


@njit(cache=True, nogil=True)
def log_split_eppf_ratio(n_a, n_b, new_weight, discount):  # pragma: no cover
    r"""``log EPPF(split) − log EPPF(merged)`` for a block of ``n_a + n_b`` split in two;
    ``new_weight`` is ``w(K)`` for the ``K`` blocks before the split (``θ + K d``, or ``G(K+1)/
    G(K)`` with the concentration integrated out; see the module docstring)."""
    return (
        math.log(new_weight)
        + math.lgamma(n_a - discount)
        + math.lgamma(n_b - discount)
        - math.lgamma(n_a + n_b - discount)
        - math.lgamma(1.0 - discount)
    )


@njit(cache=True, nogil=True)
def sequential_allocation(ll_stay, ll_move, sides, uniforms, draw):  # pragma: no cover
    r"""Sequential allocation of ``members[2:]`` between two sides; returns ``log q``.

    Member 0 is on side 0 and member 1 on side 1. Member ``r ≥ 2`` goes to side 1 with
    probability ``n_1 e^{ℓ^{move}_r} / (n_0 e^{ℓ^{stay}_r} + n_1 e^{ℓ^{move}_r})`` (``n``
    counted over the members before it); if both likelihoods are zero the counts decide.

    Parameters
    ----------
    ll_stay, ll_move : float64 (n,)
        Log-likelihood of each member under side 0's and side 1's parameter.
    sides : int64 (n,)
        Drawn in place if ``draw`` (uniforms ``(n,)``), else the allocation whose probability
        is returned.
    """
    sides[0] = 0
    sides[1] = 1
    n0 = 1.0
    n1 = 1.0
    log_q = 0.0
    for r in range(2, sides.shape[0]):
        a = math.log(n0) + ll_stay[r]
        b = math.log(n1) + ll_move[r]
        if a == -np.inf and b == -np.inf:
            a = math.log(n0)
            b = math.log(n1)
        top = max(a, b)
        log_total = top + math.log(math.exp(a - top) + math.exp(b - top))
        if draw:
            sides[r] = 1 if uniforms[r] < math.exp(b - log_total) else 0
        if sides[r] == 1:
            log_q += b - log_total
            n1 += 1.0
        else:
            log_q += a - log_total
            n0 += 1.0
    return log_q
