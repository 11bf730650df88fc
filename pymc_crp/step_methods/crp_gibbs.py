r"""Collapsed label step for partition priors: exact Gibbs sweeps over slot labels.

For a label vector ``c`` with a :class:`~pymc_crp.CRP` or
:class:`~pymc_crp.DirichletMultinomialPartition` prior, one step

1. refreshes the parameters of the empty slots from their prior given their parents (an
   exact Gibbs draw: no data attach to an empty slot);
2. evaluates ``ℓ[i, j] = log p(y_i | φ_j)`` for all observations and slots in one vectorised
   call, by setting the whole label vector to ``j`` in the elementwise log-densities of every
   model term that depends on the labels;
3. visits the observations in random order and draws each label from
   ``P(c_i = j | ·) ∝ w_j(c_{-i}) exp(ℓ[i, j])`` (numba).

Summed over the empty slots this is Neal's (2000) Algorithm 8 with the empty slots'
parameters as the auxiliary draws; every update is an exact conditional draw, so nothing is
accepted or rejected.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.pytensorf import compile as compile_pytensor
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import ancestors
from rich.progress import TextColumn
from rich.table import Column

from pymc_crp.core.label_sweep import full_conditionals, gibbs_label_sweep, likelihood_weights
from pymc_crp.distributions.partitions import partition_params
from pymc_crp.step_methods.label_terms import (
    LabelProbe,
    check_label_locality,
    loglik_value_inputs,
    observation_axis,
    per_observation,
    row_local_slot_params,
)
from pymc_crp.step_methods.model_graph import (
    compile_partition_prior,
    compile_point_function,
    dependent_terms,
    is_partition_rv,
    prior_draw_function,
    reseed,
    term_logps,
)

__all__ = ["CRPGibbs"]


def truncation_warning(step_name: str, n_slots: int, label_name: str) -> SamplerWarning:
    """The warning of a label step that found all ``n_slots`` slots occupied when a new
    cluster had prior mass (the truncation of the CRP bit; once per chain, after tuning)."""
    return SamplerWarning(
        WarningType.BAD_PARAMS,
        f"{step_name}: all {n_slots} slots of {label_name} were occupied when a new cluster had "
        "prior mass, so the Chinese restaurant process was truncated; increase max_clusters "
        "(the stat 'slots_full' marks the affected draws)",
        "warning",
    )


class CRPGibbs(BlockedStep):
    r"""Exact Gibbs sweeps over the labels of a partition prior (Neal's Algorithm 8).

    Assigned automatically by :func:`pymc.sample` to every free
    :class:`~pymc_crp.CRP` and :class:`~pymc_crp.DirichletMultinomialPartition` variable.
    The model terms that depend on the labels must depend on label ``i`` only through their
    ``i``-th element along one axis (``mu[z]``, ``U[c]``, a latent ``θ_i ~ N(mu[z_i], ·)``,
    vector observations ``y[i, :]``, observations ``y[t, i]`` laid out ``(T, N)``); this is
    checked at random label vectors with distinct slot parameters when the step is built, and
    any other model is refused with a ``ValueError``.

    The prior conditional weights of label ``i`` given the others are, with ``K`` occupied
    slots among ``L`` after removing ``i``:

    .. math::

        \text{CRP:}\quad w_j = n_j - d \ (\text{occupied}),\qquad
            w_s = \frac{θ + dK}{L - K}\ (\text{empty}); \qquad
        \text{DM:}\quad w_a = n_a + γ/A.

    Parameters
    ----------
    vars : list, optional
        Label variables (default: every partition-prior variable of the model).
    refresh_empty_slots : bool, default True
        Draw the parameters of empty slots from their prior before each sweep. Done only for
        parameters that the labels index: a plain random variable whose leading (batch) axis
        has one row per slot, whose transform maps each row on its own, whose children all
        depend on the labels, and whose row ``r`` changes only the densities of observations
        labelled ``r`` (checked at probe points, see :mod:`pymc_crp.step_methods.label_terms`).
        Other parameters are left to their own step methods (still an exact sampler).
    membership_probs : bool, default False
        Record each observation's full conditional label probabilities at the end of the
        sweep, ``P(c_i = j | c_{-i}, φ)`` at the stored state, in the stat
        ``membership_probs`` for Rao--Blackwellised membership estimates. It is stored
        flattened, ``(chain, draw, N·L)`` in ``idata.sample_stats`` (PyMC's default trace
        keeps array stats only as flat vectors); :func:`pymc_crp.membership_probabilities`
        and :func:`pymc_crp.posterior.relabel` read it as ``(N, L)`` per draw.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Stats: ``n_clusters`` (occupied slots after the sweep), ``slots_full`` (a new cluster
    had prior mass but every slot was occupied: the truncation ``max_clusters`` bites; a
    warning advises a larger ``max_clusters``), optionally ``membership_probs``.
    Labels are never renumbered (the slot rows of other variables stay aligned).

    References
    ----------
    .. [1] Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture
       models. *J. Comput. Graph. Stat.* 9(2), 249–265.
    """

    name = "crp_gibbs"
    default_blocked = False
    _state_class = StepMethodState
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "slots_full": (bool, []),
        "warning": (SamplerWarning, None),
    }

    def __new__(cls, *args, **kwargs):
        if not args and kwargs.get("vars") is None:
            kwargs["vars"] = _label_value_vars(modelcontext(kwargs.get("model")))
        return super().__new__(cls, *args, **kwargs)

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = False,
        refresh_empty_slots: bool = True,
        membership_probs: bool = False,
    ):
        model = modelcontext(model)
        if vars is None:  # __new__ split the label variables; Python still passes vars=None
            vars = _label_value_vars(model)
        value_var, label_rv = self._label_variable(model, vars)
        if initial_point is None:
            initial_point = model.initial_point(random_seed=0)
        compile_kwargs = dict(compile_kwargs or {})
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self.tune = True
        self.record_membership = bool(membership_probs)
        self._label_name = value_var.name
        self._n_obs = int(initial_point[value_var.name].shape[0])
        self._warned = False

        # Prior and its parameters (graphs of the other variables' values).
        self.n_slots = int(
            pt.get_underlying_scalar_constant_value(partition_params(label_rv).n_slots)
        )
        prior, self._prior_params_fn = compile_partition_prior(model, label_rv, compile_kwargs)
        self._prior_code = int(prior)  # the plain code the numba kernels take
        probe, loglik, logps = self._setup_likelihood(
            model, value_var, label_rv, initial_point, compile_kwargs
        )
        self._setup_slot_refresh(
            model, label_rv, loglik, logps, probe, refresh_empty_slots, compile_kwargs
        )
        if self.record_membership:
            self.stats_dtypes_shapes = {
                **self.stats_dtypes_shapes,
                "membership_probs": (object, None),
            }
            self.stats_dtypes = [{k: v[0] for k, v in self.stats_dtypes_shapes.items()}]

    # ------------------------------------------------------------------------------------
    # Construction helpers
    # ------------------------------------------------------------------------------------
    @staticmethod
    def _label_variable(model, vars):
        """``(value variable, random variable)`` of the one partition-prior label vector."""
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError("CRPGibbs updates one label variable at a time")
        (value_var,) = value_vars
        label_rv = model.values_to_rvs[value_var]
        if not is_partition_rv(label_rv):
            raise TypeError(
                f"CRPGibbs needs a CRP or DirichletMultinomialPartition variable, got {label_rv}"
            )
        if label_rv.ndim != 1:
            raise ValueError("CRPGibbs needs a single label vector (no batch dims)")
        return value_var, label_rv

    def _setup_likelihood(self, model, value_var, label_rv, initial_point, compile_kwargs):
        """Compile the likelihood matrix ``ℓ[i, j]`` and the per-observation log-likelihood
        of the terms that depend on the labels, and check that each observation's density
        depends on its own label only. Returns ``(probe, loglik, logps)``."""
        logps = term_logps(model)
        terms = self._label_terms(model, value_var, label_rv, logps)
        probe = LabelProbe.build(model, initial_point, value_var, self.n_slots)
        per_obs = [
            per_observation(logps[t], observation_axis(model, t, logps[t], probe, compile_kwargs))
            for t in terms
        ]
        loglik = per_obs[0]
        for extra in per_obs[1:]:
            loglik = loglik + extra
        self._terms = terms
        self._loglik_fn = self._compile_likelihood_matrix(model, value_var, loglik, compile_kwargs)
        self._single_loglik_fn = compile_point_function(model, loglik, compile_kwargs)
        term_names = [t.name for t in terms]
        check_label_locality(self._loglik_fn, self._single_loglik_fn, probe, term_names)
        return probe, loglik, logps

    def _setup_slot_refresh(
        self, model, label_rv, loglik, logps, probe, refresh_empty_slots, compile_kwargs
    ):
        """The slot parameters whose empty rows are refreshed from their prior at each step."""
        self._slot_params, self._skipped_slot_params = row_local_slot_params(
            model,
            label_rv,
            self._single_loglik_fn,
            loglik_value_inputs(model, loglik),
            self._terms,
            logps,
            probe,
            compile_kwargs,
        )
        self._refresh_fn = None
        if refresh_empty_slots and self._slot_params:
            self._refresh_fn, self._refresh_rng = prior_draw_function(
                model, self._slot_params, compile_kwargs
            )
            self._slot_param_names = [model.rvs_to_values[rv].name for rv in self._slot_params]

    @staticmethod
    def _label_terms(model, value_var, label_rv, logps) -> list:
        """The model terms whose density depends on the labels (no potentials, no scalars)."""
        terms = dependent_terms(model, value_var, logps, exclude=(label_rv,))
        if not terms:
            raise ValueError(f"no model term depends on the labels {label_rv.name}")
        for term in terms:
            if term in model.potentials:
                raise ValueError(
                    f"Potential {term.name} depends on the labels {label_rv.name}; CRPGibbs "
                    "needs each observation's density to depend on its own label only"
                )
            if logps[term].ndim == 0:
                raise ValueError(
                    f"{term.name} depends on the labels {label_rv.name} jointly (its log-density "
                    "is a scalar); CRPGibbs needs one log-density term per observation"
                )
        return terms

    def _compile_likelihood_matrix(self, model, value_var, loglik, compile_kwargs):
        """``ℓ[i, j]`` for all slots in one call, by vectorising over constant label vectors."""
        n_obs, n_slots = self._n_obs, self.n_slots
        constant_labels = pt.as_tensor(
            np.repeat(np.arange(n_slots, dtype=np.int64)[:, None], n_obs, axis=1)
        )
        try:
            batched = vectorize_graph(loglik, replace={value_var: constant_labels})
            fn = compile_point_function(model, batched.T, compile_kwargs)
        except Exception:  # noqa: BLE001 - any op without a vectorised form: loop over slots
            slot = pt.lscalar("slot")
            single = model.replace_rvs_by_values([loglik])[0]
            single = pytensor_replace(single, value_var, pt.full((n_obs,), slot, dtype="int64"))
            inputs = [v for v in model.value_vars if v in set(ancestors([single]))]
            looped = compile_pytensor([*inputs, slot], single, **compile_kwargs)
            names = [v.name for v in inputs]

            def fn(point):
                args = [point[name] for name in names]
                return np.stack([looped(*args, j) for j in range(n_slots)], axis=1)

        return fn

    # ------------------------------------------------------------------------------------
    # Sampling
    # ------------------------------------------------------------------------------------
    def step(self, point):
        point = dict(point)
        labels = np.array(point[self._label_name], dtype=np.int64, copy=True)
        counts = np.bincount(labels, minlength=self.n_slots).astype(np.int64)
        if counts.shape[0] != self.n_slots:
            raise ValueError(
                f"{self._label_name} has labels outside 0..{self.n_slots - 1}: {labels.max()}"
            )
        concentration, discount = (float(v) for v in self._prior_params_fn(point))

        empty = counts == 0
        if self._refresh_fn is not None and empty.any():
            reseed(self._refresh_rng, self.rng)
            for name, draw in zip(self._slot_param_names, self._refresh_fn(point), strict=True):
                updated = np.array(point[name], copy=True)
                updated[empty] = draw[empty]
                point[name] = updated

        lik_weights, _ = likelihood_weights(self._loglik_fn(point))
        order = self.rng.permutation(self._n_obs).astype(np.int64)
        uniforms = self.rng.random(self._n_obs)
        n_full = gibbs_label_sweep(
            lik_weights,
            labels,
            counts,
            order,
            uniforms,
            self._prior_code,
            concentration,
            discount,
            np.empty((0, 0)),
        )
        point[self._label_name] = labels
        stats = {
            "n_clusters": int(np.count_nonzero(counts)),
            "slots_full": bool(n_full > 0),
            "warning": None,
        }
        if n_full > 0 and not self._warned and not self.tune:  # truncation after tuning
            self._warned = True
            stats["warning"] = truncation_warning("CRPGibbs", self.n_slots, self._label_name)
        if self.record_membership:  # flat (N·L,): PyMC's default trace stacks 1-D stats only
            probs = np.empty((self._n_obs, self.n_slots))
            full_conditionals(
                lik_weights, labels, counts, self._prior_code, concentration, discount, probs
            )
            stats["membership_probs"] = probs.ravel()
        return point, [stats]

    def reset_tuning(self):
        return

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for CRP and Dirichlet--multinomial label vectors."""
        if is_partition_rv(var):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    @staticmethod
    def _progressbar_config(n_chains=1):
        columns = [
            TextColumn("{task.fields[n_clusters]}", table_column=Column("Clusters", ratio=1)),
        ]
        return columns, {"n_clusters": [0] * n_chains}

    @staticmethod
    def _make_progressbar_update_functions():
        def update_stats(stats):
            return {"n_clusters": stats["n_clusters"]}

        return (update_stats,)


def _label_value_vars(model) -> list:
    """Value variables of every free partition-prior variable of ``model``."""
    found = [model.rvs_to_values[rv] for rv in model.free_RVs if is_partition_rv(rv)]
    if not found:
        raise ValueError("the model has no free CRP or DirichletMultinomialPartition")
    return found


def pytensor_replace(graph, old, new):
    from pytensor.graph.replace import graph_replace

    return graph_replace(graph, {old: new}, strict=False)
