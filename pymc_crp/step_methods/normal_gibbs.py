r"""Conjugate Gibbs steps for the (measurement-error) normal mixture.

The model (built by :func:`pymc_crp.models.normal_mixture.measurement_error_mixture`)::

    z_i                 ~ CRP / Dirichlet-multinomial / Categorical(w)     (labels, L slots)
    Σ_k                 ~ InverseWishart(ν, Ω)
    μ_k | Σ_k           ~ N(m0, Σ_k / κ0)
    θ_i | z_i = k       ~ N(μ_k, Σ_k)
    y_i | θ_i           ~ N(θ_i, V_i)                                      (V_i known)

Full conditionals, each drawn exactly and vectorised over observations and components
(numba kernels in :mod:`pymc_crp.core.normal_mixture_math`; all randomness from the step's
``self.rng``):

* :class:`LatentNormalGibbs`, ``θ_i | ·  ~ N(m_i, S_i)`` with
  ``S_i = (Σ_z⁻¹ + V_i⁻¹)⁻¹`` and ``m_i = S_i (Σ_z⁻¹ μ_z + V_i⁻¹ y_i)``, ``z = z_i``
  (the same as ``μ_z + G_i (y_i - μ_z)``, ``G_i = Σ_z (V_i + Σ_z)⁻¹``).
* :class:`NormalInverseWishartGibbs`, ``(μ_k, Σ_k)`` jointly Normal--inverse-Wishart given
  the ``x_i`` (``θ_i``, or ``y_i`` when ``V = 0``) with ``z_i = k``; with ``N_k`` of them,
  mean ``x̄_k`` and scatter ``S_k = Σ (x_i - x̄_k)(x_i - x̄_k)ᵀ``:

  .. math::

      κ_n = κ_0 + N_k,\quad m_n = (κ_0 m_0 + N_k x̄_k)/κ_n,\quad ν_n = ν + N_k,\quad
      Ω_n = Ω + S_k + \frac{κ_0 N_k}{κ_n}(x̄_k - m_0)(x̄_k - m_0)^T,

  ``Σ_k ~ IW(ν_n, Ω_n)``, ``μ_k | Σ_k ~ N(m_n, Σ_k/κ_n)``. Empty components (``N_k = 0``)
  draw from the prior. When only one of ``μ``/``Σ`` is given to the step, it draws that one
  given the other: ``μ_k | Σ_k ~ N(m_n, Σ_k/κ_n)``, or
  ``Σ_k | μ_k ~ IW(ν + N_k + 1, Ω + Σ_i (x_i - μ_k)(x_i - μ_k)ᵀ + κ_0 (μ_k - m_0)(μ_k - m_0)ᵀ)``.
* :class:`DirichletWeightsGibbs`, ``w | z ~ Dirichlet(α_0 + N_1, …, α_0 + N_K)``.
* :class:`MixtureLabelGibbs`, for Categorical labels (finite mixture with explicit weights):
  ``P(z_i = k | ·) ∝ w_k N(x_i; μ_k, Σ_k)`` (or ``N(y_i; μ_k, Σ_k + V_i)`` when ``θ`` is
  integrated out); the labels are conditionally independent, so all are drawn at once.

With ``θ`` integrated out and ``V ≠ 0`` the conditional of ``(μ, Σ)`` is not conjugate: no
step here applies to them and :func:`pymc.sample` gives them to NUTS.

Assignment: the model builder records the role of each of its variables in a module-level
weak registry (:func:`register_mixture`); each step's ``competence`` is ``IDEAL`` exactly for
variables with its role, so variables of other models are never taken. Labels with a CRP or
Dirichlet--multinomial prior are updated by :class:`pymc_crp.CRPGibbs`.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.logprob.transforms import SimplexTransform
from pymc.model import Model, modelcontext
from pymc.pytensorf import compile as compile_pytensor
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.core.normal_mixture_math import as_kernel_array as _arr
from pymc_crp.core.normal_mixture_math import (
    cluster_scatter,
    draw_latent_normals,
    mvnormal_draws,
    niw_posterior,
    normal_loglik_matrix,
    sample_labels,
)
from pymc_crp.distributions.inverse_wishart import CholeskyLogDiagTransform, sample_inverse_wishart
from pymc_crp.roles import MixtureRoles, mixture_roles, register_mixture
from pymc_crp.step_methods.crp_gibbs import CRPGibbs
from pymc_crp.step_methods.model_graph import compile_point_function, is_partition_rv

__all__ = [
    "DirichletWeightsGibbs",
    "LatentNormalGibbs",
    "MixtureCRPGibbs",
    "MixtureLabelGibbs",
    "MixtureRoles",
    "NORMAL_MIXTURE_STEPS",
    "NormalInverseWishartGibbs",
    "mixture_roles",
    "register_mixture",
]


# ============================================================================================
# Step methods
# ============================================================================================
class _MixtureStep(BlockedStep):
    """Shared set-up: value variables, roles, natural-scale readers and writers."""

    default_blocked = False
    _state_class = StepMethodState
    _roles_handled: tuple[str, ...] = ()

    def __new__(cls, *args, **kwargs):
        if not args and kwargs.get("vars") is None:  # default: this step's variables only
            model = modelcontext(kwargs.get("model"))
            kwargs["vars"] = _default_vars(model, cls._roles_handled)
        return super().__new__(cls, *args, **kwargs)

    def _setup(self, vars, model, rng):
        """Resolve ``vars`` (default: the model's variables with this step's roles)."""
        model = modelcontext(model)
        if vars is None:
            vars = _default_vars(model, self._roles_handled)
        value_vars = get_value_vars_from_user_vars(vars, model)
        rvs = [model.values_to_rvs[v] for v in value_vars]
        _, roles = mixture_roles(rvs[0], model)
        if roles is None:
            raise ValueError(
                f"{type(self).__name__} needs a variable of a model built by "
                "pymc_crp.models.normal_mixture.measurement_error_mixture"
            )
        for rv in rvs:
            if roles.role_of(rv) not in self._roles_handled:
                raise ValueError(
                    f"{type(self).__name__} cannot update {rv.name} "
                    f"(it updates the roles {self._roles_handled})"
                )
        self.vars = list(value_vars)
        self.rng = get_random_generator(rng)
        self.tune = True
        self._roles = roles
        self._n_obs = roles.y.shape[0]
        self._n_slots = roles.n_slots
        return model, roles, rvs

    def _reader(self, model, rvs, compile_kwargs):
        """Compile a function returning the natural-scale values of ``rvs`` from a point."""
        graphs = [pt.cast(g, "float64") for g in model.replace_rvs_by_values(list(rvs))]
        return compile_point_function(model, graphs, compile_kwargs)

    def _labels_reader(self, model, roles, compile_kwargs):
        if roles.observed_labels is not None:
            fixed = _arr(roles.observed_labels, np.int64)
            return lambda point: fixed
        name = model.rvs_to_values[roles.labels].name
        return lambda point: _arr(point[name], np.int64)

    @staticmethod
    def _writer(model, rv):
        """``(value_name, fn)`` mapping a natural-scale value to the sampler's scale."""
        value_var = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            return value_var.name, lambda x: np.asarray(x, dtype=np.float64)
        if isinstance(transform, CholeskyLogDiagTransform):
            return value_var.name, transform.forward_numpy
        natural = pt.tensor("natural", shape=rv.type.shape, dtype=rv.dtype)
        fn = compile_pytensor([natural], transform.forward(natural, *rv.owner.inputs))
        return value_var.name, lambda x: np.asarray(fn(x), dtype=np.float64)

    def reset_tuning(self):
        return

    @classmethod
    def competence(cls, var, has_grad=None):
        """IDEAL for the variables that play this step's role in a registered mixture."""
        model, roles = mixture_roles(var)
        if roles is None or not cls._applies(roles, roles.role_of(var)):
            return Competence.INCOMPATIBLE
        return Competence.IDEAL

    @classmethod
    def _applies(cls, roles: MixtureRoles, role: str) -> bool:
        return role in cls._roles_handled


