r"""Numeric core of the normal mixture: exact conjugate draws and likelihood matrices.

Pure functions over NumPy arrays (numba kernels, no PyMC import) used by the step methods of
:mod:`pymc_crp.step_methods.normal_gibbs`:

* :func:`cluster_scatter` -- per-slot counts, means and scatter matrices
  ``S_k = Σ_{i: z_i = k} (x_i - x̄_k)(x_i - x̄_k)ᵀ``;
* :func:`niw_posterior` -- Normal--inverse-Wishart posterior parameters
  ``κ_n = κ_0 + N_k``, ``m_n = (κ_0 m_0 + N_k x̄_k)/κ_n``, ``ν_n = ν + N_k``,
  ``Ω_n = Ω + S_k + κ_0 N_k/κ_n (x̄_k - m_0)(x̄_k - m_0)ᵀ``;
* :func:`draw_latent_normals` -- ``θ_i ~ N(P_i⁻¹ b_i, P_i⁻¹)`` with
  ``P_i = Σ_{z_i}⁻¹ + V_i⁻¹``, ``b_i = Σ_{z_i}⁻¹ μ_{z_i} + V_i⁻¹ y_i``;
* :func:`normal_loglik_matrix` -- ``ℓ[i, k] = log N(x_i; μ_k, Σ_k + V_i)``;
* :func:`sample_labels` -- independent categorical draws by inverse CDF;
* :func:`mvnormal_draws` -- one multivariate normal draw per row.

All randomness is passed in (standard normals, uniforms or a ``numpy.random.Generator``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.partition_math import draw_log_weighted

__all__ = [
    "as_kernel_array",
    "cluster_scatter",
    "draw_latent_normals",
    "mvnormal_draws",
    "niw_posterior",
    "normal_loglik_matrix",
    "sample_labels",
]

_ARRAY_FLAGS = ("C_CONTIGUOUS", "ALIGNED", "WRITEABLE")


def as_kernel_array(x, dtype=np.float64) -> np.ndarray:
    """``x`` as a C-contiguous, aligned, writeable array (one numba signature per kernel)."""
    return np.require(x, dtype=dtype, requirements=_ARRAY_FLAGS)


@njit(cache=True, nogil=True)
def _cholesky_lower(a, out):  # pragma: no cover - numba
    """Lower Cholesky factor of the small SPD matrix ``a`` into ``out``; False if not SPD."""
    d = a.shape[0]
    for j in range(d):
        s = a[j, j]
        for k in range(j):
            s -= out[j, k] * out[j, k]
        if not s > 0.0:
            return False
        out[j, j] = math.sqrt(s)
        for i in range(j + 1, d):
            t = a[i, j]
            for k in range(j):
                t -= out[i, k] * out[j, k]
            out[i, j] = t / out[j, j]
        for i in range(j):
            out[i, j] = 0.0
    return True


@njit(cache=True, nogil=True)
def cluster_scatter(x, labels, n_slots):  # pragma: no cover - numba
    """Per-slot counts, means and scatter matrices ``S_k = Σ (x_i - x̄_k)(x_i - x̄_k)ᵀ``.

    ``x``: ``(N, D)``; ``labels``: ``(N,)`` in ``0..n_slots-1``. Empty slots get zero mean and
    scatter. Two passes (about the cluster means) for numerical accuracy.
    """
    n, d = x.shape
    counts = np.zeros(n_slots, np.int64)
    means = np.zeros((n_slots, d))
    for i in range(n):
        k = labels[i]
        counts[k] += 1
        for a in range(d):
            means[k, a] += x[i, a]
    for k in range(n_slots):
        if counts[k] > 0:
            for a in range(d):
                means[k, a] /= counts[k]
    scatter = np.zeros((n_slots, d, d))
    for i in range(n):
        k = labels[i]
        for a in range(d):
            da = x[i, a] - means[k, a]
            for b in range(a + 1):
                scatter[k, a, b] += da * (x[i, b] - means[k, b])
    for k in range(n_slots):
        for a in range(d):
            for b in range(a):
                scatter[k, b, a] = scatter[k, a, b]
    return counts, means, scatter


@njit(cache=True, nogil=True)
def draw_latent_normals(labels, prec, prec_mu, v_inv, v_inv_y, eps, out):  # pragma: no cover
    """Exact draws ``θ_i ~ N(P_i⁻¹ b_i, P_i⁻¹)``.

    ``P_i = Σ_z⁻¹ + V_i⁻¹`` and ``b_i = Σ_z⁻¹μ_z + V_i⁻¹y_i`` with ``z = z_i``.

    ``prec``: ``(L, D, D)`` slot precisions; ``prec_mu``: ``(L, D)``; ``v_inv``: ``(N, D, D)`` or
    ``(1, D, D)`` (shared); ``v_inv_y``: ``(N, D)``; ``eps``: ``(N, D)`` standard normals.
    With ``P = R Rᵀ``: ``θ = R⁻ᵀ (R⁻¹ b + ε)``. Returns False if some ``P_i`` is not SPD.
    """
    n, d = out.shape
    shared = v_inv.shape[0] == 1
    p = np.empty((d, d))
    r = np.empty((d, d))
    u = np.empty(d)
    for i in range(n):
        k = labels[i]
        vi = 0 if shared else i
        for a in range(d):
            for b in range(d):
                p[a, b] = prec[k, a, b] + v_inv[vi, a, b]
        if not _cholesky_lower(p, r):
            return False
        for a in range(d):  # forward: R u = b
            t = prec_mu[k, a] + v_inv_y[i, a]
            for c in range(a):
                t -= r[a, c] * u[c]
            u[a] = t / r[a, a]
        for a in range(d):
            u[a] += eps[i, a]
        for a in range(d - 1, -1, -1):  # backward: Rᵀ θ = u
            t = u[a]
            for c in range(a + 1, d):
                t -= r[c, a] * out[i, c]
            out[i, a] = t / r[a, a]
    return True


@njit(cache=True, nogil=True)
def _whitened_loglik(x, means, chols, half_logdets, out):  # pragma: no cover - numba
    """``out[i, k] = log N(x_i; μ_k, C_k C_kᵀ)`` given lower Cholesky factors ``C_k``."""
    n, d = x.shape
    n_slots = means.shape[0]
    const = 0.5 * d * math.log(2.0 * math.pi)
    z = np.empty(d)
    for i in range(n):
        for k in range(n_slots):
            quad = 0.0
            for p in range(d):
                t = x[i, p] - means[k, p]
                for q in range(p):
                    t -= chols[k, p, q] * z[q]
                z[p] = t / chols[k, p, p]
                quad += z[p] * z[p]
            out[i, k] = -const - half_logdets[k] - 0.5 * quad


@njit(cache=True, nogil=True)
def _per_obs_loglik(x, means, covs, extra_cov, out):  # pragma: no cover - numba
    """``out[i, k] = log N(x_i; μ_k, Σ_k + V_i)``, factorising every pair; False if not SPD."""
    n, d = x.shape
    n_slots = means.shape[0]
    const = 0.5 * d * math.log(2.0 * math.pi)
    a = np.empty((d, d))
    r = np.empty((d, d))
    z = np.empty(d)
    for i in range(n):
        for k in range(n_slots):
            for p in range(d):
                for q in range(d):
                    a[p, q] = covs[k, p, q] + extra_cov[i, p, q]
            if not _cholesky_lower(a, r):
                return False
            quad = 0.0
            half_logdet = 0.0
            for p in range(d):
                half_logdet += math.log(r[p, p])
                t = x[i, p] - means[k, p]
                for q in range(p):
                    t -= r[p, q] * z[q]
                z[p] = t / r[p, p]
                quad += z[p] * z[p]
            out[i, k] = -const - half_logdet - 0.5 * quad
    return True


def normal_loglik_matrix(x, means, covs, extra_cov, out) -> bool:
    """``out[i, k] = log N(x_i; μ_k, Σ_k + V_i)`` for all observations and slots.

    ``x (N, D)``, ``means (L, D)``, ``covs (L, D, D)``; ``extra_cov``: ``(0, D, D)`` (no
    ``V``), ``(1, D, D)`` (shared ``V``) or ``(N, D, D)``. Without ``V`` (or with a shared one)
    each slot is factorised once (``O(N L D²)``); with a ``V_i`` per observation every pair is
    factorised (``O(N L D³)``, numba). Returns False if a matrix is not positive definite.
    """
    x, means, covs, extra_cov = (as_kernel_array(a) for a in (x, means, covs, extra_cov))
    if extra_cov.shape[0] > 1:
        return bool(_per_obs_loglik(x, means, covs, extra_cov, out))
    if extra_cov.shape[0] == 1:
        covs = covs + extra_cov
    try:
        chols = np.linalg.cholesky(covs)
    except np.linalg.LinAlgError:
        return False
    half_logdets = np.log(np.diagonal(chols, axis1=-2, axis2=-1)).sum(-1)
    _whitened_loglik(x, means, as_kernel_array(chols), as_kernel_array(half_logdets), out)
    return True


@njit(cache=True, nogil=True)
def sample_labels(loglik, log_weights, uniforms, labels_out, probs_out):  # pragma: no cover
    """Independent draws ``P(z_i = k) ∝ exp(log_weights[k] + loglik[i, k])`` (inverse CDF).

    ``probs_out`` with ``N`` rows receives the normalised probabilities (else shape (0, 0)).
    """
    n, n_slots = loglik.shape
    probs = np.empty(n_slots)
    record = probs_out.shape[0] == n
    for i in range(n):
        for k in range(n_slots):
            probs[k] = loglik[i, k] + log_weights[k]
        choice = draw_log_weighted(probs, uniforms[i])
        labels_out[i] = choice
        if record:
            total = probs.sum()
            for k in range(n_slots):
                probs_out[i, k] = probs[k] / total


def niw_posterior(counts, means, scatter, m0, kappa0, nu, omega):
    """Normal--inverse-Wishart posterior parameters per slot, ``(κ_n, m_n, ν_n, Ω_n)``.

    ``counts (L,)``, ``means (L, D)``, ``scatter (L, D, D)`` from :func:`cluster_scatter`;
    prior ``μ | Σ ~ N(m0, Σ/κ0)``, ``Σ ~ IW(ν, Ω)``. Empty slots give the prior.
    """
    counts = np.asarray(counts, dtype=np.float64)
    kappa_n = kappa0 + counts
    m_n = (kappa0 * m0 + counts[:, None] * means) / kappa_n[:, None]
    nu_n = nu + counts
    dev = means - m0
    omega_n = (
        omega
        + scatter
        + (kappa0 * counts / kappa_n)[:, None, None] * dev[:, :, None] * dev[:, None, :]
    )
    return kappa_n, m_n, nu_n, 0.5 * (omega_n + np.swapaxes(omega_n, -1, -2))


def mvnormal_draws(rng, means, covs):
    """One draw per row: ``means (L, D)``, ``covs (L, D, D)``."""
    chol = np.linalg.cholesky(covs)
    eps = rng.standard_normal(means.shape)
    return means + np.einsum("kab,kb->ka", chol, eps)
