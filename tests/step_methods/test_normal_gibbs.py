"""Tests of the conjugate Gibbs steps of the normal mixture and of the inverse-Wishart.

Statistical checks compare sample moments of exact (independent) draws with closed forms:
a quantity passes when ``|sample mean - exact| <= 4.5 * SE`` with the standard error computed
from the sample itself (``sd / sqrt(M)``; for covariances the sample of centred products).
At 4.5 standard errors a correct sampler fails one comparison with probability < 1e-5, so a
test with ~50 comparisons fails by chance with probability < 1e-3; the seeds are fixed. A
wrong formula (e.g. a missing ``κ0`` term or a swapped ``ν_n``) shifts the moments by many
standard errors at these sample sizes.
"""

from __future__ import annotations

import math

import arviz as az
import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import digamma

import pymc_crp as pmc
from pymc_crp.distributions import BatchedMvNormal
from pymc_crp.distributions.inverse_wishart import (
    CholeskyLogDiagTransform,
    InverseWishart,
    mvnormal_logpdf,
    sample_inverse_wishart,
)
from pymc_crp.models import measurement_error_mixture
from pymc_crp.step_methods.normal_gibbs import (
    NORMAL_MIXTURE_STEPS,
    DirichletWeightsGibbs,
    LatentNormalGibbs,
    MixtureCRPGibbs,
    MixtureLabelGibbs,
    NormalInverseWishartGibbs,
    cluster_scatter,
    niw_posterior,
    normal_loglik_matrix,
    sample_labels,
)

# Until pymc_crp/__init__.py registers them (at the front: PyMC's CategoricalGibbsMetropolis
# and CRPGibbs also claim the label variables with IDEAL and ties go to the earlier entry).

Z = 4.5


def assert_mean_close(draws, expected, z=Z, atol=1e-12):
    """Independent draws ``(M, ...)``: each element's sample mean within ``z`` SE of exact."""
    draws = np.asarray(draws, dtype=float)
    m = draws.shape[0]
    mean = draws.mean(axis=0)
    se = draws.std(axis=0, ddof=1) / math.sqrt(m)
    err = np.abs(mean - expected)
    bad = err > z * se + atol
    assert not bad.any(), (
        f"sample mean differs from exact by {np.max(err / (se + 1e-300)):.1f} SE at "
        f"{np.argwhere(bad)[:5].tolist()}: mean {mean[bad][:5]}, exact "
        f"{np.broadcast_to(expected, mean.shape)[bad][:5]}"
    )


def assert_cov_close(draws, expected_mean, expected_cov, z=Z):
    """Independent vector draws ``(M, ..., D)``: second central moments about the exact mean."""
    centred = np.asarray(draws, dtype=float) - expected_mean
    prods = centred[..., :, None] * centred[..., None, :]
    assert_mean_close(prods, expected_cov, z=z)


def mcse(values):
    """ArviZ Monte Carlo standard error of the mean of a ``(chain, draw)`` array."""
    return float(np.asarray(az.mcse(np.asarray(values, dtype=float))).reshape(-1)[0])


def toy_data(n=8, d=2, seed=0, per_obs_v=True):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, d)) * 2.0
    if per_obs_v:
        a = rng.normal(size=(n, d, d)) * 0.4
        v = a @ np.swapaxes(a, -1, -2) + 0.3 * np.eye(d)
    else:
        v = np.eye(d) * 0.5
    return y, v


def random_spd(rng, d, scale=1.0):
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + 0.5 * np.eye(d))


def set_sigma(point, model, sigma):
    name = model.rvs_to_values[model["Sigma"]].name
    point[name] = CholeskyLogDiagTransform(sigma.shape[-1]).forward_numpy(sigma)


def backward_numpy(tr, value):
    """``Σ = L Lᵀ`` from the packed ``L`` with log diagonal (oracle of ``tr.backward``)."""
    value = np.asarray(value, dtype=np.float64)
    lower = np.zeros((*value.shape[:-1], tr.d, tr.d))
    lower[..., tr.rows, tr.cols] = np.where(tr.is_diag, np.exp(value), value)
    return lower @ np.swapaxes(lower, -1, -2)