class LatentNormalGibbs(_MixtureStep):
    r"""Exact Gibbs draw of the latent values ``θ_i`` of a measurement-error mixture.

    ``θ_i | z_i = k, μ, Σ, y_i ~ N(m_i, S_i)``, ``S_i = (Σ_k⁻¹ + V_i⁻¹)⁻¹``,
    ``m_i = S_i(Σ_k⁻¹ μ_k + V_i⁻¹ y_i)``; all ``N`` at once (numba, ``O(N D³)``).
    Assigned automatically to ``theta`` of models built by
    :func:`~pymc_crp.models.normal_mixture.measurement_error_mixture`.
    """

    name = "latent_normal_gibbs"
    stats_dtypes_shapes = {}
    _roles_handled = ("theta",)

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model, roles, rvs = self._setup(vars, model, rng)
        self._read = self._reader(model, [roles.mu, roles.sigma], compile_kwargs)
        self._labels = self._labels_reader(model, roles, compile_kwargs)
        self._name, _ = self._writer(model, roles.theta)

    def step(self, point):
        point = dict(point)
        roles = self._roles
        mu, sigma = self._read(point)
        labels = self._labels(point)
        prec = np.linalg.inv(sigma)
        prec = 0.5 * (prec + np.swapaxes(prec, -1, -2))
        prec_mu = np.einsum("kab,kb->ka", prec, mu)
        eps = self.rng.standard_normal((self._n_obs, roles.dim))
        out = np.empty((self._n_obs, roles.dim))
        ok = draw_latent_normals(
            labels, _arr(prec), _arr(prec_mu), roles.v_inv, roles.v_inv_y, eps, out
        )
        if not ok:
            raise FloatingPointError("LatentNormalGibbs: a posterior precision is not positive")
        point[self._name] = out
        return point, [{}]


class NormalInverseWishartGibbs(_MixtureStep):
    r"""Exact Normal--inverse-Wishart Gibbs draw of the cluster means and covariances.

    Given the values ``x_i`` attached to each slot (``θ_i``, or the data ``y_i`` when
    ``V = 0``), draws ``Σ_k ~ IW(ν_n, Ω_n)`` and ``μ_k | Σ_k ~ N(m_n, Σ_k/κ_n)`` for every slot
    (empty ones from the prior ``μ_k | Σ_k ~ N(m0, Σ_k/κ0)``, ``Σ_k ~ IW(ν, Ω)``), see the
    module docstring. Given only ``mu`` (or only ``Sigma``) it draws that one from its full
    conditional given the other. Not applicable (never assigned) when ``θ`` is integrated
    out with ``V ≠ 0``: that conditional is not conjugate.
    """

    name = "normal_inverse_wishart_gibbs"
    default_blocked = True
    stats_dtypes_shapes = {}
    _roles_handled = ("mu", "sigma")

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=True,
    ):
        model, roles, rvs = self._setup(vars, model, rng)
        if not roles.conjugate_cluster_params:
            raise ValueError(
                "NormalInverseWishartGibbs does not apply when theta is integrated out with a "
                "measurement error V: the conditional of (mu, Sigma) is not conjugate; use NUTS"
            )
        updated = {roles.role_of(rv) for rv in rvs}
        self._update_mu = "mu" in updated
        self._update_sigma = "sigma" in updated
        self._read = self._reader(model, [roles.mu, roles.sigma], compile_kwargs)
        if roles.theta is not None:
            self._data = self._reader(model, [roles.theta], compile_kwargs)
        else:
            y = roles.y
            self._data = lambda point: (y,)
        self._labels = self._labels_reader(model, roles, compile_kwargs)
        self._mu_name, self._mu_write = self._writer(model, roles.mu)
        self._sigma_name, self._sigma_write = self._writer(model, roles.sigma)

    def step(self, point):
        point = dict(point)
        roles = self._roles
        (x,) = self._data(point)
        x = _arr(x)
        labels = self._labels(point)
        counts, means, scatter = cluster_scatter(x, labels, self._n_slots)
        if self._update_mu and self._update_sigma:
            kappa_n, m_n, nu_n, omega_n = niw_posterior(
                counts, means, scatter, roles.m0, roles.kappa0, roles.nu, roles.omega
            )
            sigma = sample_inverse_wishart(self.rng, nu_n, omega_n)
            mu = mvnormal_draws(self.rng, m_n, sigma / kappa_n[:, None, None])
        elif self._update_mu:
            _, sigma = self._read(point)
            kappa_n = roles.kappa0 + counts
            m_n = (roles.kappa0 * roles.m0 + counts[:, None] * means) / kappa_n[:, None]
            mu = mvnormal_draws(self.rng, m_n, sigma / kappa_n[:, None, None])
        else:
            mu, _ = self._read(point)
            dev = means - mu
            prior_dev = mu - roles.m0
            omega_n = (
                roles.omega
                + scatter
                + counts[:, None, None] * dev[:, :, None] * dev[:, None, :]
                + roles.kappa0 * prior_dev[:, :, None] * prior_dev[:, None, :]
            )
            omega_n = 0.5 * (omega_n + np.swapaxes(omega_n, -1, -2))
            sigma = sample_inverse_wishart(self.rng, roles.nu + counts + 1.0, omega_n)
        if self._update_mu:
            point[self._mu_name] = self._mu_write(mu)
        if self._update_sigma:
            point[self._sigma_name] = self._sigma_write(sigma)
        return point, [{}]

    @classmethod
    def _applies(cls, roles, role):
        return role in cls._roles_handled and roles.conjugate_cluster_params


