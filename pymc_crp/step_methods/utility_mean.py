r"""``U0`` of the hierarchical partial-order model, with ``τ`` and ``ρ`` moved collapsed.

:class:`UtilityMeanGibbs` is assigned to the ``U0`` of
:func:`pymc_crp.models.clustered_partial_orders`. In the model
``U0_j ~ N(0, Σ_ρ)``, ``U^{(a)}_j ~ N(τ U0_j, (1-τ²) Σ_ρ)``, ``a = 1..L``, one step

1. (when the builder recorded the labels and ``τ``/``ρ`` are random) makes random-walk
   Metropolis moves of ``logit τ`` and ``logit ρ`` (unconstrained values, prior with its
   Jacobian) targeting ``p(τ, ρ | U_O)`` with ``U0`` and the empty slots integrated out
   (:mod:`pymc_crp.core.utility_hierarchy`): the lists depend on ``U`` only, so no list is
   evaluated. Given the utilities, ``τ`` and ``U0`` are tightly coupled; moving ``τ`` with
   ``U0`` integrated out breaks that coupling;
2. draws ``U0`` from its conditional given the ``n`` occupied slots ``O`` and then the empty
   slots' utilities ``E`` from their prior given the new ``U0``:

   .. math::

       U0_j \mid U_O, τ, ρ \sim N\Big(c\,\frac{τ}{1-τ^2}\sum_{a \in O} U^{(a)}_j,\;
       c\,Σ_ρ\Big), \qquad c = \frac{1-τ^2}{1-τ^2+nτ^2},
       \qquad U^{(e)} \sim N(τ U0, (1-τ^2)Σ_ρ),\ e \in E.

3. (``cycles > 1``, the default when the lists read the slots only through their orders) moves the
   occupied slots' utilities given the new ``U0`` by moves that keep every order, hence every
   list likelihood, and evaluate no list: a scan of draws within the intervals between
   neighbours (:func:`~pymc_crp.core.utility_gibbs.cell_draws`), shifts and scalings of every
   column and a swap of two columns (:mod:`pymc_crp.core.column_moves`), and (``K ≥ 3``
   columns, by default) an exact Hamiltonian trajectory of every occupied slot that reflects
   at the walls where its order would change and passes the others
   (:func:`~pymc_crp.core.reflective_hmc.cone_trajectory`), all for the slot prior
   ``N(τU0, (1-τ^2)Σ_ρ)`` restricted to the current orders; then 1–3 again, ``cycles`` times
   in all. With item covariates the lists read the orders of ``g(U) + xβ``
   (``g = G⁻¹∘Φ``), which shifts, scalings and trajectories of ``U`` do not keep: there the
   order-keeping moves are the cell draws in those scores
   (:func:`~pymc_crp.core.gumbel_cells.gumbel_cell_draws`) alone.

Together this is a Metropolis-within-Gibbs update of the block ``(τ, ρ, U0, U_E)`` (and, with
the cycles, of the occupied slots within their orders): the Metropolis moves target the
marginal of ``(τ, ρ)``, ``U0`` is drawn from its exact conditional, and each order-keeping
move leaves the prior restricted to the orders invariant. Without labels ``O`` is every slot,
``n = L``, and only ``U0`` is drawn.

Why cycles: given the utilities, ``τ`` is pinned down by how alike the occupied slots are, and
with strong data the list moves change the slots' utilities slowly. The list-free moves of
``U0``, ``τ``, ``ρ`` and the slots within their orders are cheap, and repeating them lets
``τ`` travel at fixed orders. On 1,000 simulated rankings (``benchmarks/po_convergence.py``,
4 × (1,000 + 1,000)) five cycles raised the bulk ESS of ``τ`` on every seeded run, about
twofold, and ten cycles raised it again, 1.3–1.7 times per second of sampling on the same seeds
(``benchmarks/README.md``).

Why trajectories: the cell draws and the column moves keep every column's rank pattern, a finer
constraint than the order. With three or more columns two items that the order leaves
incomparable can change places in one column without changing it, and ``τ`` given the rank
patterns is narrower and centred elsewhere than ``τ`` given the orders; only the list-reading
utility step changed the patterns, once per iteration. On 1,000 simulated rankings one
trajectory per slot and cycle doubled the bulk ESS of ``τ`` per second of sampling
(``benchmarks/README.md``).
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.core import reflective_hmc
from pymc_crp.core.column_moves import column_moves, column_swaps
from pymc_crp.core.gumbel_cells import gumbel_cell_draws
from pymc_crp.core.utility_gibbs import cell_draws, contiguous_rows
from pymc_crp.core.utility_hierarchy import collapsed_log_density, hierarchy_statistics
from pymc_crp.roles import UtilityMeanRole, get_role
from pymc_crp.step_methods.model_graph import compile_point_function, term_logps
from pymc_crp.step_methods.utility_kernels import DURATION, MAX_EVENTS, TRAJECTORY_MOST_ITEMS

__all__ = ["UtilityMeanGibbs"]

_COLLAPSED_SCALE = 0.5  # random-walk standard deviation on the logit scale
_COLLAPSED_MOVES = 25  # moves of each hyperparameter per step (benchmarks/README.md)
_CYCLES = 10  # default cycles where the model allows them (benchmarks/README.md)
_CONE_TRAJECTORIES = 1  # per occupied slot and cycle where K >= 3 (benchmarks/README.md)


class UtilityMeanGibbs(BlockedStep):
    """Exact Gibbs update of the mean utilities ``U0`` (and collapsed ``τ``/``ρ`` moves).

    Assigned automatically to the ``U0`` of :func:`pymc_crp.models.clustered_partial_orders`
    (the builder records the structure; see the module docstring).

    Parameters
    ----------
    vars : the ``U0`` variable
    collapsed_moves : int, default 25
        Metropolis moves of each of ``τ`` and ``ρ`` with ``U0`` integrated out per step,
        spread over the cycles (``⌈collapsed_moves / cycles⌉`` per cycle; 0: none; only with
        labels recorded by the builder).
    cycles : int, optional
        Cycles per step of the collapsed moves, the draw of ``U0`` and the order-keeping
        moves of the occupied slots (module docstring); one cycle is the draw of ``U0`` alone
        (no order-keeping moves). More than 1 needs lists that read the slots only through
        orders (the builder records it), else a ``ValueError``; with item covariates the
        order-keeping moves are cell draws in the Gumbel scores ``g(U) + xβ`` only
        (:func:`~pymc_crp.core.gumbel_cells.gumbel_cell_draws`).
        Default (``None``): ten where the model allows them, else one. On 1,000 simulated
        rankings five cycles about double the ESS of ``τ`` against one, and ten give 1.3–1.7
        times the ESS per second of five (``benchmarks/README.md``).
    cone_trajectories : int, optional
        Order-keeping Hamiltonian trajectories of every occupied slot per cycle (module
        docstring; each a quarter period of the prior's flow, no list evaluated). Default
        (``None``): one where the cycles keep the orders and the slots have three or more
        columns (with one or two every wall changes the order, so a trajectory cannot change
        the rank patterns) and at most 32 items (the walls a trajectory meets grow about
        quadratically with the items: over 100 items they took two thirds of an iteration),
        else 0. More than 0 needs the cycles' order-keeping moves and no item covariates,
        else a ``ValueError``.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.
    """

    name = "utility_mean_gibbs"
    default_blocked = False
    _state_class = StepMethodState
    stats_dtypes_shapes = {"collapsed_accept": (np.float64, [])}

    def __init__(
        self,
        vars,
        *,
        collapsed_moves: int = _COLLAPSED_MOVES,
        cycles: int | None = None,
        cone_trajectories: int | None = None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model = modelcontext(model)
        (value_var,) = get_value_vars_from_user_vars(vars, model)
        rv = model.values_to_rvs[value_var]
        role = get_role(rv, model)
        if not isinstance(role, UtilityMeanRole):
            raise ValueError(f"{rv.name} was not built as the mean utilities of an HPO model")
        if isinstance(collapsed_moves, bool) or not isinstance(collapsed_moves, int):
            raise TypeError(f"collapsed_moves must be an integer, got {collapsed_moves!r}")
        if collapsed_moves < 0:
            raise ValueError(f"collapsed_moves must be >= 0, got {collapsed_moves}")
        if cycles is not None and (isinstance(cycles, bool) or not isinstance(cycles, int)):
            raise TypeError(f"cycles must be an integer or None, got {cycles!r}")
        if cycles is not None and cycles < 1:
            raise ValueError(f"cycles must be >= 1, got {cycles}")
        if cone_trajectories is not None and (
            isinstance(cone_trajectories, bool) or not isinstance(cone_trajectories, int)
        ):
            raise TypeError(
                f"cone_trajectories must be an integer or None, got {cone_trajectories!r}"
            )
        if cone_trajectories is not None and cone_trajectories < 0:
            raise ValueError(f"cone_trajectories must be >= 0, got {cone_trajectories}")
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self._name = value_var.name
        # rho is the constant 0.0 when K = 1.
        parameters = [pt.as_tensor_variable(v) for v in (role.slots, role.tau, role.rho)]
        graphs = model.replace_rvs_by_values(parameters)
        self._params_fn = compile_point_function(
            model, [pt.cast(g, "float64") for g in graphs], compile_kwargs
        )
        self._slots_name = self._labels_name = None
        labels = role.labels
        slots_value = graphs[0]
        if labels is not None and slots_value in model.value_vars:
            self._slots_name = slots_value.name
            self._labels_name = model.rvs_to_values[labels].name
        # With item covariates the lists read the orders of g(U) + xβ: only cell draws keep them.
        self._score_shift = None
        if role.score_shift is not None:
            (shift,) = model.replace_rvs_by_values([role.score_shift])
            self._score_shift = compile_point_function(
                model, pt.cast(shift, "float64"), compile_kwargs
            )
        can_cycle = (role.orders_only or role.score_shift is not None) and (
            self._slots_name is not None
        )
        if cycles is None:
            cycles = _CYCLES if can_cycle else 1
        if cycles > 1 and not can_cycle:
            raise ValueError(
                f"cycles > 1 needs lists that read {role.slots.name}'s utilities only through "
                "orders and recorded labels (a model built by clustered_partial_orders)"
            )
        self.cycles = int(cycles)
        self._keep_orders = can_cycle and self.cycles > 1
        if cone_trajectories is None:  # where a trajectory can change the rank patterns
            cone_trajectories = 0
            if self._keep_orders and self._score_shift is None:
                start = initial_point if initial_point is not None else model.initial_point()
                n_items, n_dims = np.shape(start[self._slots_name])[-2:]
                if n_dims >= 3 and n_items <= TRAJECTORY_MOST_ITEMS:
                    cone_trajectories = _CONE_TRAJECTORIES
        if cone_trajectories and (not self._keep_orders or self._score_shift is not None):
            raise ValueError(
                "cone_trajectories > 0 needs the order-keeping moves of cycles > 1 and lists "
                f"that read the orders of {role.slots.name}'s utilities themselves (no item "
                "covariates)"
            )
        self.cone_trajectories = int(cone_trajectories)
        # Free tau / rho: (value name, fn(point) -> (tau, rho, prior log-density of the moved
        # value on the sampler's scale)): one compiled call per move.
        self._hyper = []
        if self._labels_name is not None and collapsed_moves:
            for hyper in (role.tau, role.rho):
                if hyper not in model.free_RVs:
                    continue
                hyper_value = model.rvs_to_values[hyper]
                if model.rvs_to_transforms.get(hyper) is None:
                    continue  # the moves are on the unconstrained scale
                logp = pt.sum(term_logps(model)[hyper])
                outs = [pt.cast(g, "float64") for g in (*graphs[1:], logp)]
                fn = compile_point_function(model, outs, compile_kwargs)
                self._hyper.append((hyper_value.name, fn))
        self.collapsed_moves = int(collapsed_moves)

    def _equicorrelated(self, shape, rho):
        """Draws of ``N(0, Σ_ρ)`` vectors over the last axis."""
        eps = self.rng.standard_normal(shape)
        common = self.rng.standard_normal((*shape[:-1], 1))
        return math.sqrt(1.0 - rho) * eps + math.sqrt(rho) * common

    def _collapsed_moves(self, point, slots, occupied, tau, rho):
        """Random-walk moves of ``τ`` and ``ρ`` targeting ``p(τ, ρ | U_O)`` from ``(τ, ρ)``;
        returns the acceptance rate and the final ``(τ, ρ)``."""
        stats = hierarchy_statistics(slots[occupied])
        tries = accepts = 0
        for name, hyper_fn in self._hyper:
            _, _, prior = hyper_fn(point)
            current = collapsed_log_density(stats, tau, rho) + float(prior)
            for _ in range(-(-self.collapsed_moves // self.cycles)):  # spread over the cycles
                old = np.array(point[name], copy=True)
                step = _COLLAPSED_SCALE * self.rng.standard_normal(old.shape)
                point[name] = np.asarray(old + step, dtype=old.dtype)
                new_tau, new_rho, prior = (float(v) for v in hyper_fn(point))
                proposed = collapsed_log_density(stats, new_tau, new_rho) + prior
                tries += 1
                if np.isfinite(proposed) and math.log(self.rng.random()) < proposed - current:
                    current, tau, rho = proposed, new_tau, new_rho
                    accepts += 1
                else:
                    point[name] = old
        return (accepts / tries if tries else np.nan), tau, rho

    def step(self, point):
        point = dict(point)
        slots, tau, rho = self._params_fn(point)
        slots = np.array(slots, dtype=np.float64, copy=True)
        occupied = np.ones(slots.shape[0], dtype=bool)
        if self._labels_name is not None:
            occupied[:] = False
            occupied[np.asarray(point[self._labels_name], dtype=np.int64)] = True
        tau, rho = float(tau), float(rho)
        shift = None if self._score_shift is None else np.asarray(self._score_shift(point))
        accepts = []
        for _ in range(self.cycles):
            if self._hyper:
                accept, tau, rho = self._collapsed_moves(point, slots, occupied, tau, rho)
                accepts.append(accept)
            new = self._draw_mean(slots[occupied], tau, rho)
            if self._keep_orders:
                slots[occupied] = self._order_keeping_moves(
                    slots[occupied], tau * new, tau, rho, shift
                )
        point[self._name] = new
        if self._keep_orders:
            point[self._slots_name] = slots
        if not occupied.all():  # the empty slots given the new U0: their prior
            slots = np.array(point[self._slots_name], dtype=np.float64, copy=True)
            empty = ~occupied
            shape = (np.count_nonzero(empty), *new.shape)
            slots[empty] = tau * new + math.sqrt(1.0 - tau**2) * self._equicorrelated(shape, rho)
            point[self._slots_name] = slots
        accept = float(np.mean(accepts)) if accepts else np.nan
        return point, [{"collapsed_accept": accept}]

    def _draw_mean(self, occupied_slots, tau, rho):
        """A draw of ``U0`` given the ``n`` occupied slots (module docstring, step 2)."""
        s2 = 1.0 - tau**2
        c = s2 / (s2 + occupied_slots.shape[0] * tau**2)
        mean = c * tau / s2 * occupied_slots.sum(axis=0)
        return mean + math.sqrt(c) * self._equicorrelated(mean.shape, rho)

    def _order_keeping_moves(self, block, mean, tau, rho, shift=None):
        """Cell draws, column moves, a column swap and ``cone_trajectories`` order-keeping
        trajectories of every slot of ``block`` ``(n, M, K)`` for the prior
        ``N(mean, (1-τ²)Σ_ρ)`` of each row (module docstring, step 3); with item covariates
        (``shift = xβ``) cell draws in the Gumbel scores only."""
        n_slots, n_items, n_dims = block.shape
        block, means, rhos, scales = contiguous_rows(block, mean, rho, math.sqrt(1.0 - tau**2))
        rows = (n_slots, n_items)
        if shift is not None:
            uniforms = self.rng.random((n_dims, 2, *rows))
            gumbel_cell_draws(block, means, rhos, scales, shift, uniforms)
            return block
        cell_draws(block, means, rhos, scales, self.rng.random((n_dims, 2, *rows)))
        normals = self.rng.standard_normal((n_dims, 2, n_slots))
        column_moves(block, means, rhos, scales, normals, self.rng.random((n_dims, n_slots)))
        pairs = self.rng.integers(max(n_dims * (n_dims - 1) // 2, 1), size=n_slots)
        column_swaps(block, means, rhos, scales, pairs, self.rng.random(n_slots))
        for _ in range(self.cone_trajectories):
            reflective_hmc.cone_trajectories(
                self.rng, block, means, rhos[0], scales[0] ** 2, DURATION, MAX_EVENTS
            )
        return block

    @staticmethod
    def competence(var, has_grad=None):
        if isinstance(get_role(var), UtilityMeanRole):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE
