r"""Updates of the concentration parameter of a partition prior.

Given labels with ``K`` occupied clusters among ``N`` observations, the concentration ``θ``
of a Dirichlet process (``d = 0``) depends on the labels only through ``K``:

.. math:: p(θ \mid c) \propto θ^K \frac{Γ(θ)}{Γ(θ + N)}\, π(θ).

:class:`ConcentrationGibbs` draws from it exactly for a Gamma prior (Escobar and West, 1995);
:class:`ConcentrationMetropolis` is a random-walk Metropolis update for any scalar parameter
of a partition prior (concentration, discount or the Dirichlet--multinomial ``γ``) under any
prior, targeting the parameter's prior times the log-densities of all its children.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.pytensorf import compile as compile_pytensor
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import explicit_graph_inputs
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.random.basic import GammaRV

from pymc_crp.core.partition_math import log_prob_at_most_blocks, validate_labels
from pymc_crp.distributions.partitions import CRPRV
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    find_model,
    term_logps,
)

__all__ = ["ConcentrationGibbs", "ConcentrationMetropolis", "escobar_west_draw"]


def escobar_west_draw(
    concentration: float, n_clusters: int, n_obs: int, shape: float, rate: float, rng
) -> float:
    r"""One exact Gibbs draw of a Dirichlet-process concentration (Escobar and West, 1995).

    With ``θ ~ Gamma(a, rate b)``, ``K`` clusters and ``N`` observations: draw
    ``η ~ Beta(θ + 1, N)``; with odds ``π/(1 - π) = (a + K - 1) / (N (b - log η))`` draw

    .. math::

        θ \sim π\,\mathrm{Gamma}(a + K, b - \log η)
             + (1 - π)\,\mathrm{Gamma}(a + K - 1, b - \log η).

    The pair ``(θ, η)`` has joint density ∝ ``θ^{a+K-2} (θ + N) e^{-bθ} η^θ (1-η)^{N-1}``
    whose ``θ``-margin is the posterior ``θ^K Γ(θ)/Γ(θ+N) π(θ)``.
    """
    eta = rng.beta(concentration + 1.0, n_obs)
    new_rate = rate - math.log(eta)
    odds = (shape + n_clusters - 1.0) / (n_obs * new_rate)
    weight = odds / (1.0 + odds)
    new_shape = shape + n_clusters if rng.random() < weight else shape + n_clusters - 1.0
    return float(rng.gamma(new_shape, 1.0 / new_rate))


def _escobar_west_target(var, model):
    """The CRP child of ``var`` if ``var`` is a Gamma concentration that E&W can update."""
    if model is None or not isinstance(getattr(var.owner, "op", None), GammaRV) or var.ndim:
        return None
    if var not in model.free_RVs:
        return None
    children = dependent_terms(model, model.rvs_to_values[var], term_logps(model), exclude=(var,))
    if len(children) != 1 or not isinstance(children[0].owner.op, CRPRV):
        return None
    crp = children[0]
    _, _, concentration, discount, _, _ = crp.owner.inputs
    try:
        d_value = float(pt.get_underlying_scalar_constant_value(discount))
    except NotScalarConstantError:
        return None
    if concentration is not var or d_value != 0.0 or crp.ndim != 1:
        return None
    return crp


class _ScalarStep(BlockedStep):
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


class ConcentrationGibbs(_ScalarStep):
    r"""Escobar--West auxiliary-variable Gibbs update of a Dirichlet-process concentration.

    Applies to ``θ ~ Gamma(a, b)`` (shape ``a``, rate ``b``; may depend on other variables)
    whose only child is a :class:`~pymc_crp.CRP` with ``concentration=θ`` and discount
    ``0``; :func:`pymc.sample` assigns it automatically there and keeps NUTS elsewhere.
    Exact (see :func:`escobar_west_draw`). When the CRP is truncated (``max_clusters < n``)
    its density carries the factor ``1 / P(K_N <= L | θ)``; the Escobar--West draw ``θ*``
    (reversible for the untruncated posterior) is then a Metropolis--Hastings proposal,
    accepted with probability ``min(1, P(K_N <= L | θ) / P(K_N <= L | θ*))``, which keeps the
    truncated posterior invariant. The stat ``escobar_west_accepted`` records it.

    References
    ----------
    .. [1] Escobar, M. D. and West, M. (1995). Bayesian density estimation and inference
       using mixtures. *J. Am. Stat. Assoc.* 90(430), 577–588.
    """

    name = "concentration_gibbs"
    stats_dtypes_shapes = {"escobar_west_accepted": (bool, [])}

    def __init__(
        self,
        vars,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model, value_var, rv, theta, to_value = self._setup(vars, model, rng)
        crp = _escobar_west_target(rv, model)
        if crp is None:
            raise ValueError(
                f"ConcentrationGibbs needs a scalar Gamma variable whose only child is a CRP with "
                f"concentration={rv.name} and discount=0; use ConcentrationMetropolis or NUTS "
                "for other cases"
            )
        _, _, shape, scale = rv.owner.inputs
        shape_rate = model.replace_rvs_by_values([pt.cast(shape, "float64"), 1.0 / scale])
        self._prior_fn = compile_point_function(model, shape_rate, compile_kwargs)
        self._to_value = compile_pytensor([theta], to_value)
        self._from_value = compile_pytensor([value_var], model.replace_rvs_by_values([rv])[0])
        _, _, _, _, max_clusters, n = crp.owner.inputs
        self._n_obs = int(pt.get_underlying_scalar_constant_value(n))
        self._n_slots = int(pt.get_underlying_scalar_constant_value(max_clusters))
        if crp in model.observed_RVs:  # a constant or pm.Data: read it at every step
            self._labels_name = None
            self._observed_labels = compile_pytensor([], model.rvs_to_values[crp])
        else:
            self._labels_name = model.rvs_to_values[crp].name
            self._observed_labels = None

    def _n_clusters(self, point) -> int:
        if self._labels_name is not None:
            return int(np.unique(point[self._labels_name]).size)
        labels = validate_labels(
            np.asarray(self._observed_labels()), self._n_slots, name="observed labels"
        )
        return int(np.unique(labels).size)

    def step(self, point):
        point = dict(point)
        theta = float(self._from_value(point[self._value_name]))
        n_clusters = self._n_clusters(point)
        shape, rate = (float(v) for v in self._prior_fn(point))
        new = escobar_west_draw(theta, n_clusters, self._n_obs, shape, rate, self.rng)
        accepted = True
        if self._n_slots < self._n_obs:  # truncated: correct for 1 / P(K <= L | theta)
            log_ratio = log_prob_at_most_blocks(
                self._n_obs, self._n_slots, theta
            ) - log_prob_at_most_blocks(self._n_obs, self._n_slots, new)
            accepted = bool(math.log(self.rng.random()) < log_ratio)
        if accepted:
            point[self._value_name] = np.asarray(self._to_value(new), dtype=np.float64)
        return point, [{"escobar_west_accepted": accepted}]

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for a Gamma concentration whose only child is a discount-0 CRP."""
        if _escobar_west_target(var, find_model(var)) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE


@dataclass_state
class ConcentrationMetropolisState(StepMethodState):
    """Sampling state of :class:`ConcentrationMetropolis`, tuned proposal scale included, so
    that PyMC's reset between sequential chains (and pickling) restores the whole chain."""

    tune: bool
    scale: float
    _accepted_in_interval: int
    _steps_in_interval: int


class ConcentrationMetropolis(_ScalarStep):
    r"""Random-walk Metropolis update of a scalar parameter of a partition prior.

    The target is the parameter's prior times the densities of all its children, so it works
    for a CRP concentration or discount, the Dirichlet--multinomial ``γ``, and any prior. For
    a Dirichlet-process concentration it is ``p(θ | c) ∝ θ^K Γ(θ)/Γ(N+θ) π(θ)``.

    Proposals:

    * ``"symmetric"``: ``θ* ~ N(θ, s²)``; accept with ``min(1, p(θ*|c) / p(θ|c))``
      (proposals outside the support are rejected).
    * ``"scaled"``: ``θ* ~ N(θ, (κθ)²)`` (standard deviation ``κθ``, for positive ``θ``);
      the Hastings factor is

      .. math::

          \frac{q(θ \mid θ^*)}{q(θ^* \mid θ)} = \frac{θ}{θ^*}
              \exp\Big(-\frac{(θ - θ^*)^2}{2κ^2}\Big(\frac{1}{θ^{*2}}
              - \frac{1}{θ^2}\Big)\Big),

      and ``θ* <= 0`` is rejected.
    * ``"transformed"``: a random walk ``v* ~ N(v, s²)`` on the sampler's unconstrained value
      ``v`` (e.g. the log-odds of a Beta parameter), accepted with the target times the
      Jacobian ratio ``|dθ/dv|(v*) / |dθ/dv|(v)``; mixes better near a boundary.

    Parameters
    ----------
    vars : variable
        The scalar parameter.
    proposal : {"symmetric", "scaled", "transformed"}
    scale : float
        ``s`` or ``κ``; adapted during tuning towards acceptance 0.44 when ``tune=True``.
    tune : bool, default True
    """

    name = "concentration_metropolis"
    _state_class = ConcentrationMetropolisState
    stats_dtypes_shapes = {
        "concentration_accepted": (bool, []),
        "concentration_scale": (np.float64, []),
    }

    def __init__(
        self,
        vars,
        *,
        proposal: str = "symmetric",
        scale: float = 0.5,
        tune: bool = True,
        tune_interval: int = 50,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        if proposal not in ("symmetric", "scaled", "transformed"):
            raise ValueError(
                f"proposal must be 'symmetric', 'scaled' or 'transformed', got {proposal!r}"
            )
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        model, value_var, rv, theta, to_value = self._setup(vars, model, rng)
        self.proposal = proposal
        self.scale = float(scale)
        self.adaptive = bool(tune)
        self.tune_interval = int(tune_interval)
        self._accepted_in_interval = 0
        self._steps_in_interval = 0
        logps = term_logps(model)
        children = dependent_terms(model, value_var, logps, exclude=(rv,))
        own = model.logp(vars=[rv], jacobian=False, sum=True)
        target = own + sum((pt.sum(logps[c]) for c in children), pt.constant(0.0))
        target = graph_replace(target, {value_var: to_value}, strict=False)
        target = pt.switch(pt.isnan(target), -np.inf, target)
        value_inputs = [v for v in explicit_graph_inputs([target]) if v in set(model.value_vars)]
        self._input_names = [v.name for v in value_inputs]
        self._target_fn = compile_pytensor([theta, *value_inputs], target, **(compile_kwargs or {}))
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

    def _log_jacobian_at(self, value, point) -> float:
        if self._log_jacobian is None:
            return 0.0
        return float(self._log_jacobian(value, *(point[n] for n in self._jacobian_inputs)))

    def _log_target(self, theta, point):
        args = [point[name] for name in self._input_names]
        return float(self._target_fn(theta, *args))

    def step(self, point):
        point = dict(point)
        theta = float(self._from_value(point[self._value_name]))
        if self.proposal == "transformed":  # random walk on the unconstrained value
            value = float(point[self._value_name])
            proposed_value = value + self.scale * self.rng.standard_normal()
            proposed = float(self._from_value(np.asarray(proposed_value)))
            log_hastings = self._log_jacobian_at(proposed_value, point) - self._log_jacobian_at(
                value, point
            )
        elif self.proposal == "symmetric":
            proposed = theta + self.scale * self.rng.standard_normal()
            log_hastings = 0.0
        else:
            if theta <= 0:
                raise ValueError("the scaled proposal needs a positive parameter value")
            proposed = theta + self.scale * theta * self.rng.standard_normal()
            if proposed > 0:
                log_hastings = math.log(theta / proposed) - (theta - proposed) ** 2 / (
                    2.0 * self.scale**2
                ) * (1.0 / proposed**2 - 1.0 / theta**2)
        accepted = False
        if self.proposal != "scaled" or proposed > 0:
            log_ratio = (
                self._log_target(proposed, point) - self._log_target(theta, point) + log_hastings
            )
            accepted = bool(np.isfinite(log_ratio) and math.log(self.rng.random()) < log_ratio)
        if accepted and self.proposal == "transformed":
            point[self._value_name] = np.asarray(proposed_value, dtype=np.float64)
        elif accepted:
            point[self._value_name] = np.asarray(self._to_value(proposed), dtype=np.float64)
        if self.tune and self.adaptive:
            self._adapt(accepted)
        return point, [{"concentration_accepted": accepted, "concentration_scale": self.scale}]

    def _adapt(self, accepted: bool) -> None:
        """Every ``tune_interval`` steps, scale by ``exp(rate - 0.44)``-style factors."""
        self._accepted_in_interval += accepted
        self._steps_in_interval += 1
        if self._steps_in_interval == self.tune_interval:
            rate = self._accepted_in_interval / self._steps_in_interval
            self.scale *= math.exp(2.0 * (rate - 0.44))
            self._accepted_in_interval = 0
            self._steps_in_interval = 0

    def reset_tuning(self):
        self._accepted_in_interval = 0
        self._steps_in_interval = 0

    @staticmethod
    def competence(var, has_grad=None):
        """Never assigned automatically: ask for it with ``step=``."""
        return Competence.INCOMPATIBLE
