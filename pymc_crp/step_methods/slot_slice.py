r"""Per-slot slice sampling of non-conjugate slot parameters.

A slot parameter ``ψ`` (shape ``(L,)``) read only as ``ψ[z]`` by elementwise terms has,
given everything else, independent conditionals over slots:

.. math:: p(ψ_j \mid \cdot) \propto p(ψ_j)\prod_{i:\, z_i = j} p(y_i \mid ψ_j, \cdot).

:class:`SlotSliceSampler` draws the empty slots exactly from their prior and updates every
occupied slot by univariate slice sampling with stepping out and shrinkage (Neal, 2003) on
the sampler's (transformed) scale, all slots at once: one evaluation of the log-density
gives every slot's conditional at its own position. Unlike NUTS on the whole vector, the
update does not need one step size for slots pinned by their data and for slots that follow
the prior, so it has no divergences.

References
----------
.. [1] Neal, R. M. (2003). Slice sampling. *Ann. Statist.* 31(3), 705–767.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.roles import find_model
from pymc_crp.step_methods.conjugate import (
    _n_slots,
    _slot_rv_ok,
    conjugate_slot,
    slot_index_uses,
)
from pymc_crp.step_methods.label_terms import slot_terms_are_local
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    prior_draw_function,
    reseed,
    term_logps,
)

__all__ = ["SlotSliceSampler", "slice_slot_terms", "slice_slots"]

_MAX_STEPS_OUT = 100  # m: stepping-out steps of one update, split at random between the ends
_MAX_SHRINKS = 200


def slice_slots(
    logf, x0: np.ndarray, active: np.ndarray, width: float, rng, max_steps_out: int = _MAX_STEPS_OUT
) -> tuple:
    r"""One slice-sampling update of every active coordinate of ``x0`` at once.

    ``logf(x)`` returns the log conditional density of each coordinate at its own value
    (the coordinates are conditionally independent). For each active ``j``: draw the level
    ``log y_j = logf(x0)_j - Exp(1)``, place an interval of width ``w`` at a uniform offset
    around ``x0_j``, step it out by ``w`` while its ends are inside the slice, at most
    ``m - 1`` steps in all (``m = max_steps_out``), split at random between the ends
    (``J = ⌊mV⌋`` to the left and ``m - 1 - J`` to the right, ``V ~ U(0, 1)``), then draw
    uniformly on it and shrink towards ``x0_j`` until a point of the slice is drawn (Neal,
    2003, Figs. 3 and 5). The random split is what keeps the update reversible when the
    limit binds (with a fixed limit per end it is not: ``tests/step_methods/test_slot_slice.py``).
    Returns ``(x1, evaluations)``; inactive coordinates keep ``x0``.
    """
    x0 = np.asarray(x0, dtype=np.float64)
    f0 = logf(x0)
    evals = 1
    log_y = f0 - rng.exponential(size=x0.shape)
    left = x0 - width * rng.random(x0.shape)
    right = left + width
    steps_left = np.floor(max_steps_out * rng.random(x0.shape)).astype(np.int64)
    for edge, sign, steps in (
        (left, -1.0, steps_left),
        (right, 1.0, max_steps_out - 1 - steps_left),
    ):
        stepping = active & (steps > 0)
        while stepping.any():
            f_edge = logf(np.where(stepping, edge, x0))
            evals += 1
            stepping &= f_edge > log_y
            edge[stepping] += sign * width
            steps = steps - stepping
            stepping &= steps > 0
    x1 = x0.copy()
    pending = active.copy()
    for _ in range(_MAX_SHRINKS):
        if not pending.any():
            break
        proposal = np.where(pending, left + rng.random(x0.shape) * (right - left), x1)
        f1 = logf(proposal)
        evals += 1
        accept = pending & (f1 > log_y)
        x1[accept] = proposal[accept]
        reject = pending & ~accept
        below = reject & (proposal < x0)
        left[below] = proposal[below]
        right[reject & ~below] = proposal[reject & ~below]
        pending = reject
    return x1, evals


def slice_slot_terms(model, rv) -> tuple | None:
    """``(labels, terms)`` if ``rv`` is a continuous slot parameter read only as ``rv[z]`` by
    elementwise terms (one value per observation) whose density at observation ``i`` reads
    row ``z_i`` only (checked numerically by ``label_terms.slot_terms_are_local``), else
    ``None``."""
    if model is None or not _slot_rv_ok(model, rv) or rv.dtype not in ("float32", "float64"):
        return None
    logps = term_logps(model)
    terms = dependent_terms(model, model.rvs_to_values[rv], logps, exclude=(rv,))
    if not terms:
        return None
    labels = None
    for term in terms:
        if term not in model.basic_RVs or getattr(term.owner.op, "ndim_supp", None) != 0:
            return None
        if term.ndim != 1:
            return None
        uses = slot_index_uses(term.owner.op.dist_params(term.owner), rv, model.basic_RVs)
        if uses is None or (labels is not None and uses[0] is not labels):
            return None
        labels = uses[0]
    if _n_slots(labels) is None or not _slot_rv_ok(model, rv, _n_slots(labels)):
        return None
    if not slot_terms_are_local(model, terms, labels, [rv]):  # e.g. rv[z].mean(): coupled
        return None
    return labels, terms


class SlotSliceSampler(BlockedStep):
    r"""Slice sampling per occupied slot, exact prior draws for empty slots.

    Assigned automatically by :func:`pymc.sample` (ahead of NUTS) to continuous slot
    parameters that are not conjugate, e.g. per-cluster ``sigma ~ HalfNormal`` in
    ``y ~ Normal(mu[z], sigma[z])``, or the degrees of freedom of a Student-t likelihood.

    Parameters
    ----------
    vars : list
        One slot parameter (several are split into one step each).
    width : float, default 1.0
        Initial slice width on the sampler's scale; during tuning it becomes the mean
        absolute move of the occupied slots.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Stat ``slice_evals``: log-density evaluations (each for all slots at once) in the step.
    """

    name = "slot_slice"
    default_blocked = False
    _state_class = StepMethodState
    stats_dtypes_shapes = {"slice_evals": (np.int64, [])}

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = False,
        width: float = 1.0,
    ):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError("SlotSliceSampler updates one slot parameter at a time")
        if not np.isfinite(width) or width <= 0:
            raise ValueError(f"width must be a positive number, got {width!r}")
        (value_var,) = value_vars
        rv = model.values_to_rvs[value_var]
        found = slice_slot_terms(model, rv)
        if found is None:
            raise ValueError(
                f"SlotSliceSampler: {rv.name} is not a continuous slot parameter read as "
                f"{rv.name}[labels] by elementwise terms only"
            )
        labels, terms = found
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self.tune = True
        self.width = self._initial_width = float(width)
        self._n_tuned = 0
        self._name = value_var.name
        self.n_slots = _n_slots(labels)
        logps = term_logps(model)
        loglik = pt.add(*[logps[t] for t in terms]) if len(terms) > 1 else logps[terms[0]]
        self._logp_fn = compile_point_function(model, [logps[rv], loglik], compile_kwargs)
        if labels in model.free_RVs:
            self._label_name = model.rvs_to_values[labels].name
        else:
            self._label_name = None
            self._fixed_labels = np.asarray(model.rvs_to_values[labels].eval(), dtype=np.int64)
        self._prior_fn, self._prior_rng = prior_draw_function(model, [rv], compile_kwargs)

    def _slot_logp(self, point, labels, x):
        point[self._name] = x
        prior, loglik = self._logp_fn(point)
        return prior + np.bincount(labels, weights=loglik, minlength=self.n_slots)

    def step(self, point):
        point = dict(point)
        if self._label_name is None:
            labels = self._fixed_labels
        else:
            labels = np.asarray(point[self._label_name], dtype=np.int64)
        occupied = np.bincount(labels, minlength=self.n_slots) > 0
        x0 = np.array(point[self._name], dtype=np.float64, copy=True)
        # Empty slots: exact draws from the prior.
        reseed(self._prior_rng, self.rng)
        (prior_draw,) = self._prior_fn(point)
        x0[~occupied] = prior_draw[~occupied]
        x1, evals = slice_slots(
            lambda x: self._slot_logp(point, labels, x), x0, occupied, self.width, self.rng
        )
        if self.tune and occupied.any():
            move = float(np.mean(np.abs(x1[occupied] - x0[occupied])))
            self._n_tuned += 1
            self.width += (max(move, 1e-8) - self.width) / self._n_tuned
        point[self._name] = x1
        return point, [{"slice_evals": evals}]

    def reset_tuning(self):
        """Restore the initial slice width (called by ``pm.sample`` before each chain)."""
        self.width = self._initial_width
        self._n_tuned = 0

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for non-conjugate continuous slot parameters read as ``var[labels]``."""
        model = find_model(var)
        if model is None or var not in model.free_RVs:
            return Competence.INCOMPATIBLE
        if slice_slot_terms(model, var) is None or conjugate_slot(model, var) is not None:
            return Competence.INCOMPATIBLE
        return Competence.IDEAL
