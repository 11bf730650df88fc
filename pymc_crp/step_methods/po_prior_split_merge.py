r"""Merge--split proposals of the label step whose split's new cluster takes a prior draw.

:class:`PriorSplitMerge` gives :class:`~pymc_crp.PartialOrderLabelGibbs` the proposals of
:mod:`pymc_crp.core.slot_merge_split`: a uniformly chosen ordered pair of lists ``i ≠ j`` and
the other members of their clusters in random order, then

* **split** (``c_i = c_j = s``): ``j``'s side opens a uniformly chosen empty slot ``t`` whose
  utilities ``ψ`` are a fresh draw of the slot prior, and the members are allocated
  sequentially between ``s`` (utilities held) and ``t``; accepted with

  .. math::

      \min\Big(1,\ \frac{\mathrm{EPPF}(c')}{\mathrm{EPPF}(c)}
      \prod_{k \text{ moved}} \frac{p(Y_k \mid h(ψ))^β}{p(Y_k \mid h(U_s))^β}\,
      \frac{1}{q(c' \mid c)}\Big);

* **merge** (``c_i = s ≠ c_j = t``): ``t``'s lists join ``s``, which keeps its utilities,
  accepted with the reciprocal ratio at the present split.

The prior density of ``ψ`` cancels against that of the empty slot's utilities it replaces
(an emptied slot's utilities are redrawn from the prior at the end of the step), so merges
reuse the cached likelihood columns and cost no list likelihoods. :class:`SplitMergeState`
holds what the proposals of one step read and update in place.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.slot_merge_split import log_split_eppf_ratio, sequential_allocation
from pymc_crp.step_methods.metropolis import accept

__all__ = ["PriorSplitMerge", "SplitMergeState"]


class SplitMergeState:
    """What the merge--split proposals of one step read and update in place: labels, slot
    counts, slot utilities, the ``(N, L)`` log-likelihood columns of the occupied slots."""

    def __init__(self, labels, ll, utilities, noise, new_weights, discount, next_draw):
        self.labels, self.ll, self.utilities = labels, ll, utilities
        # new_weights[K]: the weight of a new cluster beside K others (θ + Kd, or G(K+1)/G(K))
        self.noise, self.new_weights, self.discount = noise, new_weights, discount
        self.next_draw = next_draw
        self.counts = np.bincount(labels, minlength=utilities.shape[0])

    def log_eppf_ratio(self, n_a, n_b, merged=False) -> float:
        """log EPPF(split)/EPPF(merged); ``merged``: called for a merge (the chain is in the split
        state, so the merged state has one cluster fewer than now)."""
        n_clusters = int(np.count_nonzero(self.counts)) - bool(merged)
        return log_split_eppf_ratio(n_a, n_b, self.new_weights[n_clusters], self.discount)

    def set_slot(self, slot, utilities, members, ll_members, step) -> None:
        """Give ``slot`` new utilities and its full log-likelihood column."""
        rest = np.ones(self.labels.shape[0], dtype=bool)
        rest[members] = False
        self.ll[members, slot] = ll_members
        self.ll[rest, slot] = step._column(utilities, np.flatnonzero(rest), self.noise)
        self.utilities[slot] = utilities

    def pick_pair(self, rng) -> tuple[np.ndarray, int, int, bool]:
        """An ordered pair of lists ``i ≠ j`` and the other members of their clusters in random
        order: ``(members, s, t, split)`` with ``members = [i, j, …]``, ``s`` the slot of ``i``
        and, for a split (``c_i = c_j``), ``t`` a uniformly chosen empty slot (``-1`` if none is
        empty), else the slot of ``j``."""
        labels = self.labels
        i = int(rng.integers(labels.shape[0]))
        j = int(rng.integers(labels.shape[0] - 1))
        j += j >= i
        s, t = int(labels[i]), int(labels[j])
        others = np.flatnonzero((labels == s) | (labels == t))
        others = others[(others != i) & (others != j)]
        members = np.concatenate(([i, j], rng.permutation(others)))
        if s != t:
            return members, s, t, False
        free = np.flatnonzero(self.counts == 0)
        return members, s, int(free[rng.integers(free.size)]) if free.size else -1, True

    def split(self, step, members, moved, s, t, utilities, ll_members, log_proposal) -> bool:
        """Metropolis--Hastings test of the split of ``members[moved]`` from ``s`` into the
        empty slot ``t`` with ``utilities`` (``ll_members`` the members' log-likelihoods under
        them; ``log_proposal`` the proposal's terms of the log ratio); made if accepted."""
        n_moved = int(np.sum(moved))
        log_ratio = (
            self.log_eppf_ratio(members.size - n_moved, n_moved)
            + float(np.sum(ll_members[moved] - self.ll[members[moved], s]))
            + log_proposal
        )
        if not accept(log_ratio, step.rng):
            return False
        self.set_slot(t, utilities, members, ll_members, step)
        self.relabel(members[moved], s, t)
        return True

    def relabel(self, rows, source, target) -> None:
        """Move lists ``rows`` from ``source`` to ``target``; an emptied slot's utilities are
        redrawn from the prior at the end of the step."""
        self.labels[rows] = target
        self.counts[source] -= rows.size
        self.counts[target] += rows.size


class PriorSplitMerge:
    """The prior-draw merge--split proposals of :class:`~pymc_crp.PartialOrderLabelGibbs` (a
    mixin: the step provides ``rng``, ``merge_split`` and ``_column``)."""

    def _merge_split(self, moves: SplitMergeState):
        """``self.merge_split`` proposals of :mod:`pymc_crp.core.slot_merge_split`; the state is
        updated in place. Returns ``(merges, splits, refused)`` (``refused``: splits with no
        empty slot)."""
        merges = splits = refused = 0
        for _ in range(self.merge_split):
            members, s, t, split = moves.pick_pair(self.rng)
            if t < 0:
                refused += 1
            elif split:
                splits += self._split_prior(moves, members, s, t)
            else:
                merges += self._merge_keep(moves, members, s, t)
        return merges, splits, refused

    def _split_prior(self, moves, members, s, t) -> bool:
        """Split with ``j``'s side in slot ``t`` under a fresh prior draw ``ψ``."""
        psi = moves.next_draw()
        ll_new = self._column(psi, members, moves.noise)
        sides = np.zeros(members.size, dtype=np.int64)
        log_q = sequential_allocation(
            moves.ll[members, s], ll_new, sides, self.rng.random(members.size), True
        )
        return moves.split(self, members, sides == 1, s, t, psi, ll_new, -log_q)

    def _merge_keep(self, moves, members, s, t) -> bool:
        """Merge of ``t`` into ``s``, which keeps its utilities (reverse of
        :meth:`_split_prior`)."""
        ll = moves.ll
        sides = (moves.labels[members] == t).astype(np.int64)
        log_q = sequential_allocation(ll[members, s], ll[members, t], sides, np.empty(0), False)
        moved = members[sides == 1]
        log_ratio = -(
            moves.log_eppf_ratio(moves.counts[s], moves.counts[t], merged=True)
            + float(np.sum(ll[moved, t] - ll[moved, s]))
            - log_q
        )
        if not accept(log_ratio, self.rng):
            return False
        moves.relabel(moved, t, s)
        return True
