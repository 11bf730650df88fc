"""Tests of the measurement-error mixture builder: inputs, structure, and the full samplers.

Statistical comparisons use the Monte Carlo standard errors of both chains (ArviZ ``mcse``, which
accounts for autocorrelation): two estimates of the same posterior quantity pass when ``|a - b| <=
4.5 * sqrt(mcse_a² + mcse_b²)``; against exact probabilities ``|a - exact| <= 4.5 SE``, the MCSE
bounded below by ``sqrt(q (1 - q) / n_eff)`` at the exact ``q`` (``mc_checks.standard_errors``,
one indicator at a time: ``n_eff`` its own ESS, all draws for a rarely visited state, whose
MCSE can be estimated as zero). With ~50 comparisons per test a correct sampler fails by chance
with probability < 1e-3; the seeds are fixed.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from mc_checks import standard_errors, z_scores
from oracles import (
    cluster_count_probs,
    co_clustering_matrix,
    eppf,
    exact_partition_posterior,
)
from scipy.special import multigammaln

import pymc_crp as pmc
from pymc_crp.datasets import load_galaxies
from pymc_crp.models.normal_mixture import default_mixture_prior, measurement_error_mixture
from pymc_crp.step_methods.normal_gibbs import (
    MixtureCRPGibbs,
    MixtureLabelGibbs,
)

# Until pymc_crp/__init__.py registers them (at the front, see
# tests/step_methods/test_normal_gibbs.py).

Z = 4.5
QUIET = {"progressbar": False, "compute_convergence_checks": False}


def mcse(values) -> float:
    """MCSE of the mean of a ``(chain, draw)`` array (ArviZ)."""
    return float(standard_errors(values))


def mcse_sd(values) -> float:
    """MCSE of the standard deviation by the delta method on the squared deviations."""
    values = np.asarray(values, dtype=float)
    sd = values.std()
    return mcse((values - values.mean()) ** 2) / (2.0 * sd) if sd > 0 else 0.0


def simulate(n, d=2, seed=0, separation=8.0, v_scale=None):
    """``n`` points from 4 well-separated unit-variance clusters (corners of a square)."""
    rng = np.random.default_rng(seed)
    centres = separation * np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=float)[:, :d]
    truth = np.arange(n) % 4
    theta = centres[truth] + rng.normal(size=(n, d))
    if v_scale is None:
        return theta, truth, None
    a = rng.normal(size=(n, d, d)) * v_scale
    v = a @ np.swapaxes(a, -1, -2) + 0.05 * np.eye(d)
    y = theta + np.einsum("nab,nb->na", np.linalg.cholesky(v), rng.normal(size=(n, d)))
    return y, truth, v


# --------------------------------------------------------------------------------------------
# Data set and helpers
# --------------------------------------------------------------------------------------------
def test_load_galaxies():
    g = load_galaxies()
    assert g.shape == (82,) and g.dtype == np.float64
    assert g.min() == 9172 and g.max() == 34279
    assert g.mean() == pytest.approx(20828.17, abs=0.01)
    assert np.median(g) == 20833.5
    assert np.all(np.diff(g) >= 0)


# --------------------------------------------------------------------------------------------
# Structure of the built models
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, free, absent",
    [
        ({"V": None}, {"alpha", "cluster", "mu", "Sigma"}, {"theta", "w"}),
        ({"V": "shared"}, {"alpha", "cluster", "mu", "Sigma", "theta"}, {"w"}),
        ({"V": "per_obs", "collapse_theta": True}, {"alpha", "cluster", "mu", "Sigma"}, {"theta"}),
        (
            {"V": "per_obs", "partition": "finite", "n_components": 3},
            {"w", "cluster", "mu", "Sigma", "theta"},
            {"alpha"},
        ),
        (
            {"V": None, "partition": "dirichlet-multinomial", "n_components": 3},
            {"cluster", "mu", "Sigma"},
            {"alpha", "w", "theta"},
        ),
        ({"V": None, "concentration": 2.0}, {"cluster", "mu", "Sigma"}, {"alpha"}),
    ],
)
def test_builder_variables_and_shapes(kwargs, free, absent):
    y, _, v = simulate(12, seed=1, v_scale=0.2)
    kwargs = dict(kwargs)
    kwargs["V"] = {None: None, "shared": np.eye(2) * 0.1, "per_obs": v}[kwargs["V"]]
    model = measurement_error_mixture(y, **kwargs)
    assert {rv.name for rv in model.free_RVs} == free
    assert not absent & set(model.named_vars)
    n_slots = kwargs.get("n_components", 20)
    point = model.initial_point(random_seed=0)
    assert point["mu"].shape == (n_slots, 2)
    assert point["cluster"].shape == (12,)
    if "theta" in free:
        assert point["theta"].shape == (12, 2)
    assert model.named_vars_to_dims["Sigma"] == ("component", "dim", "dim2")
    assert np.isfinite(model.compile_logp()(point))
    prior = pm.sample_prior_predictive(draws=5, model=model, random_seed=1)
    sigma = prior.prior["Sigma"].values
    assert sigma.shape == (1, 5, n_slots, 2, 2)
    assert np.all(np.linalg.eigvalsh(sigma) > 0)


def test_one_dimensional_inputs_and_default_prior():
    g = load_galaxies() / 1000
    prior = default_mixture_prior(g)
    assert prior["m0"] == pytest.approx([g.mean()])
    assert prior["Omega"] == pytest.approx(np.var(g, ddof=1) / 4 * np.ones((1, 1)))
    assert prior["nu"] == 3.0 and prior["kappa0"] == 0.01
    model = measurement_error_mixture(g, 0.05, max_clusters=10)  # scalar variance, 1-D
    assert model.initial_point(random_seed=0)["theta"].shape == (82, 1)
    model = measurement_error_mixture(g, np.full(82, 0.05), max_clusters=10)  # (N,) variances
    assert model.initial_point(random_seed=0)["theta"].shape == (82, 1)
    model = measurement_error_mixture(g, 0, prior={"kappa0": 0.1, "m0": 20.0})
    assert "theta" not in model.named_vars
    model = measurement_error_mixture(g, coords={"dim": ["velocity"]})
    assert list(model.coords["dim"]) == ["velocity"]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"y": [[1.0, np.nan], [0.0, 1.0]]}, ValueError, "y must be finite"),
        ({"y": np.ones((2, 2, 2))}, ValueError, "y must have shape"),
        ({"y": "abc"}, TypeError, "y must be a numeric array"),
        ({"V": np.eye(3)}, ValueError, "V must be None/0, one"),
        ({"V": np.ones((5, 2, 2)) * np.eye(2)}, ValueError, r"V must be None/0, one"),
        ({"V": np.array([[1.0, 2.0], [2.0, 1.0]])}, ValueError, "V must be positive definite"),
        ({"V": np.array([[1.0, 0.5], [0.0, 1.0]])}, ValueError, "V must be symmetric"),
        ({"V": np.array([[np.inf, 0.0], [0.0, 1.0]])}, ValueError, "V must be finite"),
        ({"V": 0.3}, ValueError, "scalar V is only accepted for 1-D"),
        ({"partition": "pitman-yor"}, ValueError, "partition must be one of"),
        ({"partition": "finite"}, ValueError, "needs n_components"),
        ({"n_components": 3}, ValueError, "n_components applies to"),
        ({"max_clusters": 0}, ValueError, "max_clusters must be a positive integer"),
        ({"prior": {"kappa": 1.0}}, ValueError, "prior has unknown keys"),
        ({"prior": {"nu": 0.5}}, ValueError, r"prior\['nu'\] must exceed"),
        ({"prior": {"Omega": -np.eye(2)}}, ValueError, r"prior\['Omega'\] must be positive"),
        ({"prior": {"m0": [1.0]}}, ValueError, r"prior\['m0'\] must be a finite vector"),
        ({"concentration": -1.0}, ValueError, "concentration must be a positive"),
        ({"labels": [0, 1, 2]}, ValueError, "labels must be an integer vector"),
        ({"labels": np.full(4, 25)}, ValueError, "labels must lie in"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, error, match):
    args = {"y": np.arange(8.0).reshape(4, 2) + np.array([[0, 1], [3, 0], [1, 1], [2, 5]])}
    args.update(kwargs)
    y = args.pop("y")
    with pytest.raises(error, match=match):
        measurement_error_mixture(y, **args)


# --------------------------------------------------------------------------------------------
# Full sampler against the exact posterior (V = 0: the partition posterior is closed-form)
# --------------------------------------------------------------------------------------------
def niw_block_log_marginal(x, m0, kappa0, nu, omega):
    """log p(x_1..x_n) with (μ, Σ) ~ NIW integrated out (closed form, raw-moment version)."""
    x = np.atleast_2d(x)
    n, d = x.shape
    kn, nun = kappa0 + n, nu + n
    mn = (kappa0 * m0 + x.sum(0)) / kn
    omega_n = omega + x.T @ x + kappa0 * np.outer(m0, m0) - kn * np.outer(mn, mn)
    return (
        -0.5 * n * d * math.log(math.pi)
        + multigammaln(nun / 2, d)
        - multigammaln(nu / 2, d)
        + 0.5 * nu * np.linalg.slogdet(omega)[1]
        - 0.5 * nun * np.linalg.slogdet(omega_n)[1]
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
    )


def check_against_exact(idata, parts, probs, n):
    labels = idata.posterior["cluster"].values  # (chain, draw, n)
    exact_k = cluster_count_probs(parts, probs, n)
    k = np.apply_along_axis(lambda r: np.unique(r).size, -1, labels)
    for kk in range(1, n + 1):
        ind = (k == kk).astype(float)
        assert abs(z_scores(ind, exact_k[kk])) <= Z, (kk, ind.mean(), exact_k)
    exact_co = co_clustering_matrix(parts, probs, n)
    for i in range(n):
        for j in range(i + 1, n):
            ind = (labels[..., i] == labels[..., j]).astype(float)
            assert abs(z_scores(ind, exact_co[i, j])) <= Z, (i, j, ind.mean(), exact_co[i, j])


Y_EXACT = np.array([[-1.2, 0.3], [-0.9, 0.5], [0.1, -0.2], [1.4, 1.1], [1.7, 0.8]])
PRIOR_EXACT = {"m0": [0.0, 0.0], "kappa0": 0.5, "nu": 5.0, "Omega": 0.6 * np.eye(2)}


def test_crp_mixture_matches_exact_partition_posterior():
    """CRP (fixed α = 1, L = N slots: exact prior) + NIW: enumerate the 52 partitions of 5."""
    n = len(Y_EXACT)
    model = measurement_error_mixture(
        Y_EXACT, None, max_clusters=n, concentration=1.0, prior=PRIOR_EXACT
    )
    p = PRIOR_EXACT
    parts, probs = exact_partition_posterior(
        n,
        lambda blocks: eppf([len(b) for b in blocks], 1.0, 0.0),
        lambda b: niw_block_log_marginal(Y_EXACT[b], np.zeros(2), p["kappa0"], p["nu"], p["Omega"]),
    )
    with model:
        idata = pm.sample(2000, tune=300, chains=2, cores=1, random_seed=5, **QUIET)
    check_against_exact(idata, parts, probs, n)


def test_finite_mixture_matches_exact_partition_posterior():
    """Finite mixture with explicit weights (K = 3, α0 = 0.5): Categorical labels, w, NIW."""
    n, k, a0 = len(Y_EXACT), 3, 0.5
    model = measurement_error_mixture(
        Y_EXACT, None, partition="finite", n_components=k, concentration=a0, prior=PRIOR_EXACT
    )
    p = PRIOR_EXACT

    def prior(blocks):  # Dirichlet-multinomial probability of the partition (w integrated out)
        if len(blocks) > k:
            return 0.0
        label_prob = math.gamma(k * a0) / math.gamma(n + k * a0)
        for b in blocks:
            label_prob *= math.gamma(len(b) + a0) / math.gamma(a0)
        return math.perm(k, len(blocks)) * label_prob

    parts, probs = exact_partition_posterior(
        n,
        prior,
        lambda b: niw_block_log_marginal(Y_EXACT[b], np.zeros(2), p["kappa0"], p["nu"], p["Omega"]),
    )
    with model:
        idata = pm.sample(2000, tune=300, chains=2, cores=1, random_seed=6, **QUIET)
    check_against_exact(idata, parts, probs, n)


# --------------------------------------------------------------------------------------------
# Full Gibbs sampler against NUTS on the same model with fixed labels
# --------------------------------------------------------------------------------------------
def compare_posteriors(a, b, names, what):
    """Means and sds of every element of ``names`` agree within MC error."""
    failures = []
    for name in names:
        xa = a.posterior[name].values
        xb = b.posterior[name].values
        flat_a = xa.reshape(*xa.shape[:2], -1)
        flat_b = xb.reshape(*xb.shape[:2], -1)
        for j in range(flat_a.shape[-1]):
            qa, qb = flat_a[..., j], flat_b[..., j]
            if np.ptp(qa) == 0 and np.ptp(qb) == 0:
                continue  # structural zeros
            tol = Z * math.hypot(mcse(qa), mcse(qb))
            if abs(qa.mean() - qb.mean()) > tol:
                failures.append((name, j, "mean", qa.mean(), qb.mean(), tol))
            tol_sd = Z * math.hypot(mcse_sd(qa), mcse_sd(qb))
            if abs(qa.std() - qb.std()) > tol_sd:
                failures.append((name, j, "sd", qa.std(), qb.std(), tol_sd))
    assert not failures, f"{what}: {failures[:6]}"


@pytest.fixture(scope="module")
def fixed_label_problem():
    """24 points in 3 clusters (8 each) with heteroscedastic measurement error."""
    rng = np.random.default_rng(3)
    labels = np.arange(24) % 3
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    theta = centres[labels] + rng.normal(size=(24, 2))
    a = rng.normal(size=(24, 2, 2)) * 0.25
    v = a @ np.swapaxes(a, -1, -2) + 0.05 * np.eye(2)
    y = theta + np.einsum("nab,nb->na", np.linalg.cholesky(v), rng.normal(size=(24, 2)))
    return y, v, labels


@pytest.mark.slow
def test_gibbs_matches_nuts_with_fixed_labels(fixed_label_problem):
    """The conjugate Gibbs steps against NUTS on ``(μ, Σ, w, θ)`` with the labels fixed. Slow
    (60 s): the default run compares them with NUTS on the collapsed model (next test) and
    with enumeration (``tests/step_methods/test_conjugate*.py``)."""
    y, v, labels = fixed_label_problem
    model = measurement_error_mixture(
        y, v, partition="finite", n_components=3, labels=labels, prior={"nu": 6.0}
    )
    with model:
        gibbs = pm.sample(1500, tune=300, chains=2, cores=1, random_seed=7, **QUIET)
        nuts = pm.sample(
            1000,
            tune=1000,
            chains=2,
            cores=1,
            random_seed=8,
            step=pm.NUTS(target_accept=0.9),
            **QUIET,
        )
    assert int(nuts.sample_stats.diverging.sum()) == 0
    compare_posteriors(gibbs, nuts, ["mu", "Sigma", "w"], "Gibbs vs NUTS")
    # theta: a sample of its 48 entries (keeps the number of comparisons moderate)
    thin_g = gibbs.posterior[["theta"]].isel(obs=slice(0, 24, 3))
    thin_n = nuts.posterior[["theta"]].isel(obs=slice(0, 24, 3))
    compare_posteriors(
        az.InferenceData(posterior=thin_g), az.InferenceData(posterior=thin_n), ["theta"], "theta"
    )


@pytest.mark.slow  # 37 s; NUTS on the collapsed model samples in the default run (below)
def test_collapsed_nuts_matches_gibbs_with_fixed_labels(fixed_label_problem):
    """θ integrated out (NUTS on μ, Σ) gives the same (μ, Σ) posterior as the Gibbs sampler."""
    y, v, labels = fixed_label_problem
    kwargs = dict(
        partition="crp", max_clusters=3, labels=labels, concentration=1.0, prior={"nu": 6.0}
    )
    with measurement_error_mixture(y, v, **kwargs):
        gibbs = pm.sample(4000, tune=500, chains=2, cores=1, random_seed=9, **QUIET)
    with measurement_error_mixture(y, v, collapse_theta=True, **kwargs):
        nuts = pm.sample(2000, tune=1000, chains=2, cores=1, random_seed=10, **QUIET)
    compare_posteriors(gibbs, nuts, ["mu", "Sigma"], "collapsed NUTS vs Gibbs")


# --------------------------------------------------------------------------------------------
# Label recovery
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"partition": "crp"},
        {"partition": "finite", "n_components": 6, "concentration": 0.1},
        {"partition": "dirichlet-multinomial", "n_components": 6, "concentration": 0.1},
    ],
)
def test_label_recovery_four_clusters(kwargs):
    y, truth, _ = simulate(200, seed=11)
    model = measurement_error_mixture(y, **kwargs)
    with model:  # the finite mixture's label/weight Gibbs needs a few hundred sweeps to split
        idata = pm.sample(150, tune=600, chains=1, random_seed=12, **QUIET)
    labels = idata.posterior["cluster"].values[0]
    ari = np.array([pmc.adjusted_rand_index(lab, truth) for lab in labels[-50:]])
    assert ari.mean() >= 0.95, ari


def test_label_recovery_with_measurement_error():
    y, truth, v = simulate(200, seed=13, v_scale=0.3)
    model = measurement_error_mixture(y, v, membership_probs=True)
    with model:
        idata = pm.sample(
            150,
            tune=150,
            chains=1,
            random_seed=14,
            mixture_crp_gibbs={"membership_probs": True},
            **QUIET,
        )
    labels = idata.posterior["cluster"].values[0]
    ari = np.array([pmc.adjusted_rand_index(lab, truth) for lab in labels[-50:]])
    assert ari.mean() >= 0.95, ari
    probs = np.asarray(idata.sample_stats["membership_probs"].values.tolist(), dtype=float)
    probs = probs.reshape(1, 150, 200, 20)  # stored flat, N * L per draw
    np.testing.assert_allclose(probs.sum(-1), 1.0)
    member = pmc.membership_probabilities(idata, "cluster")
    assert pmc.adjusted_rand_index(member.argmax(1), truth) >= 0.95


def test_collapsed_model_samples_with_nuts_for_cluster_parameters():
    y, truth, v = simulate(60, seed=15, v_scale=0.3)
    model = measurement_error_mixture(y, v, collapse_theta=True, max_clusters=8)
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert selected[MixtureCRPGibbs] == [model.rvs_to_values[model["cluster"]]]
    assert {model.values_to_rvs[v].name for v in selected[pm.NUTS]} == {"mu", "Sigma"}
    with model:
        idata = pm.sample(60, tune=60, chains=1, random_seed=16, **QUIET)
    labels = idata.posterior["cluster"].values[0]
    assert pmc.adjusted_rand_index(labels[-1], truth) >= 0.9


def test_membership_probs_option_for_finite_labels():
    y, _, _ = simulate(40, seed=17)
    model = measurement_error_mixture(y, partition="finite", n_components=4, membership_probs=True)
    with model:
        step = MixtureLabelGibbs()
        assert step.record_membership
        idata = pm.sample(20, tune=20, chains=1, random_seed=18, **QUIET)
    probs = np.asarray(idata.sample_stats["membership_probs"].values.tolist(), dtype=float)
    probs = probs.reshape(1, 20, 40, 4)  # stored flat, N * K per draw
    np.testing.assert_allclose(probs.sum(-1), 1.0)


def test_relabelled_membership_probabilities_of_finite_mixture():
    """After relabelling, P(z_i = k | Y) puts each point on its true cluster (up to naming)."""
    y, truth, _ = simulate(60, seed=19)
    model = measurement_error_mixture(
        y, partition="finite", n_components=4, concentration=1.0, membership_probs=True
    )
    with model:
        idata = pm.sample(100, tune=600, chains=2, random_seed=20, **QUIET)
    probs = pmc.membership_probabilities(idata, "cluster")
    assert probs.shape == (60, 4)
    np.testing.assert_allclose(probs.sum(1), 1.0)
    estimate = probs.argmax(1)
    assert pmc.adjusted_rand_index(estimate, truth) == 1.0
    assert probs.max(1).min() > 0.95  # well separated: every point is (nearly) certain
    relabelled = pmc.relabel(idata, "cluster", ["mu"])
    mu = relabelled.posterior["mu"].mean(("chain", "draw")).values  # (K, D)
    for k in range(4):  # slot of the points of true cluster k holds their mean
        slot = np.bincount(estimate[truth == k]).argmax()
        np.testing.assert_allclose(mu[slot], y[truth == k].mean(0), atol=0.3)