def get_sigma(point, model):
    name = model.rvs_to_values[model["Sigma"]].name
    d = int(round((math.sqrt(8 * point[name].shape[-1] + 1) - 1) / 2))
    return backward_numpy(CholeskyLogDiagTransform(d), point[name])


# --------------------------------------------------------------------------------------------
# Inverse-Wishart distribution, transform and small-matrix algebra
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_inverse_wishart_logp_matches_scipy(d):
    rng = np.random.default_rng(d)
    omega = random_spd(rng, d, 2.0)
    nu = d + 1.7
    values = stats.invwishart.rvs(df=nu, scale=omega, size=4, random_state=rng).reshape(4, d, d)
    rv = InverseWishart.dist(nu, omega, shape=(4, d, d))
    got = pm.logp(rv, values).eval()
    want = np.array([stats.invwishart.logpdf(v, df=nu, scale=omega) for v in values])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_inverse_wishart_logp_outside_support_and_bad_parameters():
    omega = np.eye(2)
    rv = InverseWishart.dist(4.0, omega)
    assert pm.logp(rv, np.array([[1.0, 2.0], [2.0, 1.0]])).eval() == -np.inf  # not PD
    assert pm.logp(rv, np.array([[1.0, 0.5], [0.1, 1.0]])).eval() == -np.inf  # not symmetric
    with pytest.raises(ValueError, match="nu must exceed D - 1"):  # constant: at build time
        InverseWishart.dist(0.5, omega)
    nu = pt.scalar("nu")  # symbolic: checked in the log-density
    with pytest.raises(Exception, match="nu > D - 1"):
        pm.logp(InverseWishart.dist(nu, omega), np.eye(2)).eval({nu: 0.5})
    with pytest.raises(ValueError, match="scale must be"):
        InverseWishart.dist(4.0, np.ones(3))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_inverse_wishart_draw_moments(d):
    """Mean Ω/(ν-D-1) and Var(Σ_ij) = [(ν-D+1)Ω_ij² + (ν-D-1)Ω_iiΩ_jj] / [(ν-D)(ν-D-1)²(ν-D-3)]."""
    rng = np.random.default_rng(10 + d)
    omega = random_spd(rng, d)
    nu = d + 12.0
    draws = pm.draw(InverseWishart.dist(nu, omega, shape=(40_000, d, d)), random_seed=rng)
    assert draws.shape == (40_000, d, d)
    np.testing.assert_allclose(draws, np.swapaxes(draws, -1, -2))
    mean = omega / (nu - d - 1)
    assert_mean_close(draws, mean)
    diag = np.diag(omega)
    var = ((nu - d + 1) * omega**2 + (nu - d - 1) * np.outer(diag, diag)) / (
        (nu - d) * (nu - d - 1) ** 2 * (nu - d - 3)
    )
    assert_mean_close((draws - mean) ** 2, var)
    # Batched parameters: one draw per (nu, scale) pair.
    scales = np.stack([omega, 2 * omega])
    out = sample_inverse_wishart(rng, np.array([nu, nu + 1]), scales)
    assert out.shape == (2, d, d)


