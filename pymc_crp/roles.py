"""Which models hold this package's variables, and the roles model builders give them.

PyMC calls a step method's ``competence`` with a variable only; these registries let it find
the variable's model (even outside a ``with model:`` block) and any role that one of the
package's model builders recorded for it. Models are held weakly.

The normal-mixture builder (:func:`pymc_crp.models.measurement_error_mixture`) records its
variables and constants as one typed record, :class:`MixtureRoles`
(:func:`register_mixture`); the conjugate steps of :mod:`pymc_crp.step_methods.normal_gibbs`
read it back with :func:`mixture_roles`, so they claim exactly the variables of such models.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
from pymc.model import Model, modelcontext

from pymc_crp.core.normal_mixture_math import as_kernel_array as _arr

__all__ = [
    "NONCENTRED_KINDS",
    "MixtureRoles",
    "NonCentredRole",
    "find_model",
    "get_role",
    "mixture_roles",
    "noncentred_role",
    "noncentred_roles",
    "register_mixture",
    "register_model",
    "roles",
    "set_role",
]

# Models in which partition priors were created, so that competence checks (which PyMC
# calls with a variable only) can find the model even outside a ``with model:`` block.
_MODELS: weakref.WeakSet = weakref.WeakSet()


# Roles that the model builders give their variables, so that the builders' step methods are
# assigned automatically to those variables only: model -> {variable: (role, info)}.
_ROLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register_model(model: Model) -> None:
    _MODELS.add(model)


def set_role(model: Model, var, role: str, **info) -> None:
    """Record that ``var`` of ``model`` plays ``role`` (with graph ``info``) for step methods."""
    register_model(model)
    _ROLES.setdefault(model, {})[var] = (role, info)


def get_role(var, model: Model | None = None) -> tuple[str | None, dict]:
    """The role of ``var`` recorded by :func:`set_role`, or ``(None, {})``."""
    model = find_model(var) if model is None else model
    if model is None:
        return None, {}
    return _ROLES.get(model, {}).get(var, (None, {}))


@dataclass(frozen=True)
class NonCentredRole:
    """A hyperparameter that rescales utility vectors (:mod:`pymc_crp.step_methods.noncentred`).

    ``kind`` is ``"correlation"`` (``ρ``: every ``K``-vector of ``utilities`` is mapped) or
    ``"shrinkage"`` (``τ``: the slots ``utilities`` move about their ``mean`` ``U0``).
    """

    var: object
    kind: str
    utilities: tuple
    mean: object = None

    @property
    def moved(self) -> tuple:
        """The utility variables the move maps or reads (``U`` and, for ``τ``, ``U0``)."""
        return (*self.utilities, *(() if self.mean is None else (self.mean,)))


NONCENTRED_KINDS = ("correlation", "shrinkage")
"""The kinds of :class:`NonCentredRole`."""


def _noncentred(var, role: str | None, info: dict) -> NonCentredRole | None:
    if role != "hyperparameter" or info.get("noncentred") not in NONCENTRED_KINDS:
        return None
    return NonCentredRole(var, info["noncentred"], tuple(info["utilities"]), info.get("mean"))


def noncentred_role(var, model: Model | None = None) -> NonCentredRole | None:
    """The :class:`NonCentredRole` a builder recorded for ``var``, or ``None``.

    The builders record it with ``set_role(model, var, "hyperparameter", noncentred=kind,
    utilities=[...], mean=...)``.
    """
    return _noncentred(var, *get_role(var, model))


def noncentred_roles(model: Model) -> list[NonCentredRole]:
    """Every :class:`NonCentredRole` of ``model``, in the order they were recorded."""
    found = (_noncentred(var, role, info) for var, (role, info) in roles(model).items())
    return [r for r in found if r is not None]


def roles(model: Model) -> dict:
    """All recorded roles of ``model``: ``{variable: (role, info)}``."""
    return dict(_ROLES.get(model, {}))


def find_model(var) -> Model | None:
    """The model that holds ``var``: the model on the context stack, else a registered one."""
    try:
        model = modelcontext(None)
        if var in model.basic_RVs:
            return model
    except TypeError:
        pass
    for model in list(_MODELS):
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

    def role_of(self, var) -> str | None:
        for role in ("labels", "theta", "mu", "sigma", "weights"):
            if getattr(self, role) is var and var is not None:
                return role
        return None


_ROLE_PREFIX = "normal_mixture_"


def register_mixture(model: Model, roles: MixtureRoles) -> None:
    """Record the roles of the variables of a normal-mixture model built by this package.

    Uses the package registry (:func:`set_role`) with the roles
    ``normal_mixture_<role>`` and the :class:`MixtureRoles` as the role information.
    """
    for role in ("labels", "theta", "mu", "sigma", "weights"):
        var = getattr(roles, role)
        if var is not None:
            set_role(model, var, _ROLE_PREFIX + role, mixture=roles)


def mixture_roles(var, model: Model | None = None) -> tuple[Model | None, MixtureRoles | None]:
    """The registered model holding ``var`` and its :class:`MixtureRoles`, or ``(None, None)``."""
    model = find_model(var) if model is None else model
    if model is None:
        return None, None
    role, info = get_role(var, model)
    if role is None or not role.startswith(_ROLE_PREFIX):
        return None, None
    return model, info["mixture"]
