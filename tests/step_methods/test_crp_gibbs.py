"""Tests of the collapsed label step ``CRPGibbs`` against exact (enumerated) posteriors.

Every statistical test compares draws of ``pm.sample`` (CRPGibbs on the labels, NUTS on the
cluster parameters, assigned automatically) with the exact posterior of a small model,
obtained by enumerating all set partitions with the cluster parameters integrated out
(analytically for conjugate normal means; by 1-D quadrature over a random concentration or
a per-cluster scale) in tests/oracles.py. A quantity ``q`` (a co-clustering indicator
``1{c_i = c_j}`` or a cluster-count indicator ``1{K = k}``) passes when

    |mean of q over draws - exact| < 4.5 * SE(q),

with SE the MCSE from ``arviz.mcse`` on the ``(chain, draw)`` array (it accounts for the
autocorrelation of the chain), bounded below by ``sqrt(q (1 - q) / n_eff)`` at the exact
probability ``q`` (``mc_checks.standard_errors``: an event rarely visited, whose own MCSE and ESS
are poorly estimated, takes for ``n_eff`` the smallest ESS of the well-visited quantities of
the same run). At 4.5 standard errors a correct sampler
fails a single comparison with probability < 1e-5, so the ~20 comparisons per model fail
together with probability < 2e-4. No fixed slack is added: a bias of 0.01 would hide under it.
The seeds are fixed, so the outcome is deterministic.
"""

from __future__ import annotations

import functools
import logging
import math

import numpy as np
import pymc as pm
import pytest
from mc_checks import standard_errors, z_scores
from oracles import (
    all_label_vectors,
    cluster_count_probs,
    co_clustering_matrix,
    compound_symmetry_normal_logpdf,
    crp_label_prob,
    dirichlet_multinomial_label_prob,
    dirichlet_multinomial_partition_prob,
    eppf,
    exact_collapsed_label_posterior,
    exact_partition_posterior,
    mixed_over_parameter,
    normal_block_log_marginal,
)
from scipy import stats
from threadpoolctl import threadpool_limits

import pymc_crp as pmc

Y6 = np.array([-2.1, -1.8, -0.2, 0.3, 2.2, 2.5])
Y7 = np.array([-2.1, -1.8, -0.2, 0.3, 1.1, 2.2, 2.5])
Y_2D = np.array([[-2.0, 1.5], [-1.6, 1.9], [0.1, -0.3], [1.8, -2.2], [2.3, -1.7]])
TAU = 3.0  # prior sd of the cluster means
SIGMA = 1.0  # observation sd (for the latent case: sqrt(S_W^2 + S_E^2))
S_W, S_E = 0.6, 0.8

FAST = {"draws": 1500, "tune": 500, "chains": 2}
SLOW = {"draws": 4000, "tune": 1000, "chains": 4}


# --------------------------------------------------------------------------------------------
# Models and their exact posteriors
# --------------------------------------------------------------------------------------------
ALPHA_SHAPE, ALPHA_RATE = 2.0, 1.0  # Gamma prior of a random CRP concentration
SCALE_SHAPE, SCALE_RATE = 4.0, 4.0  # Gamma prior of per-cluster observation sds

CASES = {
    # name: (prior kind, prior parameters, observation kind)
    "dp": ("crp", {"theta": 1.0, "d": 0.0}, "normal"),
    "pitman_yor": ("crp", {"theta": 0.5, "d": 0.4}, "normal"),
    "dirichlet_multinomial": ("dm", {"gamma": 1.5, "n_groups": 3}, "normal"),
    "latent": ("crp", {"theta": 1.0, "d": 0.0}, "latent"),
    "mvnormal": ("crp", {"theta": 1.0, "d": 0.0}, "mvnormal"),
    # concentration ~ Gamma sampled by NUTS: CRPGibbs must read it from the current point
    "random_concentration": ("crp", {"theta": "gamma", "d": 0.0}, "normal"),
    # per-cluster sds with a log-transformed Gamma prior: empty slots are refreshed on the
    # transformed scale
    "cluster_scales": ("crp", {"theta": 1.0, "d": 0.0}, "scales"),
    # two slot parameters with the same prior, mean mu_k + nu_k ~ N(0, TAU^2): the empty
    # slots' refreshed draws of mu and nu must be independent
    "two_slot_params": ("crp", {"theta": 1.0, "d": 0.0}, "sum"),
}


