r"""Annealed split--merge moves for clustered partial orders (annealed importance sampling).

A merge of two clusters whose orders refine a common order in opposite ways (a planted group
split by an incomparable pair of items) needs the merged cluster's utilities to move to an
order that fits both halves, and the reverse split needs two fitted orders and an allocation
of the lists: a proposal made in one jump (Jain and Neal 2007) is accepted with probability
about ``e^{-5000}`` on 351 lists, because its density of reaching the present utilities is
negligible. These moves instead follow a path of distributions between the split and the
merged state and weight the end point by annealed importance sampling (Neal 2001), within a
Metropolis--Hastings test (Karagiannis and Andrieu 2013), so no proposal density of the
utilities is needed.

**The path.** Pick an ordered pair of lists ``a ≠ b`` uniformly; they are the *anchors*:
``a`` stays in ``a``'s slot ``s``, ``b`` is on the other side. The other members ``C`` of the
two clusters have *sides* ``σ_k ∈ \{0, 1\}`` (1: with ``b``). With ``ℓ_k(U)`` the tempered
log-likelihood of list ``k`` under ``h(U)``, ``p_0`` the slot prior, ``g(σ) = 2^{-|C|}`` and
``E(σ)`` the EPPF of the partition with ``s`` split by ``σ`` (the rest fixed), the distributions

.. math::

    γ_β(U_s, U_t, σ) \propto p_0(U_s)\, p_0(U_t) \prod_{σ_k = 0} e^{ℓ_k(U_s)}
        \prod_{σ_k = 1} e^{β ℓ_k(U_s) + (1-β) ℓ_k(U_t)}\;
        g(σ)^β\, \big[E(\text{merged})^β E(σ)^{1-β}\big]

go from the split state's posterior (``β = 0``: ``s`` holds side 0 and ``t`` side 1) to the
merged state's posterior times the auxiliary ``p_0(U_t) g(σ)`` (``β = 1``: every member in
``s``; ``U_t`` and ``σ`` ignored by the lists). At ``0 = β_0 < β_1 < … < β_T = 1``
(``β_k = (1 - \cos(π k/T))/2``) the kernel ``G_k`` leaves ``γ_{β_k}`` invariant: a scan of
exact Gibbs draws of the sides (members in a fixed order), then of every coordinate of ``U_s``
and of ``U_t`` (each a mixture of truncated normals, :mod:`pymc_crp.core.utility_gibbs`).

* **merge** (``c_a = s ≠ c_b = t``): from the present state ``x_0`` (``σ`` the present
  allocation) apply ``G_1, …, G_{T-1}``; ``t``'s lists join ``s``, which takes the last
  ``U_s``, accepted with

  .. math::

      \min\Big(1,\ \exp \sum_{k=1}^{T} (β_k - β_{k-1})\, D(x_{k-1})\Big), \qquad
      D = \sum_{σ_k = 1} \big(ℓ_k(U_s) - ℓ_k(U_t)\big) + \log g(σ)
          + \log \frac{E(\text{merged})}{E(σ)};

* **split** (``c_a = c_b = s``): ``U_t`` a fresh draw of ``p_0``, ``σ`` a draw of ``g``
  (a state of ``γ_1``), then the reversed kernels ``\tilde G_{T-1}, …, \tilde G_1`` (the same
  draws in the opposite order, the reversal of ``G_k`` with respect to ``γ_{β_k}``); side 1
  opens a uniformly chosen empty slot ``t`` with the last ``U_t``, and ``s`` takes the last
  ``U_s``, accepted with ``\exp \sum_k (β_{k-1} - β_k) D(x_{k-1})`` along the reversed path.

The reverse path of a merge is a split's path with the same states, so the ratio of the two
paths' densities is the product of ``γ_{β_k}(x_{k-1}) / γ_{β_{k-1}}(x_{k-1})``: the pair of
moves is reversible with respect to the joint posterior of labels and occupied slots'
utilities. The pair's probability is the same in both directions; the uniform choice of the
empty slot cancels the ``1/(L-K)`` of the label-vector prior. Each proposal costs ``T - 1``
scans of ``2 M K`` coordinate draws over the members' lists, ``O(T M^2 K |C|)`` list
likelihoods, so the moves are made now and then (``annealed_split_merge`` per step, a
fraction allowed).

References
----------
.. [1] Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11,
   125–139.
.. [2] Karagiannis, G. and Andrieu, C. (2013). Annealed importance sampling reversible jump
   MCMC algorithms. *Journal of Computational and Graphical Statistics* 22(3), 623–648.
.. [3] Jain, S. and Neal, R. M. (2007). Splitting and merging components of a nonconjugate
   Dirichlet process mixture model. *Bayesian Analysis* 2(3), 445–472.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.core.slot_merge_split import log_split_eppf_ratio
from pymc_crp.core.utility_gibbs import (
    equicorrelated_conditional,
    interval_points,
    sample_interval_mixture,
)
from pymc_crp.step_methods.list_terms import _rows_with_item
from pymc_crp.step_methods.metropolis import accept

__all__ = ["AnnealedSplitMerge", "annealing_levels"]


def annealing_levels(n_levels: int) -> np.ndarray:
    r"""``β_k = (1 - \cos(π k/T))/2`` for ``k = 0, …, T``: dense near both ends, where the
    sides and the free slot's utilities change fastest."""
    return 0.5 * (1.0 - np.cos(np.pi * np.arange(n_levels + 1) / n_levels))


def _weighted(weights: np.ndarray, loglik: np.ndarray) -> np.ndarray:
    """``loglik @ weights`` over the lists (axis 1) with a zero weight ignoring its list even
    where its log-likelihood is ``-inf``."""
    keep = weights > 0.0
    return loglik[:, keep] @ weights[keep]


class _Path:
    """State of one annealed path: the members (anchors first), their sides, both slots'
    utilities and the members' tempered log-likelihoods under them."""

    def __init__(self, members, sides, u_s, u_t, ll_s, ll_t):
        self.members, self.sides = members, sides
        self.u_s, self.u_t, self.ll_s, self.ll_t = u_s, u_t, ll_s, ll_t


class AnnealedSplitMerge:
    """Mixin of :class:`~pymc_crp.PartialOrderLabelGibbs`: the moves of the module docstring.
    Reads the step's ``_term``, ``_column``, ``_beta``, ``rng`` and the slot prior of
    :class:`~pymc_crp.step_methods.po_split_merge.InformedSplitMerge`."""

    def _annealed_check(self, rate, levels) -> None:
        """Check and store ``annealed_split_merge = rate`` and ``annealed_levels = levels``."""
        if isinstance(rate, bool) or not isinstance(rate, Real) or not rate >= 0:
            raise ValueError(f"annealed_split_merge must be a number >= 0, got {rate!r}")
        if isinstance(levels, bool) or not isinstance(levels, Integral) or levels < 2:
            raise ValueError(f"annealed_levels must be an integer >= 2, got {levels!r}")
        self.annealed_split_merge = float(rate)
        self.annealed_levels = int(levels)

    def _annealed_moves(self, moves, prior) -> tuple[int, int, int]:
        """``annealed_split_merge`` proposals on average (its whole part, plus one with the
        probability of its fraction); returns ``(merges, splits, refused)``."""
        rate = self.annealed_split_merge
        count = int(rate) + int(self.rng.random() < rate - int(rate))
        merges = splits = refused = 0
        for _ in range(count):
            members, s, t, split = moves.pick_pair(self.rng)
            if t < 0:
                refused += 1
            elif split:
                splits += self._annealed_split(moves, members, s, t, prior)
            else:
                merges += self._annealed_merge(moves, members, s, t, prior)
        return merges, splits, refused

    def _annealed_merge(self, moves, members, s, t, prior) -> bool:
        """Merge of ``t`` into ``s`` along the annealed path from the present split."""
        moved = members[moves.labels[members] == t]
        sides = (moves.labels[members] == t).astype(np.int64)  # changed along the path
        path = _Path(
            members, sides, moves.utilities[s].copy(), moves.utilities[t].copy(),
            moves.ll[members, s].copy(), moves.ll[members, t].copy(),
        )  # fmt: skip
        n_clusters = int(np.count_nonzero(moves.counts)) - 1  # in the merged state
        levels = annealing_levels(self.annealed_levels)
        log_ratio = 0.0
        for k in range(1, levels.size):
            log_ratio += (levels[k] - levels[k - 1]) * self._drift(path, moves, n_clusters)
            if k < levels.size - 1:
                self._path_scan(path, moves, prior, float(levels[k]), reverse=False)
        if not accept(log_ratio, self.rng):
            return False
        moves.set_slot(s, path.u_s, members, path.ll_s, self)
        moves.relabel(moved, t, s)
        return True

    def _annealed_split(self, moves, members, s, t, prior) -> bool:
        """Split of ``s`` with ``b``'s side into the empty slot ``t`` along the reversed path."""
        sides = (self.rng.random(members.size) < 0.5).astype(np.int64)
        sides[0], sides[1] = 0, 1
        u_t = np.array(moves.next_draw(), dtype=np.float64, copy=True)
        path = _Path(
            members, sides, moves.utilities[s].copy(), u_t, moves.ll[members, s].copy(),
            self._column(u_t, members, moves.noise),
        )  # fmt: skip
        n_clusters = int(np.count_nonzero(moves.counts))
        levels = annealing_levels(self.annealed_levels)
        log_ratio = 0.0
        for k in range(levels.size - 1, 0, -1):
            log_ratio += (levels[k - 1] - levels[k]) * self._drift(path, moves, n_clusters)
            if k > 1:
                self._path_scan(path, moves, prior, float(levels[k - 1]), reverse=True)
        if not accept(log_ratio, self.rng):
            return False
        moved = sides == 1
        moves.set_slot(s, path.u_s, members, path.ll_s, self)
        moves.set_slot(t, path.u_t, members, path.ll_t, self)
        moves.relabel(members[moved], s, t)
        return True

    def _drift(self, path, moves, n_clusters) -> float:
        r"""``D = ∂ log γ_β / ∂β`` at the path's state (module docstring)."""
        one = path.sides == 1
        n_one = int(np.sum(one))
        diff = path.ll_s[one] - path.ll_t[one]
        lik = float(np.sum(diff)) if n_one else 0.0
        if math.isnan(lik):  # both -inf for a list: it ignores β
            lik = float(np.sum(diff[~np.isnan(diff)]))
        log_g = -(path.members.size - 2) * math.log(2.0)
        return lik + log_g - log_split_eppf_ratio(
            path.members.size - n_one, n_one, n_clusters, moves.theta, moves.discount
        )

    # ------------------------------------------------------------------------------------
    # The kernels G_k and their reversals
    # ------------------------------------------------------------------------------------
    def _path_scan(self, path, moves, prior, beta, reverse) -> None:
        """``G_k`` at ``β`` in place (sides, then ``U_s``, then ``U_t``), or with ``reverse``
        the same draws in the opposite order."""
        steps = [self._side_draws, self._slot_draws_s, self._slot_draws_t]
        for draw in reversed(steps) if reverse else steps:
            draw(path, moves, prior, beta, reverse)

    def _side_draws(self, path, moves, prior, beta, reverse) -> None:
        """Gibbs draws of the sides of ``members[2:]`` at ``β`` (the anchors stay)."""
        sides, discount = path.sides, moves.discount
        counts = np.array([np.sum(sides == 0), np.sum(sides == 1)], dtype=float)
        order = range(path.members.size - 1, 1, -1) if reverse else range(2, path.members.size)
        uniforms = self.rng.random(path.members.size)
        for r in order:
            counts[sides[r]] -= 1.0
            log0 = path.ll_s[r] + (1.0 - beta) * math.log(counts[0] - discount)
            log1 = (
                _mix(beta, path.ll_s[r], path.ll_t[r])
                + (1.0 - beta) * math.log(counts[1] - discount)
            )
            if log0 == -math.inf and log1 == -math.inf:
                log0 = (1.0 - beta) * math.log(counts[0] - discount)
                log1 = (1.0 - beta) * math.log(counts[1] - discount)
            top = max(log0, log1)
            p_one = math.exp(log1 - top) / (math.exp(log0 - top) + math.exp(log1 - top))
            sides[r] = 1 if uniforms[r] < p_one else 0
            counts[sides[r]] += 1.0

    def _slot_draws_s(self, path, moves, prior, beta, reverse) -> None:
        """Coordinate draws of ``U_s``: side 0's lists at weight 1, side 1's at ``β``."""
        weights = np.where(path.sides == 1, beta, 1.0)
        path.ll_s = self._coordinate_scan(path.u_s, path.members, weights, moves, prior, reverse)

    def _slot_draws_t(self, path, moves, prior, beta, reverse) -> None:
        """Coordinate draws of ``U_t``: side 1's lists at weight ``1 - β``."""
        weights = np.where(path.sides == 1, 1.0 - beta, 0.0)
        path.ll_t = self._coordinate_scan(path.u_t, path.members, weights, moves, prior, reverse)

    def _coordinate_scan(self, psi, members, weights, moves, prior, reverse) -> np.ndarray:
        """Exact Gibbs draws of every coordinate of ``psi`` ``(M, K)`` in place given the
        members' lists with log-likelihood weights ``weights``, item by item and dimension by
        dimension (reversed with ``reverse``); returns the members' tempered log-likelihoods
        under the new ``psi``."""
        term = self._term
        cache = list_likelihood_cache()
        n_items, n_dims = psi.shape
        active = weights > 0.0
        rows, row_weights = members[active], weights[active]
        coordinates = [(i, k) for i in range(n_items) for k in range(n_dims)]
        uniforms = self.rng.random((len(coordinates), 2))
        for c in reversed(range(len(coordinates))) if reverse else range(len(coordinates)):
            item, k = coordinates[c]
            mu, sd = equicorrelated_conditional(
                psi[item], prior.mean[item], float(prior.rho[item]),
                float(prior.scale[item]), k,
            )  # fmt: skip
            with_item = term.contains[rows, item] if item < term.contains.shape[1] else None
            if with_item is None or not with_item.any():  # the lists ignore this utility
                low, high = np.array([-np.inf]), np.array([np.inf])
                log_lik = np.zeros(1)
            else:
                item_rows, item_weights = rows[with_item], row_weights[with_item]
                low, high, inside = interval_points(np.delete(psi[:, k], item))
                candidates = np.repeat(psi[None], inside.shape[0], axis=0)
                candidates[:, item, k] = inside
                words = order_words(candidates, term.top_down)
                log_lik = cache.log_likelihoods(
                    term.list_set,
                    words,
                    np.repeat(np.arange(inside.shape[0]), item_rows.size),
                    moves.noise,
                    rows=np.tile(item_rows, inside.shape[0]),
                ).reshape(inside.shape[0], item_rows.size)
                log_lik = _weighted(item_weights * self._beta, log_lik)
            psi[item, k], _ = sample_interval_mixture(
                log_lik, low, high, mu, sd, uniforms[c, 0], uniforms[c, 1]
            )
        return self._column(psi, members, moves.noise)


def _mix(beta: float, ll_s: float, ll_t: float) -> float:
    """``β ℓ_s + (1 - β) ℓ_t`` with a zero weight ignoring an infinite term."""
    total = 0.0
    if beta > 0.0:
        total += beta * ll_s
    if beta < 1.0:
        total += (1.0 - beta) * ll_t
    return total
