r"""Random-walk Metropolis for one scalar parameter, with its proposals as small functions.

:class:`ScalarMetropolis` targets the parameter's prior times the densities of all its
children (its Markov blanket), so it serves any scalar parameter under any prior: the
concentration, discount or ``γ`` of a partition prior
(:class:`~pymc_crp.ConcentrationMetropolis`) and the hyperparameters ``ρ``, ``τ``, ``p`` of the
partial-order models (:class:`~pymc_crp.HyperparameterMetropolis`). A proposal maps the
current parameter ``θ`` and unconstrained value ``v`` to a :class:`Move`:

* :func:`symmetric_walk` — ``θ* ~ N(θ, s²)``, symmetric;
* :func:`scaled_walk` — ``θ* ~ N(θ, (κθ)²)`` for positive ``θ``, with the Hastings factor

  .. math::

      \frac{q(θ \mid θ^*)}{q(θ^* \mid θ)} = \frac{θ}{θ^*}
          \exp\Big(-\frac{(θ - θ^*)^2}{2κ^2}\Big(\frac{1}{θ^{*2}} - \frac{1}{θ^2}\Big)\Big)

  (``θ* <= 0`` is no move: rejected);
* :func:`value_walk` — ``v* ~ N(v, s²)`` on the sampler's unconstrained value, accepted with
  the Jacobian ratio ``|dθ/dv|(v*) / |dθ/dv|(v)`` (mixes better near a boundary).

The test and the tuning of ``s`` are those of :mod:`pymc_crp.step_methods.metropolis`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.pytensorf import compile as compile_pytensor
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import explicit_graph_inputs

from pymc_crp.step_methods.list_terms import is_list_term, tempered
from pymc_crp.step_methods.metropolis import ScaleTuner, accept
from pymc_crp.step_methods.model_graph import dependent_terms, term_logps

__all__ = [
    "PROPOSALS",
    "Move",
    "ScalarMetropolis",
    "ScalarStep",
    "scaled_walk",
    "symmetric_walk",
    "value_walk",
]

TARGET_ACCEPT = 0.44
"""Acceptance rate the scalar random walks are tuned towards (optimal in one dimension)."""


@dataclass(frozen=True)
class Move:
    """A proposed scalar: on the parameter's scale (``theta``) or the sampler's (``value``),
    with the log Hastings factor ``log q(x | x*) - log q(x* | x)`` of the proposal."""

    theta: float | None = None
    value: float | None = None
    log_hastings: float = 0.0


def symmetric_walk(rng: np.random.Generator, scale: float, theta: float, value: float) -> Move:
    """``θ* ~ N(θ, s²)``."""
    return Move(theta=theta + scale * rng.standard_normal())


def scaled_walk(rng: np.random.Generator, scale: float, theta: float, value: float) -> Move | None:
    """``θ* ~ N(θ, (κθ)²)`` with its Hastings factor; ``None`` (rejected) when ``θ* <= 0``."""
    if theta <= 0:
        raise ValueError("the scaled proposal needs a positive parameter value")
    proposed = theta + scale * theta * rng.standard_normal()
    if proposed <= 0:
        return None
    log_hastings = math.log(theta / proposed) - (theta - proposed) ** 2 / (2.0 * scale**2) * (
        1.0 / proposed**2 - 1.0 / theta**2
    )
    return Move(theta=proposed, log_hastings=log_hastings)


def value_walk(rng: np.random.Generator, scale: float, theta: float, value: float) -> Move:
    """``v* ~ N(v, s²)`` on the unconstrained value (the step adds the Jacobian ratio)."""
    return Move(value=value + scale * rng.standard_normal())


PROPOSALS: dict[str, Callable[..., Move | None]] = {
    "symmetric": symmetric_walk,
    "scaled": scaled_walk,
    "transformed": value_walk,
}
"""The proposals of :class:`ScalarMetropolis` by name."""


class ScalarStep(BlockedStep):
    """Common set-up of the one-parameter updates: value variable, transform, rng."""

    default_blocked = False
    _state_class = StepMethodState

    def _setup(self, vars, model, rng):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one scalar variable at a time")
        (value_var,) = value_vars
        rv = model.values_to_rvs[value_var]
        if rv.ndim != 0:
            raise ValueError(f"{type(self).__name__} needs a scalar variable, got {rv.name}")
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self.tune = True
        self._value_name = value_var.name
        self._transform = model.rvs_to_transforms.get(rv)
        theta = pt.dscalar("theta")
        to_value = (
            theta if self._transform is None else self._transform.forward(theta, *rv.owner.inputs)
        )
        return model, value_var, rv, theta, to_value


@dataclass_state
class ScalarMetropolisState(StepMethodState):
    """Sampling state of :class:`ScalarMetropolis`, tuned proposal scale included, so that
    PyMC's reset between sequential chains (and pickling) restores the whole chain."""

    tune: bool
    scale: float
    _tuner: ScaleTuner


