r"""Exact Gibbs updates of conjugate slot parameters, with the labels drawn collapsed.

:class:`ConjugateCRPGibbs` is assigned by :func:`pymc.sample` to every conjugate slot
parameter (:func:`pymc_crp.step_methods.conjugate.conjugate_slot`) and, when the model
allows it (:func:`~pymc_crp.step_methods.conjugate.collapsible_slots`), to the labels as
well, as one blocked step. One step:

1. draws the empty slots of the likelihood's *other* slot parameters (e.g. per-cluster
   ``σ`` when ``μ`` is collapsed) from their prior — an exact Gibbs draw, no data attach to
   them;
2. sweeps the labels with the conjugate parameter ``φ`` integrated out (Neal's 2000
   Algorithm 3, :func:`pymc_crp.core.conjugate_math.collapsed_label_sweep`): observation ``i``
   joins slot ``j`` with probability ``∝ w_j(c_{-i}) p(y_i | y_{S_j \ i})``;
3. draws ``φ_j`` for every slot from its conjugate posterior given the labels (an empty
   slot's posterior is its prior), and then any other conjugate slot parameter of the step
   given the new values.

Steps 2–3 together are an exact blocked draw of ``(c, φ)`` given the rest; every update is a
conditional draw, so nothing is accepted or rejected and there are no divergences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.pytensorf import compile as compile_pytensor
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.compound import BlockedStep, Competence, CompoundStep, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.graph.replace import vectorize_graph

from pymc_crp.core.categorical_math import (
    categorical_collapsed_sweep,
    category_counts,
    dirichlet_sample_posterior,
)
from pymc_crp.core.checks import integer_at_least, positive_int
from pymc_crp.core.conjugate_math import (
    DIRICHLET_CATEGORICAL,
    MVN_MEAN,
    collapsed_label_sweep,
    sample_posterior,
    slot_log_marginal,
    slot_statistics,
)
from pymc_crp.core.mvnormal_math import mvn_collapsed_sweep, mvn_sample_posterior, mvn_slot_sums
from pymc_crp.core.split_merge import split_merge_moves
from pymc_crp.roles import find_model
from pymc_crp.step_methods.conjugate import collapsible_slots, conjugate_slot, partner_slots
from pymc_crp.step_methods.crp_gibbs import CRPGibbs, truncation_warning
from pymc_crp.step_methods.model_graph import (
    compile_partition_prior,
    compile_point_function,
    dependent_terms,
    is_partition_rv,
    prior_draw_function,
    reseed,
    term_logps,
)
from pymc_crp.step_methods.slot_slice import slice_slots

__all__ = ["ConjugateCRPGibbs", "collapsed_target", "partner_of"]


@dataclass(eq=False)
class _Partner:
    """A non-conjugate slot parameter ``ψ`` drawn with the conjugate ``φ`` integrated out."""

    name: str
    slot_index: int
    prior_logp: object
    draw: object
    draw_rng: object
    sets_prior: bool = False
    width: float = 1.0
    n_tuned: int = 0


def partner_of(model, rv):
    """The :class:`ConjugateSlot` whose likelihood reads the continuous, non-conjugate slot
    parameter ``rv`` as ``rv[z]`` (so ``rv`` can be drawn with that slot's parameter
    integrated out), or ``None``."""
    if rv.dtype not in ("float32", "float64") or conjugate_slot(model, rv) is not None:
        return None
    for other in model.free_RVs:
        if other is rv:
            continue
        slot = conjugate_slot(model, other)
        if slot is not None and rv in (partner_slots(model, slot) or ()):
            return slot
    return None


def collapsed_target(model, labels):
    """``(slot, others)``: the conjugate slot parameter that the labels' sweep integrates out
    and the other slot parameters of its term, or ``(None, None)``."""
    for rv in model.free_RVs:
        slot = conjugate_slot(model, rv)
        if slot is not None and slot.labels is labels:
            others = collapsible_slots(model, slot)
            if others is not None:
                return slot, others
    return None, None


class ConjugateCRPGibbs(BlockedStep):
    r"""Exact conjugate draws of slot parameters and collapsed label sweeps (Algorithm 3).

    Assigned automatically (it ranks before :class:`~pymc_crp.CRPGibbs` and NUTS) to the
    conjugate slot parameters of the model and to their labels; see the module docstring
    and :mod:`pymc_crp.step_methods.conjugate` for the pairs detected. Given only slot
    parameters (e.g. with the labels observed, or given to another step), it draws them from
    their conditionals given the labels.

    Parameters
    ----------
    vars : list, optional
        Slot parameters, optionally with their label vector and with other (non-conjugate,
        continuous) slot parameters of the same likelihood. Labels need the parameter that
        their sweep integrates out in the same step.
    sweeps : int, default 1
        Collapsed Gibbs sweeps over the labels per step.
    split_merge : int, default 20
        Conjugate split--merge proposals per step (:mod:`pymc_crp.core.split_merge`; scalar
        families only), before the sweeps. They move whole groups of observations, which
        single-site sweeps do one at a time.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Stats: ``n_clusters`` (occupied slots after the step), ``slots_full`` (a new cluster
    had prior mass while every slot was occupied: the CRP's truncation at ``max_clusters``
    bites), as for :class:`~pymc_crp.CRPGibbs`, and ``split_merge_accepted``. Labels are
    never renumbered: a new cluster takes a free slot, a merge empties the second slot.

    References
    ----------
    .. [1] Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture
       models. *J. Comput. Graph. Stat.* 9(2), 249–265.
    .. [2] Jain, S. and Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure
       for the Dirichlet process mixture model. *J. Comput. Graph. Stat.* 13(1), 158–182.
    .. [3] Dahl, D. B. (2003). An improved merge-split sampler for conjugate Dirichlet
       process mixture models. Technical report 1086, University of Wisconsin.
    """

    name = "conjugate_crp_gibbs"
    default_blocked = True
    _state_class = StepMethodState
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "slots_full": (bool, []),
        "split_merge_accepted": (np.int64, []),
        "warning": (SamplerWarning, None),
    }

    def __new__(cls, *args, **kwargs):
        """Labels given without the parameter that their sweep integrates out (e.g. that
        parameter was given to NUTS by ``step=``) fall back to :class:`~pymc_crp.CRPGibbs`;
        the other variables stay with this step."""
        vars = kwargs.get("vars", args[0] if args else None)
        if vars is None:
            return super().__new__(cls, *args, **kwargs)
        model = modelcontext(kwargs.get("model"))
        value_vars = get_value_vars_from_user_vars(vars, model)
        rvs = [model.values_to_rvs[v] for v in value_vars]
        labels = [rv for rv in rvs if is_partition_rv(rv)]
        if len(labels) != 1:
            return super().__new__(cls, *args, **kwargs)
        target, _ = collapsed_target(model, labels[0])
        if target is not None and target.param in rvs:
            return super().__new__(cls, *args, **kwargs)
        rest = [v for v, rv in zip(value_vars, rvs, strict=True) if rv is not labels[0]]
        rngs = get_random_generator(kwargs.get("rng")).spawn(2)
        common = {k: kwargs[k] for k in ("model", "initial_point", "compile_kwargs") if k in kwargs}
        label_step = CRPGibbs([model.rvs_to_values[labels[0]]], rng=rngs[0], **common)
        if not rest:
            return label_step
        others = {k: v for k, v in kwargs.items() if k not in ("vars", "rng")}
        return CompoundStep([label_step, cls(rest, *args[1:], rng=rngs[1], **others)])

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
        sweeps: int = 1,
        split_merge: int = 20,
    ):
        model = modelcontext(model)
        positive_int(sweeps, "sweeps", type_error=ValueError)
        self.sweeps = int(sweeps)
        self.split_merge = integer_at_least(split_merge, "split_merge", type_error=ValueError)
        if vars is None:
            vars = [v for v in model.value_vars if self.competence(model.values_to_rvs[v]) > 0]
        value_vars = get_value_vars_from_user_vars(vars, model)
        rvs = [model.values_to_rvs[v] for v in value_vars]
        compile_kwargs = dict(compile_kwargs or {})
        self.vars = list(value_vars)
        self.rng = get_random_generator(rng)
        self.tune = True
        self._warned = False

        label_rvs = [rv for rv in rvs if is_partition_rv(rv)]
        slots, partner_rvs = [], []
        for rv in rvs:
            if is_partition_rv(rv):
                continue
            slot = conjugate_slot(model, rv)
            if slot is not None:
                slots.append(slot)
            elif partner_of(model, rv) is not None:
                partner_rvs.append(rv)
            else:
                raise ValueError(
                    f"ConjugateCRPGibbs: {rv.name} is neither a conjugate slot parameter (see "
                    "pymc_crp.step_methods.conjugate for the pairs detected) nor a continuous "
                    "slot parameter of a conjugate pair's likelihood"
                )
        if not slots:
            raise ValueError(
                "ConjugateCRPGibbs needs at least one conjugate slot parameter; labels are swept "
                "with it integrated out, so it must be in the same step"
            )
        if len({id(s.labels) for s in slots}) != 1 or len(label_rvs) > 1:
            raise ValueError("ConjugateCRPGibbs updates the parameters of one label vector")
        labels = slots[0].labels
        if label_rvs and label_rvs[0] is not labels:
            raise ValueError(
                f"ConjugateCRPGibbs: the slot parameters are read through {labels.name}, "
                f"not {label_rvs[0].name}"
            )

        # The collapsed parameter goes first: it is drawn right after the sweep.
        self._collapse = None
        if label_rvs:
            target, others = collapsed_target(model, labels)
            if target is None or target.param not in rvs:
                raise ValueError(
                    f"ConjugateCRPGibbs cannot sweep {labels.name} collapsed here: it needs a "
                    "conjugate slot parameter of the labels' only likelihood term in the same "
                    "step (use pymc_crp.CRPGibbs otherwise)"
                )
            slots.sort(key=lambda s: s.param is not target.param)
            self._collapse = slots[0]
            self._refresh_fn = None
            if others:
                self._refresh_fn, self._refresh_rng = prior_draw_function(
                    model, others, compile_kwargs
                )
                self._refresh_names = [model.rvs_to_values[rv].name for rv in others]
            self._setup_prior(model, labels, compile_kwargs)
        self._slots = slots
        self.n_slots = slots[0].n_slots
        labels_value = model.rvs_to_values[labels]
        self._label_name = labels_value.name if labels in model.free_RVs else None
        if self._label_name is None:
            fixed = np.asarray(model.rvs_to_values[labels].eval(), dtype=np.int64)
            self._fixed_labels = fixed
        self._fns = [self._compile_slot(model, s, labels_value, compile_kwargs) for s in slots]
        self._partners = []
        for rv in partner_rvs:
            slot = partner_of(model, rv)
            index = next((k for k, s in enumerate(slots) if s.param is slot.param), None)
            if index is None:
                raise ValueError(
                    f"ConjugateCRPGibbs draws {rv.name} with {slot.param.name} integrated out, "
                    f"so {slot.param.name} must be in the same step"
                )
            (aux_v,) = model.replace_rvs_by_values([slot.aux])
            prior_lp = compile_point_function(  # one call per slice evaluation
                model, [term_logps(model)[rv], aux_v], compile_kwargs
            )
            draw, draw_rng = prior_draw_function(model, [rv], compile_kwargs)
            sets_prior = slot.param in dependent_terms(
                model, model.rvs_to_values[rv], term_logps(model), exclude=(rv,)
            )
            self._partners.append(
                _Partner(model.rvs_to_values[rv].name, index, prior_lp, draw, draw_rng, sets_prior)
            )

    # ------------------------------------------------------------------------------------
    # Construction helpers
    # ------------------------------------------------------------------------------------
    def _setup_prior(self, model, labels, compile_kwargs):
        prior, self._prior_params_fn = compile_partition_prior(model, labels, compile_kwargs)
        self._prior_code = int(prior)  # the plain code the numba kernels take

    def _compile_slot(self, model, slot, labels_value, compile_kwargs):
        """Compiled readers for one slot parameter: ``(hyper, y, aux_now, aux_matrix, write)``."""
        y = pt.cast(slot.term, "float64")
        if slot.family == DIRICHLET_CATEGORICAL:  # (α (L, C), y)
            graphs = model.replace_rvs_by_values([slot.hyper[0], slot.term])
            read = compile_point_function(model, graphs, compile_kwargs)
            return read, None, self._writer(model, slot.param)
        if slot.family == MVN_MEAN:  # (prior mean (L, D), prior cov (L, D, D), y, Σ)
            graphs = model.replace_rvs_by_values([*slot.hyper, y, slot.aux])
            read = compile_point_function(model, graphs, compile_kwargs)
            return read, None, self._writer(model, slot.param)
        hyper = pt.stack(list(slot.hyper), axis=1)
        hyper_v, y_v, aux_v = model.replace_rvs_by_values([hyper, y, slot.aux])
        read = compile_point_function(model, [hyper_v, y_v, aux_v], compile_kwargs)
        matrix = None
        if self._collapse is slot:
            matrix = self._aux_matrix_fn(model, labels_value, aux_v, compile_kwargs)
        return read, matrix, self._writer(model, slot.param)

    def _aux_matrix_fn(self, model, labels_value, aux_v, compile_kwargs):
        """``aux[i, j]`` for every slot ``j``: the graph with the labels set to ``j``."""
        n_slots = self.n_slots
        slot_ids = pt.as_tensor(np.arange(n_slots, dtype=np.int64))
        batched = vectorize_graph(
            aux_v, replace={labels_value: pt.zeros_like(labels_value)[None, :] + slot_ids[:, None]}
        )
        fn = compile_point_function(model, batched, compile_kwargs)

        def aux_matrix(point):
            out = np.asarray(fn(point), dtype=np.float64)
            n_obs = np.shape(point[labels_value.name])[0]
            return np.require(np.broadcast_to(out, (n_slots, n_obs)).T, np.float64, ("C", "W"))

        return aux_matrix

    @staticmethod
    def _writer(model, rv):
        """``(value_name, fn)`` mapping a natural-scale draw to the sampler's scale."""
        value_var = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            return value_var.name, lambda x: np.asarray(x, dtype=np.float64)
        natural = pt.tensor("natural", shape=rv.type.shape, dtype=rv.dtype)
        fn = compile_pytensor(
            [natural], transform.forward(natural, *rv.owner.inputs), on_unused_input="ignore"
        )
        return value_var.name, lambda x: np.asarray(fn(x), dtype=np.float64)

    # ------------------------------------------------------------------------------------
    # Sampling
    # ------------------------------------------------------------------------------------
    def _labels(self, point):
        if self._label_name is None:
            return self._fixed_labels
        labels = np.array(point[self._label_name], dtype=np.int64, copy=True)
        if labels.size and (labels.min() < 0 or labels.max() >= self.n_slots):
            raise ValueError(f"{self._label_name} has labels outside 0..{self.n_slots - 1}")
        return labels

    def step(self, point):
        point = dict(point)
        labels = self._labels(point)
        counts = np.bincount(labels, minlength=self.n_slots).astype(np.int64)
        n_full = n_accepted = 0
        if self._collapse is not None:
            empty = counts == 0
            if self._refresh_fn is not None and empty.any():
                reseed(self._refresh_rng, self.rng)
                draws = self._refresh_fn(point)
                for name, draw in zip(self._refresh_names, draws, strict=True):
                    updated = np.array(point[name], copy=True)
                    updated[empty] = draw[empty]
                    point[name] = updated
            slot = self._collapse
            concentration, discount = (float(v) for v in self._prior_params_fn(point))
            if slot.family == MVN_MEAN:
                n_full = self._mvn_sweeps(point, labels, counts, concentration, discount)
            elif slot.family == DIRICHLET_CATEGORICAL:
                n_full = self._categorical_sweeps(point, labels, counts, concentration, discount)
            else:
                n_full, n_accepted = self._scalar_sweeps(
                    point, labels, counts, concentration, discount
                )
            point[self._label_name] = labels
        occupied = counts > 0
        for partner in self._partners:
            self._slice_partner(point, partner, labels, occupied)
        for slot, (read, _, (name, write)) in zip(self._slots, self._fns, strict=True):
            if slot.family == DIRICHLET_CATEGORICAL:
                alpha, y = read(point)
                cats = category_counts(np.asarray(y), labels, self.n_slots, alpha.shape[1])
                point[name] = write(dirichlet_sample_posterior(alpha, cats, self.rng))
                continue
            if slot.family == MVN_MEAN:
                prior_mean, prior_cov, y, cov = read(point)
                n_j, sums = mvn_slot_sums(y, labels, self.n_slots)
                draw = mvn_sample_posterior(prior_mean, prior_cov, cov, n_j, sums, self.rng)
                point[name] = write(draw)
                continue
            hyper, y, aux_now = read(point)
            aux = np.broadcast_to(np.asarray(aux_now, dtype=np.float64)[:, None],
                                  (labels.size, self.n_slots))  # fmt: skip
            stats = slot_statistics(slot.family, y, aux, labels)
            draw = sample_posterior(slot.family, np.asarray(hyper, dtype=np.float64), stats,
                                    self.rng)  # fmt: skip
            point[name] = write(draw)
        return point, [self._stats(counts, n_full, n_accepted)]

    def _mvn_sweeps(self, point, labels, counts, concentration, discount):
        """Collapsed sweeps for a multivariate normal mean (no split--merge moves)."""
        read = self._fns[0][0]
        prior_mean, prior_cov, y, cov = (np.ascontiguousarray(v, dtype=np.float64)
                                         for v in read(point))  # fmt: skip
        _, sums = mvn_slot_sums(y, labels, self.n_slots)
        n_full = 0
        for _ in range(self.sweeps):
            order = self.rng.permutation(labels.size).astype(np.int64)
            uniforms = self.rng.random(labels.size)
            n_full += mvn_collapsed_sweep(
                y, cov, prior_mean, prior_cov, labels, counts, sums, order, uniforms,
                self._prior_code, concentration, discount,
            )  # fmt: skip
        return n_full

    def _categorical_sweeps(self, point, labels, counts, concentration, discount):
        """Collapsed sweeps for Dirichlet--categorical slots (no split--merge moves)."""
        alpha, y = self._fns[0][0](point)
        alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        cats = category_counts(y, labels, self.n_slots, alpha.shape[1])
        n_full = 0
        for _ in range(self.sweeps):
            order = self.rng.permutation(labels.size).astype(np.int64)
            uniforms = self.rng.random(labels.size)
            n_full += categorical_collapsed_sweep(
                y, alpha, labels, counts, cats, order, uniforms, self._prior_code, concentration,
                discount,
            )  # fmt: skip
        return n_full

    def _scalar_sweeps(self, point, labels, counts, concentration, discount):
        """Split--merge moves and collapsed sweeps for the scalar families."""
        slot = self._collapse
        n_full = 0
        read, matrix, _ = self._fns[0]
        hyper, y, _ = read(point)
        aux = matrix(point)
        hyper = np.ascontiguousarray(hyper, dtype=np.float64)
        y = np.require(y, np.float64, ("C", "W"))  # a model constant is read-only: one signature
        n_accepted = split_merge_moves(
            slot.family, y, aux, hyper, labels, counts, self.split_merge,
            self._prior_code, concentration, discount, self.rng,
        )  # fmt: skip
        stats = slot_statistics(slot.family, y, aux, labels)
        for _ in range(self.sweeps):
            order = self.rng.permutation(labels.size).astype(np.int64)
            uniforms = self.rng.random(labels.size)
            n_full += collapsed_label_sweep(
                slot.family, y, aux, hyper, labels, counts, stats, order, uniforms,
                self._prior_code, concentration, discount,
            )  # fmt: skip
        return n_full, n_accepted

    def _stats(self, counts, n_full, n_accepted):
        stats_out = {
            "n_clusters": int(np.count_nonzero(counts)),
            "slots_full": bool(n_full > 0),
            "split_merge_accepted": int(n_accepted),
            "warning": None,
        }
        if n_full > 0 and not self._warned and not self.tune:
            self._warned = True
            stats_out["warning"] = truncation_warning(
                "ConjugateCRPGibbs", self.n_slots, self._label_name
            )
        return stats_out

    def _slice_partner(self, point, partner, labels, occupied):
        """``ψ_j ~ p(ψ_j) m(y_{S_j} | ψ_j)`` with ``φ`` integrated out: slice sampling for
        occupied slots, exact prior draws for empty ones."""
        slot = self._slots[partner.slot_index]
        read = self._fns[partner.slot_index][0]
        x0 = np.array(point[partner.name], dtype=np.float64, copy=True)
        empty = ~occupied
        if empty.any():
            reseed(partner.draw_rng, self.rng)
            (draw,) = partner.draw(point)
            x0[empty] = draw[empty]

        hyper, y, _ = read(point)

        def logf(x):
            point[partner.name] = x
            prior_lp, aux = partner.prior_logp(point)
            if partner.sets_prior:  # normal--inverse-gamma style: φ's prior moves with ψ
                hyper_x = read(point)[0]
                return prior_lp + slot_log_marginal(slot.family, hyper_x, y, aux, labels)
            return prior_lp + slot_log_marginal(slot.family, hyper, y, aux, labels)

        x1, _ = slice_slots(logf, x0, occupied, partner.width, self.rng)
        if self.tune and occupied.any():
            partner.n_tuned += 1
            move = max(float(np.mean(np.abs(x1[occupied] - x0[occupied]))), 1e-8)
            partner.width += (move - partner.width) / partner.n_tuned
        point[partner.name] = x1

    def reset_tuning(self):
        """Restore the initial slice widths of the partners (called by ``pm.sample`` before
        each chain, so sequential and parallel chains are the same)."""
        for partner in self._partners:
            partner.width = 1.0
            partner.n_tuned = 0

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for conjugate slot parameters, and for labels that can be swept collapsed."""
        model = find_model(var)
        if model is None or var not in model.free_RVs:
            return Competence.INCOMPATIBLE
        if is_partition_rv(var):
            if var.ndim == 1 and collapsed_target(model, var)[0] is not None:
                return Competence.IDEAL
            return Competence.INCOMPATIBLE
        if conjugate_slot(model, var) is not None or partner_of(model, var) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE
