r"""Annealed split--merge moves for clustered partial orders (annealed importance sampling).

A merge of two clusters whose orders refine a common order in opposite ways needs the merged
cluster's utilities to move to an order that fits both halves, and the reverse split needs
two fitted orders and an allocation of the lists: a proposal made in one jump (Jain and Neal
2007) is accepted with probability about ``e^{-5000}`` on 351 lists, because its density of
reaching the present utilities is negligible. These moves follow a path of distributions
between the split and the merged state instead and weight its end by annealed importance
sampling (Neal 2001) within a Metropolis--Hastings test (Karagiannis and Andrieu 2013), so
that no proposal density of the utilities enters.

**Why.** Rankings from a partial order ``P`` with an incomparable pair ``(i, j)`` fit one
cluster with ``P`` about as well as two clusters with ``P + \{i ≻ j\}`` and ``P + \{j ≻ i\}``:
the uniform distribution over ``P``'s linear extensions is the mixture of those over its two
refinements, so the split gains about ``n H(w)`` in likelihood and pays about the same in the
EPPF. Between the two states lie allocations that mix the halves, which pay the EPPF without
the likelihood's gain (a barrier of order ``n`` nats), and a merge that keeps one side's
utilities leaves the other half's lists out of order. So a chain that has split such a group
keeps it split under every local move.

**Choices.** With ``n_c`` occupied clusters, a merge is proposed with probability 1/2 if
``n_c ≥ 2``, else a split. A merge takes ``t`` into ``s`` with probability
:func:`merge_pair_log_probs` (clusters whose lists lose little under each other's order first)
and *anchors* ``a`` uniform in ``s`` and ``b`` uniform in ``t``; a split takes a uniform
cluster ``s``, ordered anchors ``a ≠ b`` uniform in it, and a uniform empty slot ``t``. The
other members ``C`` of the clusters, in random order, carry *sides* ``σ_k ∈ \{0, 1\}`` (1:
with ``b``; ``a`` stays on side 0, ``b`` on side 1).

**The path.** With ``ℓ_k(U)`` the tempered log-likelihood of list ``k`` under ``h(U)``, ``p_0``
the slot prior, ``E(σ)`` the EPPF of the partition with ``s`` split by ``σ`` (the rest fixed)
and ``g`` a distribution of the sides that looks at the lists only (:func:`pair_side_logs`: a
uniform mixture, over the item pairs ``(i, j)`` that ``a`` and ``b`` order oppositely, of
"``k`` is on ``b``'s side if it orders the pair as ``b`` does", each list on the other side
with probability ``ε = 0.05``; uniform sides if there is no such pair), the distributions

.. math::

    γ_β(U_s, U_t, σ) \propto p_0(U_s)\, p_0(U_t) \prod_{σ_k = 0} e^{ℓ_k(U_s)}
        \prod_{σ_k = 1} e^{β ℓ_k(U_s) + (1-β) ℓ_k(U_t)}\;
        g(σ)^{f(β)}\, E(\text{merged})^β E(σ)^{1-β}, \qquad f(β) = \min(1, 4β),

go from the split state's posterior (``β = 0``: ``s`` holds side 0 and ``t`` side 1) to the
merged state's posterior times the auxiliary ``p_0(U_t) g(σ)`` (``β = 1``: every member in
``s``; ``U_t`` and ``σ`` ignored by the lists). ``g`` reaches its full weight early, so the
sides stay ordered by a pair along the path instead of passing through random allocations
(with uniform sides at ``β = 1`` the path crosses that barrier: a merge of a planted group of
351 lists split in two had log acceptance −52 with ``T = 400``, against +25 with this ``g``).
At ``0 = β_0 < … < β_T = 1``, ``β_k = (1 - \cos(π k/T))/2``, the kernel ``G_k`` leaves
``γ_{β_k}`` invariant: exact Gibbs draws of the sides (members in their order), then of every
coordinate of ``U_s`` and of ``U_t`` (mixtures of truncated normals,
:mod:`pymc_crp.core.utility_gibbs`).

* **merge** (``c_a = s ≠ c_b = t``): from the present state ``x_0`` (``σ`` the present
  allocation) apply ``G_1, …, G_{T-1}``; ``t``'s lists join ``s``, which takes the last
  ``U_s``;
* **split** (``c_a = c_b = s``): ``U_t`` a fresh draw of ``p_0`` and ``σ`` a draw of ``g``
  (a state of ``γ_1``), then the reversed kernels ``\tilde G_{T-1}, …, \tilde G_1`` (the same
  draws in the opposite order, the reversal of ``G_k`` with respect to ``γ_{β_k}``); side 1
  opens slot ``t`` with the last ``U_t`` and ``s`` takes the last ``U_s``.

A merge is accepted with

.. math::

    \min\Big(1,\ \frac{q(\text{split} \mid \text{merged})}{q(\text{merge} \mid \text{split})}
        \prod_{k=1}^{T} \frac{γ_{β_k}(x_{k-1})}{γ_{β_{k-1}}(x_{k-1})}\Big),

``q`` the probabilities of the choices above (the merge's evaluated at the split state, the
split's at the merged one), and a split with the reciprocal along its reversed path (``q`` of
the reverse merge evaluated at the proposed split). The reverse path of a merge is a split's
path through the same states, so this is the ratio of the two paths' densities times the
targets': the pair of moves is reversible with respect to the joint posterior of labels and
occupied slots' utilities. The uniform choice of the empty slot cancels the ``1/(L-K)`` of
the label-vector prior. A proposal costs ``T - 1`` scans of ``2 M K`` coordinate draws over
the members' lists, ``O(T M^2 K |C|)`` list likelihoods (each distinct order once, through
the cache's entries; the sides' draws compiled, :mod:`pymc_crp.core.annealed_sides`): about
1.0 s for 351 lists of 10 items in 3 dimensions, ``T = 50``, so the moves are made now and
then (``annealed_split_merge`` per step, a fraction allowed).

**Tuning-phase merges.** On clusters of over 1,000 lists the path's utilities do not follow
the tempered target and its log-weight falls hundreds of nats short (a chain at 5,000
rankings kept one planted group in three clusters, favoured by the partition prior by about
480 nats over the merge, and the merge paths had log-weights −30 to −360). While PyMC tunes,
``tune_merges`` pairs of clusters (the most likely under :func:`merge_pair_log_probs`) every
100 iterations once the annealed start is over follow the merge path and are merged if the
merged state's joint density (lists' likelihood, partition prior, slot prior of the merged
utilities) is higher than the split's. Not a reversible move; like the annealed start it
only decides where a chain starts its kept draws.

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

from pymc_crp.core.annealed_sides import (
    annealed_side_draws,
    list_positions,
    mixture_log_density,
    pair_side_logs,
)
from pymc_crp.core.slot_merge_split import log_split_eppf_ratio
from pymc_crp.step_methods.metropolis import accept
from pymc_crp.step_methods.po_coordinate_scan import coordinate_scan

__all__ = ["AnnealedSplitMerge", "anneal_factor", "annealing_levels", "default_anneal"]

ANNEAL = 700  # tuning iterations of the annealed start where the lists rank most items
ANNEAL_MIN_SHARE = 0.5  # the lists' mean share of the items from which the start is annealed


def default_anneal(lists: np.ndarray, n_items: int) -> int:
    r"""The default length of the annealed start: :data:`ANNEAL` iterations if the lists rank
    on average at least half of the ``n_items`` items,

    .. math:: \frac{1}{N} \sum_{i=1}^{N} \frac{|Y_i|}{M} \ge \tfrac12,

    else 0 (no annealing). ``lists`` is ``(N, J)``, padded with negative entries.

    With annealing, the clusters form from the prior's few large ones while ``β`` rises: a
    cluster's order, fitted to a mixture of lists, is their consensus, and lists that fit an
    order of their own leave it. When each list ranks a small share of the items, one
    cluster's order fits every list about as well as any order a new cluster draws from the
    prior (the lists that would share it share few items), so the chain settles in one cluster
    with a high ``p`` and stays there: on 1,000 lists of 10 of 100 items
    (``benchmarks/po_convergence.py --data many``, one chain) one cluster, with ``p`` at
    0.57--0.65, from iteration 75 to the end of each run (175--375 iterations) from PyMC's
    start and from 30 random clusters, also with ``β ≥ 0.3`` from the first iteration, and
    with ``p`` held at 0.1 while annealing (to iteration 325). Without annealing, the lists
    leave the start's random orders at once (from PyMC's start 9 clusters after 25
    iterations, 24 after 75, ``p`` 0.49 then 0.30).
    """
    if n_items <= 0 or lists.shape[0] == 0:
        return ANNEAL
    share = float(np.mean(np.sum(lists >= 0, axis=1))) / n_items
    return ANNEAL if share >= ANNEAL_MIN_SHARE else 0


def anneal_factor(iteration: int, anneal: int) -> float:
    r"""The annealing factor of the label moves at tuning iteration ``t`` (0-based):

    .. math:: β_t = 1 - (1 - x)^2, \qquad x = \min\big(1, (t + 1)/\text{anneal}\big).

    It rises fast from near 0 and slowly as it approaches 1 (slope 0 at ``x = 1``): the
    clusters form while ``β`` is small, and the last splits, which decide the partition a
    chain settles in, happen slowly. ``anneal = 0`` gives 1.
    """
    if anneal <= 0:
        return 1.0
    x = min(1.0, (iteration + 1) / anneal)
    return 1.0 - (1.0 - x) ** 2


def annealing_levels(n_levels: int) -> np.ndarray:
    r"""``β_k = (1 - \cos(π k/T))/2`` for ``k = 0, …, T``: dense near both ends, where the
    sides and the free slot's utilities change fastest."""
    return 0.5 * (1.0 - np.cos(np.pi * np.arange(n_levels + 1) / n_levels))


