r"""Step methods for the utilities of partial-order list models.

The list likelihood is piecewise constant in the utilities, so they are updated by
Metropolis moves that recompute only the lists they touch:

* :class:`UtilityMetropolis` — per slot ``a``, a preconditioned Crank--Nicolson (pCN) move
  of the whole slot, ``U'_a = m_a + √(1-β²)(U_a - m_a) + β(D_a - m_a)`` with ``D_a`` a draw
  from the Gaussian prior of ``U_a`` (prior-reversible, so it is accepted with the likelihood
  ratio of the slot's lists), and random-walk moves of one item's row
  ``U'_{a,j} = U_{a,j} + σ ε`` (accepted with prior ratio times the likelihood ratio of the
  slot's lists that contain item ``j``; the others do not change). Empty slots get an exact
  draw from their prior. ``σ`` and ``β`` are tuned towards acceptance 0.3 during tuning.
  A proposal that leaves the slot's dominance order unchanged reuses the lists'
  log-likelihoods; other orders go through :func:`~pymc_crp.core.lists.list_likelihood_cache`
  (orders seen before, e.g. after a rejected move back, cost no counting).

  A one-item move costs what the lists that contain the item cost: the item's relations are
  rebuilt (``O(M K)``) and the lists whose restricted order changed picked in one compiled
  call (:func:`~pymc_crp.core.restricted_orders.move_item_changed`) and counted through the
  lists' memo of restricted orders
  (:meth:`~pymc_crp.core.lists.ListLikelihoodCache.move_log_likelihoods`). The slot's count
  ratios are kept during the item sweeps and stored once, as the entry of the order the
  sweeps end at. With an equicorrelated prior and one list term that reads ``U`` directly a
  whole sweep over a slot's items is one compiled call
  (:func:`~pymc_crp.core.item_sweep.item_sweep_kernel`; the same chain bit for bit).
  The Metropolis test of a slot's proposal, with the slot's kept count ratios, is
  :class:`~pymc_crp.step_methods.utility_slot_moves.SlotAcceptance`.

``U0`` and ``ρ``, ``τ``, ``p`` have their own steps (:mod:`pymc_crp.step_methods.utility_mean`,
:mod:`pymc_crp.step_methods.hyperparameter`).
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.multivariate import MvNormalRV
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.tensor.random.basic import NormalRV

from pymc_crp.core.checks import integer_at_least
from pymc_crp.distributions.equicorrelated_normal import (
    EquicorrelatedNormalParams,
    EquicorrelatedNormalRV,
    equicorrelated_log_ratio,
)
from pymc_crp.roles import find_model
from pymc_crp.step_methods.list_terms import (
    _carry_entry,
    _list_children,
    _ListTerm,
    _rows_by_item,
    _TermState,
    repeats_for_entries,
)
from pymc_crp.step_methods.metropolis import ScaleTuner
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    compiled_once_per_model,
    model_signature,
    prior_draw_function,
    reseed,
    term_logps,
)
from pymc_crp.step_methods.utility_coordinates import CoordinateMoves
from pymc_crp.step_methods.utility_kernels import TRAJECTORY_MOST_ITEMS, hmc_trajectory, item_sweep
from pymc_crp.step_methods.utility_slot_moves import (
    SlotAcceptance,
    _MoveCounts,
    _SlotPrior,
    _SlotSweep,
)

__all__ = ["UtilityMetropolis"]

_GAUSSIAN_OPS = (EquicorrelatedNormalRV, NormalRV, MvNormalRV)
_TARGET_ACCEPT = 0.3
_MOST_ITEM_SWEEPS = 5  # item sweeps per step on the smallest data sets


@dataclass_state
class UtilityMetropolisState(StepMethodState):
    """Sampling state of :class:`UtilityMetropolis`, tuned proposal sizes included, so that
    PyMC's reset between sequential chains (and pickling) restores the whole chain."""

    tune: bool
    rw_scale: float
    pcn_step: float
    _rw_tuner: ScaleTuner
    _pcn_tuner: ScaleTuner


