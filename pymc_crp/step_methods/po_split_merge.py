r"""Split--merge moves for clustered partial orders whose new cluster's utilities fit its lists.

The blind merge--split of :class:`~pymc_crp.PartialOrderLabelGibbs` gives a split's new
cluster a draw of the slot prior, which almost never has the order its lists share: a group
of lists whose order refines that of its cluster cannot split off. These moves follow Jain and
Neal (2007): the new cluster's utilities and the allocation come from a restricted Gibbs scan
started at a *launch state*, and the scan's transition density enters the acceptance ratio.

**The move.** Pick an ordered pair of lists ``i ≠ j`` uniformly and the other members ``S`` of
their clusters in uniformly random order; ``U_A`` are the utilities of ``i``'s slot ``s``,
kept by both moves. The launch state is built from ``(i, j, S, U_A)`` alone, so it is the same
whichever of the split or merged states the chain is in:

1. sides: ``j``'s side ``B`` takes the members nearer ``j``'s list than ``i``'s (Euclidean
   distance of the lists' position scores ``1 - 2 r/(m - 1)``, 0 for absent items);
2. utilities ``ψ = U_A`` (the order of the lists' present cluster), then one scan of exact
   coordinate Gibbs draws of ``ψ`` given side ``B``'s lists
   (:mod:`pymc_crp.core.utility_gibbs`: each utility from its prior conditional times the
   likelihood, a mixture of truncated normals over the intervals between the other items'
   values), then one restricted Gibbs scan of the sides of ``S``:

   .. math::

       P(k \in B) \propto (n_B^{-k} - d)\, p(Y_k \mid h(ψ))^β, \qquad
       P(k \in A) \propto (n_A^{-k} - d)\, p(Y_k \mid h(U_A))^β.

The *final scan* from the launch state — a restricted Gibbs scan of the sides, then a scan of
coordinate Gibbs draws of ``ψ`` given the new side ``B`` — has a computable density
``q(c', ψ')``: the product of the side probabilities and of the coordinate draws' densities
(:func:`~pymc_crp.core.utility_gibbs.interval_mixture_log_density`).

* **split** (``c_i = c_j = s``): side ``B`` opens a uniformly chosen empty slot with
  utilities ``ψ'`` from the final scan, accepted with

  .. math::

      \min\Big(1,\ \frac{\mathrm{EPPF}(c')}{\mathrm{EPPF}(c)}
      \prod_{k \in B} \frac{p(Y_k \mid h(ψ'))^β}{p(Y_k \mid h(U_A))^β}\,
      \frac{p_0(ψ')}{q(c', ψ')}\Big);

* **merge** (``c_i = s ≠ c_j = t``): ``t``'s lists join ``s``, which keeps ``U_A``; the
  freed slot's utilities become a draw of the slot prior ``p_0`` (made at the end of the
  step), accepted with the reciprocal of the same ratio evaluated at the present split
  (``ψ' = U_t``, ``q`` the final scan's density of reaching it from the launch state).

The prior ``p_0`` of the freed slot's utilities cancels against the draw that replaces them
(as in :mod:`pymc_crp.core.slot_merge_split`), and so do the uniform choice of the empty
slot and the ``1/(L-K)`` of the label-vector prior. The pair and the order of ``S`` are
chosen alike in both directions, so the pair of moves is reversible with respect to the
joint posterior of labels and slot utilities, tempered by ``β`` like every other label move.

Each proposal costs about two scans of ``M K`` coordinate draws over side ``B``'s lists
(``M`` evaluations each), i.e. ``O(M^2 K n_B)`` list likelihoods.

References
----------
.. [1] Jain, S. and Neal, R. M. (2007). Splitting and merging components of a nonconjugate
   Dirichlet process mixture model. *Bayesian Analysis* 2(3), 445–472.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt

from pymc_crp.core.checks import integer_at_least
from pymc_crp.distributions.equicorrelated_normal import (
    EquicorrelatedNormalParams,
    EquicorrelatedNormalRV,
    equicorrelated_logpdf,
)
from pymc_crp.step_methods.metropolis import accept
from pymc_crp.step_methods.model_graph import compile_point_function
from pymc_crp.step_methods.po_coordinate_scan import coordinate_scan

__all__ = ["InformedSplitMerge", "list_position_scores"]


def list_position_scores(lists: np.ndarray, n_items: int) -> np.ndarray:
    """``(N, M)`` position scores of padded lists: ``1 - 2 r/(m - 1)`` for the item at
    position ``r`` of a list of length ``m`` (1 at the head, -1 at the tail), 0 for absent
    items."""
    scores = np.zeros((lists.shape[0], n_items))
    lengths = np.sum(lists >= 0, axis=1)
    for i, (row, m) in enumerate(zip(lists, lengths, strict=True)):
        scores[i, row[:m]] = 1.0 - 2.0 * np.arange(m) / max(m - 1, 1)
    return scores


class _SlotPriorParams:
    """The slot prior ``N(m, s^2 Σ_ρ)`` of one slot at the current point: mean ``(M, K)``,
    per-row ``ρ`` and scale ``(M,)``."""

    def __init__(self, mean, rho, scale):
        self.mean, self.rho, self.scale = mean, rho, scale

    def log_density(self, utilities) -> float:
        return float(np.sum(equicorrelated_logpdf(utilities, self.mean, self.rho, self.scale)))


class InformedSplitMerge:
    """Mixin of :class:`~pymc_crp.PartialOrderLabelGibbs`: the moves of the module docstring.
    Reads the step's ``_term``, ``_column``, ``_beta``, ``rng`` and merge--split state."""

    def _informed_setup(self, model, utility_rv, compile_kwargs, counts, others=None) -> None:
        """Check and store the proposal counts ``counts`` (a dict: option name to count, e.g.
        ``informed_split_merge``) as attributes; compile the slot prior's parameters if one of
        them or of the already checked ``others`` is positive (the moves need the
        equicorrelated normal conditionals)."""
        for option, count in counts.items():
            setattr(self, option, integer_at_least(count, option))
        wanted = [option for option, count in {**counts, **(others or {})}.items() if count]
        if not wanted:
            return
        if not isinstance(utility_rv.owner.op, EquicorrelatedNormalRV):
            raise ValueError(
                f"{wanted[0]} needs an EquicorrelatedNormal slot prior; "
                f"{utility_rv.name} has {utility_rv.owner.op}"
            )
        params = EquicorrelatedNormalParams.from_rv(utility_rv)
        shape = utility_rv.shape
        mean, rho, scale = model.replace_rvs_by_values(
            [
                pt.broadcast_to(params.mu, shape)[0],
                pt.broadcast_to(params.rho, shape[:-1])[0],
                pt.broadcast_to(params.scale, shape[:-1])[0],
            ]
        )
        self._slot_prior_fn = compile_point_function(
            model, [pt.cast(v, "float64") for v in (mean, rho, scale)], compile_kwargs
        )
        self._scores = list_position_scores(self._term.lists, self._term.contains.shape[1])

    def _slot_prior(self, point) -> _SlotPriorParams:
        """The slot prior at ``point``."""
        return _SlotPriorParams(*(np.asarray(v) for v in self._slot_prior_fn(point)))

    def _informed_moves(self, moves, prior) -> tuple[int, int, int]:
        """``self.informed_split_merge`` proposals; returns ``(merges, splits, refused)``."""
        merges = splits = refused = 0
        for _ in range(self.informed_split_merge):
            members, s, t, split = moves.pick_pair(self.rng)
            if t < 0:
                refused += 1
                continue
            launch = self._launch(moves, members, s, prior)
            if split:
                splits += self._informed_split(moves, members, s, t, launch, prior)
            else:
                merges += self._informed_merge(moves, members, s, t, launch, prior)
        return merges, splits, refused

    # ------------------------------------------------------------------------------------
    # Launch state and final scan
    # ------------------------------------------------------------------------------------
    def _launch(self, moves, members, s, prior):
        """``(sides, ψ, ℓ_B)`` of the launch state (module docstring), ``ℓ_B`` the tempered
        log-likelihoods of the members under ``h(ψ)``."""
        scores = self._scores[members]
        near_j = np.sum((scores - scores[1]) ** 2, axis=1) < np.sum((scores - scores[0]) ** 2, 1)
        sides = near_j.astype(np.int64)
        sides[0], sides[1] = 0, 1
        psi = moves.utilities[s].copy()
        self._utility_scan(moves, psi, members[sides == 1], prior)
        ll_b = self._column(psi, members, moves.noise)
        self._side_scan(moves.ll[members, s], ll_b, sides, moves.discount)
        return sides, psi, ll_b

    def _side_scan(self, ll_a, ll_b, sides, discount, target=None) -> float:
        """Restricted Gibbs scan of the sides of ``members[2:]`` in place (or, with
        ``target``, the log-probability of the scan reaching ``target``)."""
        counts = np.array([np.sum(sides == 0), np.sum(sides == 1)], dtype=float)
        log_q = 0.0
        uniforms = self.rng.random(sides.shape[0]) if target is None else None
        for r in range(2, sides.shape[0]):
            counts[sides[r]] -= 1.0
            a = math.log(counts[0] - discount) + ll_a[r]
            b = math.log(counts[1] - discount) + ll_b[r]
            if a == -math.inf and b == -math.inf:
                a, b = math.log(counts[0] - discount), math.log(counts[1] - discount)
            top = max(a, b)
            log_total = top + math.log(math.exp(a - top) + math.exp(b - top))
            if target is None:
                sides[r] = 1 if uniforms[r] < math.exp(b - log_total) else 0
            else:
                sides[r] = target[r]
            log_q += (b if sides[r] == 1 else a) - log_total
            counts[sides[r]] += 1.0
        return log_q

    def _utility_scan(self, moves, psi, rows, prior, target=None) -> float:
        """One scan of exact coordinate Gibbs draws of ``psi`` ``(M, K)`` in place, item by
        item and dimension by dimension, given lists ``rows``; returns the log-density of the
        scan's result (with ``target``: of reaching ``target``, which ``psi`` becomes;
        :func:`~pymc_crp.step_methods.po_coordinate_scan.coordinate_scan`)."""
        weights = np.full(len(rows), float(self._beta))
        return coordinate_scan(
            self._term, psi, rows, weights, prior, moves.noise, self.rng, target=target
        )

    def _final_scan(self, moves, members, s, launch, prior, target=None):
        """The final restricted scan from ``launch``: ``(sides, ψ', log q)`` (with
        ``target = (sides, ψ)``: that state and the log-density of reaching it)."""
        sides, psi, ll_b = (np.array(v, copy=True) for v in launch)
        log_q = self._side_scan(
            moves.ll[members, s], ll_b, sides, moves.discount,
            None if target is None else target[0],
        )  # fmt: skip
        log_q += self._utility_scan(
            moves, psi, members[sides == 1], prior, None if target is None else target[1]
        )
        return sides, psi, log_q

    # ------------------------------------------------------------------------------------
    # The two moves
    # ------------------------------------------------------------------------------------
    def _informed_split(self, moves, members, s, t, launch, prior) -> bool:
        """Split of ``s``: side ``B`` of the final scan into the empty slot ``t``."""
        sides, psi, log_q = self._final_scan(moves, members, s, launch, prior)
        ll_new = self._column(psi, members, moves.noise)
        return moves.split(self, members, sides == 1, s, t, psi, ll_new,
                           prior.log_density(psi) - log_q)  # fmt: skip

    def _informed_merge(self, moves, members, s, t, launch, prior) -> bool:
        """Merge of ``t`` into ``s`` (which keeps its utilities): the reverse of the split."""
        sides = (moves.labels[members] == t).astype(np.int64)
        _, _, log_q = self._final_scan(
            moves, members, s, launch, prior, target=(sides, moves.utilities[t])
        )
        moved = members[sides == 1]
        log_ratio = -(
            moves.log_eppf_ratio(moves.counts[s], moves.counts[t], merged=True)
            + float(np.sum(moves.ll[moved, t] - moves.ll[moved, s]))
            + prior.log_density(moves.utilities[t])
            - log_q
        )
        if not accept(log_ratio, self.rng):
            return False
        moves.relabel(moved, t, s)
        return True