# The sides' distribution at β = 1: with this weight, the mixture over the item pairs that the
# anchors order oppositely of "a list is on b's side if it orders the pair as b does" (each
# list on the other side with probability _FLIP, one without both items with 1/2); the rest
# uniform.
_PAIR_WEIGHT = 1.0
_FLIP = 0.05
# g enters the path as g(σ)^{f(β)}, f(β) = min(1, β/_G_RISE): at full weight early, so that the
# sides stay ordered by a pair all along instead of passing through random allocations.
_G_RISE = 0.25


def g_power(beta: float) -> float:
    """``f(β) = min(1, β/0.25)``, the power of ``g`` on the path."""
    return min(1.0, beta / _G_RISE)


def merge_pair_log_probs(ll: np.ndarray, labels: np.ndarray, occupied: np.ndarray) -> np.ndarray:
    r"""``(K, K)`` log-probabilities of proposing the merge of ``t`` into ``s`` for the occupied
    slots ``occupied`` (row ``s``, column ``t``), proportional to ``exp`` of the mean loss of
    each cluster's lists under the other's order,

    .. math::

        \log w(s, t) = \bar ℓ_t(s) - \bar ℓ_t(t) + \bar ℓ_s(t) - \bar ℓ_s(s), \qquad
        \bar ℓ_t(s) = \frac{1}{n_t} \sum_{c_k = t} ℓ_k(U_s),

    from the log-likelihood columns ``ll`` ``(N, L)``; 0 on the diagonal (``-inf``)."""
    onehot = labels[:, None] == occupied[None, :]
    sums = onehot.T.astype(float) @ np.where(onehot.any(axis=1)[:, None], ll[:, occupied], 0.0)
    means = sums / onehot.sum(axis=0)[:, None]  # means[t, s]: t's lists under s
    gap = means - np.diag(means)[:, None]
    log_w = gap + gap.T
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    np.fill_diagonal(log_w, -np.inf)
    top = np.max(log_w)
    if not np.isfinite(top):  # every pair equally (no finite loss)
        log_w = np.where(np.eye(occupied.size, dtype=bool), -np.inf, 0.0)
        top = 0.0
    return log_w - (top + math.log(float(np.sum(np.exp(log_w - top)))))