def case_data(case: str, n: int | None = None) -> np.ndarray:
    if CASES[case][2] == "mvnormal":
        return Y_2D
    return {6: Y6, 7: Y7}[n or 6]


def build_model(case: str, y: np.ndarray) -> pm.Model:
    prior, params, obs = CASES[case]
    n = y.shape[0]
    with pm.Model() as model:
        if prior == "crp":
            n_slots = n
            theta = params["theta"]
            if theta == "gamma":
                theta = pm.Gamma("alpha", ALPHA_SHAPE, ALPHA_RATE)
            z = pmc.CRP("z", theta, params["d"], max_clusters=n_slots, n=n)
        else:
            n_slots = params["n_groups"]
            z = pmc.DirichletMultinomialPartition("z", params["gamma"], n_groups=n_slots, n=n)
        if obs == "normal":
            mu = pm.Normal("mu", 0.0, TAU, shape=n_slots)
            pm.Normal("y", mu[z], SIGMA, observed=y)
        elif obs == "latent":
            mu = pm.Normal("mu", 0.0, TAU, shape=n_slots)
            latent = pm.Normal("theta", mu[z], S_W, shape=n)
            pm.Normal("y", latent, S_E, observed=y)
        elif obs == "sum":
            mu = pm.Normal("mu", 0.0, TAU / math.sqrt(2.0), shape=n_slots)
            nu = pm.Normal("nu", 0.0, TAU / math.sqrt(2.0), shape=n_slots)
            pm.Normal("y", mu[z] + nu[z], SIGMA, observed=y)
        elif obs == "scales":
            mu = pm.Normal("mu", 0.0, TAU, shape=n_slots)
            scale = pm.Gamma("scale", SCALE_SHAPE, SCALE_RATE, shape=n_slots)
            pm.Normal("y", mu[z], scale[z], observed=y)
        else:
            mu = pm.Normal("mu", 0.0, TAU, shape=(n_slots, 2))
            pm.MvNormal("y", mu[z], cov=np.eye(2), observed=y)
    return model


def alpha_pdf(t):
    return stats.gamma.pdf(t, ALPHA_SHAPE, scale=1.0 / ALPHA_RATE)


def partition_prior(case: str, n_slots_wrong: int | None = None):
    """Prior probability of a partition; ``n_slots_wrong`` gives the label-vector bug."""
    prior, params, _ = CASES[case]
    if prior == "dm":
        return lambda blocks: dirichlet_multinomial_partition_prob(
            blocks, params["gamma"], params["n_groups"]
        )

    @functools.cache
    def eppf_of_sizes(sizes):
        if params["theta"] == "gamma":  # the concentration integrated over its prior
            return mixed_over_parameter(lambda t: eppf(sizes, t, params["d"]), alpha_pdf)
        return eppf(sizes, params["theta"], params["d"])

    def crp(blocks):
        p = eppf_of_sizes(tuple(sorted(len(b) for b in blocks)))
        if n_slots_wrong is not None:  # EPPF used as a label-vector probability
            p *= math.perm(n_slots_wrong, len(blocks))
        return p

    return crp


