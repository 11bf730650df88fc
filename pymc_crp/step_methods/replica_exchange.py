r"""Replica exchange (parallel tempering) on the list likelihood, as one PyMC step.

:class:`ReplicaExchange` runs ``R`` replicas of the model at inverse temperatures
``1 = β_0 > β_1 > … > β_{R-1} ≥ 0``; replica ``r`` targets the tempered density

.. math:: π_r(θ) \propto π(θ)\, L(θ)^{β_r},

``L`` the likelihood of the observed :class:`~pymc_crp.PartialOrderLists` terms and ``π``
everything else (priors and any other observed term). One step

1. moves every replica by one iteration of its own compound step, built as ``pm.sample``
   would build it, with every step that evaluates the lists told the replica's ``β``
   (attribute ``likelihood_temperature``); the cold replica starts from the incoming point;
2. proposes to exchange the states of adjacent temperatures ``(i, i + 1)`` for every even
   ``i`` at even iterations and every odd ``i`` at odd iterations (the deterministic
   even--odd scheme), accepting with probability

   .. math:: \min\Big(1, \exp\big((β_i - β_{i+1})(\ell_{i+1} - \ell_i)\big)\Big),

   ``ℓ_r = \log L(θ_r)`` the total list log-likelihood of replica ``r``'s state.

Each replica's step leaves its ``π_r`` invariant and each exchange is a Metropolis move on
the product space whose target ``∏_r π_r(θ_r)`` it leaves invariant, so the cold replica
(returned to PyMC as the chain's point) samples the posterior exactly: ``pm.sample`` gives an
ordinary ``InferenceData`` of the cold chain. The hot replicas' states, the replicas' tuned
steps and generators are part of the step's sampling state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.compound import BlockedStep, CompoundStep, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from pymc_crp.step_methods.list_terms import is_list_term
from pymc_crp.step_methods.metropolis import accept
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    term_logps,
)

__all__ = ["ReplicaExchange", "geometric_ladder", "swap_log_ratio"]

DEFAULT_TEMPERATURES = 4
DEFAULT_MIN_BETA = 0.1


def geometric_ladder(n_temps: int, min_beta: float = DEFAULT_MIN_BETA) -> np.ndarray:
    r"""Inverse temperatures ``β_r = β_{\min}^{r/(R-1)}``, ``r = 0, …, R-1`` (``β_0 = 1``)."""
    if isinstance(n_temps, bool) or not isinstance(n_temps, int | np.integer) or n_temps < 2:
        raise ValueError(f"n_temps must be an integer >= 2, got {n_temps!r}")
    if not 0.0 < min_beta < 1.0:
        raise ValueError(f"min_beta must be in (0, 1), got {min_beta!r}")
    return min_beta ** (np.arange(n_temps) / (n_temps - 1))


def swap_log_ratio(beta_i: float, beta_j: float, loglik_i: float, loglik_j: float) -> float:
    r"""Log acceptance ratio of exchanging the states of temperatures ``i`` and ``j``:
    ``(β_i - β_j)(ℓ_j - ℓ_i)``, with ``ℓ`` the list log-likelihoods of their states.

    With ``β_i > β_j``: a state of likelihood 0 (``ℓ_j = -∞``) is never moved to the colder
    temperature (``-∞``: rejected) and always leaves it (``+∞``); equal ``β`` or equal ``ℓ``
    give 0 (accepted).
    """
    if beta_i == beta_j:
        return 0.0
    if loglik_i == loglik_j:  # also both infinite
        return 0.0
    return (beta_i - beta_j) * (loglik_j - loglik_i)


def _check_betas(betas) -> np.ndarray:
    out = np.asarray(betas, dtype=np.float64)
    if out.ndim != 1 or out.size < 2:
        raise ValueError(f"betas must be a sequence of at least 2 numbers, got {betas!r}")
    if not np.all(np.isfinite(out)) or out.min() < 0.0 or out.max() > 1.0:
        raise ValueError(f"betas must lie in [0, 1], got {betas!r}")
    if out[0] != 1.0:
        raise ValueError(f"betas must start with 1 (the cold chain), got {betas!r}")
    if not np.all(np.diff(out) < 0):
        raise ValueError(f"betas must be strictly decreasing, got {betas!r}")
    return out


def _clone(step):
    """An independent copy of a (compound) step, compiled functions included."""
    return cloudpickle.loads(cloudpickle.dumps(step))


def _own_copy(point: dict) -> dict:
    return {name: np.array(value, copy=True) for name, value in point.items()}


def _leaf_steps(step) -> list:
    if isinstance(step, CompoundStep):
        return [leaf for method in step.methods for leaf in _leaf_steps(method)]
    return [step]


@dataclass_state
class ReplicaExchangeState(StepMethodState):
    """Sampling state of :class:`ReplicaExchange`: the tuning flag, the iteration (even or
    odd pairs), the hot replicas' points and the sampling states of all replicas' steps."""

    tune: bool
    _iteration: int
    _hot_points: list | None
    replica_states: list


class ReplicaExchange(BlockedStep):
    r"""Replica exchange on the list likelihood (see the module docstring).

    Parameters
    ----------
    vars : optional
        Must be all the model's free variables (the default): the step updates them all.
    betas : sequence of float, optional
        Inverse temperatures, strictly decreasing from ``β_0 = 1`` and in ``[0, 1]``
        (``β = 0`` samples the prior). Default: :func:`geometric_ladder` of ``n_temps``
        from 1 to ``min_beta``.
    n_temps : int, default 4
        Number of temperatures ``R`` when ``betas`` is not given.
    min_beta : float, default 0.1
        Smallest inverse temperature of the default ladder.
    steps : callable, optional
        Called (in the model context) to make the steps of some variables,
        e.g. ``lambda: [pmc.PartialOrderLabelGibbs([model["cluster"]], n_aux=2)]``; the other
        variables get the steps ``pm.sample`` would assign.
    step_kwargs : dict, optional
        Keyword arguments of the automatically assigned steps by step name, as in
        ``pm.sample`` (e.g. ``{"po_label_gibbs": {"merge_split": 40}}``).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Raises
    ------
    ValueError
        For bad ``betas``, a model without observed ``PartialOrderLists``, or a step of a
        variable the lists depend on that does not take a likelihood temperature (e.g.
        PyMC's NUTS on the covariate effects ``beta``, or ``CRPGibbs``).

    Notes
    -----
    Each iteration costs ``R`` iterations of the ordinary sampler plus ``R`` evaluations of
    the lists' log-likelihood. While PyMC tunes, every replica's steps tune.

    Sample stats: ``swap_accepted_i`` for each adjacent pair ``(i, i + 1)`` (1 or 0 when the
    pair was proposed this iteration, NaN otherwise; its mean over draws ignoring NaN is the
    pair's acceptance rate),
    ``swap_rate`` (mean acceptance probability of this iteration's proposals),
    ``cold_loglik`` (``ℓ_0``, the cold chain's list log-likelihood after the exchanges) and
    ``warning`` (the first warning of the cold replica's steps, if any).
    """

    name = "replica_exchange"
    default_blocked = True
    _state_class = ReplicaExchangeState
    stats_dtypes_shapes = {
        "swap_rate": (np.float64, []),
        "cold_loglik": (np.float64, []),
        "warning": (SamplerWarning, None),
    }

    def __init__(
        self,
        vars=None,
        *,
        betas: Sequence[float] | None = None,
        n_temps: int = DEFAULT_TEMPERATURES,
        min_beta: float = DEFAULT_MIN_BETA,
        steps: Callable[[], Sequence[BlockedStep]] | None = None,
        step_kwargs: dict | None = None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=True,
    ):
        model = modelcontext(model)
        betas = geometric_ladder(n_temps, min_beta) if betas is None else _check_betas(betas)
        self.betas = betas
        # One acceptance indicator per adjacent pair: scalar stats (PyMC's NDArray trace keeps
        # one value per stat and draw).
        self._swap_names = [f"swap_accepted_{i}" for i in range(betas.size - 1)]
        self.stats_dtypes_shapes = {
            **{name: (np.float64, []) for name in self._swap_names},
            **type(self).stats_dtypes_shapes,
        }
        self.stats_dtypes = [{k: dtype for k, (dtype, _) in self.stats_dtypes_shapes.items()}]
        free = list(model.value_vars)
        if vars is not None:
            given = pm.util.get_value_vars_from_user_vars(vars, model)
            if {v.name for v in given} != {v.name for v in free}:
                raise ValueError("ReplicaExchange updates all the model's free variables")
        self.vars = free
        lists = [rv for rv in model.observed_RVs if is_list_term(rv)]
        if not lists:
            raise ValueError("ReplicaExchange needs a model with observed PartialOrderLists")
        logps = term_logps(model)
        total = sum((pt.sum(logps[rv]) for rv in lists), pt.constant(0.0, dtype="float64"))
        self._loglik_fn = compile_point_function(model, total, compile_kwargs)
        if initial_point is None:
            initial_point = model.initial_point(random_seed=0)
        with model:
            provided = list(steps()) if steps is not None else []
            provided, selected = assign_step_methods(model, provided, pm.STEP_METHODS)
            made = instantiate_steppers(
                model,
                provided,
                selected,
                step_kwargs=step_kwargs,
                initial_point=initial_point,
                compile_kwargs=compile_kwargs,
            )
        cold = CompoundStep(made if isinstance(made, list) else [made])
        for leaf in _leaf_steps(cold):
            self._check_temperable(model, leaf, lists, logps)
        # The hot replicas' steps are copies (as PyMC copies steps to worker processes).
        self._replicas = [cold, *(_clone(cold) for _ in betas[1:])]
        for compound, beta in zip(self._replicas, betas, strict=True):
            for leaf in _leaf_steps(compound):
                if hasattr(leaf, "likelihood_temperature"):
                    leaf.likelihood_temperature = float(beta)
        self._iteration = 0
        self._hot_points = None
        self._tune = True
        self.set_rng(get_random_generator(rng))

    @staticmethod
    def _check_temperable(model, leaf, lists, logps) -> None:
        """Raise if ``leaf`` cannot take a likelihood temperature but updates a variable the
        lists depend on (a step that updates none targets the same conditional at every
        temperature)."""
        if hasattr(leaf, "likelihood_temperature"):
            return
        for value_var in leaf.vars:
            if any(t in lists for t in dependent_terms(model, value_var, logps)):
                raise ValueError(
                    f"ReplicaExchange: the step {type(leaf).__name__} assigned to "
                    f"{value_var.name} does not take a likelihood temperature, but the lists "
                    f"depend on {value_var.name}; give {value_var.name} a step of pymc_crp "
                    "that does (see the ReplicaExchange docs) or fix it"
                )

    # ------------------------------------------------------------------------------------
    # Sampling state, generators and tuning of the replicas
    # ------------------------------------------------------------------------------------
    @property
    def replica_states(self) -> list:
        return [compound.sampling_state for compound in self._replicas]

    @replica_states.setter
    def replica_states(self, states: list) -> None:
        for compound, state in zip(self._replicas, states, strict=True):
            compound.sampling_state = state

    @property
    def tune(self) -> bool:
        return self._tune

    @tune.setter
    def tune(self, value) -> None:
        self._tune = bool(value)
        for compound in self._replicas:
            compound.tune = self._tune
            for leaf in _leaf_steps(compound):
                if hasattr(leaf, "tune"):
                    leaf.tune = self._tune

    def set_rng(self, rng) -> None:
        """The swap decisions draw from ``rng``; each replica's steps from a generator
        spawned from it."""
        self.rng = get_random_generator(rng, copy=False)
        children = self.rng.spawn(len(self._replicas))
        for compound, child in zip(self._replicas, children, strict=True):
            compound.set_rng(child)

    def stop_tuning(self) -> None:
        for compound in self._replicas:
            compound.stop_tuning()
        self._tune = False

    def reset_tuning(self) -> None:
        for compound in self._replicas:
            compound.reset_tuning()

    # ------------------------------------------------------------------------------------
    # One iteration
    # ------------------------------------------------------------------------------------
    def step(self, point):
        n_temps = len(self._replicas)
        if self._hot_points is None:  # all replicas start where the cold chain starts
            self._hot_points = [_own_copy(point) for _ in range(n_temps - 1)]
        points = [dict(point), *self._hot_points]
        logliks = np.empty(n_temps)
        warning = None
        for r, compound in enumerate(self._replicas):
            points[r], stats = compound.step(points[r])
            logliks[r] = float(self._loglik_fn(points[r]))
            if r == 0:
                warning = next((s["warning"] for s in stats if s.get("warning")), None)
        accepted = np.full(n_temps - 1, np.nan)
        probabilities = []
        for i in range(self._iteration % 2, n_temps - 1, 2):
            log_ratio = swap_log_ratio(self.betas[i], self.betas[i + 1], logliks[i], logliks[i + 1])
            probabilities.append(0.0 if math.isnan(log_ratio) else math.exp(min(log_ratio, 0.0)))
            accepted[i] = accept(log_ratio, self.rng)
            if accepted[i]:
                points[i], points[i + 1] = points[i + 1], points[i]
                logliks[i], logliks[i + 1] = logliks[i + 1], logliks[i]
        self._iteration += 1
        # Own arrays: PyMC's parallel sampler writes the chain's point in place.
        self._hot_points = [_own_copy(p) for p in points[1:]]
        stats = {
            **dict(zip(self._swap_names, accepted.tolist(), strict=True)),
            "swap_rate": float(np.mean(probabilities)) if probabilities else np.nan,
            "cold_loglik": float(logliks[0]),
            "warning": warning,
        }
        return points[0], [stats]
