r"""The joint log-density of the non-centred moves over the occupied slots only.

The non-centred move of ``τ`` or ``ρ`` (:mod:`pymc_crp.step_methods.noncentred`) maps every
slot of the slot utilities ``U`` ``(L, M, K)`` holding its whitened value fixed. For a slot
``a`` that no list's label names, the slot prior ``N(μ, s^2 Σ_ρ)`` of the mapped value times
the map's Jacobian does not depend on the proposed value: for ``τ``, with ``U' = τ'U0 +
r(U - τU0)`` and ``r = \sqrt{(1-τ'^2)/(1-τ^2)}``,

.. math::

    N(U'^{(a)}; τ'U0, (1-τ'^2) s^2 Σ_ρ)\, r^{MK} = N(U^{(a)}; τU0, (1-τ^2) s^2 Σ_ρ),

since ``(U'^{(a)} - τ'U0)/\sqrt{1-τ'^2} = (U^{(a)} - τU0)/\sqrt{1-τ^2}``; for ``ρ`` (every
``K``-vector of ``U0`` and ``U`` mapped by ``M = A_{ρ'}A_ρ^{-1}``), ``U'^{(a)} - τU0' =
M(U^{(a)} - τU0)`` and ``N(Mx; Mμ, s^2 Σ_{ρ'})\,|\det M| = N(x; μ, s^2 Σ_ρ)``. The list
likelihood reads the occupied slots only. So the slice density (or Metropolis ratio) of the
move is, up to a factor that the move leaves unchanged,

.. math::

    f(v') = π_{\text{rest}}(v', U0')\, \prod_{a \in \mathcal O} N(U'^{(a)}; μ', s'^2 Σ_{ρ'})\,
        \prod_i p(Y_i \mid h(U'^{(c_i)}))^β\, |\det J_{\mathcal O}|,

``\mathcal O`` the occupied slots, ``π_rest`` the other terms that depend on the moved
variables (the hyperparameter's prior with its transform's Jacobian, ``U0``'s prior) and
``J_{\mathcal O}`` the map restricted to ``U0`` and the occupied slots. The step maps the
occupied slots at each density evaluation, and every slot once, for the value drawn.

:class:`OccupiedSlotTerms` recognises the structure (a slot variable with an
:class:`~pymc_crp.EquicorrelatedNormal` prior that is the same for every slot, read by one
:class:`~pymc_crp.PartialOrderLists` term through a single label vector, no other term
reading it, and the map leaving the slot prior times its Jacobian unchanged at a test point)
and evaluates ``f`` with one compiled function (the other terms, the list term and the slot
prior's parameters) plus the closed form
:func:`~pymc_crp.distributions.equicorrelated_normal.equicorrelated_logpdf` on the gathered
occupied slots. The step falls back to the full joint density otherwise.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from pymc_crp.distributions.equicorrelated_normal import (
    EquicorrelatedNormalParams,
    EquicorrelatedNormalRV,
    equicorrelated_logpdf,
)
from pymc_crp.distributions.partial_order_lists import PartialOrderListsParams
from pymc_crp.roles import REGISTRY, noncentred_roles
from pymc_crp.step_methods.list_terms import is_list_term
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    model_signature,
    same_signature,
    term_logps,
)

__all__ = ["OccupiedSlotTerms", "moved_terms"]


def moved_terms(model) -> tuple[tuple, list]:
    """``(signature, terms)``: the model variables whose log-density depends on a non-centred
    hyperparameter of ``model`` or on the utilities it moves (sorted by name), and what they
    were found from."""
    moved = []
    for var, role in noncentred_roles(model).items():
        moved += [var, *role.moved]
    signature = (*model_signature(model), tuple(moved))  # roles added later rebuild it
    logps = term_logps(model)
    terms = set()
    for var in moved:
        terms.update(dependent_terms(model, model.rvs_to_values[var], logps))
    return signature, sorted(terms, key=lambda v: v.name or "")


def _slot_axis_shared(param, n_batch: int) -> bool:
    """Whether the parameter ``param`` of an ``n_batch``-dimensional batch of slots is the
    same for every slot (no slot axis, or a broadcastable one)."""
    return param.ndim < n_batch or param.type.shape[0] == 1


def _slot_structure(model, slot_rv):
    """``(lists_rv, labels_rv)`` if ``slot_rv`` is a free, untransformed ``(L, M, K)``
    :class:`~pymc_crp.EquicorrelatedNormal` variable with the same prior for every slot whose
    only other dependent term is one :class:`~pymc_crp.PartialOrderLists` term that reads it
    directly through a free integer label vector; else ``None``."""
    if (
        slot_rv not in model.free_RVs
        or slot_rv.ndim != 3
        or not isinstance(getattr(slot_rv.owner, "op", None), EquicorrelatedNormalRV)
        or model.rvs_to_transforms.get(slot_rv) is not None
    ):
        return None
    params = EquicorrelatedNormalParams.from_rv(slot_rv)
    if not (
        _slot_axis_shared(params.mu, 3)
        and _slot_axis_shared(params.rho, 2)
        and _slot_axis_shared(params.scale, 2)
    ):
        return None
    terms = dependent_terms(model, model.rvs_to_values[slot_rv], exclude=(slot_rv,))
    if len(terms) != 1 or not is_list_term(terms[0]):
        return None
    (lists_rv,) = terms
    labels = PartialOrderListsParams.from_rv(lists_rv)
    labels_rv = labels.labels
    if (
        labels.utilities is not slot_rv
        or labels_rv not in model.free_RVs
        or labels_rv.ndim != 1
        or labels_rv.dtype not in ("int8", "int16", "int32", "int64")
        or model.rvs_to_transforms.get(labels_rv) is not None
    ):
        return None
    return lists_rv, labels_rv


def _occupied_function(model, slot_rv, compile_kwargs):
    """Compiled ``(rest, lists, μ, ρ, s)`` of a point: the sum of the terms of
    :func:`moved_terms` but the slot prior and the list terms, the list terms' sum, and the
    slot prior's parameters of one slot (mean ``(M, K)``, ``ρ`` and ``s`` ``(M,)``). Compiled
    once per model and slot variable, shared by ``ρ`` and ``τ``; ``None`` if the slot
    variable's labels term is among the moved terms."""
    signature, terms = moved_terms(model)
    signature = (*signature, (slot_rv,))
    cache = REGISTRY.cache(model, "noncentred_occupied_logp")
    if (
        "function" in cache
        and same_signature(cache["signature"], signature)
        and cache["compile_kwargs"] == compile_kwargs
    ):
        return cache["function"]
    logps = term_logps(model)
    params = EquicorrelatedNormalParams.from_rv(slot_rv)
    shape = slot_rv.shape
    slot_params = model.replace_rvs_by_values(
        [
            pt.broadcast_to(params.mu, shape)[0],
            pt.broadcast_to(params.rho, shape[:-1])[0],
            pt.broadcast_to(params.scale, shape[:-1])[0],
        ]
    )
    zero = pt.constant(0.0, dtype="float64")
    others = [t for t in terms if t is not slot_rv]
    parts = [
        sum((pt.sum(logps[t]) for t in others if not is_list_term(t)), zero),
        sum((pt.sum(logps[t]) for t in others if is_list_term(t)), zero),
        *(pt.cast(v, "float64") for v in slot_params),
    ]
    function = compile_point_function(model, parts, compile_kwargs)
    cache.update(signature=signature, compile_kwargs=compile_kwargs, function=function)
    return function