def block_log_marginal(case: str, y: np.ndarray):
    """``log m(y_block)`` with the cluster's parameters integrated out."""
    if CASES[case][2] == "scales":

        def scale_pdf(s):
            return stats.gamma.pdf(s, SCALE_SHAPE, scale=1.0 / SCALE_RATE)

        @functools.cache
        def marginal(block):
            yb = y[list(block)]
            shift = normal_block_log_marginal(yb, 1.0, TAU)  # keeps the integrand near 1
            value = mixed_over_parameter(
                lambda s: math.exp(compound_symmetry_normal_logpdf(yb, s, TAU) - shift),
                scale_pdf,
            )
            return math.log(value) + shift

        return lambda b: marginal(tuple(b))

    # latent case: theta_i integrated out, y_i | mu ~ N(mu, S_W^2 + S_E^2) = N(mu, SIGMA^2);
    # two_slot_params: mu + nu ~ N(0, TAU^2)
    @functools.cache
    def marginal(block):
        return normal_block_log_marginal(y[list(block)], SIGMA, TAU)

    return lambda b: marginal(tuple(b))


def exact_posterior(case, y, prior=None, max_blocks=None):
    return exact_partition_posterior(
        y.shape[0],
        prior or partition_prior(case),
        block_log_marginal(case, y),
        max_blocks=max_blocks,
    )


def exact_summaries(case, y, prior=None, max_blocks=None):
    """Exact co-clustering matrix and P(K = k), k = 0..N, by enumeration."""
    n = y.shape[0]
    parts, probs = exact_posterior(case, y, prior, max_blocks)
    return co_clustering_matrix(parts, probs, n), cluster_count_probs(parts, probs, n)


def exact_concentration_mean(y):
    """E[alpha | y] for the random-concentration case: sum over K of P(K | y) E[alpha | K]."""
    _, k_probs = exact_summaries("random_concentration", y)
    n = y.shape[0]
    mean = 0.0
    for k in range(1, n + 1):
        # p(alpha | partition) depends on the partition through K only: alpha^K G(a)/G(a+N)
        sizes = (n - k + 1,) + (1,) * (k - 1)
        z_k = mixed_over_parameter(lambda t, s=sizes: eppf(s, t, 0.0), alpha_pdf)
        m_k = mixed_over_parameter(lambda t, s=sizes: t * eppf(s, t, 0.0), alpha_pdf)
        mean += k_probs[k] * m_k / z_k
    return mean


def sample_model(model, settings, seed, **kwargs):
    """``pm.sample`` on one core with one BLAS thread.

    The models are tiny: OpenBLAS thread wake-ups dominate their 2x2 triangular solves (the
    MvNormal case runs ~5x slower with the default threads on a loaded 2-core machine), and
    PyMC does not limit BLAS threads under the ``fork`` start method (pymc#7354).
    """
    with model, threadpool_limits(limits=1, user_api="blas"):
        if "step" not in kwargs and "z" in model.named_vars and model["z"] in model.free_RVs:
            # the step under test; pm.sample would give conjugate models to ConjugateCRPGibbs
            kwargs["step"] = [pmc.CRPGibbs([model["z"]])]
        return pm.sample(
            **settings,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )


def n_clusters_stat(idata) -> np.ndarray:
    """The ``n_clusters`` stat ``(chain, draw)`` (a conjugate draw of ``mu`` given ``z`` by
    ``ConjugateCRPGibbs`` records it too: PyMC then stacks both)."""
    stat = idata.sample_stats["n_clusters"].values
    if stat.ndim == 3:
        assert (stat == stat[..., :1]).all()
        stat = stat[..., 0]
    return stat


def summary_draws(idata):
    """Per-draw indicators: co-clustering of each pair (i<j) and 1{K = k}, k = 1..N."""
    z = idata.posterior["z"].values  # (chain, draw, N)
    n = z.shape[-1]
    iu = np.triu_indices(n, 1)
    same = z[..., :, None] == z[..., None, :]
    pairs = same[..., iu[0], iu[1]]
    n_clusters = (np.sort(z, axis=-1)[..., 1:] != np.sort(z, axis=-1)[..., :-1]).sum(-1) + 1
    stat = n_clusters_stat(idata)
    np.testing.assert_array_equal(stat, n_clusters)  # the stat counts occupied slots
    k_ind = n_clusters[..., None] == np.arange(1, n + 1)
    return pairs.astype(float), k_ind.astype(float)


