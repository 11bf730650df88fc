"""Which models hold this package's variables, and the roles model builders give them.

PyMC calls a step method's ``competence`` with a variable only; these registries let it find
the variable's model (even outside a ``with model:`` block) and any role that one of the
package's model builders recorded for it. Models are held weakly.

A role is a typed, frozen record whose type names the role and whose attributes are the graph
pieces the step method needs: :class:`HyperparameterRole` (``ρ``, ``τ``, ``p``, ``α``, ``d``;
with a non-centred kind for ``ρ`` and ``τ``), :class:`LabelsRole` (CRP labels swept by
Algorithm 8), :class:`UtilityMeanRole` (``U0``). The partial-order builders of
:mod:`pymc_crp.models.partial_orders` write them with :func:`set_role`; the steps read them
back by attribute with :func:`get_role`.

The normal-mixture builder (:func:`pymc_crp.models.measurement_error_mixture`) records its
variables and constants as one typed record, :class:`MixtureRoles`
(:func:`register_mixture`); the conjugate steps of :mod:`pymc_crp.step_methods.normal_gibbs`
read it back with :func:`mixture_roles`, so they claim exactly the variables of such models.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from pymc.model import Model, modelcontext
from pytensor.graph.traversal import ancestors

from pymc_crp.core.normal_mixture_math import as_kernel_array as _arr

__all__ = [
    "NONCENTRED_KINDS",
    "ROLE_TYPES",
    "CovariateRole",
    "HyperparameterRole",
    "LabelsRole",
    "MixtureRoles",
    "ModelRegistry",
    "REGISTRY",
    "Role",
    "UtilityMeanRole",
    "find_model",
    "get_role",
    "mixture_roles",
    "noncentred_role",
    "noncentred_roles",
    "register_mixture",
    "register_model",
    "roles",
    "seal_roles",
    "set_role",
]


class ModelRegistry:
    """What the package remembers about PyMC models: one owner, every model held weakly.

    It keeps the models in which the package's distributions were created (PyMC calls a step
    method's ``competence`` with a variable only, so the registry finds the variable's model
    even outside a ``with model:`` block), the roles the builders record, and named per-model
    caches of graphs and compiled functions (:meth:`cache`: the step methods'
    ``term_logps``, the conjugate detections, the non-centred joint log-density).

    It lives in this process only and is never pickled: :func:`pymc.sample` assigns and
    builds the step methods in the parent process, and ``pm.sample(cores=2)`` ships the
    built steps (which hold their compiled functions, not the registry) to the workers. A
    model that is collected drops out of every table.
    """

    def __init__(self):
        self._models: weakref.WeakSet = weakref.WeakSet()
        self._roles: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._sealed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def add_model(self, model: Model) -> None:
        """Remember ``model`` (weakly)."""
        self._models.add(model)

    def models(self) -> list[Model]:
        """The remembered models that are still alive."""
        return list(self._models)

    def set_role(self, model: Model, var, role) -> None:
        """Record ``role`` for ``var`` of ``model``."""
        self.add_model(model)
        self._roles.setdefault(model, {})[var] = role

    def role(self, model: Model, var):
        """The role record of ``var`` of ``model``, or ``None``."""
        return self._roles.get(model, {}).get(var)

    def seal(self, model: Model) -> None:
        """Record the terms, value variables and transforms of the finished ``model``."""
        self.add_model(model)
        self._sealed[model] = _structure(model)

    def sealed(self, model: Model) -> dict | None:
        """``{term: (value variable, transform)}`` recorded by :meth:`seal`, or ``None``."""
        return self._sealed.get(model)

    def roles(self, model: Model) -> dict:
        """``{variable: role record}`` of ``model`` (a copy)."""
        return dict(self._roles.get(model, {}))

    def cache(self, model: Model, name: str) -> dict:
        """The per-model cache ``name`` of ``model`` (a dict the caller fills)."""
        return self._caches.setdefault(model, {}).setdefault(name, {})

    def clear(self) -> None:
        """Forget every model, role and cache entry."""
        self._models.clear()
        self._roles.clear()
        self._caches.clear()
        self._sealed.clear()

    def __len__(self) -> int:
        """The number of remembered models."""
        return len(self._models)


REGISTRY = ModelRegistry()
"""The process-wide :class:`ModelRegistry`."""


def register_model(model: Model) -> None:
    """Remember ``model`` in :data:`REGISTRY` (so that :func:`find_model` finds it)."""
    REGISTRY.add_model(model)


def set_role(model: Model, var, role: Role) -> None:
    """Record that ``var`` of ``model`` plays ``role`` (a typed record) for step methods."""
    if not isinstance(role, ROLE_TYPES):
        raise TypeError(f"role must be one of {[t.__name__ for t in ROLE_TYPES]}, got {role!r}")
    REGISTRY.set_role(model, var, role)


def seal_roles(model: Model) -> None:
    """Mark ``model`` as finished by its builder: a role recorded with :func:`set_role` holds
    only while no term added to the model later reads its variables (see :func:`get_role`)."""
    REGISTRY.seal(model)


def get_role(var, model: Model | None = None) -> Role | None:
    """The role record of ``var`` recorded by :func:`set_role`, or ``None``.

    The type of the record is the role: :class:`HyperparameterRole`, :class:`LabelsRole`,
    :class:`UtilityMeanRole`, :class:`MixtureRoles` or :class:`CovariateRole`. A role's step
    method assumes the model its builder made, so once the builder has sealed the model
    (:func:`seal_roles`), the role lapses (``None``) when a term was removed, a value variable
    or transform changed, or a term added since (a ``pm.Potential``, another observed
    variable, ...) reads ``var`` or a variable named in its record; the generic steps then
    take the variables.
    """
    model = find_model(var) if model is None else model
    if model is None:
        return None
    role = REGISTRY.role(model, var)
    if role is None or not _role_holds(model, var, role):
        return None
    return role


def _structure(model: Model) -> dict:
    """``{term: (value variable, transform)}`` of every basic variable and potential."""
    out = {rv: (model.rvs_to_values[rv], model.rvs_to_transforms.get(rv)) for rv in model.basic_RVs}
    out.update({pot: (None, None) for pot in model.potentials})
    return out


def _role_holds(model: Model, var, role) -> bool:
    """Whether the model still has the structure its builder sealed, as far as ``role`` of
    ``var`` is concerned (always true for a model that was never sealed)."""
    sealed = REGISTRY.sealed(model)
    if sealed is None:
        return True
    now = _structure(model)
    for term, (value, transform) in sealed.items():
        if term not in now or now[term][0] is not value or now[term][1] is not transform:
            return False
    added = [term for term in now if term not in sealed]
    if not added:
        return True
    named = {var, *_record_variables(role)}
    blockers = list(model.basic_RVs)
    for term in added:
        inputs = term.owner.inputs if term in model.basic_RVs else [term]
        if named & set(ancestors(inputs, blockers=blockers)):
            return False
    return True


def _record_variables(role) -> list:
    """The model variables a role record names."""
    if isinstance(role, MixtureRoles):
        parts = (getattr(role, part) for part in MixtureRoles.PARTS)
        return [var for var in parts if var is not None]
    if isinstance(role, HyperparameterRole):
        return list(role.moved)
    if isinstance(role, UtilityMeanRole):
        return [v for v in (role.slots, role.tau, role.rho, role.labels) if hasattr(v, "owner")]
    if isinstance(role, CovariateRole):
        return [v for v in (role.utilities, role.labels) if hasattr(v, "owner")]
    return []


NONCENTRED_KINDS = ("correlation", "shrinkage")
"""The kinds of non-centred move of a :class:`HyperparameterRole`."""


@dataclass(frozen=True, eq=False)
class HyperparameterRole:
    """A scalar hyperparameter of a partial-order model (random-walk Metropolis).

    ``noncentred`` is ``None`` for a plain hyperparameter, else the kind of non-centred move
    (:mod:`pymc_crp.step_methods.noncentred`): ``"correlation"`` (``ρ``: every ``K``-vector of
    ``utilities`` is mapped) or ``"shrinkage"`` (``τ``: the slots ``utilities`` move about
    their ``mean`` ``U0``).
    """

    noncentred: str | None = None
    utilities: tuple = ()
    mean: object = None

    def __post_init__(self):
        if self.noncentred not in (None, *NONCENTRED_KINDS):
            raise ValueError(f"noncentred must be None or one of {NONCENTRED_KINDS}")
        object.__setattr__(self, "utilities", tuple(self.utilities))

    @property
    def moved(self) -> tuple:
        """The utility variables the move maps or reads (``U`` and, for ``τ``, ``U0``)."""
        return (*self.utilities, *(() if self.mean is None else (self.mean,)))


@dataclass(frozen=True, eq=False)
class LabelsRole:
    """CRP labels whose lists read the slot utilities directly (Algorithm 8 label sweeps)."""


@dataclass(frozen=True, eq=False)
class UtilityMeanRole:
    """The mean utilities ``U0`` of the hierarchical partial-order model.

    ``slots`` are the slot utilities ``U``, ``tau`` and ``rho`` the shrinkage and correlation
    (variables or constants; ``rho`` is ``0.0`` for ``K = 1``), ``labels`` the cluster labels
    (``None``: every slot is occupied). ``orders_only``: the lists read the slots' utilities
    only through their dominance orders (no item covariates), so moves that keep every order
    keep every list likelihood. ``score_shift``: with item covariates, the graph of ``xβ``
    (``(M,)``); the lists read the dominance orders of ``G⁻¹(Φ(U)) + xβ``, so moves that keep
    those orders keep every list likelihood.
    """

    slots: object
    tau: object
    rho: object
    labels: object = None
    orders_only: bool = False
    score_shift: object = None


@dataclass(frozen=True, eq=False)
class CovariateRole:
    """The item-covariate effects ``β`` of a partial-order model, whose lists read the orders
    of ``η = G⁻¹(Φ(U)) + xβ`` (:class:`~pymc_crp.CovariateShiftMetropolis`).

    ``utilities`` is ``U`` (``(M, K)``, or ``(L, M, K)`` slots), ``covariates`` the constant
    ``x`` ``(M, C)``, ``labels`` the cluster labels (``None``: every slot is read); in the
    clustered model ``mean_utilities`` is ``U0`` and ``shrinkage`` ``τ``
    (``U ~ N(τ U0, (1 - τ²) Σ)``), which the shift moves follow.
    """

    utilities: object
    covariates: np.ndarray
    labels: object = None
    mean_utilities: object = None
    shrinkage: object = None


def noncentred_role(var, model: Model | None = None) -> HyperparameterRole | None:
    """The :class:`HyperparameterRole` of ``var`` if it has a non-centred move, else ``None``."""
    role = get_role(var, model)
    if isinstance(role, HyperparameterRole) and role.noncentred is not None:
        return role
    return None


def noncentred_roles(model: Model) -> dict:
    """``{variable: HyperparameterRole}`` of the non-centred hyperparameters of ``model``, in
    the order they were recorded."""
    return {
        var: role
        for var, role in roles(model).items()
        if isinstance(role, HyperparameterRole) and role.noncentred is not None
    }


def roles(model: Model) -> dict:
    """All recorded roles of ``model`` that still hold (:func:`get_role`):
    ``{variable: role record}``."""
    return {
        var: role for var, role in REGISTRY.roles(model).items() if _role_holds(model, var, role)
    }


def find_model(var) -> Model | None:
    """The model that holds ``var``: the model on the context stack, else a registered one."""
    try:
        model = modelcontext(None)
        if var in model.basic_RVs:
            return model
    except TypeError:
        pass
    for model in REGISTRY.models():
        if var in model.basic_RVs:
            return model
    return None


@dataclass(eq=False)
class MixtureRoles:
    """The variables of a normal-mixture model and its constants, recorded by the builder.

    ``labels``, ``theta``, ``mu``, ``sigma``, ``weights`` are the model's random variables
    (``None`` when absent). ``y (N, D)`` are the data; ``v (N, D, D)`` the known measurement
    covariances or ``None`` (``V = 0``); ``collapsed`` means ``θ`` is integrated out. The prior
    is ``μ_k | Σ_k ~ N(m0, Σ_k/κ0)``, ``Σ_k ~ IW(ν, Ω)``, ``w ~ Dirichlet(weights_alpha)``.
    """

    n_slots: int
    y: np.ndarray
    v: np.ndarray | None
    collapsed: bool
    labels: object
    mu: object
    sigma: object
    m0: np.ndarray
    kappa0: float
    nu: float
    omega: np.ndarray
    theta: object = None
    weights: object = None
    weights_alpha: np.ndarray | None = None
    observed_labels: np.ndarray | None = None
    membership_probs: bool = False
    v_inv: np.ndarray | None = field(default=None, repr=False)
    v_inv_y: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.y = _arr(self.y)
        if self.v is not None:
            self.v = _arr(self.v)
            self.v_inv = _arr(np.linalg.inv(self.v))
            self.v_inv_y = _arr(np.einsum("nab,nb->na", self.v_inv, self.y))

    @property
    def dim(self) -> int:
        return self.y.shape[1]

    @property
    def conjugate_cluster_params(self) -> bool:
        """Whether ``(μ, Σ)`` have a conjugate conditional (``θ`` present, or ``V = 0``)."""
        return self.theta is not None or self.v is None

    PARTS: ClassVar[tuple[str, ...]] = ("labels", "theta", "mu", "sigma", "weights")

    def role_of(self, var) -> str | None:
        """The part (one of :attr:`PARTS`) that ``var`` plays, or ``None``."""
        for role in self.PARTS:
            if getattr(self, role) is var and var is not None:
                return role
        return None


def register_mixture(model: Model, roles: MixtureRoles) -> None:
    """Record the roles of the variables of a normal-mixture model built by this package.

    Each variable gets the :class:`MixtureRoles` itself as its role record
    (:meth:`MixtureRoles.role_of` tells which part it plays).
    """
    for part in MixtureRoles.PARTS:
        var = getattr(roles, part)
        if var is not None:
            set_role(model, var, roles)


def mixture_roles(var, model: Model | None = None) -> tuple[Model | None, MixtureRoles | None]:
    """The registered model holding ``var`` and its :class:`MixtureRoles`, or ``(None, None)``."""
    model = find_model(var) if model is None else model
    if model is None:
        return None, None
    role = get_role(var, model)
    if not isinstance(role, MixtureRoles):
        return None, None
    return model, role


Role = HyperparameterRole | LabelsRole | UtilityMeanRole | MixtureRoles | CovariateRole
"""A role record: the type says which step method a variable gets."""

ROLE_TYPES = (HyperparameterRole, LabelsRole, UtilityMeanRole, MixtureRoles, CovariateRole)
"""The types of role record :func:`set_role` accepts."""
