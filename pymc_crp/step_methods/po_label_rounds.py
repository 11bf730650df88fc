r"""Rounds of label moves of :class:`~pymc_crp.PartialOrderLabelGibbs` with the occupied slots'
utilities held.

A round is ``weight_moves`` moves of the split of two clusters' lists through their
un-collapsed weight (:mod:`pymc_crp.core.pair_weights`), the merge--split proposals the step is
configured with (prior, informed and annealed;
:mod:`pymc_crp.step_methods.po_prior_split_merge` and its siblings), and one
Neal (2000) Algorithm 8 sweep over the lists with ``m`` auxiliary slots, draws of the slot
prior (:mod:`pymc_crp.core.aux_label_sweep`). After the rounds the empty slots' utilities are
drawn from their prior, an exact Gibbs draw since no list attaches to them. The likelihood
columns ``β log p(Y_i | h(U_k), p)`` of the occupied slots are computed once per group of
rounds and kept up to date by the moves, so a round costs list likelihoods only for the
auxiliaries drawn afresh and the new clusters' slots.

With ``reuse_auxiliaries`` (by default where the lists hold many distinct sets of items,
:func:`reuse_auxiliaries_option`) the auxiliaries are kept from sweep to sweep within a step,
across its groups of rounds, else each sweep draws its own. Either is exact: after
each visit of a sweep they are again independent draws of the slot prior, independent of the
labels and utilities (:mod:`pymc_crp.core.aux_label_sweep`), and the moves between two sweeps
(weight and merge--split moves, the utility step between groups) neither read them nor change
the slot prior, so they stay so. Only an auxiliary that a new cluster took is replaced, by a
spare (one that a singleton's utilities displaced, :mod:`pymc_crp.core.aux_label_sweep`) or
else a fresh draw (a reused one's column comes from the cache entry of its order). Each step
starts from fresh draws, since the slot prior and ``p`` change between steps. Over many
items, where a fresh auxiliary costs a count of every list, the label step from a saved state
of 1,000 lists over 100 items (9 clusters) counted 84,466 lists per step when each round drew
fresh auxiliaries, 71,637 with them reused and 64,105 with the spares too (147, 130, 120 ms)
(``benchmarks/README.md``). Over 10 items, where the lists share the work of counting, reuse
saved a sixth of the time per iteration but lost 6–32 % of the ESS (three seeds), so it is off
there by default.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.aux_label_sweep import (
    BORN_FROM,
    N_FULL,
    N_SPARE,
    SPARE_HEAD,
    SweepState,
    aux_label_sweep,
)
from pymc_crp.core.lists import list_likelihood_cache
from pymc_crp.core.pair_weights import pair_weight_move, pick_pairs
from pymc_crp.step_methods.model_graph import reseed
from pymc_crp.step_methods.po_prior_split_merge import SplitMergeState

__all__ = ["LabelRounds", "reuse_auxiliaries_option"]

# Distinct item sets among the lists from which the sweeps reuse their auxiliaries by default.
REUSE_FROM_ITEM_SETS = 100

# Prior draws of one slot's utilities made per compiled call (the pool that split proposals and
# auxiliary slots take fresh draws from): one call per step on most problems, instead of one
# per ``L`` draws, whose fixed cost dominated the merge--split proposals on small data.
POOL_DRAWS = 256


def reuse_auxiliaries_option(reuse: bool | None, lists: np.ndarray) -> bool:
    """The ``reuse_auxiliaries`` option of :class:`~pymc_crp.PartialOrderLabelGibbs`: ``reuse``
    itself, or by default whether the lists ``(N, J)`` (padded with negative entries) hold at
    least :data:`REUSE_FROM_ITEM_SETS` distinct sets of items.

    Fresh auxiliaries each round mix better (the sweeps propose new orders, not ones most lists
    have declined): on 1,000 rankings of 10 items the bulk ESS of the number of clusters was
    1,033, 1,203 and 1,209 on three seeds against 882, 858 and 955 with reuse, which took 0.84
    times the time per iteration (``benchmarks/README.md``): lists over one set of items
    share the work of counting an order (:mod:`pymc_crp.core.lists`), so a fresh auxiliary is
    cheap there. Where each list ranks its own items it costs a count of every list, and reuse
    cut the counts of a label step from 84,466 to 64,105 (module docstring)."""
    if reuse is not None:
        if not isinstance(reuse, bool | np.bool_):
            raise TypeError(f"reuse_auxiliaries must be True, False or None, got {reuse!r}")
        return bool(reuse)
    ranked = np.sort(np.where(np.asarray(lists) >= 0, lists, -1), axis=1)
    return np.unique(ranked, axis=0).shape[0] >= REUSE_FROM_ITEM_SETS


class LabelRounds:
    """Mixin of :class:`~pymc_crp.PartialOrderLabelGibbs`: the rounds of the module docstring.
    Reads the step's ``rng``, ``n_slots``, ``n_aux``, ``reuse_auxiliaries``, ``sweep``,
    ``merge_split``, ``informed_split_merge``, ``weight_moves``, ``weight_moves_mean_size``,
    ``_beta``, ``_annealed_rate``, ``_merge_now`` (tuning-phase merges in this step), ``_term``
    (the list term), ``_draw_fn``/``_draw_rng`` (compiled prior draws), ``_slot_prior`` and the
    split--merge mixins' proposal methods."""

    def _prior_draws(self, point) -> np.ndarray:
        """At least ``POOL_DRAWS`` (and ``L``) independent draws of one slot's utilities from
        the slot prior, from one compiled call."""
        reseed(self._draw_rng, self.rng)
        draws = np.asarray(self._draw_fn(point)[0], dtype=np.float64)
        return draws.reshape(-1, *draws.shape[2:])

    def _column(self, utilities, rows, noise) -> np.ndarray:
        """``β log p(Y_i | h(utilities), p)`` for lists ``rows`` (one ``(M, K)`` matrix;
        ``β`` is the likelihood temperature, times the annealing factor while tuning)."""
        words = self._term.slot_words(utilities[None])
        return self._beta * self._term.slot_logliks(words, rows, noise)

    def _label_rounds(
        self, point, labels, utilities, noise, new_weights, discount, rounds, tally, first_group,
        aux=None,
    ):  # fmt: skip
        """``rounds`` rounds of merge--split proposals and Algorithm 8 sweeps with the occupied
        slots' utilities held, then the exact Gibbs draw of the empty slots' utilities (labels
        and utilities in place; ``tally`` adds merges, splits, refused splits, informed merges
        and splits, sweeps that found every slot full, annealed merges and splits and
        tuning-phase merges). ``aux``: the auxiliaries of the step's last sweep (reused) or
        ``None``. Returns the last sweep's state and the auxiliaries after it."""
        n_lists, n_slots = labels.shape[0], self.n_slots
        occupied = np.flatnonzero(np.bincount(labels, minlength=n_slots))
        cache = list_likelihood_cache()
        words = self._term.slot_words(utilities, slots=occupied)
        ll = np.zeros((n_lists, n_slots))
        rows = np.tile(np.arange(n_lists), occupied.size)
        ll[:, occupied] = (
            cache.log_likelihoods(
                self._term.list_set, words, np.repeat(occupied, n_lists), noise, rows=rows
            )
            .reshape(occupied.size, n_lists)
            .T
        ) * self._beta
        pool = {"draws": self._prior_draws(point), "used": 0}

        def next_draw():
            """The next unused prior draw of one slot's utilities."""
            if pool["used"] == pool["draws"].shape[0]:
                pool["draws"], pool["used"] = self._prior_draws(point), 0
            pool["used"] += 1
            return pool["draws"][pool["used"] - 1]

        for round_ in range(rounds):  # U of the occupied slots is fixed throughout
            if self.weight_moves:
                tally[9] += self._weight_moves(labels, ll, discount)
            annealed = first_group and round_ == 0 and self._annealed_rate > 0
            merge_now = first_group and round_ == 0 and self._merge_now
            if self.merge_split or self.informed_split_merge or annealed or merge_now:
                moves = SplitMergeState(
                    labels, ll, utilities, noise, new_weights, discount, next_draw
                )
                if merge_now:
                    tally[8] += self._tuning_merges(moves, self._slot_prior(point))
                if self.merge_split:
                    tally[:3] += self._merge_split(moves)
                for active, propose, at in (
                    (self.informed_split_merge, self._informed_moves, 3),
                    (annealed, lambda m, p: self._annealed_moves(m, p, self._annealed_rate), 6),
                ):
                    if active:
                        more = propose(moves, self._slot_prior(point))
                        tally[at : at + 2] += more[:2]
                        tally[2] += more[2]
            sweep = SweepState(labels, n_slots)
            if self.sweep:
                born, aux = self._sweep(
                    labels, ll, utilities, noise, new_weights, discount, sweep, next_draw,
                    aux if self.reuse_auxiliaries else None,
                )  # fmt: skip
                if round_ + 1 < rounds:  # the next round reads every occupied column
                    for slot in np.flatnonzero(born & (sweep.counts > 0)):
                        ll[:, slot] = self._column(utilities[slot], np.arange(n_lists), noise)
            tally[5] += int(sweep.state[N_FULL])
        empty = sweep.counts == 0
        if empty.any():  # exact Gibbs draw of the empty slots' utilities (unused pool draws)
            utilities[empty] = np.stack([next_draw() for _ in range(int(np.sum(empty)))])
        return sweep, aux

    def _weight_moves(self, labels, ll, discount) -> int:
        """``weight_moves`` moves of the split of two occupied clusters' lists through their
        un-collapsed weight (:mod:`pymc_crp.core.pair_weights`), the pairs drawn by
        :func:`~pymc_crp.core.pair_weights.pick_pairs` from the occupied columns of ``ll``
        (labels in place), when the ``K`` occupied clusters hold at least
        ``weight_moves_mean_size`` lists on average (``N >= weight_moves_mean_size K``; none
        otherwise). Returns the number of lists that changed cluster."""
        occupied = np.flatnonzero(np.bincount(labels, minlength=self.n_slots))
        if occupied.size < 2 or labels.size < self.weight_moves_mean_size * occupied.size:
            return 0  # exact either way: the moves keep the number of clusters
        moved = 0
        for a, b in occupied[pick_pairs(ll[:, occupied], self.weight_moves, self.rng)]:
            members = np.flatnonzero((labels == a) | (labels == b))
            on_a = labels[members] == a
            sides = pair_weight_move(ll[members, a], ll[members, b], on_a, discount, self.rng)
            moved += int(np.count_nonzero(sides != on_a))
            labels[members] = np.where(sides, a, b)
        return moved

    def _sweep(
        self, labels, ll, utilities, noise, new_weights, discount, sweep, next_draw, aux=None
    ):
        """One Algorithm 8 sweep over the lists in random order (labels, ``ll`` and ``aux`` in
        place) with the auxiliaries and spares of ``aux`` (:class:`Auxiliaries`: independent
        draws of the slot prior, independent of the state), or fresh ones when ``None``.
        Returns ``(born, aux)``: a mask of the slots where new clusters were born, whose
        columns of ``ll`` hold only the lists not yet visited when their auxiliary was last
        drawn (the sweep never reads the others), so another round must recompute them; and
        the auxiliaries after the sweep, again independent prior draws that the next round may
        reuse (module docstring)."""
        n_lists, n_slots = labels.shape[0], self.n_slots
        if aux is None:
            aux = Auxiliaries(np.stack([next_draw() for _ in range(self.n_aux)]))
        n_aux, n_spare = aux.utilities.shape[0], aux.spares.shape[0]
        all_rows = np.arange(n_lists)
        # (a reused auxiliary's lists come from its order's cache entry)
        aux_ll = np.stack([self._column(a, all_rows, noise) for a in aux.utilities], axis=1)
        spare_ll = np.empty((n_lists, n_spare))
        for s in range(aux.n_spare):
            spare_ll[:, s] = self._column(aux.spares[s], all_rows, noise)
        order = self.rng.permutation(n_lists).astype(np.int64)
        uniforms = self.rng.random((n_lists, 3))
        logw = np.empty(n_slots + n_aux)
        flat, flat_aux = utilities.reshape(n_slots, -1), aux.utilities.reshape(n_aux, -1)
        flat_spares = aux.spares.reshape(n_spare, -1)
        born = np.zeros(n_slots, dtype=np.bool_)
        sweep.state[N_SPARE], sweep.state[SPARE_HEAD] = aux.n_spare, 0
        position = 0
        while True:
            sweep.state[BORN_FROM] = -1
            position = aux_label_sweep(
                ll, aux_ll, flat, flat_aux, labels, sweep.counts, sweep.occupied, sweep.free,
                sweep.where, sweep.state, order, position, uniforms, new_weights, discount,
                logw, spare_ll, flat_spares, born,
            )  # fmt: skip
            t = int(sweep.state[BORN_FROM])  # a new cluster took auxiliary t, no spare left
            if t >= 0:  # (also at the last visit: the next round reuses the auxiliaries)
                aux.utilities[t] = next_draw()
            if position >= n_lists:  # the spares held, oldest first
                aux.n_spare = int(sweep.state[N_SPARE])
                held = (int(sweep.state[SPARE_HEAD]) + np.arange(aux.n_spare)) % n_spare
                aux.spares[: aux.n_spare] = aux.spares[held]
                return born, aux
            remaining = order[position:]
            aux_ll[remaining, t] = self._column(aux.utilities[t], remaining, noise)


class Auxiliaries:
    """The auxiliary utilities ``(m, M, K)`` of the label sweeps and the spares ``(m, M, K)``
    kept from them (the first ``n_spare``, oldest first; :func:`~pymc_crp.core.aux_label_sweep.
    aux_label_sweep`), carried from round to round within a step: all independent draws of
    the slot prior, independent of the labels and utilities."""

    def __init__(self, utilities: np.ndarray):
        self.utilities = np.ascontiguousarray(utilities, dtype=np.float64)
        self.spares = np.empty_like(self.utilities)
        self.n_spare = 0