def discrepancy(draws, exact, indicators=True):
    """``|estimate - exact| / (4.5 SE)`` per quantity (< 1 passes), the standard errors of
    ``mc_checks.z_scores`` (bounded below for ``indicators``; ArviZ's MCSE alone for averaged
    probabilities and parameters)."""
    return np.abs(z_scores(draws, exact, indicators)) / 4.5, draws.mean(axis=(0, 1))


def assert_matches_exact(idata, co_exact, k_exact, what=""):
    pairs, k_ind = summary_draws(idata)
    n = co_exact.shape[0]
    iu = np.triu_indices(n, 1)
    ratio_pairs, est_pairs = discrepancy(pairs, co_exact[iu])
    ratio_k, est_k = discrepancy(k_ind, k_exact[1:])
    assert ratio_pairs.max() < 1, (
        f"{what}: co-clustering off by {ratio_pairs.max():.2f} tolerances\n"
        f"estimate {np.round(est_pairs, 3)}\nexact    {np.round(co_exact[iu], 3)}"
    )
    assert ratio_k.max() < 1, (
        f"{what}: P(K=k) off by {ratio_k.max():.2f} tolerances\n"
        f"estimate {np.round(est_k, 3)}\nexact    {np.round(k_exact[1:], 3)}"
    )


@pytest.fixture(scope="module")
def fast_runs():
    """``pm.sample`` output of each case, shared by the tests of this module (sampled once)."""
    cache = {}

    def get(case):
        if case not in cache:
            y = case_data(case)
            seed = 20240 + list(CASES).index(case)  # fixed per case, whatever runs first
            cache[case] = sample_model(build_model(case, y), FAST, seed=seed)
        return cache[case]

    return get