class UtilityMetropolis(CoordinateMoves, SlotAcceptance, BlockedStep):
    """Per-slot Metropolis updates of partial-order utilities (see the module docstring).

    Assigned automatically to a Gaussian utility variable (``L × M × K`` slots or ``M × K``)
    whose only children are observed :class:`~pymc_crp.PartialOrderLists`.

    Parameters
    ----------
    vars : the utility variable
    rw_scale : float, default 0.5
        Initial random-walk standard deviation ``σ`` of one item's utilities.
    pcn_step : float, default 0.3
        Initial pCN step ``β`` in ``(0, 1]``.
    coordinate_items : int, default 0
        Items per occupied slot (chosen at random each step; ``-1``: all) whose ``K``
        utilities get the exact coordinate Gibbs draw of :mod:`pymc_crp.core.utility_gibbs`: a
        mixture of truncated normals over the intervals between the other items' values,
        weighted by the likelihood of the slot's lists under each interval's order. Needs an
        :class:`~pymc_crp.EquicorrelatedNormal` prior and lists that read ``U`` directly.
    cell_sweeps : int, optional
        Scans of exact draws of every utility within the interval between its neighbours in
        its column (:func:`~pymc_crp.core.utility_gibbs.cell_draws`: truncated normals that
        leave every order, hence every list likelihood, unchanged; no list is evaluated),
        after the other moves of a step. Needs an :class:`~pymc_crp.EquicorrelatedNormal`
        prior and lists that read ``U`` directly; default 1 for such utilities and 0 for
        others.
    column_moves : int, optional
        Passes, after the cell sweeps, of shifts and scalings of every column of the occupied
        slots (:mod:`pymc_crp.core.column_moves`: they keep every order, so no list is
        evaluated). Same conditions and default as ``cell_sweeps``.
    column_swaps : int, optional
        Passes, after the column moves, of a Metropolis exchange of two random columns of each
        occupied slot (:func:`~pymc_crp.core.column_moves.column_swaps`: the dominance order
        is the intersection of the columns' orders, so no list is evaluated; the prior ratio
        decides). Same conditions as ``cell_sweeps``; default 0.
    cell_hops : int, default 0
        Sweeps over the items of each occupied slot of moves of one utility (a random column)
        to the interval next to its own (up or down with probability 1/2), drawn from its
        Gaussian conditional truncated to that interval and accepted with
        ``min(1, L' Z' / (L Z))`` (``L`` the slot's lists' likelihood, ``Z`` the interval's
        prior mass): each move changes the order by one swap of neighbours in a column.
        Same conditions as ``cell_sweeps``. Measured at a fixed partition
        (``benchmarks/utility_mixing.py``) it did not raise the ESS per second, so it is off
        by default.
    hmc_trajectories : int, optional
        Exact Hamiltonian trajectories of each occupied slot's utilities per step, after its
        item sweeps (:mod:`pymc_crp.core.reflective_hmc`: the Gaussian prior's elliptical
        flow, reflected or refracted where a wall between two items changes the slot's
        order; no accept/reject step). Same conditions as ``cell_sweeps``; default 1 for
        such utilities over at most 32 items, else 0. At the planted partition of 300
        simulated rankings of 10 items one trajectory per step raised the bulk ESS per second
        of the log-likelihood 8.7x, of the orders' relations 14x and of ``τ`` 2.3x, for 1.3x
        the time per iteration; over 100 items a trajectory meets about 7,000 walls (22 ms
        per slot), hence the default (``benchmarks/README.md``).
    pcn : bool, default True
        Make the pCN move of each occupied slot.
    item_sweeps : int, optional
        Random-walk sweeps over the items of each occupied slot per step (0: pCN moves only).
        Default: ``min(5, max(1, 2000 // E))`` for ``E`` list entries (the summed lengths),
        so that small data sets, where a sweep is cheap, get up to five; above 1,000 entries,
        one. On the 15 witness lists (36 entries) five sweeps raised the smallest bulk ESS of
        4 chains from 308–339 to 354–488 (four seeds) for 1.07 times the time
        (``benchmarks/README.md``).
    tune : bool, default True
        Adapt ``σ`` and ``β`` towards acceptance 0.3 while PyMC tunes.

    Notes
    -----
    The attribute ``likelihood_temperature`` ``λ`` (default 1; set by
    :class:`~pymc_crp.ReplicaExchange`) makes every move target the prior times the lists'
    likelihood to the power ``λ``: the pCN and random-walk ratios and the weights of the
    coordinate draws use ``λ`` times the lists' log-likelihoods.
    """

    name = "utility_metropolis"
    default_blocked = False
    _state_class = UtilityMetropolisState
    stats_dtypes_shapes = {
        "utility_rw_accept": (np.float64, []),
        "utility_pcn_accept": (np.float64, []),
        "utility_hop_accept": (np.float64, []),
        "utility_hmc_crossings": (np.float64, []),
        "utility_rw_scale": (np.float64, []),
        "utility_pcn_step": (np.float64, []),
    }
    likelihood_temperature: float = 1.0

    def __init__(
        self,
        vars,
        *,
        rw_scale: float = 0.5,
        pcn_step: float = 0.3,
        item_sweeps: int | None = None,
        coordinate_items: int = 0,
        cell_sweeps: int | None = None,
        column_moves: int | None = None,
        column_swaps: int | None = None,
        cell_hops: int = 0,
        hmc_trajectories: int | None = None,
        pcn: bool = True,
        tune: bool = True,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model = modelcontext(model)
        (value_var,) = get_value_vars_from_user_vars(vars, model)
        rv = model.values_to_rvs[value_var]
        children = _list_children(model, value_var, exclude=(rv,))
        if children is None or model.rvs_to_transforms.get(rv) is not None or rv.ndim not in (2, 3):
            raise ValueError(
                f"UtilityMetropolis needs untransformed (M, K) or (L, M, K) utilities whose only "
                f"children are observed PartialOrderLists; {rv.name} is not"
            )
        if not 0 < pcn_step <= 1 or not rw_scale > 0:
            raise ValueError("need 0 < pcn_step <= 1 and rw_scale > 0")
        if item_sweeps is not None:
            integer_at_least(item_sweeps, "item_sweeps")
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self.tune = True
        self.adaptive = bool(tune)
        self.rw_scale = float(rw_scale)
        self.pcn_step = float(pcn_step)
        if isinstance(coordinate_items, bool) or not isinstance(coordinate_items, Integral):
            raise TypeError(f"coordinate_items must be an integer, got {coordinate_items!r}")
        if coordinate_items < -1:
            raise ValueError(f"coordinate_items must be -1 or >= 0, got {coordinate_items}")
        self.coordinate_items = int(coordinate_items)
        optional = {
            "cell_sweeps": cell_sweeps,
            "column_moves": column_moves,
            "column_swaps": column_swaps,
            "hmc_trajectories": hmc_trajectories,
        }
        for option, value in (*optional.items(), ("cell_hops", cell_hops)):
            if value is not None:
                integer_at_least(value, option)
        self.pcn = bool(pcn)
        self._rw_tuner = ScaleTuner(_TARGET_ACCEPT)
        self._pcn_tuner = ScaleTuner(_TARGET_ACCEPT, upper=1.0)
        self._name = value_var.name
        self._terms = [_ListTerm(model, c, value_var, compile_kwargs) for c in children]
        if item_sweeps is None:
            entries = sum(int(np.sum(t.lists >= 0)) for t in self._terms)
            item_sweeps = repeats_for_entries(entries, _MOST_ITEM_SWEEPS)
        self.item_sweeps = int(item_sweeps)
        self._gaussian = isinstance(rv.owner.op, _GAUSSIAN_OPS)
        prior = _prior_functions(model, rv, compile_kwargs)
        self._prior_fn, self._mean_fn = prior["density"], prior["mean"]
        self._draw_fn, self._draw_rng = prior["draw"], prior["draw_rng"]
        self._equi_fn = prior["equicorrelated"]
        direct = self._equi_fn is not None and all(term.direct is not None for term in self._terms)
        asked = {"coordinate_items": self.coordinate_items, "cell_hops": cell_hops}
        asked.update({key: value for key, value in optional.items() if value is not None})
        for option, value in asked.items():
            if value and not direct:
                raise ValueError(
                    f"{option} needs EquicorrelatedNormal utilities that the lists read "
                    f"directly (no covariates); {rv.name} is not"
                )
        self.cell_sweeps = int(direct if cell_sweeps is None else cell_sweeps)
        self.column_moves = int(direct if column_moves is None else column_moves)
        self.column_swaps = int(0 if column_swaps is None else column_swaps)
        self.cell_hops = int(cell_hops)
        if hmc_trajectories is None:  # on where a trajectory meets few walls (few items)
            n_items = max(term.contains.shape[1] for term in self._terms)
            hmc_trajectories = int(direct and n_items <= TRAJECTORY_MOST_ITEMS)
        self.hmc_trajectories = int(hmc_trajectories)

    def _prior_draw(self, point):
        reseed(self._draw_rng, self.rng)
        return self._draw_fn(point)[0]

    def step(self, point):
        return self._update(point, pcn_last=False, refresh_empty=True)

    def reversible_update(self, point, reverse: bool):
        """A move of the occupied slots' utilities whose two orders are each other's adjoint.

        The pCN move and the item sweeps of each occupied slot (``pcn`` and ``item_sweeps``),
        in that order, or with ``reverse`` in the opposite order; empty slots of a Gaussian
        prior are left as they are (other priors give them the prior-only moves). Each part is
        reversible for the prior times the tempered likelihood of the slot's lists at the
        current labels and noise (a pCN move; a sweep of random-walk moves in a uniformly
        random order), the prior draw of the items in none of the slot's lists (made before
        the item sweeps either way) commutes with the sweeps (independent rows that no list
        reads), and slots are independent given the labels, so the kernel with ``reverse`` is
        the time reversal of the kernel without it: a path of such moves
        drawing ``reverse`` with probability 1/2, the same at every point, has the
        non-equilibrium acceptance of :mod:`pymc_crp.core.noise_path`. Needs no coordinate
        draws, cell moves, column moves or cell hops (a ``ValueError`` otherwise).
        """
        if (
            self.coordinate_items
            or self.cell_sweeps
            or self.column_moves
            or self.column_swaps
            or self.cell_hops
            or self.hmc_trajectories
        ):
            raise ValueError(
                "reversible_update needs coordinate_items, cell_sweeps, column_moves, "
                "column_swaps, cell_hops and hmc_trajectories to be 0"
            )
        return self._update(point, pcn_last=bool(reverse), refresh_empty=False)

    def _update(self, point, pcn_last: bool, refresh_empty: bool):
        """The moves of a step (module docstring); ``pcn_last``: each slot's pCN move after
        its item sweeps; ``refresh_empty``: draw the empty slots from their prior."""
        point = dict(point)
        utilities = np.array(point[self._name], dtype=np.float64, copy=True)
        point[self._name] = utilities
        stacked = utilities.ndim == 3
        states = [self._term_state(term, point, stacked) for term in self._terms]
        occupied = np.zeros(utilities.shape[0] if stacked else 1, dtype=bool)
        for state in states:
            occupied[state.labels] = True
        prior = self._slot_prior(point, utilities)
        moves = _MoveCounts()
        for slot in range(occupied.size):
            index = (slot,) if stacked else ()
            if self._gaussian and not occupied[slot]:  # exact draw from the prior
                if refresh_empty:
                    utilities[index] = prior.draw[index]
                    prior.density = None
                continue
            rows = [np.flatnonzero(state.labels == slot) for state in states]
            by_item = [_rows_by_item(term, r) for term, r in zip(self._terms, rows, strict=True)]
            sweep = _SlotSweep(point, utilities, slot, index, states, rows, prior, by_item)
            if self._gaussian and self.pcn and not pcn_last:
                self._pcn_move(sweep, moves)
            items = self._items_in_lists(sweep)
            self._open_tables(sweep)
            compiled = self._compiled_sweeps(sweep)
            for _ in range(self.item_sweeps):
                perm = self.rng.permutation(items)
                if compiled:
                    item_sweep(self, sweep, perm, moves)
                    continue
                for item in perm:
                    self._item_move(sweep, item, moves)
            for _ in range(self.cell_hops):
                for item in self.rng.permutation(items):
                    self._cell_hop(sweep, item, moves)
            for _ in range(self.hmc_trajectories if compiled else 0):
                hmc_trajectory(self, sweep, moves)
            self._close_tables(sweep)
            if self.coordinate_items:
                n_pick = items.size if self.coordinate_items < 0 else self.coordinate_items
                for item in self.rng.permutation(items)[: min(n_pick, items.size)]:
                    for k in range(utilities.shape[-1]):
                        self._coordinate_draw(sweep, item, k)
                prior.density = None
            if self._gaussian and self.pcn and pcn_last:
                self._pcn_move(sweep, moves)
        for _ in range(self.cell_sweeps):
            self._cell_draws(utilities, occupied, prior)
        for _ in range(self.column_moves):
            self._column_moves(utilities, occupied, prior)
        for _ in range(self.column_swaps):
            self._column_swaps(utilities, occupied, prior)
        if self.tune and self.adaptive:
            self.rw_scale = self._rw_tuner.record(self.rw_scale, moves.rw_accepts, moves.rw_tries)
            self.pcn_step = self._pcn_tuner.record(
                self.pcn_step, moves.pcn_accepts, moves.pcn_tries
            )
        return point, [self._stats(moves)]

    def _stats(self, moves: _MoveCounts) -> dict:
        return {
            "utility_rw_accept": moves.rw_accepts / moves.rw_tries if moves.rw_tries else np.nan,
            "utility_pcn_accept": (
                moves.pcn_accepts / moves.pcn_tries if moves.pcn_tries else np.nan
            ),
            "utility_hop_accept": (
                moves.hop_accepts / moves.hop_tries if moves.hop_tries else np.nan
            ),
            "utility_hmc_crossings": (
                moves.hmc_crossings / moves.hmc_runs if moves.hmc_runs else np.nan
            ),
            "utility_rw_scale": self.rw_scale,
            "utility_pcn_step": self.pcn_step,
        }

    # ------------------------------------------------------------------------------------
    # The parts of a step
    # ------------------------------------------------------------------------------------
    def _term_state(self, term, point, stacked) -> _TermState:
        """Labels, noise, orders and log-likelihoods of one list term at ``point``."""
        labels = term.labels_fn(point) if stacked else np.zeros(term.lists.shape[0], np.int64)
        noise = float(term.noise_fn(point))
        words, logliks = term.all_logliks(point, labels, noise)
        return _TermState(labels, noise, logliks, words)

    def _slot_prior(self, point, utilities) -> _SlotPrior:
        """The prior of the slots at ``point``: its mean and a draw (Gaussian utilities), the
        per-row ``ρ`` and scale and a second draw (equicorrelated utilities)."""
        prior = _SlotPrior()
        if self._gaussian:
            prior.mean = self._mean_fn(point)
            prior.draw = self._prior_draw(point)
        if self._equi_fn is not None:
            prior.rho, prior.scale = (  # per row: (L, M) or (M,)
                np.broadcast_to(v, utilities.shape[:-1]) for v in self._equi_fn(point)
            )
            prior.absent_draw = self._prior_draw(point)  # independent of the pCN proposals
        return prior

    def _pcn_move(self, sweep: _SlotSweep, moves: _MoveCounts) -> None:
        """``U'_a = m_a + √(1-β²)(U_a - m_a) + β(D_a - m_a)``, accepted with the likelihood
        ratio of the slot's lists (the move is reversible for the Gaussian prior)."""
        utilities, index, prior = sweep.utilities, sweep.index, sweep.prior
        beta = self.pcn_step
        current = utilities[index].copy()
        utilities[index] = (
            prior.mean[index]
            + math.sqrt(1.0 - beta**2) * (current - prior.mean[index])
            + beta * (prior.draw[index] - prior.mean[index])
        )
        accepted = self._accept_slot(sweep, None, 0.0)
        if accepted:
            prior.density = None
        else:
            utilities[index] = current
        moves.pcn_tries += 1
        moves.pcn_accepts += accepted

    def _items_in_lists(self, sweep: _SlotSweep) -> np.ndarray:
        """The items the moves of the slot follow. With an equicorrelated prior, items in none
        of the slot's lists get an exact draw from their prior (rows are independent given the
        parents) and are left out; otherwise all items."""
        utilities, index, prior = sweep.utilities, sweep.index, sweep.prior
        n_items = utilities.shape[-2]
        if prior.absent_draw is None:
            return np.arange(n_items)
        present = np.zeros(n_items, dtype=bool)
        for term, rows in zip(self._terms, sweep.rows, strict=True):
            present[: term.contains.shape[1]] |= term.contains[rows].any(axis=0)
        if present.all():
            return np.arange(n_items)
        utilities[index][~present] = prior.absent_draw[index][~present]
        for term, state, rows in zip(self._terms, sweep.states, sweep.rows, strict=True):
            old = state.words[sweep.slot].copy()
            state.words[sweep.slot] = term.words(sweep.point, sweep.slot)[0]
            _carry_entry(term, state, sweep.slot, rows, old)
        prior.density = None
        return np.flatnonzero(present)

    def _item_move(self, sweep: _SlotSweep, item: int, moves: _MoveCounts) -> None:
        """Random walk ``U'_{a,j} = U_{a,j} + σ ε`` of one item's row, accepted with the prior
        ratio times the likelihood ratio of the slot's lists that contain the item; ``ε`` is
        shaped like the row's prior when it is equicorrelated (:meth:`_row_noise`)."""
        utilities, prior = sweep.utilities, sweep.prior
        row = (*sweep.index, item)
        old_row = utilities[row].copy()
        new_row = old_row + self.rw_scale * self._row_noise(old_row.shape, prior.rho, row)
        if prior.rho is not None:  # closed-form density of the row
            mean, rho, scale = prior.mean[row], prior.rho[row], prior.scale[row]
            log_prior_ratio = equicorrelated_log_ratio(
                new_row, old_row, mean, rho, scale, prior.constants
            )
            utilities[row] = new_row
            new_density = None
        else:
            if prior.density is None:
                prior.density = self._prior_fn(sweep.point)
            old_prior = prior.density[row]
            utilities[row] = new_row
            new_density = self._prior_fn(sweep.point)  # rows independent given the parents
            log_prior_ratio = float(np.sum(new_density[row] - old_prior))  # the row's terms
        accepted = self._accept_slot(sweep, item, log_prior_ratio)
        if accepted:
            prior.density = new_density
        else:
            utilities[row] = old_row
        moves.rw_tries += 1
        moves.rw_accepts += accepted

    def _compiled_sweeps(self, sweep: _SlotSweep) -> bool:
        """Whether the item sweeps of the slot run in one compiled call each
        (:func:`~pymc_crp.step_methods.utility_kernels.item_sweep`; also the condition of the
        Hamiltonian trajectories): an equicorrelated prior of ``K < 8`` columns (the
        closed-form row density) and one list term that reads ``U`` directly, with its ratios
        kept."""
        return (
            sweep.prior.rho is not None
            and sweep.utilities.shape[-1] < 8
            and len(self._terms) == 1
            and self._terms[0].direct is not None
            and sweep.tables[0] is not None
        )

    def _row_noise(self, shape, rho, row) -> np.ndarray:
        """Random-walk increment of one item's row: ``N(0, Σ_ρ)`` shaped like the row's prior
        when it is equicorrelated (moves along the strong correlation of ``ρ`` near 1), else
        ``N(0, I)``; symmetric either way (``ρ`` is fixed during the step)."""
        noise = self.rng.standard_normal(shape)
        if rho is None or shape[-1] < 2:
            return noise
        r = float(rho[row])
        if not 0.0 < r < 1.0:
            return noise
        return math.sqrt(1.0 - r) * noise + math.sqrt(r) * self.rng.standard_normal()

    def reset_tuning(self):
        self._rw_tuner.reset()
        self._pcn_tuner.reset()

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for Gaussian utilities whose only children are observed PartialOrderLists."""
        model = find_model(var)
        if model is None or var not in model.free_RVs or var.ndim not in (2, 3):
            return Competence.INCOMPATIBLE  # utilities are (M, K) or (L, M, K) matrices
        if model.rvs_to_transforms.get(var) is not None:
            return Competence.INCOMPATIBLE
        if _list_children(model, model.rvs_to_values[var], exclude=(var,)) is None:
            return Competence.INCOMPATIBLE
        return Competence.IDEAL


def _prior_functions(model, rv, compile_kwargs) -> dict:
    """The compiled functions of the utilities' prior, once per model and variable.

    ``density`` (element-wise log-density; only for priors that are not equicorrelated,
    whose rows the moves score in closed form), and for Gaussian priors ``mean``, ``draw`` and
    its shared generator ``draw_rng``, and for equicorrelated priors ``equicorrelated`` (``ρ``
    and the scale, for closed-form row densities and the coordinate Gibbs draws); ``None``
    where the prior has no such part. The utility step and the label step's private utility step
    of one model share them (each re-seeds the draw's generator from its own before a draw),
    so they are compiled once; rebuilt when the model changes.
    """
    name = f"utility_prior_functions:{rv.name}"
    return compiled_once_per_model(
        model,
        name,
        model_signature(model),
        compile_kwargs,
        lambda: _compile_prior(model, rv, compile_kwargs),
    )


def _compile_prior(model, rv, compile_kwargs) -> dict:
    """The functions of :func:`_prior_functions`, compiled."""
    functions = {
        "density": None,
        "mean": None,
        "draw": None,
        "draw_rng": None,
        "equicorrelated": None,
    }
    if isinstance(rv.owner.op, _GAUSSIAN_OPS):
        mean = pt.broadcast_to(rv.owner.op.dist_params(rv.owner)[0], rv.shape)  # the mean
        functions["mean"] = compile_point_function(
            model, model.replace_rvs_by_values([mean])[0], compile_kwargs
        )
        functions["draw"], functions["draw_rng"] = prior_draw_function(model, [rv], compile_kwargs)
    if isinstance(rv.owner.op, EquicorrelatedNormalRV):
        params = EquicorrelatedNormalParams.from_rv(rv)
        rho, scale = model.replace_rvs_by_values([params.rho, params.scale])
        functions["equicorrelated"] = compile_point_function(
            model, [pt.cast(rho, "float64"), pt.cast(scale, "float64")], compile_kwargs
        )
    else:
        functions["density"] = compile_point_function(
            model, term_logps(model, jacobian=False)[rv], compile_kwargs
        )
    return functions