class DirichletWeightsGibbs(_MixtureStep):
    r"""Exact Gibbs draw of finite-mixture weights: ``w | z ~ Dirichlet(α_0 + N_1, …, α_0 + N_K)``.

    Draws ``G_k ~ Gamma(α_0 + N_k)`` on the log scale (``log G = log G' + log(U)/a`` with
    ``G' ~ Gamma(a + 1)``, stable for tiny ``a``) and writes ``w = G / Σ G``; under PyMC's
    simplex transform the value is computed from ``log G`` directly, so weights that underflow
    in double precision remain valid.
    """

    name = "dirichlet_weights_gibbs"
    stats_dtypes_shapes = {}
    _roles_handled = ("weights",)

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model, roles, rvs = self._setup(vars, model, rng)
        self._labels = self._labels_reader(model, roles, compile_kwargs)
        (rv,) = rvs
        self._simplex = isinstance(model.rvs_to_transforms.get(rv), SimplexTransform)
        self._name, self._write = self._writer(model, rv)
        self._alpha = np.broadcast_to(
            np.asarray(roles.weights_alpha, dtype=np.float64), (self._n_slots,)
        )

    def step(self, point):
        point = dict(point)
        counts = np.bincount(self._labels(point), minlength=self._n_slots)
        shape = self._alpha + counts
        log_g = np.log(self.rng.gamma(shape + 1.0)) + np.log(self.rng.random(shape.size)) / shape
        if self._simplex:  # forward(w) = log w[:-1] - mean(log w), normalisation cancels
            point[self._name] = log_g[:-1] - log_g.mean()
        else:
            w = np.exp(log_g - log_g.max())
            point[self._name] = self._write(w / w.sum())
        return point, [{}]


