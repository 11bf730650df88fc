r"""The state of one slot's utility moves and the Metropolis test of a proposal for it.

:class:`~pymc_crp.UtilityMetropolis` and its coordinate moves
(:mod:`pymc_crp.step_methods.utility_coordinates`) write a proposal for slot ``a`` into the
point and call :meth:`SlotAcceptance._accept_slot`, which recomputes only the slot's lists
(those containing the moved item for a one-item move), reuses their log-likelihoods when the
slot's dominance order is unchanged, and accepts with probability

.. math:: \min\Big(1, e^{r}\, \prod_{i:\, c_i = a} \frac{p(Y_i \mid h(U'_a), p)^β}
    {p(Y_i \mid h(U_a), p)^β}\Big),

``r`` the proposal's log prior (or proposal) ratio and ``β`` the likelihood temperature.
During the item sweeps the slot's count ratios are kept in tables updated as moves are
accepted (:meth:`SlotAcceptance._open_tables`) and stored once, as the cache entry of the
order the sweeps end at (:meth:`SlotAcceptance._close_tables`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymc_crp.core.lists import list_likelihood_cache
from pymc_crp.step_methods.list_terms import _carry_entry, _proposal_logliks, tempered
from pymc_crp.step_methods.metropolis import accept

__all__ = ["SlotAcceptance"]


@dataclass
class _SlotPrior:
    """The prior of the slots during a step (see :meth:`~pymc_crp.UtilityMetropolis._slot_prior`);
    ``density`` caches the elementwise prior log-density at the current utilities."""

    mean: np.ndarray | None = None
    draw: np.ndarray | None = None
    rho: np.ndarray | None = None
    scale: np.ndarray | None = None
    absent_draw: np.ndarray | None = None
    density: np.ndarray | None = None
    constants: dict = field(default_factory=dict)  # of equicorrelated_log_ratio
    slot_rows: dict = field(default_factory=dict)  # per slot index: (ρ, row constants)


@dataclass
class _SlotSweep:
    """The moves of one slot: the point (whose utilities are updated in place), the slot and
    its index into the utilities, the term states, the rows of the slot's lists and, per term,
    those rows grouped by item (:func:`~pymc_crp.step_methods.list_terms._rows_by_item`)."""

    point: dict
    utilities: np.ndarray
    slot: int
    index: tuple
    states: list
    rows: list
    prior: _SlotPrior
    by_item: list
    tables: list | None = None  # per term during the item sweeps: (start order, ratios)


@dataclass
class _MoveCounts:
    rw_tries: int = 0
    rw_accepts: int = 0
    pcn_tries: int = 0
    pcn_accepts: int = 0
    hop_tries: int = 0
    hop_accepts: int = 0
    hmc_runs: int = 0
    hmc_crossings: int = 0


class SlotAcceptance:
    """Mixin of :class:`~pymc_crp.UtilityMetropolis`: the test of the module docstring. Reads
    the step's ``_terms``, ``likelihood_temperature`` and ``rng``."""

    def _open_tables(self, sweep: _SlotSweep) -> None:
        """Keep the count ratios of the slot's lists at the current order during the item
        sweeps (updated as moves are accepted), instead of a cache entry per accepted order."""
        cache = list_likelihood_cache()
        sweep.tables = [
            (
                state.words[sweep.slot].copy(),
                cache.ratios(term.list_set, state.words[sweep.slot], rows),
            )
            if state.noise < 1.0 and rows.size
            else None
            for term, state, rows in zip(self._terms, sweep.states, sweep.rows, strict=True)
        ]

    def _close_tables(self, sweep: _SlotSweep) -> None:
        """Store the kept ratios in the cache entry of the order the item sweeps ended at."""
        cache = list_likelihood_cache()
        for term, state, rows, table in zip(
            self._terms, sweep.states, sweep.rows, sweep.tables, strict=True
        ):
            if table is not None and not np.array_equal(table[0], state.words[sweep.slot]):
                cache.store(term.list_set, state.words[sweep.slot], rows, table[1])
        sweep.tables = None

    def _accept_slot(self, sweep: _SlotSweep, item: int | None, log_ratio: float) -> bool:
        """Metropolis test for a proposal already written into the point; caches on accept.

        Only the slot's lists (containing ``item`` for a one-item move) are recomputed; when
        the proposal leaves the slot's order unchanged their log-likelihoods are reused, and
        after a one-item move only the lists whose restricted order changed are counted (their
        ratios go into the kept tables when the move is accepted).
        """
        slot = sweep.slot
        tables = sweep.tables or [None] * len(self._terms)
        updates = []
        for term, state, rows, (by_item, starts), table in zip(
            self._terms, sweep.states, sweep.rows, sweep.by_item, tables, strict=True
        ):
            old = state.words[slot]
            counted = ratios = None  # the lists counted for the proposal, and their ratios
            if item is not None:
                rows = (
                    by_item[starts[item] : starts[item + 1]] if item < starts.size - 1 else rows[:0]
                )
                new_words, changed = term.moved_words(sweep.point, slot, old, item, rows)
            else:
                new_words = term.words(sweep.point, slot)
            if rows.size == 0:
                updates.append((state, rows, None, new_words, counted, ratios))
                continue
            current = state.logliks[rows]
            if item is not None:  # lists whose restricted order is unchanged keep theirs
                new = current.copy()
                if changed.size:
                    counted = rows[changed]
                    new[changed], ratios = _proposal_logliks(
                        term, new_words, counted, state.noise, table is not None
                    )
            elif not (new_words[0] != old).any():
                new = current  # same order: same likelihoods
            else:  # lists whose restricted order is unchanged come from the cache
                new = term.slot_logliks(new_words, rows, state.noise, hint=old)
            log_ratio += tempered(self.likelihood_temperature, float(new.sum() - current.sum()))
            updates.append((state, rows, new, new_words, counted, ratios))
        accepted = accept(log_ratio, self.rng)
        if accepted:
            for (state, rows, new, new_words, counted, ratios), term, slot_rows, table in zip(
                updates, self._terms, sweep.rows, tables, strict=True
            ):
                if new is not None:
                    state.logliks[rows] = new
                if table is None:
                    old = state.words[slot].copy()
                    state.words[slot] = new_words[0]
                    _carry_entry(term, state, slot, slot_rows, old)
                else:
                    state.words[slot] = new_words[0]
                    if counted is not None:
                        table[1][np.searchsorted(slot_rows, counted)] = ratios
        return bool(accepted)