# --------------------------------------------------------------------------------------------
# 1. Exact posteriors
# --------------------------------------------------------------------------------------------
def test_oracle_sanity():
    """The oracle's partition posterior sums to 1 and matches label-vector enumeration."""
    co, k = exact_summaries("dp", Y6)
    assert k.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(np.diag(co), 1.0)
    for block in ([0], [1, 4], [0, 2, 3, 5]):
        for s in (0.3, 1.0, 2.5):
            assert compound_symmetry_normal_logpdf(Y6[block], s, TAU) == pytest.approx(
                normal_block_log_marginal(Y6[block], s, TAU), rel=1e-12
            )
    # Brute force over the label vectors of the slot-labelled Pitman--Yor CRP (density
    # EPPF / (L!/(L-K)!)) with the means integrated out gives the same co-clustering matrix:
    # checks the partition bookkeeping of the oracle.
    n, theta, d = 5, 0.5, 0.4
    y = Y6[:n]
    marginal = functools.lru_cache(maxsize=None)(
        lambda block: normal_block_log_marginal(y[list(block)], SIGMA, TAU)
    )
    labels = all_label_vectors(n, n)
    w = exact_collapsed_label_posterior(
        labels,
        lambda c: math.log(crp_label_prob(c, theta, d, n)),
        lambda j, idx: marginal(tuple(idx)),
    )
    co_lab = np.einsum("v,vij->ij", w, (labels[:, :, None] == labels[:, None, :]).astype(float))
    parts, probs = exact_partition_posterior(
        n, lambda b: eppf([len(x) for x in b], theta, d), lambda b: marginal(tuple(b))
    )
    np.testing.assert_allclose(co_clustering_matrix(parts, probs, n), co_lab, atol=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_posterior_matches_exact(case, fast_runs):
    idata = fast_runs(case)
    y = case_data(case)
    co, k = exact_summaries(case, y)
    assert_matches_exact(idata, co, k, what=case)
    assert not idata.sample_stats["slots_full"].values.any()  # L >= N: never truncated
    if case == "random_concentration":
        alpha = idata.posterior["alpha"].values[..., None]
        ratio, est = discrepancy(alpha, exact_concentration_mean(y), indicators=False)
        assert ratio.max() < 1, f"E[alpha | y]: {est} vs {exact_concentration_mean(y)}"


def test_steps_assigned_automatically():
    model = build_model("latent", Y6)
    with model:
        _, selected = pm.sampling.mcmc.assign_step_methods(model)
    names = {cls.__name__: {v.name for v in vs} for cls, vs in selected.items()}
    # mu is a conjugate slot parameter of the latent theta: labels and mu go to ConjugateCRPGibbs
    assert names == {"ConjugateCRPGibbs": {"z", "mu"}, "NUTS": {"theta"}}


def test_wrong_prior_would_fail(fast_runs):
    """The comparison has power: the label-vector bug (docs/mathematics.md) is rejected.

    Treating the EPPF as the probability of a label vector (no L!/(L-K)! factor) moves the
    exact posterior mean of K from 2.95 to 3.75 here; the sampled posterior must be far
    outside the tolerance of that wrong target.
    """
    idata = fast_runs("dp")
    co_wrong, k_wrong = exact_summaries("dp", Y6, prior=partition_prior("dp", n_slots_wrong=6))
    co, k = exact_summaries("dp", Y6)
    ks = np.arange(7)
    assert (k_wrong * ks).sum() - (k * ks).sum() > 0.7
    pairs, k_ind = summary_draws(idata)
    iu = np.triu_indices(6, 1)
    ratio_k, _ = discrepancy(k_ind, k_wrong[1:])
    ratio_pairs, _ = discrepancy(pairs, co_wrong[iu])
    assert max(ratio_k.max(), ratio_pairs.max()) > 3, "the test cannot tell the bug apart"
    # and the mean number of clusters is many standard errors away from the wrong one
    k_draws = n_clusters_stat(idata).astype(float)
    se = float(standard_errors(k_draws))
    assert abs(k_draws.mean() - (k_wrong * ks).sum()) > 10 * se
    assert abs(k_draws.mean() - (k * ks).sum()) < 4.5 * se


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("n", [6, 7])
def test_posterior_matches_exact_long(case, n):
    if case == "mvnormal" and n == 7:
        pytest.skip("the 2-D data set has N = 5")
    y = case_data(case, n)
    idata = sample_model(build_model(case, y), SLOW, seed=777 + n)
    co, k = exact_summaries(case, y)
    assert_matches_exact(idata, co, k, what=f"{case}, N={n}")


@pytest.mark.parametrize(
    "case, priors",
    [
        ("dp", {"mu": stats.norm(0.0, TAU)}),
        (
            "cluster_scales",
            {"mu": stats.norm(0.0, TAU), "scale": stats.gamma(SCALE_SHAPE, scale=1 / SCALE_RATE)},
        ),
        (
            "two_slot_params",
            {"mu": stats.norm(0.0, TAU / math.sqrt(2)), "nu": stats.norm(0.0, TAU / math.sqrt(2))},
        ),
    ],
)
def test_empty_slot_refresh_draws_independent_prior_values(case, priors):
    """Parameters of empty slots are refreshed by independent draws from their priors.

    From a point with slots 0..4 empty (all observations in slot 5), the step's output holds
    fresh draws in those rows (``scale`` is stored on the log scale). Each parameter must
    follow its prior (Kolmogorov--Smirnov on the pooled draws) and two parameters of the same
    slot must be independent (rank correlation within 4 standard errors of 0, per slot).
    """
    model = build_model(case, Y6)
    with model:
        step = pmc.CRPGibbs([model["z"]])
    step.set_rng(np.random.default_rng(12))
    point = model.initial_point(random_seed=0)
    point["z"] = np.full(6, 5, dtype=np.int64)
    n_steps = 300
    draws = {name: np.empty((n_steps, 5)) for name in priors}
    for t in range(n_steps):
        out, _ = step.step(point)
        for name, values in draws.items():
            values[t] = np.exp(out["scale_log__"][:5]) if name == "scale" else out[name][:5]
    for name, prior in priors.items():
        assert stats.kstest(draws[name].ravel(), prior.cdf).pvalue > 0.001, name
    names = list(priors)
    for a, b in zip(names, names[1:], strict=False):
        rho = [stats.spearmanr(draws[a][:, j], draws[b][:, j]).statistic for j in range(5)]
        assert np.max(np.abs(rho)) < 4 / math.sqrt(n_steps), (a, b, np.round(rho, 3))


# --------------------------------------------------------------------------------------------
# 2. Rao--Blackwellised membership probabilities
# --------------------------------------------------------------------------------------------
# Slots with different prior means make label vectors (not only partitions) identifiable, so
# the exact marginal memberships P(c_i = j | y) are informative (not 1/A by symmetry). This
# also checks that empty slots are refreshed from their own prior (mean M_MEANS[j]).
M_MEANS = np.array([-2.0, 0.0, 2.0])
M_TAU, M_SIGMA, M_GAMMA = 1.0, 0.7, 1.5


def membership_model():
    with pm.Model() as model:
        z = pmc.DirichletMultinomialPartition("z", M_GAMMA, n_groups=3, n=6)
        mu = pm.Normal("mu", M_MEANS, M_TAU, shape=3)
        pm.Normal("y", mu[z], M_SIGMA, observed=Y6)
    return model


def exact_memberships(gamma_per_slot=None, means=M_MEANS):
    """Exact P(c_i = j | y) of :func:`membership_model` by enumeration of 3^6 label vectors.

    ``gamma_per_slot`` replaces the Dirichlet parameter gamma/A and ``means`` the slots' prior
    means by other values (for the test's power check).
    """
    labels = all_label_vectors(6, 3)
    gamma = M_GAMMA if gamma_per_slot is None else 3 * gamma_per_slot
    post = exact_collapsed_label_posterior(
        labels,
        lambda c: math.log(dirichlet_multinomial_label_prob(c, gamma, 3)),
        lambda j, idx: normal_block_log_marginal(Y6[idx], M_SIGMA, M_TAU, means[j]),
    )
    one_hot = labels[:, :, None] == np.arange(3)
    return np.einsum("v,vij->ij", post, one_hot.astype(float))


def membership_draws(settings, seed):
    """Draws of z and of the ``membership_probs`` stat from ``pm.sample``.

    The stat is stored flattened, ``(chain, draw, N·L)`` (PyMC's default trace keeps array
    stats as flat vectors); returned reshaped to ``(chain, draw, N, L)``.
    """
    model = membership_model()
    with model:
        step = pmc.CRPGibbs([model["z"]], membership_probs=True)
    idata = sample_model(model, settings, seed=seed, step=[step])
    flat = idata.sample_stats["membership_probs"].values
    assert flat.shape == (settings["chains"], settings["draws"], 6 * 3)
    return idata.posterior["z"].values, flat.reshape(*flat.shape[:2], 6, 3)


@pytest.fixture(scope="module")
def membership_run():
    return membership_draws(FAST, seed=31)


def test_membership_probs_rows_are_distributions(membership_run):
    _, probs = membership_run
    assert probs.shape == (2, FAST["draws"], 6, 3)
    assert np.all(probs >= 0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-12)


def test_membership_probs_match_exact(membership_run):
    """Rao--Blackwellised P(c_i = j | y) (mean of the stat) equals the exact marginal.

    The stat of observation i is P(c_i = · | c_-i, mu) at its visit; the state just before
    the visit is a draw from the posterior (every single-site update leaves it invariant), so
    its mean over draws is an unbiased estimate of the marginal P(c_i = j | y).
    """
    exact = exact_memberships()
    z, probs = membership_run
    probs = probs.reshape(2, -1, 18)
    ratio, est = discrepancy(probs, exact.ravel(), indicators=False)
    assert ratio.max() < 1, f"RB estimate {np.round(est, 3)}\nexact {np.round(exact.ravel(), 3)}"
    empirical = (z[..., None] == np.arange(3)).reshape(2, -1, 18).astype(float)
    ratio_emp, _ = discrepancy(empirical, exact.ravel())
    assert ratio_emp.max() < 1
    # Rao--Blackwellisation reduces the Monte Carlo error
    assert standard_errors(probs).mean() < standard_errors(empirical).mean()
    # power: conditionals without the prior weights n_a + gamma/A (gamma/A -> infinity: fixed
    # equal mixture weights) are rejected
    ratio_wrong, _ = discrepancy(
        probs, exact_memberships(gamma_per_slot=1e8).ravel(), indicators=False
    )
    assert ratio_wrong.max() > 1.5
    # ... and so is a target with exchangeable slots (all prior means 0: memberships 1/3)
    ratio_wrong, _ = discrepancy(
        probs, exact_memberships(means=np.zeros(3)).ravel(), indicators=False
    )
    assert ratio_wrong.max() > 10


# --------------------------------------------------------------------------------------------
# 3. Truncation: max_clusters < number of clusters the data want
# --------------------------------------------------------------------------------------------
Y_TRUNC = np.array([-3.0, -2.6, -0.4, 0.4, 2.6, 3.0])
T_SIGMA = 0.5


def test_truncated_crp_posterior_and_warning(caplog):
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=2, n=6)
        mu = pm.Normal("mu", 0.0, TAU, shape=2)
        pm.Normal("y", mu[z], T_SIGMA, observed=Y_TRUNC)
    with caplog.at_level(logging.WARNING, logger="pymc"):
        idata = sample_model(model, FAST, seed=5)
    full = exact_partition_posterior(
        6,
        lambda b: eppf([len(x) for x in b], 1.0, 0.0),
        lambda b: normal_block_log_marginal(Y_TRUNC[b], T_SIGMA, TAU),
    )
    assert (cluster_count_probs(*full, 6) * np.arange(7)).sum() > 3.4  # the data want ~4
    slots_full = idata.sample_stats["slots_full"].values
    assert slots_full.any()
    messages = [r.getMessage() for r in caplog.records if "max_clusters" in r.getMessage()]
    assert len(messages) == 1, messages  # one warning (cores=1: one step instance)
    assert all(
        r.levelno == logging.WARNING for r in caplog.records if "max_clusters" in r.getMessage()
    )
    # the sampled posterior is the CRP posterior conditioned on K <= 2
    parts, probs = exact_partition_posterior(
        6,
        lambda b: eppf([len(x) for x in b], 1.0, 0.0),
        lambda b: normal_block_log_marginal(Y_TRUNC[b], T_SIGMA, TAU),
        max_blocks=2,
    )
    co, k = co_clustering_matrix(parts, probs, 6), cluster_count_probs(parts, probs, 6)
    assert 0.2 < co[2, 3] < 0.8  # a non-degenerate target
    assert_matches_exact(idata, co, k, what="truncated CRP")


# --------------------------------------------------------------------------------------------
# Slow: longer runs of the membership and truncation checks
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_membership_probs_match_exact_long():
    _, probs = membership_draws(SLOW, seed=99)
    exact = exact_memberships()
    probs = probs.reshape(probs.shape[0], probs.shape[1], 18)
    ratio, est = discrepancy(probs, exact.ravel(), indicators=False)
    assert ratio.max() < 1, f"RB estimate {np.round(est, 3)}\nexact {np.round(exact.ravel(), 3)}"


@pytest.mark.slow
def test_truncated_crp_posterior_long():
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=2, n=6)
        mu = pm.Normal("mu", 0.0, TAU, shape=2)
        pm.Normal("y", mu[z], T_SIGMA, observed=Y_TRUNC)
    idata = sample_model(model, SLOW, seed=55)
    parts, probs = exact_partition_posterior(
        6,
        lambda b: eppf([len(x) for x in b], 1.0, 0.0),
        lambda b: normal_block_log_marginal(Y_TRUNC[b], T_SIGMA, TAU),
        max_blocks=2,
    )
    co, k = co_clustering_matrix(parts, probs, 6), cluster_count_probs(parts, probs, 6)
    assert_matches_exact(idata, co, k, what="truncated CRP (long)")
