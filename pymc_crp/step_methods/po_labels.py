r"""Label step for clustered partial orders whose cost follows the occupied clusters.

:class:`PartialOrderLabelGibbs` updates the CRP labels of lists with a
:class:`~pymc_crp.PartialOrderLists` likelihood over slot utilities ``U`` ``(L, M, K)`` by
Neal's (2000) Algorithm 8 with ``m`` auxiliary utility matrices drawn from the slot prior
``U_new ~ N(τ U0, (1-τ²) Σ_ρ)`` and reused between visits (Favaro and Teh 2013; the numeric
core and the argument for exactness are in :mod:`pymc_crp.core.aux_label_sweep`):

.. math::

    P(c_i = j) \propto (n_j - d)\, p(Y_i \mid h(U^{(j)}), p), \qquad
    P(c_i = \text{new}_t) \propto \frac{θ + dK}{m}\, p(Y_i \mid h(ψ_t), p).

Only the ``K`` occupied slots and the ``m`` auxiliaries are scored, so a sweep costs
``O(N (K + m))`` list likelihoods whatever ``max_clusters`` is, and ``max_clusters`` can be
large enough that the truncation of the CRP never bites. A new cluster takes a uniformly
chosen free slot and its auxiliary's utilities; after the sweep the empty slots' utilities
are redrawn from their prior (an exact Gibbs draw: no list attaches to them).

Assigned automatically to the labels of models built by
:func:`pymc_crp.models.clustered_partial_orders` (CRP partition); it can be given explicitly
(``pm.sample(step=[PartialOrderLabelGibbs([labels])])``) for any CRP label vector whose only
label-dependent term is a ``PartialOrderLists`` over slot utilities that are a plain random
variable with the same prior for every slot.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.core.aux_label_sweep import BORN_FROM, N_FULL, SweepState, aux_label_sweep
from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.distributions.partial_order_lists import PartialOrderListsRV
from pymc_crp.distributions.partitions import CRPRV
from pymc_crp.roles import get_role
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    prior_draw_function,
    term_logps,
)
from pymc_crp.step_methods.utility_metropolis import _ListTerm

__all__ = ["PartialOrderLabelGibbs"]


class PartialOrderLabelGibbs(BlockedStep):
    """Algorithm 8 label sweeps for clustered partial orders (see the module docstring).

    Parameters
    ----------
    vars : the CRP label variable
    n_aux : int, default 3
        ``m``, the number of auxiliary utility matrices (exact for any ``m >= 1``).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Stats: ``n_clusters`` (occupied slots after the sweep) and ``slots_full`` (a new cluster
    had prior mass at some visit but every slot was occupied: the truncation at
    ``max_clusters`` bites; a warning says to increase it).
    """

    name = "po_label_gibbs"
    default_blocked = False
    _state_class = StepMethodState
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "slots_full": (bool, []),
        "warning": (SamplerWarning, None),
    }

    def __init__(
        self,
        vars,
        *,
        n_aux: int = 3,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError("PartialOrderLabelGibbs updates one label variable")
        (value_var,) = value_vars
        label_rv = model.values_to_rvs[value_var]
        if not isinstance(getattr(label_rv.owner, "op", None), CRPRV) or label_rv.ndim != 1:
            raise TypeError(f"PartialOrderLabelGibbs needs a CRP label vector, got {label_rv}")
        if isinstance(n_aux, bool) or not isinstance(n_aux, Integral):
            raise TypeError(f"n_aux must be a positive integer, got {n_aux!r}")
        if n_aux < 1:
            raise ValueError(f"n_aux must be a positive integer, got {n_aux}")
        terms = dependent_terms(model, value_var, term_logps(model), exclude=(label_rv,))
        if len(terms) != 1 or not isinstance(terms[0].owner.op, PartialOrderListsRV):
            raise ValueError(
                f"the labels {label_rv.name} must have a single PartialOrderLists term as their "
                f"only label-dependent term, got {[t.name for t in terms]}"
            )
        (lists_rv,) = terms
        utilities = lists_rv.owner.inputs[2]
        utility_rv = utilities if utilities in model.free_RVs else None
        if utility_rv is None or utility_rv.ndim != 3:
            raise ValueError(
                "PartialOrderLabelGibbs needs the lists' utilities to be a free (L, M, K) "
                "slot variable passed to PartialOrderLists directly"
            )
        if model.rvs_to_transforms.get(utility_rv) is not None:
            raise ValueError(f"{utility_rv.name} must be untransformed")
        utility_value = model.rvs_to_values[utility_rv]
        self.vars = [value_var]
        self.rng = get_random_generator(rng)
        self.tune = True
        self.n_aux = int(n_aux)
        self._label_name = value_var.name
        self._utility_name = utility_value.name
        self._term = _ListTerm(model, lists_rv, utility_value, compile_kwargs)
        _, _, theta, discount, n_slots, _ = label_rv.owner.inputs
        self.n_slots = int(pt.get_underlying_scalar_constant_value(n_slots))
        self._prior_params_fn = compile_point_function(
            model,
            [pt.cast(p, "float64") for p in model.replace_rvs_by_values([theta, discount])],
            compile_kwargs,
        )
        self._draw_fn, self._draw_rng = prior_draw_function(model, [utility_rv], compile_kwargs)
        self._warned = False

    def _prior_draws(self, point) -> np.ndarray:
        """``L`` independent draws of one slot's utilities from the slot prior."""
        self._draw_rng.set_value(np.random.default_rng(self.rng.integers(2**63)))
        return np.array(self._draw_fn(point)[0], dtype=np.float64)

    def _column(self, utilities, rows, noise) -> np.ndarray:
        """``log p(Y_i | h(utilities), p)`` for lists ``rows`` (one ``(M, K)`` matrix)."""
        words = order_words(utilities[None], self._term.top_down)
        return self._term.slot_logliks(words, rows, noise)

    def step(self, point):
        point = dict(point)
        labels = np.array(point[self._label_name], dtype=np.int64, copy=True)
        utilities = np.array(point[self._utility_name], dtype=np.float64, copy=True)
        n_lists, n_slots = labels.shape[0], self.n_slots
        theta, discount = (float(v) for v in self._prior_params_fn(point))
        noise = float(self._term.noise_fn(point))
        sweep = SweepState(labels, n_slots)
        occupied = np.flatnonzero(sweep.counts)
        cache = list_likelihood_cache()
        words = order_words(utilities, self._term.top_down)
        ll = np.zeros((n_lists, n_slots))
        rows = np.tile(np.arange(n_lists), occupied.size)
        ll[:, occupied] = (
            cache.log_likelihoods(
                self._term.list_set, words, np.repeat(occupied, n_lists), noise, rows=rows
            )
            .reshape(occupied.size, n_lists)
            .T
        )
        fresh = self._prior_draws(point)
        used = 0
        n_aux = self.n_aux
        aux = np.empty((n_aux, *utilities.shape[1:]))
        aux_ll = np.empty((n_lists, n_aux))
        all_rows = np.arange(n_lists)
        for t in range(n_aux):
            if used == n_slots:
                fresh, used = self._prior_draws(point), 0
            aux[t] = fresh[used]
            used += 1
            aux_ll[:, t] = self._column(aux[t], all_rows, noise)

        order = self.rng.permutation(n_lists).astype(np.int64)
        uniforms = self.rng.random((n_lists, 3))
        logw = np.empty(n_slots + n_aux)
        flat, flat_aux = utilities.reshape(n_slots, -1), aux.reshape(n_aux, -1)
        position = 0
        while True:
            position = aux_label_sweep(
                ll, aux_ll, flat, flat_aux, labels, sweep.counts, sweep.occupied, sweep.free,
                sweep.where, sweep.state, order, position, uniforms, theta, discount, logw,
            )  # fmt: skip
            if position >= n_lists:
                break
            t = int(sweep.state[BORN_FROM])  # a new cluster took auxiliary t: draw it afresh
            if used == n_slots:
                fresh, used = self._prior_draws(point), 0
            aux[t] = fresh[used]
            used += 1
            remaining = order[position:]
            aux_ll[remaining, t] = self._column(aux[t], remaining, noise)

        empty = sweep.counts == 0
        if empty.any():  # exact Gibbs draw of the empty slots' utilities
            utilities[empty] = self._prior_draws(point)[empty]
        point[self._label_name] = labels
        point[self._utility_name] = utilities
        n_full = int(sweep.state[N_FULL])
        stats = {
            "n_clusters": int(np.count_nonzero(sweep.counts)),
            "slots_full": n_full > 0,
            "warning": None,
        }
        if n_full > 0 and not self._warned and not self.tune:
            self._warned = True
            stats["warning"] = SamplerWarning(
                WarningType.BAD_PARAMS,
                f"PartialOrderLabelGibbs: all {n_slots} slots of {self._label_name} were "
                "occupied when a new cluster had prior mass, so the Chinese restaurant process "
                "was truncated; increase max_clusters (the stat 'slots_full' marks the draws)",
                "warning",
            )
        return point, [stats]

    def reset_tuning(self):
        return

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for the CRP labels of :func:`~pymc_crp.models.clustered_partial_orders`."""
        role, _ = get_role(var)
        return Competence.IDEAL if role == "po_labels" else Competence.INCOMPATIBLE
