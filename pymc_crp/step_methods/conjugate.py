r"""Conjugacy detection for slot parameters read through partition labels.

A *slot parameter* is a free scalar-per-slot variable ``φ`` (shape ``(L,)``) that the model
reads only as ``φ[z]``, ``z`` a :class:`~pymc_crp.CRP` or
:class:`~pymc_crp.DirichletMultinomialPartition` label vector (in the graph:
``AdvancedSubtensor(φ, z)``). It is *conjugate* when its only child is one elementwise
likelihood term and the (prior, likelihood) pair is one of the families of
:mod:`pymc_crp.core.conjugate_math`:

===============================  ==============================  =========================
prior of ``φ``                   likelihood                      role of ``φ[z]``
===============================  ==============================  =========================
``Normal(m, s)``                 ``Normal(φ[z], σ)``             mean (``σ`` known or other)
``Gamma(a, b)``/``Exponential``  ``Normal(μ, tau=φ[z])``         precision (``μ`` known)
``Gamma(a, b)``/``Exponential``  ``Poisson(φ[z])``               rate
``Beta(α, β)``                   ``Bernoulli(φ[z])``,            probability
                                 ``Binomial(n, φ[z])``
``Normal``/``MvNormal``,         ``MvNormal(φ[z], Σ)``           mean vector (``Σ`` known)
shape ``(L, D)``
``Dirichlet(α)``, ``(L, C)``     ``Categorical(φ[z])``           category probabilities
===============================  ==============================  =========================

The likelihood's other parameter (``σ``, ``μ``, ``n``) may be a constant, another variable,
or another slot parameter read as ``ψ[z]``; it must not depend on ``φ``. Everything is read
from the graph, so there is nothing to declare; anything else is not conjugate and keeps
the general path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.transforms import _default_transform
from pymc.model import Model
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, explicit_graph_inputs
from pytensor.tensor.random.basic import (
    BernoulliRV,
    BetaRV,
    BinomialRV,
    CategoricalRV,
    DirichletRV,
    ExponentialRV,
    GammaRV,
    MvNormalRV,
    NormalRV,
    PoissonRV,
)
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.subtensor import AdvancedSubtensor, AdvancedSubtensor1
from pytensor.tensor.variable import TensorConstant

from pymc_crp.core.conjugate_math import (
    BETA_BINOMIAL,
    DIRICHLET_CATEGORICAL,
    GAMMA_POISSON,
    MVN_MEAN,
    NORMAL_MEAN,
    NORMAL_PREC,
)
from pymc_crp.distributions.partitions import partition_params
from pymc_crp.roles import REGISTRY, find_model
from pymc_crp.step_methods.label_terms import slot_terms_are_local
from pymc_crp.step_methods.model_graph import (
    dependent_terms,
    is_partition_rv,
    model_signature,
    same_signature,
    term_logps,
)

__all__ = [
    "ConjugateSlot",
    "collapsible_slots",
    "conjugate_slot",
    "partner_slots",
    "slot_index_uses",
]

_INDEX_OPS = (AdvancedSubtensor, AdvancedSubtensor1)


@dataclass(eq=False)
class ConjugateSlot:
    """A conjugate slot parameter found in a model's graph.

    ``hyper`` are two graphs (of the model's random variables) of the prior's parameters in
    the family's parametrisation (:mod:`pymc_crp.core.conjugate_math`), ``aux`` the graph of the
    likelihood's other parameter, one value per observation (it may read the labels).
    """

    family: int
    param: object
    term: object
    labels: object
    n_slots: int
    hyper: tuple
    aux: object


def _is_index_of(node, base, labels=None) -> bool:
    return (
        node is not None
        and isinstance(node.op, _INDEX_OPS)
        and len(node.inputs) == 2
        and node.inputs[0] is base
        and (labels is None or node.inputs[1] is labels)
    )


def slot_index_uses(graphs, base, blockers=()) -> list | None:
    """The nodes of ``graphs`` that read ``base``; ``None`` unless each is ``base[z]`` for one
    partition label vector ``z`` (returned as ``[z, nodes...]``). The search does not enter
    the graphs behind ``blockers`` (pass the model's random variables: their own parameters
    are not read by ``graphs``)."""
    uses = []
    for var in ancestors(list(graphs), blockers=list(blockers)):
        node = var.owner
        if node is not None and any(inp is base for inp in node.inputs) and node not in uses:
            uses.append(node)
    if not uses:
        return None
    labels = uses[0].inputs[1] if len(uses[0].inputs) == 2 else None
    if labels is None or not is_partition_rv(labels) or labels.ndim != 1:
        return None
    if not all(_is_index_of(node, base, labels) for node in uses):
        return None
    return [labels, *uses]


def _slot_rv_ok(model: Model, rv, n_slots: int | None = None) -> bool:
    """A free scalar-per-slot random variable (shape ``(L,)`` with ``L`` known) with no
    transform or its distribution's default one (so that its slots are independent draws)."""
    if rv not in model.free_RVs or not isinstance(getattr(rv.owner, "op", None), RandomVariable):
        return False
    if rv.owner.op.ndim_supp != 0 or rv.ndim != 1 or is_partition_rv(rv):
        return False
    if not _prior_is_its_family(model, rv):
        return False
    length = rv.type.shape[0]
    if length is None:
        try:
            length = int(model.eval_rv_shapes()[rv.name][0])
        except Exception:  # noqa: BLE001 - unknown static shape: not a slot parameter
            return False
    return n_slots is None or length == n_slots


def _n_slots(labels) -> int | None:
    try:
        return int(pt.get_underlying_scalar_constant_value(partition_params(labels).n_slots))
    except Exception:  # noqa: BLE001
        return None


def _depends_on(graph, var) -> bool:
    return var in set(ancestors([graph]))


def _is_precision_of(scale, index_out) -> bool:
    """Whether ``scale`` is ``index_out ** -0.5`` (PyMC's ``tau=`` parametrisation)."""
    v = pt.vector("v", dtype=index_out.dtype)
    try:
        replaced = graph_replace(scale, {index_out: v}, strict=False)
    except Exception:  # noqa: BLE001
        return False
    others = [x for x in explicit_graph_inputs([replaced]) if not isinstance(x, TensorConstant)]
    if others != [v]:
        return False
    fn = pytensor.function([v], replaced, on_unused_input="ignore")
    length = index_out.type.shape[0] if index_out.type.shape[0] is not None else 4
    test = np.geomspace(0.37, 11.0, length).astype(index_out.dtype)
    try:
        got = np.asarray(fn(test))
    except Exception:  # noqa: BLE001 - wrong shape (e.g. a fixed-length graph): not conjugate
        return False
    return got.shape in ((), test.shape) and np.allclose(got, test**-0.5, rtol=1e-10)


def _gamma_hyper(prior_node):
    op = prior_node.op
    if isinstance(op, GammaRV):
        shape, scale = prior_node.inputs[2:4]
        return shape, 1.0 / scale
    if isinstance(op, ExponentialRV):
        (scale,) = prior_node.inputs[2:3]
        return pt.ones_like(scale), 1.0 / scale
    return None


def conjugate_slot(model: Model | None, param) -> ConjugateSlot | None:
    """The :class:`ConjugateSlot` of ``param`` if it is a conjugate slot parameter, else None.

    Cached per model (PyMC asks every step method's competence for every variable) and
    recomputed when the model's variables, transforms or potentials change.
    """
    model = find_model(param) if model is None else model
    if model is None:
        return None
    signature = model_signature(model)
    # "signature" of the model's graphs; "found": {id(variable): (variable, ConjugateSlot)}.
    cache = REGISTRY.cache(model, "conjugate_slots")
    if "found" not in cache or not same_signature(cache["signature"], signature):
        cache.update(signature=signature, found={})
    cached = cache["found"].get(id(param))
    if cached is not None and cached[0] is param:
        return cached[1]
    found = _detect(model, param)
    cache["found"][id(param)] = (param, found)
    return found


def _prior_is_its_family(model: Model, rv) -> bool:
    """No transform, or the distribution's default one: a user transform such as ``ordered``
    restricts the prior's support (its rows are no longer independent draws of the family),
    so the conjugate formulas would not hold."""
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return True
    default = _default_transform(rv.owner.op, rv)
    return default is not None and type(transform) is type(default)


def _detect(model: Model, param) -> ConjugateSlot | None:
    if not _slot_rv_ok(model, param):
        return _detect_mvnormal(model, param) or _detect_dirichlet(model, param)
    logps = term_logps(model)
    children = dependent_terms(model, model.rvs_to_values[param], logps, exclude=(param,))
    if len(children) != 1:
        return None
    (term,) = children
    if term not in model.basic_RVs or not isinstance(term.owner.op, RandomVariable):
        return None
    if term.owner.op.ndim_supp != 0 or term.ndim != 1:
        return None
    dist_params = term.owner.op.dist_params(term.owner)
    uses = slot_index_uses(dist_params, param, model.basic_RVs)
    if uses is None:
        return None
    labels, *index_nodes = uses
    n_slots = _n_slots(labels)
    if n_slots is None or not _slot_rv_ok(model, param, n_slots) or len(index_nodes) != 1:
        return None
    index_out = index_nodes[0].outputs[0]
    if term.type.shape[0] is not None and labels.type.shape[0] is not None:
        if term.type.shape[0] != labels.type.shape[0]:
            return None
    prior_node, term_op = param.owner, term.owner.op
    n_obs = labels.shape[0]

    def per_obs(graph):
        return pt.broadcast_to(pt.cast(graph, "float64"), (n_obs,))

    family = hyper = aux = None
    if isinstance(term_op, NormalRV):
        loc, scale = dist_params
        if loc is index_out and not _depends_on(scale, param):
            if isinstance(prior_node.op, NormalRV):
                m, s = prior_node.inputs[2:4]
                family, hyper, aux = NORMAL_MEAN, (m, s**2), per_obs(scale) ** 2
        elif _gamma_hyper(prior_node) is not None and not _depends_on(loc, param):
            if _is_precision_of(scale, index_out):  # compiles a small function: checked last
                family, hyper, aux = NORMAL_PREC, _gamma_hyper(prior_node), per_obs(loc)
    elif isinstance(term_op, PoissonRV) and dist_params[0] is index_out:
        gamma = _gamma_hyper(prior_node)
        if gamma is not None:
            family, hyper, aux = GAMMA_POISSON, gamma, per_obs(pt.zeros(()))
    elif isinstance(prior_node.op, BetaRV):
        alpha, beta = prior_node.inputs[2:4]
        if isinstance(term_op, BernoulliRV) and dist_params[0] is index_out:
            family, hyper, aux = BETA_BINOMIAL, (alpha, beta), per_obs(pt.ones(()))
        elif isinstance(term_op, BinomialRV) and dist_params[1] is index_out:
            if not _depends_on(dist_params[0], param):
                family, hyper, aux = BETA_BINOMIAL, (alpha, beta), per_obs(dist_params[0])
    if family is None:
        return None
    hyper = tuple(pt.broadcast_to(pt.cast(h, "float64"), (n_slots,)) for h in hyper)
    return ConjugateSlot(family, param, term, labels, n_slots, hyper, aux)


def _peel_broadcast(var):
    """``b`` for PyMC's ``second(a, b)`` (``b`` broadcast to ``a``'s shape), else ``var``."""
    node = var.owner
    if node is not None and type(getattr(node.op, "scalar_op", None)).__name__ == "Second":
        return node.inputs[1]
    return var


def _detect_mvnormal(model: Model, param) -> ConjugateSlot | None:
    """``μ`` of shape ``(L, D)`` (``Normal`` or ``MvNormal`` prior) read as
    ``MvNormal(μ[z], cov)`` with ``cov`` free of ``μ`` and the labels."""
    if param not in model.free_RVs or not isinstance(getattr(param.owner, "op", None),
                                                      (NormalRV, MvNormalRV)):  # fmt: skip
        return None
    if param.ndim != 2 or None in param.type.shape:
        return None
    if not _prior_is_its_family(model, param):
        return None
    n_slots, dim = param.type.shape
    logps = term_logps(model)
    children = dependent_terms(model, model.rvs_to_values[param], logps, exclude=(param,))
    if len(children) != 1 or children[0] not in model.basic_RVs:
        return None
    (term,) = children
    if not isinstance(term.owner.op, MvNormalRV) or term.ndim != 2:
        return None
    loc, cov = term.owner.op.dist_params(term.owner)[:2]
    uses = slot_index_uses([loc, cov], param, model.basic_RVs)
    if uses is None or len(uses) != 2 or _peel_broadcast(loc) is not uses[1].outputs[0]:
        return None
    labels = uses[0]
    if _n_slots(labels) != n_slots or _depends_on(cov, labels) or _depends_on(cov, param):
        return None
    if cov.ndim == 3:
        if not cov.type.broadcastable[0]:
            return None
        cov = cov[0]
    if cov.ndim != 2:
        return None
    prior_node = param.owner
    m, s = prior_node.inputs[2:4]
    prior_mean = pt.broadcast_to(pt.cast(m, "float64"), (n_slots, dim))
    if isinstance(prior_node.op, NormalRV):
        var = pt.broadcast_to(pt.cast(s, "float64") ** 2, (n_slots, dim))
        prior_cov = var[:, :, None] * pt.eye(dim)[None]
    else:
        prior_cov = pt.broadcast_to(pt.cast(s, "float64"), (n_slots, dim, dim))
    return ConjugateSlot(
        MVN_MEAN, param, term, labels, n_slots, (prior_mean, prior_cov), pt.cast(cov, "float64")
    )


def _detect_dirichlet(model: Model, param) -> ConjugateSlot | None:
    """``p ~ Dirichlet(α)`` of shape ``(L, C)`` read as ``Categorical(p[z])``."""
    if param not in model.free_RVs or not isinstance(getattr(param.owner, "op", None), DirichletRV):
        return None
    if param.ndim != 2 or None in param.type.shape:
        return None
    if not _prior_is_its_family(model, param):
        return None
    n_slots, n_categories = param.type.shape
    logps = term_logps(model)
    children = dependent_terms(model, model.rvs_to_values[param], logps, exclude=(param,))
    if len(children) != 1 or children[0] not in model.basic_RVs:
        return None
    (term,) = children
    if not isinstance(term.owner.op, CategoricalRV) or term.ndim != 1:
        return None
    (probs,) = term.owner.op.dist_params(term.owner)[:1]
    uses = slot_index_uses([probs], param, model.basic_RVs)
    if uses is None or len(uses) != 2 or probs is not uses[1].outputs[0]:
        return None
    labels = uses[0]
    if _n_slots(labels) != n_slots:
        return None
    (alpha,) = param.owner.op.dist_params(param.owner)[:1]
    alpha = pt.broadcast_to(pt.cast(alpha, "float64"), (n_slots, n_categories))
    return ConjugateSlot(
        DIRICHLET_CATEGORICAL, param, term, labels, n_slots, (alpha,), pt.zeros(())
    )


def partner_slots(model: Model, slot: ConjugateSlot) -> list | None:
    """The other slot parameters ``ψ`` that ``slot.term`` reads (as ``ψ[z]``), or ``None`` if
    the term reads the labels otherwise or a ``ψ`` has children besides the term and the
    conjugate parameter's prior.

    Observation ``i`` then depends on the labels through ``z_i`` only, and each ``ψ_j`` given
    the labels depends on slot ``j``'s observations only. A ``ψ`` may also set the prior of
    ``φ`` slot by slot (normal--inverse-gamma style, ``mu ~ N(m, sigma / sqrt(k))``); this
    is checked numerically (changing ``ψ_0`` changes the prior of ``φ_0`` only).
    """
    cached = getattr(slot, "_partners", False)
    if cached is not False:
        return cached
    labels = slot.labels
    logps = term_logps(model)
    dist_params = slot.term.owner.op.dist_params(slot.term.owner)
    label_uses = [
        var.owner
        for var in ancestors(list(dist_params), blockers=list(model.basic_RVs))
        if var.owner is not None and any(inp is labels for inp in var.owner.inputs)
    ]
    others = []
    for node in label_uses:
        base = node.inputs[0]
        if _is_index_of(node, base, labels) and (base is slot.param or base in others):
            continue
        if not _is_index_of(node, base, labels) or not _slot_rv_ok(model, base, slot.n_slots):
            others = None
            break
        children = dependent_terms(model, model.rvs_to_values[base], logps, exclude=(base,))
        allowed = children == [slot.term] or (
            len(children) == 2
            and any(c is slot.term for c in children)
            and any(c is slot.param for c in children)
            and _sets_prior_slotwise(model, slot, base)
        )
        if not allowed or slot_index_uses(dist_params, base, model.basic_RVs) is None:
            others = None
            break
        others.append(base)
    if others and not slot_terms_are_local(model, [slot.term], labels, others):
        others = None  # a partner's row r reaches observations of other slots (ψ[z].mean())
    slot._partners = others
    return others


def _sets_prior_slotwise(model: Model, slot: ConjugateSlot, base) -> bool:
    """Whether the prior parameters of ``slot.param`` depend on ``base`` slot by slot."""
    hyper = model.replace_rvs_by_values([pt.stack(list(slot.hyper), axis=1)])[0]
    value = model.rvs_to_values[base]
    inputs = [v for v in explicit_graph_inputs([hyper]) if v in set(model.value_vars)]
    if value not in inputs:
        return False
    fn = pytensor.function(inputs, hyper, on_unused_input="ignore")
    point = model.initial_point(random_seed=0)
    before = np.asarray(fn(*(point[v.name] for v in inputs)))
    moved = np.array(point[value.name], dtype=float, copy=True)
    moved[0] += 0.37
    point[value.name] = moved
    after = np.asarray(fn(*(point[v.name] for v in inputs)))
    return bool(np.all(before[1:] == after[1:]) and np.any(before[0] != after[0]))


def collapsible_slots(model: Model, slot: ConjugateSlot) -> list | None:
    """The other slot parameters of ``slot.term`` if its labels can be drawn with ``slot.param``
    integrated out, else ``None``.

    Needs free labels whose only child is ``slot.term``, and :func:`partner_slots` (the
    other slot parameters, whose empty slots are then drawn from their prior before a sweep).
    """
    labels = slot.labels
    if labels not in model.free_RVs:
        return None
    logps = term_logps(model)
    children = dependent_terms(model, model.rvs_to_values[labels], logps, exclude=(labels,))
    if children != [slot.term]:
        return None
    others = partner_slots(model, slot)
    if others is None or not slot_terms_are_local(
        model, [slot.term], labels, others, check_labels=True
    ):
        return None
    return others