def _log_split_choice(n_clusters: int, n_members: int) -> float:
    """log-probability of a split's choices in a state of ``n_clusters`` clusters whose chosen
    cluster holds ``n_members`` lists: the move type (1/2 with two clusters or more), the
    cluster and the ordered anchors."""
    log_type = 0.0 if n_clusters == 1 else math.log(0.5)
    return log_type - math.log(n_clusters) - math.log(n_members * (n_members - 1))


# Annealed split--merge proposals per step by default: while tuning (once the annealed start's
# factor reaches ANNEALED_FROM) and after, for up to ANNEALED_LISTS lists; in proportion to
# ANNEALED_LISTS / N beyond (a proposal's cost grows with the clusters' sizes: with the rates
# unscaled they took 600 of the 1,790 s over 5,000 rankings).
TUNE_ANNEALED_SPLIT_MERGE, ANNEALED_SPLIT_MERGE, ANNEALED_FROM = 0.05, 0.01, 0.75
ANNEALED_LISTS = 1000
# Tuning-phase merges (``_tuning_merges``): pairs tried, every TUNE_MERGES_EVERY tuning
# iterations once the annealed start has reached β = 1.
TUNE_MERGES, TUNE_MERGES_EVERY = 3, 100


class _Path:
    """State of one annealed path: the members (anchors first), their sides, both slots'
    utilities, the members' tempered log-likelihoods under them and the sides' log-densities
    under each component of ``g`` (``log_g`` per component, ``log_weights`` the components')."""

    def __init__(self, members, sides, u_s, u_t, ll_s, ll_t, side_logs):
        self.members, self.sides = members, sides
        self.u_s, self.u_t, self.ll_s, self.ll_t = u_s, u_t, ll_s, ll_t
        self.g0, self.g1 = side_logs
        n_pairs = self.g0.shape[1] - 1
        weights = np.ones(1 + n_pairs)  # uniform sides if the anchors order no pair apart
        if n_pairs:
            weights[0], weights[1:] = 1.0 - _PAIR_WEIGHT, _PAIR_WEIGHT / n_pairs
        with np.errstate(divide="ignore"):
            self.log_weights = np.log(weights)
        free = np.arange(sides.size) >= 2  # the anchors' sides are fixed
        self.log_g = np.sum(np.where(sides[:, None] == 1, self.g1, self.g0)[free], axis=0)

    def log_q(self) -> float:
        """``log g(σ)`` of the mixture."""
        return float(mixture_log_density(self.log_weights, self.log_g))


