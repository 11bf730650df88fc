r"""The concentration of a CRP label prior, integrated out of the label moves and drawn after.

In a Dirichlet-process (or Pitman--Yor) mixture the number of clusters ``K`` and the
concentration ``θ`` are strongly coupled a posteriori (on 1,000 heterogeneous rankings their
correlation was 0.86), and alternating a label step at fixed ``θ`` with a draw of ``θ`` at
fixed labels moves ``K`` slowly along that ridge. A *partially collapsed* Gibbs step (van Dyk
and Park 2008) removes the coupling: the label moves target the labels' posterior with ``θ``
integrated out, in which a new cluster weighs ``w(K) = G(K+1)/G(K)`` instead of ``θ + Kd``
(:mod:`pymc_crp.core.integrated_concentration`), and then ``θ`` is drawn exactly from
``p(θ | K)``. The pair ``(labels, θ)`` is one block: the label moves leave the marginal
posterior of the labels invariant, and a fresh draw of ``θ`` from its full conditional given
them restores the joint posterior (the old ``θ`` is never read), so the composition is exact.
Because the draw of ``θ`` must be independent of its old value, both happen inside one step.

:class:`IntegratedConcentrationTerm` recognises the structure from the graph and compiles the
prior: a scalar free concentration with a log transform and constant prior parameters, whose
only child is the CRP of the labels, whose discount is a constant and whose number of items and
slots are constants. :func:`integrable_concentration` returns the concentration when it does.

When the labels have a step of their own (e.g. a :class:`~pymc_crp.PartialOrderLabelGibbs`
given to ``pm.sample`` for the labels alone), the concentration alone gets
:class:`ConcentrationGivenClusters`: the same exact draw of ``θ | K``, an independent draw from
its full conditional given the labels (a Gibbs step).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.transforms import LogTransform
from pymc.logprob.basic import logp as rv_logp
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, CompoundStep
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.core.integrated_concentration import IntegratedConcentration
from pymc_crp.distributions.params import constant_value
from pymc_crp.distributions.partitions import CRPRV, CRPParams
from pymc_crp.roles import LabelsRole, find_model, roles
from pymc_crp.step_methods.model_graph import dependent_terms, term_logps

__all__ = [
    "ConcentrationGivenClusters",
    "IntegratedConcentrationTerm",
    "claims_concentration",
    "concentration_alone_step",
    "concentration_labels",
    "integrable_concentration",
    "labels_and_concentration",
]


def concentration_labels(model, conc_rv):
    """The CRP labels whose concentration ``conc_rv`` can be integrated out, else ``None``."""
    value_var = model.rvs_to_values.get(conc_rv)
    if value_var is None:
        return None
    children = dependent_terms(model, value_var, term_logps(model), exclude=(conc_rv,))
    if len(children) == 1 and integrable_concentration(model, children[0]) is conc_rv:
        return children[0]
    return None


def integrable_concentration(model, label_rv):
    """The concentration of the CRP labels ``label_rv`` if the label step can integrate it out
    (module docstring), else ``None``."""
    if not isinstance(getattr(label_rv.owner, "op", None), CRPRV) or label_rv.ndim != 1:
        return None
    params = CRPParams.from_rv(label_rv)
    conc = params.concentration
    if conc not in model.free_RVs or conc.ndim != 0:
        return None
    if not isinstance(model.rvs_to_transforms.get(conc), LogTransform):
        return None
    for fixed in (params.discount, params.max_clusters, params.n):
        value = constant_value(fixed, fold=True)
        if value is None or np.ndim(value) != 0:
            return None
    value_var = model.rvs_to_values[conc]
    children = dependent_terms(model, value_var, term_logps(model), exclude=(conc,))
    if children != [label_rv]:
        return None
    prior_inputs = conc.owner.op.dist_params(conc.owner)
    if any(constant_value(v, fold=True) is None for v in prior_inputs):
        return None  # a prior parameter that can change (a variable or data): no fixed table
    return conc


def labels_and_concentration(model, value_vars) -> tuple:
    """``(label value variable, whether their concentration is among value_vars)`` for the
    variables given to :class:`~pymc_crp.PartialOrderLabelGibbs` (one CRP label vector, and
    optionally its concentration if :func:`integrable_concentration` returns it)."""
    labels = [v for v in value_vars if isinstance(model.values_to_rvs[v].owner.op, CRPRV)]
    if not labels or model.values_to_rvs[labels[0]].ndim != 1:
        raise TypeError(f"PartialOrderLabelGibbs needs a CRP label vector, got {value_vars}")
    if len(labels) != 1 or len(value_vars) > 2:
        raise ValueError(
            "PartialOrderLabelGibbs updates one CRP label vector (and its concentration)"
        )
    (label,) = labels
    others = [v for v in value_vars if v is not label]
    label_rv = model.values_to_rvs[label]
    if others and model.values_to_rvs[others[0]] is not integrable_concentration(model, label_rv):
        raise ValueError(
            f"PartialOrderLabelGibbs can update {others[0].name} with {label.name} only if it is "
            "their CRP's concentration and can be integrated out (a scalar with a log "
            "transform, constant prior parameters and discount, no other child)"
        )
    return label, bool(others)


def claims_concentration(var) -> bool:
    """Whether ``var`` is the concentration of labels that a model builder gave to
    :class:`~pymc_crp.PartialOrderLabelGibbs` (:class:`~pymc_crp.roles.LabelsRole`) and that
    label step can integrate it out."""
    model = find_model(var)
    return model is not None and any(
        isinstance(role, LabelsRole) and integrable_concentration(model, rv) is var
        for rv, role in roles(model).items()
    )


def concentration_alone_step(given, kwargs):
    """:class:`ConcentrationGivenClusters` for ``given`` (a compound step of one per
    concentration for several) if it holds only concentrations that can be integrated out
    (``pm.sample`` hands :class:`~pymc_crp.PartialOrderLabelGibbs` the concentration alone
    when the labels have a step given by the user), else ``None``."""
    if given is None:
        return None
    model = modelcontext(kwargs.get("model"))
    value_vars = get_value_vars_from_user_vars(given, model)
    if not value_vars or any(
        concentration_labels(model, model.values_to_rvs[v]) is None for v in value_vars
    ):
        return None
    keep = {k: v for k, v in kwargs.items() if k in ("model", "initial_point", "compile_kwargs")}
    if len(value_vars) == 1:
        return ConcentrationGivenClusters(value_vars, rng=kwargs.get("rng"), **keep)
    rngs = get_random_generator(kwargs.get("rng")).spawn(len(value_vars))
    pairs = zip(value_vars, rngs, strict=True)
    return CompoundStep([ConcentrationGivenClusters([v], rng=r, **keep) for v, r in pairs])


class IntegratedConcentrationTerm:
    """The concentration ``θ`` of ``label_rv`` integrated out: the new-cluster weights of the
    label moves and the exact draw of ``θ`` given the number of clusters.

    Parameters
    ----------
    model : pymc.Model
    label_rv : TensorVariable
        The CRP labels; :func:`integrable_concentration` must return their concentration.
    compile_kwargs : dict, optional
        For the compiled prior density.
    """

    def __init__(self, model, label_rv, compile_kwargs=None):
        conc = integrable_concentration(model, label_rv)
        if conc is None:
            raise ValueError(
                f"the concentration of {label_rv.name} cannot be integrated out: it needs to be "
                "a scalar free variable with a positive prior (log transform) whose parameters "
                "are constants, whose only child is the CRP, with a constant discount"
            )
        params = CRPParams.from_rv(label_rv)
        self.value_name = model.rvs_to_values[conc].name
        self.name = conc.name
        theta = pt.dvector(f"{conc.name}_grid")
        prior = rv_logp(conc, theta)  # a graph of the grid alone (constant parameters)
        log_prior = pytensor.function([theta], prior, **(compile_kwargs or {}))
        try:
            self.core = IntegratedConcentration(
                int(constant_value(params.n, fold=True)),
                int(constant_value(params.max_clusters, fold=True)),
                float(constant_value(params.discount, fold=True)),
                lambda values: log_prior(np.asarray(values, dtype=np.float64)),
            )
        except ValueError as err:
            raise ValueError(
                f"the concentration {conc.name} of {label_rv.name} cannot be integrated out: "
                f"{err}. Give {conc.name} a step of its own, e.g. "
                f"step=[pmc.ConcentrationMetropolis([{conc.name}])] in pm.sample"
            ) from err
        self._weights = self.core.new_cluster_weights()

    def new_cluster_weights(self) -> np.ndarray:
        """``w(K) = G(K+1)/G(K)`` for ``K = 0..L`` (read-only use)."""
        return self._weights

    def draw_value(self, n_clusters: int, rng) -> np.ndarray:
        """An exact draw of ``θ | K`` on the sampler's (log) scale."""
        return np.asarray(np.log(self.core.draw(n_clusters, rng)), dtype=np.float64)


