r"""Item-covariate effects moved with the utilities along the orders they keep.

With item covariates the partial-order models of :mod:`pymc_crp.models` order the items by
``η = G⁻¹(Φ(U)) + xβ``. Given the utilities ``U`` the covariate effects ``β`` are confined to
the range in which every order stays, so a random walk on ``β`` alone (PyMC's ``Metropolis``,
assigned before this step existed) mixes slowly. :class:`CovariateShiftMetropolis` makes, per
step, ``centred`` random-walk moves of ``β`` (``U`` held) and ``shift_moves`` moves of ``β``
by ``δ`` with the read slots' utilities mapped by ``u' = g⁻¹(g(u) - x_j δ)``
(:func:`~pymc_crp.core.gumbel_shift.shift_gumbel_scores`), which keeps every ``η`` and so every
order (in the clustered model ``U0`` and the empty slots follow the read slots' mean move).
Each is a Metropolis--Hastings move on ``(β, U)`` whose ratio is the model density of
``β``, ``U`` and the lists (times the map's Jacobian for the shift), so both are exact;
``docs/mathematics.md`` (item covariates) has the derivation. :func:`pymc.sample` assigns the
step to the ``beta`` of models built with ``covariates``.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.core.checks import integer_at_least
from pymc_crp.core.gumbel_shift import shift_gumbel_scores
from pymc_crp.roles import CovariateRole, get_role
from pymc_crp.step_methods.metropolis import ScaleTuner, accept
from pymc_crp.step_methods.model_graph import compile_point_function, dependent_terms, term_logps

__all__ = ["CovariateShiftMetropolis"]

TARGET_ACCEPT = 0.44
"""Acceptance rate the proposal scales are tuned towards."""


@dataclass_state
class CovariateShiftState(StepMethodState):
    """Sampling state of :class:`CovariateShiftMetropolis` (the tuned scales included)."""

    tune: bool
    scale: float
    shift_scale: float
    _tuner: ScaleTuner
    _shift_tuner: ScaleTuner


class CovariateShiftMetropolis(BlockedStep):
    r"""Random walk of the covariate effects ``β`` and moves of ``β`` with the utilities along
    the orders (see the module docstring), assigned automatically to ``beta``.

    Parameters
    ----------
    vars : variable
        ``beta`` of a model built by :func:`~pymc_crp.models.partial_order` or
        :func:`~pymc_crp.models.clustered_partial_orders` with ``covariates``.
    scale, shift_scale : float, default 0.5
        Standard deviations of the random walk's step and of the shift ``δ`` (each
        coordinate); tuned towards acceptance 0.44 while PyMC tunes when ``tune``.
    centred : int, default 1
        Random-walk moves of ``β`` per step (``U`` held: the orders change).
    shift_moves : int, default 2
        Moves of ``β`` with the read slots' utilities mapped so that no order changes.
    mean_follows : bool, default True
        In the clustered model, move ``U0`` and the empty slots with the read slots in the
        shift moves (see Notes); ``False`` holds them.
    tune : bool, default True

    Notes
    -----
    Sample stats ``covariate_accepted`` and ``covariate_shift_accepted`` (the share of each
    kind of move accepted in the step), ``covariate_scale`` and ``covariate_shift_scale``.
    In the clustered model (``U^(a) ~ N(τ U0, (1 - τ²) Σ)``) the slots the labels name
    (``n`` of them) are mapped; with ``mean_follows`` ``U0`` moves by ``c m``, ``m`` the mean
    over the read slots of ``u' - u`` and ``c = nτ / (1 - τ² + nτ²)`` (the shift of ``U0`` that
    best keeps the slots' deviations ``U^(a) - τ U0`` when they all move by the same ``m``),
    and the empty slots by ``τ c m`` (their deviations kept). The map stays a bijection undone by
    ``-δ`` with the read slots' Jacobian (the rest is a translation by a function of them).
    """

    name = "covariate_shift_metropolis"
    default_blocked = False
    _state_class = CovariateShiftState
    stats_dtypes_shapes = {
        "covariate_accepted": (np.float64, []),
        "covariate_shift_accepted": (np.float64, []),
        "covariate_scale": (np.float64, []),
        "covariate_shift_scale": (np.float64, []),
    }

    def __init__(
        self,
        vars,
        *,
        scale: float = 0.5,
        shift_scale: float = 0.5,
        centred: int = 1,
        shift_moves: int = 2,
        mean_follows: bool = True,
        tune: bool = True,
        model=None,
        rng=None,
        compile_kwargs=None,
        initial_point=None,
        blocked=False,
    ):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError("CovariateShiftMetropolis updates one variable, the effects beta")
        (value_var,) = value_vars
        rv = model.values_to_rvs[value_var]
        role = get_role(rv, model)
        if not isinstance(role, CovariateRole):
            raise ValueError(
                f"vars: {rv.name} is not the covariate effects of a model built by "
                "pymc_crp.models.partial_order or clustered_partial_orders with covariates "
                "(or a term added later reads them or the utilities)"
            )
        for name, value in (("scale", scale), ("shift_scale", shift_scale)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self.centred = integer_at_least(centred, "centred")
        self.shift_moves = integer_at_least(shift_moves, "shift_moves")
        if self.centred + self.shift_moves == 0:
            raise ValueError("centred and shift_moves are both 0: the step would not move beta")
        self.scale, self.shift_scale = float(scale), float(shift_scale)
        self.adaptive = bool(tune)
        self.tune = True
        self._tuner = ScaleTuner(TARGET_ACCEPT)
        self._shift_tuner = ScaleTuner(TARGET_ACCEPT)
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self._x = np.asarray(role.covariates, dtype=np.float64)
        utility_value = model.rvs_to_values[role.utilities]
        self._beta_name, self._utility_name = value_var.name, utility_value.name
        self._labels_name = None if role.labels is None else model.rvs_to_values[role.labels].name
        moved = [value_var, utility_value]
        self._mean_name = self._shrinkage = None
        if mean_follows and role.mean_utilities is not None:
            mean_value = model.rvs_to_values[role.mean_utilities]
            self._mean_name = mean_value.name
            moved.append(mean_value)
            (tau,) = model.replace_rvs_by_values([role.shrinkage])
            self._shrinkage = compile_point_function(model, pt.cast(tau, "float64"))
        self.mean_follows = bool(mean_follows)
        # the density of beta, the utilities (and U0) and every term that reads them (the lists)
        logps = term_logps(model)
        terms = dict.fromkeys(
            term for value in moved for term in dependent_terms(model, value, logps)
        )
        density = pt.sum([pt.sum(logps[term]) for term in terms])
        self._density = compile_point_function(model, density, compile_kwargs)

    def _log_density(self, point) -> float:
        value = float(self._density(point))
        return -np.inf if np.isnan(value) else value

    def step(self, point):
        point = dict(point)
        current = self._log_density(point)
        accepted = 0
        for _ in range(self.centred):
            beta = point[self._beta_name]
            trial = {**point, self._beta_name: beta + self.scale * self.rng.normal(size=beta.shape)}
            proposed = self._log_density(trial)
            if accept(proposed - current, self.rng):
                point, current, accepted = trial, proposed, accepted + 1
        shifted = 0
        for _ in range(self.shift_moves):
            delta = self.shift_scale * self.rng.normal(size=point[self._beta_name].shape)
            trial, log_det = self._shift(point, delta)
            proposed = self._log_density(trial) if np.isfinite(log_det) else -np.inf
            if accept(proposed - current + log_det, self.rng):
                point, current, shifted = trial, proposed, shifted + 1
        if self.tune and self.adaptive:
            if self.centred:
                self.scale = self._tuner.record(self.scale, accepted, self.centred)
            if self.shift_moves:
                self.shift_scale = self._shift_tuner.record(
                    self.shift_scale, shifted, self.shift_moves
                )
        stats = {
            "covariate_accepted": accepted / self.centred if self.centred else np.nan,
            "covariate_shift_accepted": shifted / self.shift_moves if self.shift_moves else np.nan,
            "covariate_scale": self.scale,
            "covariate_shift_scale": self.shift_scale,
        }
        return point, [stats]

    def _shift(self, point, delta: np.ndarray) -> tuple[dict, float]:
        """The proposal ``(β + δ, U')`` with the read slots mapped (and ``U0`` and the empty
        slots following), and the map's log Jacobian; ``-δ`` maps it back."""
        beta = point[self._beta_name]
        utilities = np.array(point[self._utility_name], dtype=np.float64, copy=True)
        shift = (self._x @ delta)[:, None]  # (M, 1) against the (M, K) utilities of a slot
        if self._labels_name is None:
            utilities, log_det = shift_gumbel_scores(utilities, shift)
            return {**point, self._beta_name: beta + delta, self._utility_name: utilities}, log_det
        read = np.unique(np.asarray(point[self._labels_name]))
        moved, log_det = shift_gumbel_scores(utilities[read], shift)
        trial = {**point, self._beta_name: beta + delta}
        if self._mean_name is not None and np.isfinite(log_det):
            tau, n_read = float(self._shrinkage(point)), len(read)
            mean_step = (
                n_read
                * tau
                / (1.0 - tau**2 + n_read * tau**2)
                * np.mean(moved - utilities[read], axis=0)
            )
            utilities += tau * mean_step  # the empty slots keep their deviations
            trial[self._mean_name] = point[self._mean_name] + mean_step
        utilities[read] = moved
        trial[self._utility_name] = utilities
        return trial, log_det

    def reset_tuning(self):
        self._tuner.reset()
        self._shift_tuner.reset()

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for the ``beta`` of the package's partial-order models with covariates."""
        return (
            Competence.IDEAL
            if isinstance(get_role(var), CovariateRole)
            else (Competence.INCOMPATIBLE)
        )