class AnnealedSplitMerge:
    """Mixin of :class:`~pymc_crp.PartialOrderLabelGibbs`: the moves of the module docstring.
    Reads the step's ``_term``, ``_column``, ``_beta``, ``rng`` and the slot prior of
    :class:`~pymc_crp.step_methods.po_split_merge.InformedSplitMerge`."""

    def _annealed_check(
        self, rate, tune_rate, levels, equicorrelated, n_lists, tune_merges=None
    ) -> None:
        """Check and store ``annealed_split_merge = rate``, ``tune_annealed_split_merge =
        tune_rate``, ``tune_merges`` (``None``: the defaults for an ``equicorrelated`` slot
        prior or not and ``n_lists`` lists) and ``annealed_levels = levels``."""
        # on where the slot prior allows the moves, fewer per step on many lists
        scale = equicorrelated * min(1.0, ANNEALED_LISTS / max(n_lists, 1))
        rate = ANNEALED_SPLIT_MERGE * scale if rate is None else rate
        tune_rate = TUNE_ANNEALED_SPLIT_MERGE * scale if tune_rate is None else tune_rate
        for option, value in (
            ("annealed_split_merge", rate),
            ("tune_annealed_split_merge", tune_rate),
        ):
            if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
                raise ValueError(f"{option} must be a number >= 0, got {value!r}")
        if isinstance(levels, bool) or not isinstance(levels, Integral) or levels < 2:
            raise ValueError(f"annealed_levels must be an integer >= 2, got {levels!r}")
        if tune_merges is None:
            tune_merges = TUNE_MERGES * bool(equicorrelated)
        integer = isinstance(tune_merges, Integral) and not isinstance(tune_merges, bool)
        if not integer or tune_merges < 0:
            raise ValueError(f"tune_merges must be an integer >= 0, got {tune_merges!r}")
        self.annealed_split_merge = float(rate)
        self.tune_annealed_split_merge = float(tune_rate)
        self.annealed_levels = int(levels)
        self.tune_merges = int(tune_merges)

    def _annealed_moves(self, moves, prior, rate) -> tuple[int, int, int]:
        """``rate`` proposals on average (its whole part, plus one with the probability of its
        fraction); returns ``(merges, splits, refused)``."""
        count = int(rate) + int(self.rng.random() < rate - int(rate))
        merges = splits = refused = 0
        for _ in range(count):
            occupied = np.flatnonzero(moves.counts)
            if occupied.size >= 2 and self.rng.random() < 0.5:
                merges += self._annealed_merge(moves, prior, occupied)
                continue
            s = int(occupied[self.rng.integers(occupied.size)])
            free = np.flatnonzero(moves.counts == 0)
            if moves.counts[s] < 2 or free.size == 0:
                # a full set of slots refuses a split only of a cluster that could be split
                refused += free.size == 0 and moves.counts[s] >= 2
                continue
            splits += self._annealed_split(moves, prior, s, int(free[self.rng.integers(free.size)]))
        return merges, splits, refused

    def _members(self, first, second):
        """Anchors drawn from ``first`` and ``second`` (distinct lists), then the other lists of
        both in uniformly random order."""
        a = int(first[self.rng.integers(first.size)])
        second = second[second != a]
        b = int(second[self.rng.integers(second.size)])
        rest = np.union1d(first, second)
        rest = rest[(rest != a) & (rest != b)]
        return np.concatenate(([a, b], self.rng.permutation(rest)))

    def _annealed_merge(self, moves, prior, occupied) -> bool:
        """Merge of ``t`` into ``s`` along the annealed path from the present split; ``(s, t)``
        chosen by :func:`merge_pair_log_probs`, the anchors uniformly within each."""
        log_probs = merge_pair_log_probs(moves.ll, moves.labels, occupied)
        flat = self.rng.choice(log_probs.size, p=np.exp(log_probs.ravel()))
        s, t = (int(occupied[v]) for v in np.unravel_index(flat, log_probs.shape))
        path, moved, log_ratio = self._merge_path(moves, prior, s, t)
        n_clusters = occupied.size - 1  # in the merged state
        n_a, n_b = path.members.size - moved.size, moved.size
        log_ratio += _log_split_choice(n_clusters, path.members.size) - (
            math.log(0.5) + float(log_probs.ravel()[flat]) - math.log(n_a * n_b)
        )
        if not accept(log_ratio, self.rng):
            return False
        moves.set_slot(s, path.u_s, path.members, path.ll_s, self)
        moves.relabel(moved, t, s)
        return True

    def _merge_path(self, moves, prior, s, t):
        """The annealed path from the present split of ``s`` and ``t`` to their merge:
        ``(path, t's lists, Σ_k log γ_{β_k}(x_{k-1}) / γ_{β_{k-1}}(x_{k-1}))``."""
        members = self._members(
            np.flatnonzero(moves.labels == s), np.flatnonzero(moves.labels == t)
        )
        moved = members[moves.labels[members] == t]
        sides = (moves.labels[members] == t).astype(np.int64)  # changed along the path
        path = _Path(
            members, sides, moves.utilities[s].copy(), moves.utilities[t].copy(),
            moves.ll[members, s].copy(), moves.ll[members, t].copy(), self._side_logs(members),
        )  # fmt: skip
        n_clusters = int(np.count_nonzero(moves.counts)) - 1  # in the merged state
        levels = annealing_levels(self.annealed_levels)
        log_weight = 0.0
        for k in range(1, levels.size):
            log_weight += self._increment(path, moves, n_clusters, levels[k - 1], levels[k])
            if k < levels.size - 1:
                self._path_scan(path, moves, prior, float(levels[k]), reverse=False)
        return path, moved, log_weight

    def _tuning_merges(self, moves, prior) -> int:
        r"""While tuning only: for the ``tune_merges`` pairs of clusters most likely under
        :func:`merge_pair_log_probs`, the annealed path from their split to their merge (into
        the larger), kept if the merged state's joint density is higher,

        .. math::

            \sum_{k} ℓ_k(U_s') - \sum_{c_k = s} ℓ_k(U_s) - \sum_{c_k = t} ℓ_k(U_t)
            + \log \frac{E(\text{merged})}{E(\text{split})}
            + \log \frac{p_0(U_s')}{p_0(U_s)} > 0

        (``U_s'`` the path's end). Not a reversible move: it moves a chain of the annealed
        start out of a state that the partition prior outweighs by hundreds of nats and that
        the annealed split--merge cannot leave on clusters of over 1,000 lists
        (``benchmarks/README.md``); the draws kept after tuning are the exact moves' alone.
        Returns the number of merges made."""
        occupied = np.flatnonzero(moves.counts)
        if occupied.size < 2 or not self.tune_merges:
            return 0
        log_probs = merge_pair_log_probs(moves.ll, moves.labels, occupied)
        upper = np.triu_indices(occupied.size, 1)
        best = np.argsort(-log_probs[upper], kind="stable")[: self.tune_merges]
        merged = 0
        for a, b in zip(occupied[upper[0][best]], occupied[upper[1][best]], strict=True):
            s, t = (int(a), int(b)) if moves.counts[a] >= moves.counts[b] else (int(b), int(a))
            if moves.counts[s] == 0 or moves.counts[t] == 0:  # emptied by an earlier merge
                continue
            path, moved, _ = self._merge_path(moves, prior, s, t)
            kept = path.members[moves.labels[path.members] == s]
            gain = (
                float(np.sum(path.ll_s))
                - float(np.sum(moves.ll[kept, s]))
                - float(np.sum(moves.ll[moved, t]))
                - moves.log_eppf_ratio(kept.size, moved.size, merged=True)
                + prior.log_density(path.u_s)
                - prior.log_density(moves.utilities[s])
            )
            if gain > 0.0:
                moves.set_slot(s, path.u_s, path.members, path.ll_s, self)
                moves.relabel(moved, t, s)
                merged += 1
        return merged

    def _annealed_split(self, moves, prior, s, t) -> bool:
        """Split of ``s`` (two anchors drawn uniformly from it) with ``b``'s side into the empty
        slot ``t`` along the reversed path."""
        cluster = np.flatnonzero(moves.labels == s)
        members = self._members(cluster, cluster)
        g0, g1 = side_logs = self._side_logs(members)
        n_pairs = g0.shape[1] - 1
        component = 0
        if n_pairs and self.rng.random() < _PAIR_WEIGHT:
            component = 1 + int(self.rng.integers(n_pairs))
        sides = (self.rng.random(members.size) < np.exp(g1[:, component])).astype(np.int64)
        sides[0], sides[1] = 0, 1
        u_t = np.array(moves.next_draw(), dtype=np.float64, copy=True)
        path = _Path(
            members, sides, moves.utilities[s].copy(), u_t, moves.ll[members, s].copy(),
            self._column(u_t, members, moves.noise), side_logs,
        )  # fmt: skip
        n_clusters = int(np.count_nonzero(moves.counts))
        levels = annealing_levels(self.annealed_levels)
        log_ratio = -_log_split_choice(n_clusters, members.size)
        for k in range(levels.size - 1, 0, -1):
            log_ratio += self._increment(path, moves, n_clusters, levels[k], levels[k - 1])
            if k > 1:
                self._path_scan(path, moves, prior, float(levels[k - 1]), reverse=True)
        # the reverse merge's choice of (s, t) at the proposed state
        moved = members[sides == 1]
        labels = moves.labels.copy()
        labels[moved] = t
        rest = np.setdiff1d(np.arange(labels.size), members)
        ll = moves.ll.copy()
        for slot, utilities, column in ((s, path.u_s, path.ll_s), (t, path.u_t, path.ll_t)):
            ll[members, slot] = column
            ll[rest, slot] = self._column(utilities, rest, moves.noise)
        occupied = np.flatnonzero(np.bincount(labels, minlength=moves.counts.size))
        log_probs = merge_pair_log_probs(ll, labels, occupied)
        where = np.searchsorted(occupied, [s, t])
        n_b = moved.size
        log_ratio += (
            math.log(0.5) + float(log_probs[where[0], where[1]])
            - math.log((members.size - n_b) * n_b)
        )  # fmt: skip
        if not accept(log_ratio, self.rng):
            return False
        moves.ll[:, s], moves.ll[:, t] = ll[:, s], ll[:, t]
        moves.utilities[s], moves.utilities[t] = path.u_s, path.u_t
        moves.relabel(moved, s, t)
        return True

    def _side_logs(self, members):
        """:func:`pair_side_logs` of ``members`` (the lists' positions computed once)."""
        if getattr(self, "_positions", None) is None:
            self._positions = list_positions(self._term.lists, self._term.contains.shape[1])
        return pair_side_logs(self._positions[members], _FLIP)

    def _increment(self, path, moves, n_clusters, beta_from, beta_to) -> float:
        r"""``log γ_{β_to}(x) - log γ_{β_from}(x)`` at the path's state ``x``: the terms of
        ``log γ_β`` that depend on ``β``, ``Σ_{σ_k=1} (β ℓ_k(U_s) + (1-β) ℓ_k(U_t)) + f(β)
        \log g(σ) - β \log E(σ)/E(\text{merged})`` (``(1-β) \log E(σ) + β \log E(\text{merged})``
        less a constant)."""
        one = path.sides == 1
        n_one = int(np.sum(one))
        log_eppf = log_split_eppf_ratio(
            path.members.size - n_one, n_one, moves.new_weights[n_clusters], moves.discount
        )
        log_g = path.log_q()

        ll_s, ll_t = path.ll_s[one], path.ll_t[one]

        def log_density(beta):
            lik = float(np.sum(beta * ll_s)) if beta > 0.0 else 0.0  # a zero weight ignores
            if beta < 1.0:  # an infinite term
                lik += float(np.sum((1.0 - beta) * ll_t))
            return lik + g_power(beta) * log_g - beta * log_eppf

        return log_density(float(beta_to)) - log_density(float(beta_from))

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
        """Gibbs draws of the sides of ``members[2:]`` at ``β`` (the anchors stay;
        :func:`~pymc_crp.core.annealed_sides.annealed_side_draws`)."""
        n = path.members.size
        order = np.arange(n - 1, 1, -1) if reverse else np.arange(2, n)
        annealed_side_draws(
            path.sides, order, self.rng.random(n), path.ll_s, path.ll_t, path.g0, path.g1,
            path.log_weights, path.log_g, float(beta), g_power(beta), float(moves.discount),
        )  # fmt: skip

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
        members' lists with log-likelihood weights ``weights`` (times the step's ``β``), item
        by item and dimension by dimension (reversed with ``reverse``;
        :func:`~pymc_crp.step_methods.po_coordinate_scan.coordinate_scan`); returns the
        members' tempered log-likelihoods under the new ``psi``."""
        coordinate_scan(
            self._term, psi, members, weights * self._beta, prior, moves.noise, self.rng,
            reverse=reverse,
        )  # fmt: skip
        return self._column(psi, members, moves.noise)
