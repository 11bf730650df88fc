r"""Normal mixtures with known measurement error, as ready-made PyMC models.

The model, for observations ``y_i ∈ R^D`` with known covariances ``V_i``::

    z_i            ~ partition prior over L slots        ("cluster")
    Σ_k            ~ InverseWishart(ν, Ω)                ("Sigma", L x D x D)
    μ_k | Σ_k      ~ N(m0, Σ_k / κ0)                     ("mu",    L x D)
    θ_i | z_i = k  ~ N(μ_k, Σ_k)                         ("theta", N x D)
    y_i | θ_i      ~ N(θ_i, V_i)                         ("y", observed)

:func:`measurement_error_mixture` builds it and records the roles of its variables so that
:func:`pymc.sample` assigns exact conjugate Gibbs steps (:mod:`pymc_crp.step_methods.
normal_gibbs`) to ``theta``, ``(mu, Sigma)``, the weights ``w`` and Categorical labels, and
:class:`pymc_crp.CRPGibbs` to CRP / Dirichlet--multinomial labels (plus the Escobar--West
update of a Gamma concentration). The galaxy velocities of Roeder (1990) are
:func:`pymc_crp.datasets.load_galaxies`.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import pymc as pm

from pymc_crp.core.checks import positive_int
from pymc_crp.distributions.batched_mvnormal import BatchedMvNormal
from pymc_crp.distributions.inverse_wishart import InverseWishart
from pymc_crp.distributions.partitions import CRP, DirichletMultinomialPartition
from pymc_crp.roles import MixtureRoles, register_mixture, seal_roles

__all__ = ["default_mixture_prior", "measurement_error_mixture"]

PARTITIONS = ("crp", "finite", "dirichlet-multinomial")
_PARTITION_ALIASES = {
    "crp": "crp",
    "dp": "crp",
    "finite": "finite",
    "dirichlet-multinomial": "dirichlet-multinomial",
    "dirichlet_multinomial": "dirichlet-multinomial",
    "dm": "dirichlet-multinomial",
}
_PRIOR_KEYS = ("m0", "kappa0", "nu", "Omega", "alpha_shape", "alpha_rate")


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------
def _as_data(y) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"y must be a numeric array, got {type(y).__name__}") from err
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"y must have shape (N,) or (N, D), got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"y must hold at least one observation of dimension >= 1, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.all(np.isfinite(arr), axis=1))
        raise ValueError(
            f"y must be finite; rows {bad[:10].tolist()} contain NaN or inf "
            "(drop or impute missing observations first)"
        )
    return arr


def _check_spd(mats: np.ndarray, name: str) -> None:
    """Raise unless every matrix in ``mats (..., D, D)`` is finite, symmetric and PD."""
    if not np.all(np.isfinite(mats)):
        raise ValueError(f"{name} must be finite")
    asym = np.abs(mats - np.swapaxes(mats, -1, -2))
    tol = 1e-8 * (1.0 + np.abs(mats).max())
    if np.any(asym > tol):
        where = np.argwhere(asym.reshape(-1, *mats.shape[-2:]).max(axis=(-2, -1)) > tol)
        raise ValueError(f"{name} must be symmetric (asymmetric matrices at {where[:5, 0]})")
    eig_min = np.linalg.eigvalsh(mats.reshape(-1, *mats.shape[-2:])).min(axis=-1)
    if np.any(eig_min <= 0):
        bad = np.flatnonzero(eig_min <= 0)
        hint = "; use V=None for no measurement error" if name == "V" else ""
        raise ValueError(
            f"{name} must be positive definite; not at indices {bad[:10].tolist()} "
            f"(smallest eigenvalue {eig_min.min():.3g}){hint}"
        )


def _as_measurement_cov(v, n: int, d: int) -> np.ndarray | None:
    """``V`` as ``(N, D, D)``, or ``None`` for no measurement error."""
    if v is None:
        return None
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"V must be None, 0 or a numeric array, got {type(v).__name__}") from err
    if arr.ndim == 0:
        if arr == 0:
            return None
        if d != 1:
            raise ValueError(
                f"V must be a (D, D) = ({d}, {d}) matrix or (N, D, D) = ({n}, {d}, {d}) array "
                f"for D = {d}; a scalar V is only accepted for 1-D data"
            )
        arr = arr.reshape(1, 1)
    if arr.ndim == 1 and d == 1 and arr.shape[0] == n:
        arr = arr[:, None, None]  # one variance per observation
    if not np.all(np.isfinite(arr)):
        raise ValueError("V must be finite")
    if np.all(arr == 0):
        return None
    if arr.shape == (d, d):
        _check_spd(arr, "V")
        return np.ascontiguousarray(np.broadcast_to(arr, (n, d, d)))
    if arr.shape == (n, d, d):
        _check_spd(arr, "V")
        return np.ascontiguousarray(arr)
    raise ValueError(
        f"V must be None/0, one (D, D) matrix or one per observation (N, D, D); with "
        f"N = {n}, D = {d} expected ({d}, {d}) or ({n}, {d}, {d})"
        + (" or (N,) variances" if d == 1 else "")
        + f", got shape {arr.shape}"
    )


def _positive_float(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def default_mixture_prior(y, V=None) -> dict:
    r"""The data-scaled default hyperparameters of :func:`measurement_error_mixture`.

    With ``ȳ`` the mean and ``C`` the sample covariance of ``y`` (``(N, D)``):

    * ``m0 = ȳ`` and ``kappa0 = 0.01``: ``μ_k | Σ_k ~ N(ȳ, 100 Σ_k)``, a weak prior;
    * ``nu = D + 2`` and ``Omega = C / 4``: ``Σ_k ~ IW(D + 2, C/4)``, the heaviest-tailed
      inverse-Wishart with a finite mean, ``E Σ_k = C/4`` (clusters a priori about half as
      wide as the data, in standard deviations); ``C`` is replaced by ``diag(C)`` or
      the identity when it is singular (e.g. ``N = 1``);
    * ``alpha_shape = 1``, ``alpha_rate = 1``: ``α ~ Gamma(1, 1)`` for the CRP concentration.

    ``V`` is not used (the data covariance includes the measurement error); pass explicit
    values through ``prior=`` for other choices.
    """
    y = _as_data(y)
    n, d = y.shape
    cov = np.atleast_2d(np.cov(y, rowvar=False)) if n > 1 else np.zeros((d, d))
    eig = np.linalg.eigvalsh(cov) if np.all(np.isfinite(cov)) else np.zeros(d)
    if not eig.min() > 1e-12 * max(eig.max(), 1e-300):
        diag = np.diag(cov).copy()
        diag[~(diag > 0)] = 1.0
        cov = np.diag(diag)
    return {
        "m0": y.mean(axis=0),
        "kappa0": 0.01,
        "nu": d + 2.0,
        "Omega": cov / 4.0,
        "alpha_shape": 1.0,
        "alpha_rate": 1.0,
    }


def _resolve_prior(prior, y) -> dict:
    d = y.shape[1]
    out = default_mixture_prior(y)
    if prior is None:
        return out
    if not isinstance(prior, dict):
        raise TypeError(f"prior must be a dict with keys among {_PRIOR_KEYS}, got {prior!r}")
    unknown = set(prior) - set(_PRIOR_KEYS)
    if unknown:
        raise ValueError(f"prior has unknown keys {sorted(unknown)}; allowed: {_PRIOR_KEYS}")
    out.update(prior)
    m0 = np.asarray(out["m0"], dtype=np.float64)
    if m0.ndim == 0 and d == 1:
        m0 = m0.reshape(1)
    if m0.shape != (d,) or not np.all(np.isfinite(m0)):
        raise ValueError(f"prior['m0'] must be a finite vector of length D = {d}, got {m0!r}")
    omega = np.asarray(out["Omega"], dtype=np.float64)
    if omega.ndim == 0 and d == 1:
        omega = omega.reshape(1, 1)
    if omega.shape != (d, d):
        raise ValueError(f"prior['Omega'] must be a (D, D) = ({d}, {d}) matrix, got {omega.shape}")
    _check_spd(omega, "prior['Omega']")
    nu = _positive_float(out["nu"], "prior['nu']")
    if nu <= d - 1:
        raise ValueError(f"prior['nu'] must exceed D - 1 = {d - 1}, got {nu}")
    return {
        "m0": m0,
        "kappa0": _positive_float(out["kappa0"], "prior['kappa0']"),
        "nu": nu,
        "Omega": omega,
        "alpha_shape": _positive_float(out["alpha_shape"], "prior['alpha_shape']"),
        "alpha_rate": _positive_float(out["alpha_rate"], "prior['alpha_rate']"),
    }


# --------------------------------------------------------------------------------------------
# Builder
# --------------------------------------------------------------------------------------------
def measurement_error_mixture(
    y,
    V=None,
    *,
    n_components: int | None = None,
    partition: str = "crp",
    max_clusters: int = 20,
    collapse_theta: bool = False,
    prior: dict | None = None,
    concentration=None,
    coords: dict | None = None,
    labels=None,
    membership_probs: bool = False,
) -> pm.Model:
    r"""Build a (Dirichlet-process) normal mixture with known measurement error.

    ``θ_i ~ Σ_k ρ_k N(μ_k, Σ_k)`` and ``y_i | θ_i ~ N(θ_i, V_i)``, with the labels ``z_i`` of
    the mixture components from a Chinese restaurant process, a finite mixture with explicit
    Dirichlet weights, or the Dirichlet--multinomial prior (weights integrated out).

    Variables (names are fixed): ``cluster`` (labels, ``(N,)``), ``mu`` (``(L, D)``), ``Sigma``
    (``(L, D, D)``), ``theta`` (``(N, D)``, only with measurement error and
    ``collapse_theta=False``), ``alpha`` (CRP concentration, unless fixed by
    ``concentration``), ``w`` (weights, ``partition="finite"``), and the observed ``y``.
    Dimensions: ``obs``, ``component``, ``dim``, ``dim2``.

    Prior: ``Σ_k ~ InverseWishart(ν, Ω)``, ``μ_k | Σ_k ~ N(m0, Σ_k/κ0)`` (a proper prior, so
    empty components are well defined). Defaults are data-scaled (see
    :func:`default_mixture_prior`): ``m0 = mean(y)``, ``κ0 = 0.01``, ``ν = D + 2``,
    ``Ω = cov(y)/4``, ``α ~ Gamma(1, 1)``.

    Sampling with :func:`pymc.sample` assigns exact steps automatically: :class:`CRPGibbs`
    (collapsed label sweeps) to CRP/Dirichlet--multinomial labels, the Escobar--West update to
    ``alpha``, and the conjugate steps of :mod:`pymc_crp.step_methods.normal_gibbs` to
    ``theta`` (:class:`LatentNormalGibbs`), ``mu, Sigma`` jointly
    (:class:`NormalInverseWishartGibbs`), ``w`` (:class:`DirichletWeightsGibbs`) and
    Categorical labels (:class:`MixtureLabelGibbs`). With ``collapse_theta=True`` and a
    measurement error, ``y_i | z_i = k ~ N(μ_k, Σ_k + V_i)``: the labels mix faster, but
    ``(μ, Σ)`` are no longer conjugate and are left to NUTS (slower per iteration).

    Parameters
    ----------
    y : array_like, shape ``(N,)`` or ``(N, D)``
        Observations (finite).
    V : None, 0, array_like
        Known measurement-error covariance: ``None``/``0`` (no error: a plain normal mixture,
        ``y`` observed directly from it, no ``theta``), one ``(D, D)`` matrix for all
        observations, or one per observation ``(N, D, D)``; for ``D = 1`` also a scalar
        variance or ``(N,)`` variances. Symmetric positive definite.
    n_components : int
        Number of components ``K`` for ``partition="finite"`` or ``"dirichlet-multinomial"``
        (required there; must be omitted for the CRP).
    partition : {"crp", "finite", "dirichlet-multinomial"}
        Prior over the labels. ``"crp"``: Dirichlet process (CRP with discount 0) over
        ``L = max_clusters`` slots. ``"finite"``: ``w ~ Dirichlet(α0, …, α0)``,
        ``z_i ~ Categorical(w)``. ``"dirichlet-multinomial"``: the same with ``w`` integrated
        out (:class:`pymc_crp.DirichletMultinomialPartition` with ``γ = K α0``).
    max_clusters : int, default 20
        Number of slots of the CRP (the truncation; :class:`CRPGibbs` warns if it bites).
    collapse_theta : bool, default False
        Integrate ``theta`` out (only matters when ``V`` is given).
    prior : dict, optional
        Overrides among ``m0`` (``(D,)``), ``kappa0``, ``nu``, ``Omega`` (``(D, D)``),
        ``alpha_shape``, ``alpha_rate`` (Gamma prior of the CRP concentration, rate
        parameterisation).
    concentration : float, optional
        CRP: a fixed concentration ``α`` (default: ``alpha ~ Gamma(alpha_shape, alpha_rate)``).
        Finite and Dirichlet--multinomial: the Dirichlet parameter ``α0`` of each component
        (default 1, the uniform prior on the weights); for ``"finite"`` also a ``(K,)``
        vector.
    coords : dict, optional
        Extra or overriding coordinates (e.g. ``{"dim": ["x", "y"]}``).
    labels : array_like of int, optional
        Observed (fixed) labels in ``0..L-1``: the continuous parameters are then sampled
        given this partition (used to check the samplers against NUTS).
    membership_probs : bool, default False
        For ``partition="finite"``: record the stat ``membership_probs`` (conditional
        probabilities ``P(z_i = k | ·)``, ``(N, K)`` per draw; averaged over draws they
        estimate ``P(z_i = k | Y)``). For the CRP and Dirichlet--multinomial labels ask
        :class:`CRPGibbs` instead:
        ``pm.sample(crp_gibbs={"membership_probs": True})`` or
        ``pm.sample(step=[pmc.CRPGibbs([model["cluster"]], membership_probs=True)])``.

    Returns
    -------
    pymc.Model
    """
    y = _as_data(y)
    n, d = y.shape
    if not isinstance(partition, str) or partition.lower() not in _PARTITION_ALIASES:
        raise ValueError(f"partition must be one of {PARTITIONS}, got {partition!r}")
    partition = _PARTITION_ALIASES[partition.lower()]
    if partition == "crp":
        if n_components is not None:
            raise ValueError(
                "n_components applies to partition='finite' or 'dirichlet-multinomial'; for the "
                "CRP set max_clusters (the number of slots)"
            )
        n_slots = positive_int(max_clusters, "max_clusters")
    else:
        if n_components is None:
            raise ValueError(f"partition={partition!r} needs n_components (the number K)")
        n_slots = positive_int(n_components, "n_components")
    v = _as_measurement_cov(V, n, d)
    hyper = _resolve_prior(prior, y)
    collapsed = bool(collapse_theta) and v is not None

    observed_labels = None
    if labels is not None:
        observed_labels = np.asarray(labels)
        if observed_labels.shape != (n,) or not np.issubdtype(observed_labels.dtype, np.integer):
            raise ValueError(f"labels must be an integer vector of length N = {n}")
        if observed_labels.min() < 0 or observed_labels.max() >= n_slots:
            raise ValueError(f"labels must lie in 0..{n_slots - 1}")
        observed_labels = observed_labels.astype(np.int64)

    if partition == "crp":
        alpha_fixed = (
            None if concentration is None else _positive_float(concentration, "concentration")
        )
        weights_alpha = None
    else:
        conc = 1.0 if concentration is None else concentration
        weights_alpha = np.asarray(conc, dtype=np.float64)
        if weights_alpha.ndim == 0:
            _positive_float(float(weights_alpha), "concentration")
        elif partition == "finite" and weights_alpha.shape == (n_slots,):
            if not np.all(np.isfinite(weights_alpha) & (weights_alpha > 0)):
                raise ValueError("concentration must hold positive finite numbers")
        else:
            raise ValueError(
                "concentration must be a positive number"
                + (f" or a vector of length K = {n_slots}" if partition == "finite" else "")
            )

    all_coords = {
        "obs": np.arange(n),
        "component": np.arange(n_slots),
        "dim": np.arange(d),
        "dim2": np.arange(d),
    }
    if coords:
        all_coords.update(coords)

    with pm.Model(coords=all_coords) as model:
        weights = None
        if partition == "crp":
            if alpha_fixed is None:
                alpha = pm.Gamma("alpha", alpha=hyper["alpha_shape"], beta=hyper["alpha_rate"])
            else:
                alpha = alpha_fixed
            cluster = CRP(
                "cluster",
                alpha,
                0.0,
                max_clusters=n_slots,
                n=n,
                dims="obs",
                observed=observed_labels,
            )
        elif partition == "dirichlet-multinomial":
            gamma = float(n_slots * weights_alpha)
            cluster = DirichletMultinomialPartition(
                "cluster", gamma, n_groups=n_slots, n=n, dims="obs", observed=observed_labels
            )
        else:
            weights = pm.Dirichlet(
                "w", a=np.broadcast_to(weights_alpha, (n_slots,)).copy(), dims="component"
            )
            cluster = pm.Categorical("cluster", p=weights, dims="obs", observed=observed_labels)
        sigma = InverseWishart(
            "Sigma", hyper["nu"], hyper["Omega"], dims=("component", "dim", "dim2")
        )
        mu = BatchedMvNormal("mu", hyper["m0"], sigma / hyper["kappa0"], dims=("component", "dim"))
        theta = None
        if v is None:
            BatchedMvNormal("y", mu[cluster], sigma[cluster], observed=y, dims=("obs", "dim"))
        elif collapsed:
            BatchedMvNormal("y", mu[cluster], sigma[cluster] + v, observed=y, dims=("obs", "dim"))
        else:
            theta = BatchedMvNormal("theta", mu[cluster], sigma[cluster], dims=("obs", "dim"))
            BatchedMvNormal("y", theta, v, observed=y, dims=("obs", "dim"))

    register_mixture(
        model,
        MixtureRoles(
            n_slots=n_slots,
            y=y,
            v=v,
            collapsed=collapsed,
            labels=cluster,
            mu=mu,
            sigma=sigma,
            m0=hyper["m0"],
            kappa0=hyper["kappa0"],
            nu=hyper["nu"],
            omega=hyper["Omega"],
            theta=theta,
            weights=weights,
            weights_alpha=weights_alpha if partition == "finite" else None,
            observed_labels=observed_labels,
            membership_probs=bool(membership_probs),
        ),
    )
    seal_roles(model)  # terms added later that read these variables void their roles
    return model