class ScalarMetropolis(ScalarStep):
    r"""Random-walk Metropolis update of one scalar parameter (see the module docstring).

    Parameters
    ----------
    vars : variable
        The scalar parameter.
    proposal : {"symmetric", "scaled", "transformed"}
    scale : float
        ``s`` or ``κ``; adapted while PyMC tunes towards acceptance 0.44 when ``tune=True``
        (:class:`~pymc_crp.step_methods.metropolis.ScaleTuner`).
    tune : bool, default True
    tune_interval : int, default 1
        Steps whose acceptance rate drives one adaptation of the scale.

    Notes
    -----
    Sample stats ``scalar_accepted`` and ``scalar_scale`` (the subclasses name them after
    their parameters: ``concentration_*``, ``hyperparameter_*``).

    The attribute ``likelihood_temperature`` ``β`` (default 1; set by
    :class:`~pymc_crp.ReplicaExchange`) makes the target the prior times the children's
    densities with the :class:`~pymc_crp.PartialOrderLists` children raised to the power
    ``β``.
    """

    name = "scalar_metropolis"
    # The stats are ``<prefix>accepted`` and ``<prefix>scale`` (a subclass sets both): PyMC's own
    # Metropolis records a float ``accepted``, and equal names of a compound step must agree.
    stats_prefix = "scalar_"
    _state_class = ScalarMetropolisState
    stats_dtypes_shapes = {"scalar_accepted": (bool, []), "scalar_scale": (np.float64, [])}
    likelihood_temperature: float = 1.0
    _defer_target = False  # True: the subclass compiles the target only if it will use it

    def __init__(
        self,
        vars,
        *,
        proposal: str = "symmetric",
        scale: float = 0.5,
        tune: bool = True,
        tune_interval: int = 1,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        if proposal not in PROPOSALS:
            raise ValueError(
                f"proposal must be 'symmetric', 'scaled' or 'transformed', got {proposal!r}"
            )
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        model, value_var, rv, theta, to_value = self._setup(vars, model, rng)
        self.proposal = proposal
        self._proposal_fn = PROPOSALS[proposal]
        self.scale = float(scale)
        self.adaptive = bool(tune)
        self.tune_interval = int(tune_interval)
        self._tuner = ScaleTuner(TARGET_ACCEPT, interval=self.tune_interval)
        logps = term_logps(model)
        children = dependent_terms(model, value_var, logps, exclude=(rv,))
        self.reads_lists = any(is_list_term(c) for c in children)
        own = pt.sum(term_logps(model, jacobian=False)[rv])
        zero = pt.constant(0.0, dtype="float64")
        # Two parts: the list likelihoods (tempered by ``likelihood_temperature``) and the rest.
        rest = own + sum((pt.sum(logps[c]) for c in children if not is_list_term(c)), zero)
        lists = sum((pt.sum(logps[c]) for c in children if is_list_term(c)), zero)
        parts = graph_replace([rest, lists], {value_var: to_value}, strict=False)
        value_inputs = [v for v in explicit_graph_inputs(parts) if v in set(model.value_vars)]
        self._input_names = [v.name for v in value_inputs]
        self._target_graph = ([theta, *value_inputs], parts, dict(compile_kwargs or {}))
        self._target_fn = None
        if not self._defer_target:
            self._compile_target()
        self._to_value = compile_pytensor([theta], to_value)
        self._from_value = compile_pytensor([value_var], model.replace_rvs_by_values([rv])[0])
        self._log_jacobian = None
        if proposal == "transformed" and self._transform is not None:
            log_jac = self._transform.log_jac_det(
                value_var, *model.replace_rvs_by_values(rv.owner.inputs)
            )
            jac_inputs = [v for v in explicit_graph_inputs([log_jac]) if v in set(model.value_vars)]
            self._jacobian_inputs = [v.name for v in jac_inputs if v is not value_var]
            others = [v for v in jac_inputs if v is not value_var]
            self._log_jacobian = compile_pytensor([value_var, *others], pt.sum(log_jac))

    def _compile_target(self) -> None:
        """Compile the log target of the random walk (once; a subclass that may never use
        it sets ``_defer_target`` and calls this where it will)."""
        if self._target_fn is None:
            inputs, parts, compile_kwargs = self._target_graph
            self._target_fn = compile_pytensor(inputs, parts, **compile_kwargs)

    def _log_jacobian_at(self, value, point) -> float:
        if self._log_jacobian is None:
            return 0.0
        return float(self._log_jacobian(value, *(point[n] for n in self._jacobian_inputs)))

    def _log_target(self, theta, point):
        args = [point[name] for name in self._input_names]
        return self._tempered_sum(*self._target_fn(theta, *args))

    def _tempered_sum(self, rest, lists) -> float:
        """``rest + β · lists`` (``β`` the likelihood temperature); NaN becomes ``-∞``."""
        total = float(rest) + tempered(self.likelihood_temperature, float(lists))
        return -math.inf if math.isnan(total) else total

    def step(self, point):
        point, stats, _ = self._walk(point)
        return point, stats

    def _walk(self, point, current: float | None = None):
        """One random-walk update. ``current`` is the log target at the present value when the
        caller knows it (the previous update of the same step, nothing else moved since), which
        saves one evaluation of the children's densities. Returns the point, the stats and the
        log target at the value the chain is at afterwards (``None`` if it was not evaluated)."""
        point = dict(point)
        value = float(point[self._value_name])
        theta = float(self._from_value(point[self._value_name]))
        move = self._proposal_fn(self.rng, self.scale, theta, value)
        accepted = False
        if move is not None:
            if move.value is not None:  # on the unconstrained value: add the Jacobian ratio
                proposed = float(self._from_value(np.asarray(move.value)))
                log_hastings = self._log_jacobian_at(move.value, point) - self._log_jacobian_at(
                    value, point
                )
            else:
                proposed, log_hastings = move.theta, move.log_hastings
            if current is None:
                current = self._log_target(theta, point)
            log_proposed = self._log_target(proposed, point)
            accepted = accept(log_proposed - current + log_hastings, self.rng)
        if accepted:
            new_value = move.value if move.value is not None else self._to_value(proposed)
            point[self._value_name] = np.asarray(new_value, dtype=np.float64)
            current = log_proposed
        if self.tune and self.adaptive:
            self.scale = self._tuner.record(self.scale, accepted)
        prefix = self.stats_prefix
        return point, [{f"{prefix}accepted": accepted, f"{prefix}scale": self.scale}], current

    def reset_tuning(self):
        self._tuner.reset()

    @staticmethod
    def competence(var, has_grad=None):
        """Never assigned automatically: ask for it with ``step=``."""
        return Competence.INCOMPATIBLE