class MixtureLabelGibbs(_MixtureStep):
    r"""Exact Gibbs draw of Categorical labels of a finite normal mixture with weights ``w``.

    ``P(z_i = k | ·) ∝ w_k N(x_i; μ_k, Σ_k)`` with ``x_i = θ_i`` (or ``y_i`` when ``V = 0``),
    or ``∝ w_k N(y_i; μ_k, Σ_k + V_i)`` when ``θ`` is integrated out. Given ``w`` the labels
    are independent, so all are drawn in one vectorised pass (numba).

    Parameters
    ----------
    membership_probs : bool, optional
        Record the conditional probabilities ``P(z_i = k | ·)`` in the stat
        ``membership_probs`` (``N * K`` numbers per draw, row-major ``(N, K)``; their mean
        over draws estimates ``P(z_i = k | Y)``, see
        :func:`pymc_crp.membership_probabilities`). Defaults to the builder's option.

    Notes
    -----
    Stats: ``n_clusters`` (occupied components), optionally ``membership_probs``.
    """

    name = "mixture_label_gibbs"
    stats_dtypes_shapes = {"n_clusters": (np.int64, [])}
    _roles_handled = ("labels",)

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
        membership_probs: bool | None = None,
    ):
        model, roles, rvs = self._setup(vars, model, rng)
        if roles.weights is None or roles.observed_labels is not None:
            raise ValueError(
                "MixtureLabelGibbs updates the free Categorical labels of a finite mixture with "
                "explicit weights; CRP and Dirichlet-multinomial labels use CRPGibbs"
            )
        self._read = self._reader(model, [roles.weights, roles.mu, roles.sigma], compile_kwargs)
        if roles.theta is not None:
            self._data = self._reader(model, [roles.theta], compile_kwargs)
        else:
            y = roles.y
            self._data = lambda point: (y,)
        if roles.collapsed and roles.v is not None:
            self._extra = _arr(roles.v)
        else:
            self._extra = np.zeros((0, roles.dim, roles.dim))
        self._name = model.rvs_to_values[roles.labels].name
        if membership_probs is None:
            membership_probs = roles.membership_probs
        self.record_membership = bool(membership_probs)
        if self.record_membership:
            self.stats_dtypes_shapes = {
                **self.stats_dtypes_shapes,
                # stored flat (N * K per draw), as CRPGibbs does: PyMC's default trace keeps
                # only scalar and 1-D stats; pmc.membership_probabilities reshapes it
                "membership_probs": (object, None),
            }
            self.stats_dtypes = [{k: v[0] for k, v in self.stats_dtypes_shapes.items()}]

    def step(self, point):
        point = dict(point)
        weights, mu, sigma = self._read(point)
        (x,) = self._data(point)
        loglik = np.empty((self._n_obs, self._n_slots))
        ok = normal_loglik_matrix(_arr(x), _arr(mu), _arr(sigma), self._extra, loglik)
        if not ok:
            raise FloatingPointError("MixtureLabelGibbs: a covariance is not positive definite")
        with np.errstate(divide="ignore"):
            log_w = np.log(weights)
        uniforms = self.rng.random(self._n_obs)
        labels = np.empty(self._n_obs, dtype=np.int64)
        probs = (
            np.empty((self._n_obs, self._n_slots)) if self.record_membership else np.empty((0, 0))
        )
        sample_labels(loglik, log_w, uniforms, labels, probs)
        point[self._name] = labels
        stats = {"n_clusters": int(np.count_nonzero(np.bincount(labels)))}
        if self.record_membership:
            stats["membership_probs"] = probs.ravel()
        return point, [stats]

    @classmethod
    def _applies(cls, roles, role):
        return role == "labels" and roles.weights is not None and roles.observed_labels is None


