"""Roles of the variables of a normal-mixture model, recorded by its builder.

:func:`pymc_crp.models_mixture.measurement_error_mixture` records which of its variables are
the labels, latent values, cluster means and covariances and weights (and the model's
constants) with :func:`register_mixture`; the conjugate steps of
:mod:`pymc_crp.step_methods.normal_gibbs` read them back with :func:`mixture_roles`, so they
claim exactly the variables of such models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pymc.model import Model

from pymc_crp.normal_mixture_math import as_kernel_array as _arr
from pymc_crp.registry import find_model, get_role, set_role

__all__ = ["MixtureRoles", "mixture_roles", "register_mixture"]


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

    Uses the package registry (:func:`pymc_crp.registry.set_role`) with the roles
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
