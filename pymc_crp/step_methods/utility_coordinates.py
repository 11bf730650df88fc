r"""Moves of single partial-order utilities that know where the order changes.

The list likelihood depends on a utility ``x = U^{(a)}_{jk}`` only through the interval
between its neighbours in column ``k`` of slot ``a`` (:mod:`pymc_crp.core.utility_gibbs`).
:class:`CoordinateMoves` gives :class:`~pymc_crp.UtilityMetropolis` five exact moves, each
optional; the cell draws, hops and coordinate draws are built on that, the column moves and
swaps keep every order:

* ``_cell_draws`` — every utility of the occupied slots redrawn within its interval (truncated
  normals; no order changes, no list is evaluated);
* ``_column_moves`` — every column of the occupied slots shifted and scaled about its centre
  (:mod:`pymc_crp.core.column_moves`; no order changes, no list is evaluated);
* ``_column_swaps`` — two columns of each occupied slot exchanged, accepted on the prior
  ratio (the dominance order is unchanged, no list is evaluated);
* ``_cell_hop`` — one utility moved into the interval next to its own, accepted with
  ``min(1, L' Z' / (L Z))`` (one list evaluation of the lists that contain the item);
* ``_coordinate_draw`` — the exact Gibbs draw over all intervals (a list evaluation per
  interval).

The methods read the step's slot sweep (``_SlotSweep`` of
:mod:`pymc_crp.step_methods.utility_slot_moves`: the point, the slot's utilities and
lists, the prior of the rows) and use the step's ``_accept_slot`` and generator.
"""

from __future__ import annotations

import numpy as np

from pymc_crp.core.column_moves import column_moves, column_swaps
from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.core.utility_gibbs import (
    cell_draws,
    equicorrelated_conditional,
    interval_log_masses,
    interval_points,
    sample_interval_mixture,
    truncated_normal,
)
from pymc_crp.step_methods.list_terms import _carry_entry, _rows_with_item, tempered

__all__ = ["CoordinateMoves"]