class MixtureCRPGibbs(CRPGibbs):
    r""":class:`~pymc_crp.CRPGibbs` for the labels of a normal mixture, with a fast likelihood.

    The same exact collapsed Gibbs sweep (Neal's Algorithm 8, empty-slot refresh, stats
    ``n_clusters``, ``slots_full`` and optionally ``membership_probs``), but the likelihood
    matrix ``ℓ[i, k] = log N(x_i; μ_k, Σ_k)`` (``x = θ`` or ``y``; ``N(y_i; μ_k, Σ_k + V_i)``
    when ``θ`` is integrated out) comes from a numba kernel that factorises each ``Σ_k`` once,
    instead of the generic PyTensor graph evaluated at every constant label vector. At
    construction it is checked against the model's own log-density (inherited check).

    Assigned automatically to CRP and Dirichlet--multinomial labels of models built by
    :func:`~pymc_crp.models.normal_mixture.measurement_error_mixture`.

    Parameters
    ----------
    membership_probs : bool, optional
        As for :class:`~pymc_crp.CRPGibbs`; defaults to the builder's ``membership_probs``.
    vars, model, rng, initial_point, compile_kwargs, blocked, refresh_empty_slots
        As for :class:`~pymc_crp.CRPGibbs`.
    """

    name = "mixture_crp_gibbs"

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
        membership_probs: bool | None = None,
    ):
        model = modelcontext(model)
        if vars is None:
            vars = [_find_role(model, "labels")]
        value_vars = get_value_vars_from_user_vars(vars, model)
        rv = model.values_to_rvs[value_vars[0]] if len(value_vars) == 1 else None
        _, roles = mixture_roles(rv, model) if rv is not None else (None, None)
        if roles is None or roles.role_of(rv) != "labels" or not is_partition_rv(rv):
            raise ValueError(
                "MixtureCRPGibbs updates the CRP or Dirichlet-multinomial labels of a model built "
                "by measurement_error_mixture; use CRPGibbs for other models"
            )
        self._mix_roles = roles
        if membership_probs is None:
            membership_probs = roles.membership_probs
        super().__init__(
            value_vars,
            model=model,
            rng=rng,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            blocked=blocked,
            refresh_empty_slots=refresh_empty_slots,
            membership_probs=membership_probs,
        )

    def _compile_likelihood_matrix(self, model, value_var, loglik, compile_kwargs):
        roles = self._mix_roles
        graphs = [roles.mu, roles.sigma] + ([roles.theta] if roles.theta is not None else [])
        read = compile_point_function(
            model,
            [pt.cast(g, "float64") for g in model.replace_rvs_by_values(graphs)],
            compile_kwargs,
        )
        extra = _arr(roles.v if roles.collapsed else np.zeros((0, roles.dim, roles.dim)))
        y = roles.y
        n_obs, n_slots = y.shape[0], roles.n_slots

        def loglik_matrix(point):
            values = read(point)
            x = values[2] if len(values) == 3 else y
            out = np.empty((n_obs, n_slots))
            ok = normal_loglik_matrix(_arr(x), _arr(values[0]), _arr(values[1]), extra, out)
            if not ok:
                out[:] = np.nan  # reported by likelihood_weights
            return out

        return loglik_matrix

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for CRP / Dirichlet--multinomial labels of a registered normal mixture."""
        _, roles = mixture_roles(var)
        if roles is not None and roles.role_of(var) == "labels" and is_partition_rv(var):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE


def _default_vars(model: Model, roles: tuple[str, ...]) -> list:
    found = []
    for role in roles:
        try:
            found.append(_find_role(model, role))
        except ValueError:
            continue
    if not found:
        raise ValueError(f"the model has no registered mixture variable with the roles {roles}")
    return found


def _find_role(model: Model, role: str):
    for rv in model.basic_RVs:
        _, roles = mixture_roles(rv, model)
        if roles is not None and getattr(roles, role) is not None:
            return getattr(roles, role)
    raise ValueError(f"the model has no registered mixture variable with the role {role!r}")


#: The step methods of this module, in the order they should be registered.
NORMAL_MIXTURE_STEPS = (
    MixtureCRPGibbs,
    MixtureLabelGibbs,
    LatentNormalGibbs,
    NormalInverseWishartGibbs,
    DirichletWeightsGibbs,
)