def test_cholesky_logdiag_transform_roundtrip_and_jacobian():
    rng = np.random.default_rng(3)
    for d in (1, 2, 3, 7):
        sigma = np.stack([random_spd(rng, d) for _ in range(3)])
        tr = CholeskyLogDiagTransform(d)
        x = tr.forward_numpy(sigma)
        assert x.shape == (3, d * (d + 1) // 2)
        np.testing.assert_allclose(backward_numpy(tr, x), sigma, atol=1e-12)
        np.testing.assert_allclose(tr.forward(pt.as_tensor(sigma)).eval(), x, atol=1e-12)
        np.testing.assert_allclose(tr.backward(pt.as_tensor(x)).eval(), sigma, atol=1e-12)
        rows, cols = np.tril_indices(d)
        # Numerical Jacobian of x -> vech(Σ) against log_jac_det.
        x0, h = x[0], 1e-6
        jac = np.empty((x0.size, x0.size))
        for k in range(x0.size):
            e = np.zeros_like(x0)
            e[k] = h
            jac[:, k] = (
                backward_numpy(tr, x0 + e)[rows, cols] - backward_numpy(tr, x0 - e)[rows, cols]
            ) / (2 * h)
        want = np.linalg.slogdet(jac)[1]
        got = tr.log_jac_det(pt.as_tensor(x0)).eval()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_inverse_wishart_nuts_recovers_moments():
    """NUTS on the transformed variable reproduces E Σ and E log|Σ|.

    E Σ = Ω/(ν-D-1) and E log|Σ| = log|Ω| - Σ_j ψ((ν-j)/2) - D log 2.
    """
    d, nu = 2, 7.0
    omega = np.array([[2.0, 0.6], [0.6, 1.0]])
    with pm.Model():
        InverseWishart("S", nu, omega)
        idata = pm.sample(
            1000,
            tune=700,
            chains=2,
            cores=1,
            random_seed=11,
            progressbar=False,
            compute_convergence_checks=False,
        )
    s = idata.posterior["S"]
    logdet = np.linalg.slogdet(s.values)[1]
    exact_logdet = (
        np.linalg.slogdet(omega)[1] - sum(digamma((nu - j) / 2) for j in range(d)) - d * np.log(2)
    )
    checks = [
        (s.values[..., i, j], omega[i, j] / (nu - d - 1)) for i, j in [(0, 0), (1, 0), (1, 1)]
    ]
    checks.append((logdet, exact_logdet))
    for values, exact in checks:
        assert abs(values.mean() - exact) < Z * mcse(values), (values.mean(), exact, mcse(values))


@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_mvnormal_logpdf_matches_scipy(d):
    rng = np.random.default_rng(20 + d)
    covs = np.stack([random_spd(rng, d) for _ in range(5)])
    means = rng.normal(size=(5, d))
    x = rng.normal(size=(5, d))
    got = mvnormal_logpdf(x, means, covs).eval()
    want = [stats.multivariate_normal(means[i], covs[i]).logpdf(x[i]) for i in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    bad = covs.copy()
    bad[0] = -np.eye(d)
    assert mvnormal_logpdf(x, means, bad).eval()[0] == -np.inf
    # The distribution: logp and draws.
    single = pm.logp(BatchedMvNormal.dist(means[0], covs[0]), x[0]).eval()
    assert single == pytest.approx(want[0], rel=1e-10)
    draws = pm.draw(BatchedMvNormal.dist(means[0], covs[0], shape=(20_000, d)), random_seed=1)
    assert_mean_close(draws, means[0])
    assert_cov_close(draws, means[0], covs[0])


# --------------------------------------------------------------------------------------------
# Numeric kernels
# --------------------------------------------------------------------------------------------
def test_cluster_scatter_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3)) + 100.0
    labels = rng.integers(0, 4, size=50)
    labels[labels == 2] = 3  # slot 2 empty
    counts, means, scatter = cluster_scatter(x, labels, 5)
    for k in range(5):
        xk = x[labels == k]
        assert counts[k] == len(xk)
        if len(xk):
            np.testing.assert_allclose(means[k], xk.mean(0))
            np.testing.assert_allclose(scatter[k], (xk - xk.mean(0)).T @ (xk - xk.mean(0)))
        else:
            assert np.all(means[k] == 0) and np.all(scatter[k] == 0)


@pytest.mark.parametrize("kind", ["none", "shared", "per_obs"])
def test_normal_loglik_matrix(kind):
    rng = np.random.default_rng(1)
    n, n_slots, d = 7, 4, 3
    x = rng.normal(size=(n, d))
    means = rng.normal(size=(n_slots, d))
    covs = np.stack([random_spd(rng, d) for _ in range(n_slots)])
    extra = {
        "none": np.zeros((0, d, d)),
        "shared": random_spd(rng, d)[None],
        "per_obs": np.stack([random_spd(rng, d, 0.3) for _ in range(n)]),
    }[kind]
    out = np.empty((n, n_slots))
    assert normal_loglik_matrix(x, means, covs, extra, out)
    for i in range(n):
        for k in range(n_slots):
            cov = covs[k] + (extra[0 if kind == "shared" else i] if kind != "none" else 0)
            want = stats.multivariate_normal(means[k], cov).logpdf(x[i])
            assert out[i, k] == pytest.approx(want, rel=1e-10)
    covs[1] = -np.eye(d)
    if kind == "none":
        assert not normal_loglik_matrix(x, means, covs, extra, out)