class ConcentrationGivenClusters(BlockedStep):
    """An exact draw of a CRP concentration from its full conditional given the labels,
    ``p(θ | K)`` (:class:`~pymc_crp.core.integrated_concentration.IntegratedConcentration`):
    the step of the concentration alone when its labels have another step (module docstring).

    Parameters
    ----------
    vars : the concentration (see :func:`integrable_concentration`)
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.
    """

    name = "concentration_given_clusters"
    stats_dtypes_shapes = {"n_clusters": (np.int64, [])}

    def __init__(
        self, vars, *, model=None, rng=None, initial_point=None, compile_kwargs=None,
        blocked=True,
    ):  # fmt: skip
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        labels = (
            concentration_labels(model, model.values_to_rvs[value_vars[0]])
            if len(value_vars) == 1
            else None
        )
        if labels is None:
            raise ValueError(
                "ConcentrationGivenClusters needs one CRP concentration that can be integrated "
                "out (a scalar with a log transform and constant prior parameters, whose only "
                f"child is a CRP with a constant discount), got {[v.name for v in value_vars]}"
            )
        self.vars = list(value_vars)
        self.rng = get_random_generator(rng)
        self._term = IntegratedConcentrationTerm(model, labels, compile_kwargs)
        self._label_name = model.rvs_to_values[labels].name

    def step(self, point):
        point = dict(point)
        n_clusters = int(np.unique(np.asarray(point[self._label_name])).size)
        point[self._term.value_name] = self._term.draw_value(n_clusters, self.rng)
        return point, [{"n_clusters": n_clusters}]

    @staticmethod
    def competence(var, has_grad=None):
        """Never assigned by itself (:class:`~pymc_crp.PartialOrderLabelGibbs` hands it the
        concentration it is given alone)."""
        return Competence.INCOMPATIBLE
