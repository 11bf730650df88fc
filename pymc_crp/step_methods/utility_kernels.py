"""The compiled moves of one slot's utilities inside a :class:`~pymc_crp.UtilityMetropolis`
step: a sweep of one-item random-walk moves (:mod:`pymc_crp.core.item_sweep`) and an exact
Hamiltonian trajectory (:mod:`pymc_crp.core.reflective_hmc`).

Both need what the step's compiled sweeps need (an equicorrelated prior of ``K < 8`` columns,
one list term that reads the utilities directly, the slot's count ratios kept) and update the
slot's order, its lists' log-likelihoods and their ratios in place.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_crp.core.item_sweep import item_sweep_kernel
from pymc_crp.core.linext_support import float_binomials
from pymc_crp.core.lists import list_likelihood_cache
from pymc_crp.core.posets import DEFAULT_MAX_STATES, _limit_error
from pymc_crp.core.reflective_hmc import hmc_trajectory_kernel
from pymc_crp.distributions.equicorrelated_normal import equicorrelated_rows_constants

__all__ = ["hmc_trajectory", "item_sweep"]

DURATION = 0.5 * math.pi  # a quarter period: an independent draw where no wall is met
MAX_EVENTS = 200_000
# Trajectories by default up to this many items: a trajectory meets a wall wherever two items
# that are neighbours in a column cross, about quadratically many in the items (100 items:
# about 7,000 walls against 70 over 10; benchmarks/README.md)
TRAJECTORY_MOST_ITEMS = 32


def _slot_arrays(step, sweep):
    """The arrays both kernels read: the term, its state, the slot's rows, rows by item, the
    kept ratios, the slot's utilities (a view), its prior mean, per-row ``ρ`` and constants."""
    (term,), (state,), (slot_rows,) = step._terms, sweep.states, sweep.rows
    (((by_item, starts),), ((_, slot_ratios),)) = sweep.by_item, sweep.tables
    prior, index = sweep.prior, sweep.index
    utilities = sweep.utilities[index]  # a view: the moves write into the point
    found = prior.slot_rows.get(index)  # ρ and s are fixed during a step
    if found is None:
        rho = np.ascontiguousarray(prior.rho[index], dtype=np.float64)
        constants = equicorrelated_rows_constants(
            rho, prior.scale[index], utilities.shape[-1], prior.constants
        )
        found = prior.slot_rows[index] = (rho, constants)
    rho, constants = found
    mean = np.ascontiguousarray(prior.mean[index], dtype=np.float64)
    lists = (
        state.words[sweep.slot], not term.top_down, term.item_words, by_item, starts,
        state.logliks, slot_rows, slot_ratios, term.list_set.steps, term.list_set.lengths,
        term.list_set.inverse, float(state.noise), float_binomials(), DEFAULT_MAX_STATES,
    )  # fmt: skip
    return term, utilities, mean, rho, constants, lists


def item_sweep(step, sweep, perm: np.ndarray, moves) -> None:
    """The step's one-item moves of the items ``perm`` in turn, in one call of
    :func:`~pymc_crp.core.item_sweep.item_sweep_kernel` (the same draws from ``step.rng`` and
    the same floating-point operations as one move at a time, so the same chain bit for
    bit)."""
    term, utilities, mean, rho, constants, lists = _slot_arrays(step, sweep)
    cache = list_likelihood_cache()
    accepted, counted, ok = item_sweep_kernel(
        step.rng, np.asarray(perm, dtype=np.int64), utilities, mean, rho, constants,
        float(step.rw_scale), float(step.likelihood_temperature), *lists,
        cache.order_memo(term.list_set).arrays,
    )  # fmt: skip
    cache.computed += counted
    if not ok:
        raise _limit_error(utilities.shape[-2], DEFAULT_MAX_STATES)
    if accepted:
        sweep.prior.density = None
    moves.rw_tries += perm.size
    moves.rw_accepts += accepted


def hmc_trajectory(step, sweep, moves) -> None:
    """One exact Hamiltonian trajectory of the slot, of duration ``π/2``."""
    term, utilities, mean, rho, constants, lists = _slot_arrays(step, sweep)
    cache = list_likelihood_cache()
    status, _, crossings, counted = hmc_trajectory_kernel(
        step.rng, utilities, mean, rho, np.ascontiguousarray(constants[:, 3]), DURATION,
        float(step.likelihood_temperature), MAX_EVENTS, *lists,
        cache.order_memo(term.list_set).arrays,
    )  # fmt: skip
    cache.computed += counted
    if status == 2:
        raise _limit_error(utilities.shape[-2], DEFAULT_MAX_STATES)
    if status == 0:
        sweep.prior.density = None
        moves.hmc_crossings += crossings
    moves.hmc_runs += 1