class CoordinateMoves:
    """Mixin of :class:`~pymc_crp.UtilityMetropolis`: the single-utility moves (see the module
    docstring)."""

    def _cell_hop(self, sweep, item: int, moves) -> None:
        """Move ``item``'s utility in a random column into the interval next to its own
        (see ``cell_hops``); the reverse move, from the new interval in the other direction,
        returns to the old one, so the ratio is ``L' Z' / (L Z)``."""
        prior, index = sweep.prior, sweep.index
        slot_u = sweep.utilities[index]
        k = int(self.rng.integers(slot_u.shape[-1]))
        up = bool(self.rng.random() < 0.5)
        u_draw = self.rng.random()
        moves.hop_tries += 1
        x = float(slot_u[item, k])
        others = np.delete(slot_u[:, k], item)
        # Values tied with x (an initial point) count as lying in the direction of the move,
        # so that ties are left; they have probability zero under the target.
        below = np.unique(others[(others <= x) if not up else (others < x)])
        above = np.unique(others[(others >= x) if up else (others > x)])
        if up and above.size:
            new = (above[0], above[1] if above.size > 1 else np.inf)
            old = (below[-1] if below.size else -np.inf, above[0])
        elif not up and below.size:
            new = (below[-2] if below.size > 1 else -np.inf, below[-1])
            old = (below[-1], above[0] if above.size else np.inf)
        else:
            return  # no interval beyond the outermost one
        rho, scale = float(prior.rho[index][item]), float(prior.scale[index][item])
        mu, sd = equicorrelated_conditional(slot_u[item], prior.mean[index][item], rho, scale, k)
        masses = interval_log_masses(np.array([new[0], old[0]]), np.array([new[1], old[1]]), mu, sd)
        slot_u[item, k] = truncated_normal(new[0], new[1], mu, sd, u_draw)
        accepted = self._accept_slot(sweep, item, float(masses[0] - masses[1]))
        if accepted:
            prior.density = None
        else:
            slot_u[item, k] = x
        moves.hop_accepts += accepted

    def _coordinate_draw(self, sweep, item: int, k: int) -> None:
        """Exact Gibbs draw of ``utilities[index][item, k]`` (:mod:`pymc_crp.core.utility_gibbs`);
        updates the cached orders and log-likelihoods of the slot's lists."""
        prior, index = sweep.prior, sweep.index
        slot_u = sweep.utilities[index]
        others = np.delete(slot_u[:, k], item)
        low, high, inside = interval_points(others)
        candidates = np.repeat(slot_u[None], inside.shape[0], axis=0)
        candidates[:, item, k] = inside
        log_lik = np.zeros(inside.shape[0])
        found = []
        cache = list_likelihood_cache()
        for term, state, rows in zip(self._terms, sweep.states, sweep.rows, strict=True):
            words = order_words(candidates, term.top_down)
            rows = _rows_with_item(term, rows, item)
            if rows.size:
                keys = [w.tobytes() for w in words]
                first = {key: r for r, key in reversed(list(enumerate(keys)))}
                distinct = np.array(sorted(set(first.values())), dtype=np.int64)
                lls = cache.log_likelihoods(
                    term.list_set,
                    words[distinct],
                    np.repeat(np.arange(distinct.size), rows.size),
                    state.noise,
                    rows=np.tile(rows, distinct.size),
                ).reshape(distinct.size, rows.size)
                where = {int(r): d for d, r in enumerate(distinct)}
                per_candidate = np.array([where[first[key]] for key in keys])
                log_lik += lls.sum(axis=1)[per_candidate]
                found.append((rows, words, lls, per_candidate))
            else:
                found.append((rows, words, None, None))
        rho, scale = float(prior.rho[index][item]), float(prior.scale[index][item])
        mu, sd = equicorrelated_conditional(slot_u[item], prior.mean[index][item], rho, scale, k)
        x, r = sample_interval_mixture(
            tempered(self.likelihood_temperature, log_lik),
            low, high, mu, sd, self.rng.random(), self.rng.random(),
        )  # fmt: skip
        slot_u[item, k] = x
        for term, state, slot_rows, (rows, words, lls, per_candidate) in zip(
            self._terms, sweep.states, sweep.rows, found, strict=True
        ):
            old = state.words[sweep.slot].copy()
            state.words[sweep.slot] = words[r]
            if lls is not None:
                state.logliks[rows] = lls[per_candidate[r]]
            _carry_entry(term, state, sweep.slot, slot_rows, old)

    def _cell_draws(self, utilities, occupied, prior) -> None:
        """One scan of :func:`~pymc_crp.core.utility_gibbs.cell_draws` over the occupied slots
        (the orders, and so the cached likelihoods, are unchanged)."""

        def scan(block, mean, rho, scale):
            n_slots, n_items, n_dims = block.shape
            uniforms = self.rng.random((n_dims, 2, n_slots, n_items))
            cell_draws(block, mean, rho, scale, uniforms)

        self._on_occupied(utilities, occupied, prior, scan)

    def _column_moves(self, utilities, occupied, prior) -> None:
        """One pass of :func:`~pymc_crp.core.column_moves.column_moves` over the occupied
        slots (increasing affine maps of each column: the orders are unchanged)."""

        def moves(block, mean, rho, scale):
            n_slots, _, n_dims = block.shape
            normals = self.rng.standard_normal((n_dims, 2, n_slots))
            column_moves(block, mean, rho, scale, normals, self.rng.random((n_dims, n_slots)))

        self._on_occupied(utilities, occupied, prior, moves)

    def _column_swaps(self, utilities, occupied, prior) -> None:
        """One pass of :func:`~pymc_crp.core.column_moves.column_swaps` over the occupied
        slots (exchanges of two columns: the orders are unchanged)."""

        def swaps(block, mean, rho, scale):
            n_slots, _, n_dims = block.shape
            pairs = self.rng.integers(max(n_dims * (n_dims - 1) // 2, 1), size=n_slots)
            column_swaps(block, mean, rho, scale, pairs, self.rng.random(n_slots))

        self._on_occupied(utilities, occupied, prior, swaps)

    @staticmethod
    def _on_occupied(utilities, occupied, prior, move) -> None:
        """``move(block, mean, rho, scale)`` on the occupied slots' utilities ``(n, M, K)``
        and their rows' prior, written back in place."""
        stacked = utilities.ndim == 3
        slots = np.flatnonzero(occupied)
        if stacked:
            block = utilities[slots]
            mean, rho, scale = prior.mean[slots], prior.rho[slots], prior.scale[slots]
        else:
            block = utilities[None]
            mean, rho, scale = prior.mean[None], prior.rho[None], prior.scale[None]
        move(block, np.ascontiguousarray(mean, dtype=float), rho, scale)
        if stacked:
            utilities[slots] = block
        else:
            utilities[...] = block[0]
        prior.density = None