class OccupiedSlotTerms:
    """The joint log-density of a non-centred move over the occupied slots (see the module
    docstring): a compiled function for the terms but the slot prior, and the slot prior of
    the occupied slots in closed form.

    Build with :meth:`find`, which returns ``None`` when the model's structure is not the
    recognised one.
    """

    def __init__(self, model, slot_rv, labels_rv, compile_kwargs):
        self.slot_name = model.rvs_to_values[slot_rv].name
        self.labels_name = model.rvs_to_values[labels_rv].name
        self.function = _occupied_function(model, slot_rv, compile_kwargs)

    @classmethod
    def find(cls, model, utilities, compile_kwargs):
        """The :class:`OccupiedSlotTerms` of the one slot variable among ``utilities`` (the
        variables a move maps), or ``None``."""
        found = [(v, _slot_structure(model, v)) for v in utilities]
        found = [(v, s) for v, s in found if s is not None]
        if len(found) != 1:
            return None
        slot_rv, (_, labels_rv) = found[0]
        _, terms = moved_terms(model)
        if labels_rv in terms:  # the labels' own term would read the moved variables
            return None
        return cls(model, slot_rv, labels_rv, compile_kwargs)

    def occupied(self, point) -> np.ndarray:
        """The occupied slots of ``point`` (ascending)."""
        return np.unique(point[self.labels_name])

    def slot_prior(self, slots, mean, rho, scale) -> float:
        r"""``\sum_a \log N(U^{(a)}; μ, s^2 Σ_ρ)`` over the gathered ``slots`` ``(n, M, K)``
        (:func:`~pymc_crp.distributions.equicorrelated_normal.equicorrelated_logpdf`);
        ``-∞`` outside ``0 <= ρ < 1``, ``s > 0``."""
        if not (np.all((rho >= 0.0) & (rho < 1.0)) and np.all(scale > 0.0)):
            return -np.inf
        return float(np.sum(equicorrelated_logpdf(slots, mean, rho, scale)))

    def log_density(self, proposal, slots) -> tuple[float, float]:
        """``(rest, lists)`` at ``proposal`` (whose slot utilities hold ``slots`` ``(n, M,
        K)`` at the occupied slots): the slot prior of ``slots`` plus the other terms, and the
        list likelihoods (to be tempered)."""
        rest, lists, mean, rho, scale = self.function(proposal)
        return float(rest) + self.slot_prior(slots, mean, rho, scale), float(lists)

    def slot_log_densities(self, point) -> np.ndarray:
        """The slot prior's log-density of every slot of ``point`` ``(L,)`` (for checks)."""
        _, _, mean, rho, scale = self.function(point)
        return np.sum(equicorrelated_logpdf(point[self.slot_name], mean, rho, scale), axis=-1)