def test_sample_labels_frequencies_and_probabilities():
    rng = np.random.default_rng(2)
    loglik = rng.normal(size=(3, 4)) * 2
    log_w = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    log_w[2] = -np.inf  # a zero weight is never drawn
    exact = np.exp(loglik + log_w)
    exact /= exact.sum(1, keepdims=True)
    m = 40_000
    draws = np.empty((m, 3), dtype=np.int64)
    probs = np.empty((3, 4))
    labels = np.empty(3, dtype=np.int64)
    for t in range(m):
        sample_labels(loglik, log_w, rng.random(3), labels, probs if t == 0 else np.empty((0, 0)))
        draws[t] = labels
    np.testing.assert_allclose(probs, exact, rtol=1e-12)
    onehot = draws[..., None] == np.arange(4)
    assert not onehot[..., 2].any()
    assert_mean_close(onehot.astype(float), exact)


def test_niw_posterior_against_direct_formula():
    rng = np.random.default_rng(4)
    d = 2
    x = rng.normal(size=(9, d)) + 3
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 1, 3])
    m0, kappa0, nu, omega = np.array([1.0, -1.0]), 0.3, 5.0, random_spd(rng, d)
    counts, means, scatter = cluster_scatter(x, labels, 4)
    kappa_n, m_n, nu_n, omega_n = niw_posterior(counts, means, scatter, m0, kappa0, nu, omega)
    for k in range(4):
        xk = x[labels == k]
        nk = len(xk)
        kn = kappa0 + nk
        mn = (kappa0 * m0 + xk.sum(0)) / kn
        # Alternative form: Ω_n = Ω + Σ x xᵀ + κ0 m0 m0ᵀ - κ_n m_n m_nᵀ.
        on = omega + xk.T @ xk + kappa0 * np.outer(m0, m0) - kn * np.outer(mn, mn)
        assert kappa_n[k] == pytest.approx(kn)
        assert nu_n[k] == pytest.approx(nu + nk)
        np.testing.assert_allclose(m_n[k], mn)
        np.testing.assert_allclose(omega_n[k], on, rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------------------------
# Each Gibbs step against its exact conditional (all other values fixed)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def me_model():
    y, v = toy_data(n=6, d=2, seed=5)
    model = measurement_error_mixture(
        y, v, max_clusters=4, prior={"nu": 8.0, "kappa0": 0.5}, concentration=1.0
    )
    return model, y, v


def fixed_point(model, seed=0, theta=None):
    rng = np.random.default_rng(seed)
    point = model.initial_point(random_seed=0)
    n_slots, d = point["mu"].shape
    point["mu"] = rng.normal(size=(n_slots, d)) * 2
    set_sigma(point, model, np.stack([random_spd(rng, d, 0.7) for _ in range(n_slots)]))
    n = point["cluster"].shape[0]
    point["cluster"] = np.array([0, 0, 1, 1, 1, 3][:n] + [0] * max(0, n - 6), dtype=np.int64)
    if "theta" in point:
        point["theta"] = rng.normal(size=(n, d)) if theta is None else theta
    return point


def test_latent_normal_gibbs_matches_conditional(me_model):
    model, y, v = me_model
    point = fixed_point(model, seed=1)
    step = LatentNormalGibbs([model["theta"]], model=model, rng=np.random.default_rng(7))
    m = 6000
    draws = np.empty((m, *y.shape))
    for t in range(m):
        new, _ = step.step(point)
        draws[t] = new["theta"]
        assert np.array_equal(new["mu"], point["mu"])
    sigma = get_sigma(point, model)
    z = point["cluster"]
    mean = np.empty_like(y)
    covs = np.empty_like(v)
    for i in range(len(y)):
        s_inv = np.linalg.inv(sigma[z[i]])
        v_inv = np.linalg.inv(v[i])
        covs[i] = np.linalg.inv(s_inv + v_inv)
        mean[i] = covs[i] @ (s_inv @ point["mu"][z[i]] + v_inv @ y[i])
        # The textbook form: μ + G (y - μ), G = Σ (V + Σ)^-1, covariance G V.
        g = sigma[z[i]] @ np.linalg.inv(v[i] + sigma[z[i]])
        np.testing.assert_allclose(mean[i], point["mu"][z[i]] + g @ (y[i] - point["mu"][z[i]]))
        np.testing.assert_allclose(covs[i], g @ v[i], atol=1e-12)
    assert_mean_close(draws, mean)
    assert_cov_close(draws, mean, covs)


@pytest.mark.parametrize("which", ["joint", "mu", "sigma"])
def test_normal_inverse_wishart_gibbs_matches_conditional(me_model, which):
    model, y, v = me_model
    rng = np.random.default_rng(2)
    theta = rng.normal(size=y.shape) + np.array([1.0, -2.0])
    point = fixed_point(model, seed=2, theta=theta)
    roles_vars = {"joint": ["mu", "Sigma"], "mu": ["mu"], "sigma": ["Sigma"]}[which]
    step = NormalInverseWishartGibbs(
        [model[v] for v in roles_vars], model=model, rng=np.random.default_rng(8)
    )
    assert isinstance(step, NormalInverseWishartGibbs)  # one blocked step for mu and Sigma
    m = 8000
    mus, sigmas = np.empty((m, 4, 2)), np.empty((m, 4, 2, 2))
    for t in range(m):
        new, _ = step.step(point)
        mus[t], sigmas[t] = new["mu"], get_sigma(new, model)
    z = point["cluster"]
    m0, kappa0, nu = y.mean(0), 0.5, 8.0
    omega = np.cov(y, rowvar=False) / 4
    d = 2
    for k in range(4):  # slot 2 is empty: prior
        xk = theta[z == k]
        nk = len(xk)
        kn = kappa0 + nk
        mn = (kappa0 * m0 + xk.sum(0)) / kn
        if which == "joint":
            on = omega + xk.T @ xk + kappa0 * np.outer(m0, m0) - kn * np.outer(mn, mn)
            e_sigma = on / (nu + nk - d - 1)
            assert_mean_close(sigmas[:, k], e_sigma)
            assert_mean_close(mus[:, k], mn)
            assert_cov_close(mus[:, k], mn, e_sigma / kn)  # E[Σ]/κ_n
        elif which == "mu":
            sigma_fixed = get_sigma(point, model)[k]
            assert np.allclose(sigmas[:, k], sigma_fixed)
            assert_mean_close(mus[:, k], mn)
            assert_cov_close(mus[:, k], mn, sigma_fixed / kn)
        else:
            mu_fixed = point["mu"][k]
            dev = xk - mu_fixed
            on = omega + dev.T @ dev + kappa0 * np.outer(mu_fixed - m0, mu_fixed - m0)
            assert np.allclose(mus[:, k], mu_fixed)
            assert_mean_close(sigmas[:, k], on / (nu + nk + 1 - d - 1))


def test_normal_inverse_wishart_gibbs_uses_y_without_measurement_error():
    rng = np.random.default_rng(3)
    y = rng.normal(size=(7, 1)) * 3
    model = measurement_error_mixture(
        y, None, max_clusters=3, concentration=1.0, prior={"nu": 9.0, "kappa0": 2.0}
    )
    assert "theta" not in model.named_vars
    point = model.initial_point(random_seed=0)
    point["cluster"] = np.array([0, 0, 0, 1, 1, 1, 1])
    step = NormalInverseWishartGibbs(model=model, rng=np.random.default_rng(1))
    m = 8000
    mus, sigmas = np.empty((m, 3, 1)), np.empty((m, 3, 1, 1))
    for t in range(m):
        new, _ = step.step(point)
        mus[t], sigmas[t] = new["mu"], get_sigma(new, model)
    m0, kappa0, nu, omega = y.mean(0), 2.0, 9.0, np.cov(y[:, 0]).reshape(1, 1) / 4
    for k in range(3):
        xk = y[point["cluster"] == k]
        nk = len(xk)
        kn = kappa0 + nk
        mn = (kappa0 * m0 + xk.sum(0)) / kn
        on = omega + xk.T @ xk + kappa0 * np.outer(m0, m0) - kn * np.outer(mn, mn)
        assert_mean_close(sigmas[:, k], on / (nu + nk - 2))
        assert_mean_close(mus[:, k], mn)


def test_dirichlet_weights_gibbs_matches_conditional():
    y, v = toy_data(n=6, d=2, seed=6)
    alpha0 = np.array([0.5, 1.0, 2.0, 0.05])
    model = measurement_error_mixture(
        y, v, partition="finite", n_components=4, concentration=alpha0
    )
    point = fixed_point(model, seed=3)
    step = DirichletWeightsGibbs(model=model, rng=np.random.default_rng(9))
    value_name = model.rvs_to_values[model["w"]].name
    to_w = model.compile_fn(
        model.replace_rvs_by_values([model["w"]])[0],
        point_fn=False,
        inputs=[model.rvs_to_values[model["w"]]],
    )
    m = 20_000
    ws = np.empty((m, 4))
    for t in range(m):
        new, _ = step.step(point)
        assert np.all(np.isfinite(new[value_name]))
        ws[t] = to_w(new[value_name])
    a = alpha0 + np.bincount(point["cluster"], minlength=4)
    mean = a / a.sum()
    var = a * (a.sum() - a) / (a.sum() ** 2 * (a.sum() + 1))
    assert_mean_close(ws, mean)
    assert_mean_close((ws - mean) ** 2, var)


@pytest.mark.parametrize("collapsed", [False, True])
def test_mixture_label_gibbs_matches_conditional(collapsed):
    y, v = toy_data(n=5, d=2, seed=7)
    model = measurement_error_mixture(
        y,
        v,
        partition="finite",
        n_components=3,
        collapse_theta=collapsed,
        membership_probs=True,
    )
    point = fixed_point(model, seed=4)
    w = np.array([0.2, 0.5, 0.3])
    point[model.rvs_to_values[model["w"]].name] = np.log(w[:-1]) - np.log(w).mean()
    step = MixtureLabelGibbs(model=model, rng=np.random.default_rng(10))
    sigma, mu = get_sigma(point, model), point["mu"]
    x = y if collapsed else point["theta"]
    logits = np.empty((5, 3))
    for i in range(5):
        for k in range(3):
            cov = sigma[k] + (v[i] if collapsed else 0)
            logits[i, k] = np.log(w[k]) + stats.multivariate_normal(mu[k], cov).logpdf(x[i])
    exact = np.exp(logits - logits.max(1, keepdims=True))
    exact /= exact.sum(1, keepdims=True)
    m = 20_000
    onehot = np.zeros((m, 5, 3))
    for t in range(m):
        new, (stats_,) = step.step(point)
        onehot[t, np.arange(5), new["cluster"]] = 1.0
        if t == 0:
            probs = stats_["membership_probs"].reshape(5, 3)  # stored flat, row-major (N, K)
            np.testing.assert_allclose(probs, exact, rtol=1e-9)
            assert stats_["n_clusters"] == len(np.unique(new["cluster"]))
    assert_mean_close(onehot, exact)


@pytest.mark.parametrize("config", ["theta", "no_v", "collapsed", "dm"])
def test_mixture_crp_gibbs_equals_generic_crp_gibbs(config):
    """Same likelihood matrix as CRPGibbs's generic PyTensor graph, hence the same draws."""
    y, v = toy_data(n=9, d=2, seed=8)
    kwargs = {
        "theta": dict(V=v),
        "no_v": dict(V=None),
        "collapsed": dict(V=v, collapse_theta=True),
        "dm": dict(V=v, partition="dirichlet-multinomial", n_components=5),
    }[config]
    if "partition" not in kwargs:
        kwargs["max_clusters"] = 5
    model = measurement_error_mixture(y, **kwargs)
    point = fixed_point(model, seed=5)
    fast = MixtureCRPGibbs(model=model, rng=np.random.default_rng(11), membership_probs=True)
    generic = pmc.CRPGibbs(
        [model["cluster"]], model=model, rng=np.random.default_rng(11), membership_probs=True
    )
    np.testing.assert_allclose(fast._loglik_fn(point), generic._loglik_fn(point), rtol=1e-9)
    p_fast, p_gen = dict(point), dict(point)
    for _ in range(5):
        p_fast, (s_fast,) = fast.step(p_fast)
        p_gen, (s_gen,) = generic.step(p_gen)
        assert np.array_equal(p_fast["cluster"], p_gen["cluster"])
        np.testing.assert_allclose(s_fast["membership_probs"], s_gen["membership_probs"])


# --------------------------------------------------------------------------------------------
# Assignment, reproducibility, pickling
# --------------------------------------------------------------------------------------------
def assigned(model):
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    return {cls: sorted(model.values_to_rvs[v].name for v in vs) for cls, vs in selected.items()}


def test_steps_are_assigned_to_builder_models_only():
    y, v = toy_data(n=6, d=2, seed=9)
    crp = assigned(measurement_error_mixture(y, v, max_clusters=4))
    assert crp == {
        pmc.ConcentrationGibbs: ["alpha"],
        MixtureCRPGibbs: ["cluster"],
        NormalInverseWishartGibbs: ["Sigma", "mu"],
        LatentNormalGibbs: ["theta"],
    }
    finite = assigned(measurement_error_mixture(y, v, partition="finite", n_components=3))
    assert finite[MixtureLabelGibbs] == ["cluster"]
    assert finite[DirichletWeightsGibbs] == ["w"]
    two = assigned(measurement_error_mixture(y, None, partition="finite", n_components=2))
    assert two[MixtureLabelGibbs] == ["cluster"]  # k = 2: not BinaryGibbsMetropolis
    collapsed = assigned(measurement_error_mixture(y, v, max_clusters=4, collapse_theta=True))
    assert collapsed[pm.NUTS] == ["Sigma", "mu"]  # not conjugate
    assert NormalInverseWishartGibbs not in collapsed
    with pytest.raises(ValueError, match="not conjugate"):
        NormalInverseWishartGibbs(model=measurement_error_mixture(y, v, collapse_theta=True))
    # A hand-written model with the same structure is left to the generic steps.
    with pm.Model() as other:
        z = pmc.CRP("cluster", 1.0, max_clusters=4, n=6)
        sigma = InverseWishart("Sigma", 5.0, np.eye(2), shape=(4, 2, 2))
        mu = BatchedMvNormal("mu", np.zeros(2), sigma, shape=(4, 2))
        BatchedMvNormal("y", mu[z], sigma[z], observed=y)
    got = assigned(other)
    assert got[pmc.CRPGibbs] == ["cluster"]
    assert got[pm.NUTS] == ["Sigma", "mu"]
    for step in NORMAL_MIXTURE_STEPS:
        with pytest.raises(ValueError):
            step([other["mu"] if step is not MixtureCRPGibbs else other["cluster"]], model=other)


def test_same_seed_same_draws_and_pickling():
    y, v = toy_data(n=10, d=2, seed=10)
    model = measurement_error_mixture(y, v, max_clusters=5)
    kwargs = dict(draws=30, tune=10, chains=1, progressbar=False, compute_convergence_checks=False)
    with model:
        a = pm.sample(random_seed=3, **kwargs)
        b = pm.sample(random_seed=3, **kwargs)
        c = pm.sample(random_seed=4, **kwargs)
    for name in ("theta", "mu", "cluster", "alpha"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    assert not np.array_equal(a.posterior["theta"].values, c.posterior["theta"].values)
    steps = [cls(model=model) for cls in (MixtureCRPGibbs, LatentNormalGibbs)]
    steps.append(NormalInverseWishartGibbs(model=model))
    for step in steps:
        clone = cloudpickle.loads(cloudpickle.dumps(step))
        p1, _ = clone.step(model.initial_point(random_seed=0))
        assert np.all(np.isfinite(p1["mu"]))
