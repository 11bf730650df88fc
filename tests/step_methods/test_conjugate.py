"""Tests of the conjugate slot updates (``ConjugateCRPGibbs``) and the slot slice sampler.

Exactness: for each conjugate pair, ``pm.sample`` (steps assigned automatically) is compared with
the exact posterior of a 6-observation model obtained by enumerating all set partitions with the
slot parameters integrated out by the closed forms of tests/oracles.py (or 1-D quadrature over a
non-conjugate per-slot scale). A co-clustering or cluster-count indicator passes when
``|mean - exact| < 4.5 SE``, the MCSE bounded below by ``sqrt(q (1 - q) / n_eff)``
(``mc_checks.standard_errors``; see test_crp_gibbs.py for the reasoning). The slot parameters'
posterior given observed labels is checked with a Kolmogorov--Smirnov test against the closed
form (the draws are independent then), and the same draws must fail against a closed form with
a wrong prior parameter.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
import pytest
from mc_checks import standard_errors, z_scores
from oracles import (
    beta_binomial_block_log_marginal,
    cluster_count_probs,
    co_clustering_matrix,
    compound_symmetry_normal_logpdf,
    dirichlet_multinomial_partition_prob,
    eppf,
    exact_partition_posterior,
    gamma_poisson_block_log_marginal,
    mixed_over_parameter,
    normal_block_log_marginal,
    normal_precision_block_log_marginal,
)
from scipy import stats
from threadpoolctl import threadpool_limits

import pymc_crp as pmc
from pymc_crp.step_methods.collapsed import ConjugateCRPGibbs
from pymc_crp.step_methods.slot_slice import SlotSliceSampler

Y6 = np.array([-2.1, -1.8, -0.2, 0.3, 2.2, 2.5])
Y_SPREAD = np.array([-0.1, 0.2, 0.1, 3.0, -2.5, 0.6])
COUNTS = np.array([0, 1, 0, 7, 9, 3])
BINARY = np.array([0, 0, 1, 1, 1, 0])
SUCCESSES, TRIALS = np.array([1, 2, 9, 8, 5, 0]), 10
TAU = 3.0
SETTINGS = {"draws": 2000, "tune": 300, "chains": 2}

# name: (partition prior, data, slot-parameter builder, log block marginal)
CASES = {
    "normal_mean": ("py", Y6, "normal_mean", lambda b: normal_block_log_marginal(b, 1.0, TAU)),
    "normal_mean_dm": ("dm", Y6, "normal_mean", lambda b: normal_block_log_marginal(b, 1.0, TAU)),
    "normal_precision": (
        "dp",
        Y_SPREAD,
        "normal_precision",
        lambda b: normal_precision_block_log_marginal(b, 0.5, 2.0, 1.0),
    ),
    "gamma_poisson": (
        "dp",
        COUNTS,
        "gamma_poisson",
        lambda b: gamma_poisson_block_log_marginal(b, 2.0, 0.5),
    ),
    "exponential_poisson": (
        "dp",
        COUNTS,
        "exponential_poisson",
        lambda b: gamma_poisson_block_log_marginal(b, 1.0, 0.25),
    ),
    "beta_bernoulli": (
        "dp",
        BINARY,
        "beta_bernoulli",
        lambda b: beta_binomial_block_log_marginal(b, 1, 0.5, 0.5),
    ),
    "beta_binomial": (
        "dp",
        SUCCESSES,
        "beta_binomial",
        lambda b: beta_binomial_block_log_marginal(b, TRIALS, 2.0, 2.0),
    ),
    # mu conjugate, sigma ~ HalfNormal a partner drawn with mu integrated out
    "halfnormal_scales": ("dp", Y6, "halfnormal_scales", None),
    # mu and tau both conjugate given the other (mu swept collapsed)
    "semi_conjugate": ("dp", Y6, "semi_conjugate", None),
    # normal--inverse-gamma style: mu ~ N(0, (2 sigma)^2) per slot, sigma a partner that also
    # sets mu's prior
    "normal_scale_mixture": ("dp", Y6, "normal_scale_mixture", None),
}


def slot_params(kind: str, z, data, n_slots: int, observed_name: str = "y"):
    """The slot parameters and likelihood of each case; returns the conjugate parameter."""
    if kind == "normal_mean":
        mu = pm.Normal("phi", 0.0, TAU, shape=n_slots)
        pm.Normal(observed_name, mu[z], 1.0, observed=data)
    elif kind == "normal_precision":
        tau = pm.Gamma("phi", 2.0, 1.0, shape=n_slots)
        pm.Normal(observed_name, 0.5, tau=tau[z], observed=data)
    elif kind == "gamma_poisson":
        lam = pm.Gamma("phi", 2.0, 0.5, shape=n_slots)
        pm.Poisson(observed_name, lam[z], observed=data)
    elif kind == "exponential_poisson":
        lam = pm.Exponential("phi", 0.25, shape=n_slots)
        pm.Poisson(observed_name, lam[z], observed=data)
    elif kind == "beta_bernoulli":
        p = pm.Beta("phi", 0.5, 0.5, shape=n_slots)
        pm.Bernoulli(observed_name, p[z], observed=data)
    elif kind == "beta_binomial":
        p = pm.Beta("phi", 2.0, 2.0, shape=n_slots)
        pm.Binomial(observed_name, TRIALS, p[z], observed=data)
    elif kind == "halfnormal_scales":
        mu = pm.Normal("phi", 0.0, TAU, shape=n_slots)
        sigma = pm.HalfNormal("sigma", 1.5, shape=n_slots)
        pm.Normal(observed_name, mu[z], sigma[z], observed=data)
    elif kind == "normal_scale_mixture":
        sigma = pm.HalfNormal("sigma", 1.5, shape=n_slots)
        mu = pm.Normal("phi", 0.0, 2.0 * sigma, shape=n_slots)
        pm.Normal(observed_name, mu[z], sigma[z], observed=data)
    elif kind == "semi_conjugate":
        mu = pm.Normal("phi", 0.0, TAU, shape=n_slots)
        tau = pm.Gamma("tau", 3.0, 3.0, shape=n_slots)
        pm.Normal(observed_name, mu[z], tau=tau[z], observed=data)
    else:
        raise KeyError(kind)


def build_model(case: str) -> pm.Model:
    prior, data, kind, _ = CASES[case]
    n = data.shape[0]
    with pm.Model() as model:
        if prior == "dm":
            n_slots = 3
            z = pmc.DirichletMultinomialPartition("z", 1.5, n_groups=n_slots, n=n)
        else:
            n_slots = n
            theta, d = (0.5, 0.3) if prior == "py" else (1.0, 0.0)
            z = pmc.CRP("z", theta, d, max_clusters=n_slots, n=n)
        slot_params(kind, z, data, n_slots)
    return model


def block_log_marginal(case: str):
    _, data, kind, closed_form = CASES[case]
    if kind == "halfnormal_scales":

        def integrand_pdf(s):
            return stats.halfnorm.pdf(s, scale=1.5)

        def marginal(yb):
            shift = normal_block_log_marginal(yb, 1.0, TAU)
            value = mixed_over_parameter(
                lambda s: math.exp(compound_symmetry_normal_logpdf(yb, s, TAU) - shift),
                integrand_pdf,
            )
            return math.log(value) + shift

    elif kind == "semi_conjugate":

        def marginal(yb):
            shift = normal_block_log_marginal(yb, 1.0, TAU)
            value = mixed_over_parameter(
                lambda t: math.exp(compound_symmetry_normal_logpdf(yb, t**-0.5, TAU) - shift),
                lambda t: stats.gamma.pdf(t, 3.0, scale=1.0 / 3.0),
            )
            return math.log(value) + shift

    elif kind == "normal_scale_mixture":

        def marginal(yb):
            shift = normal_block_log_marginal(yb, 1.0, TAU)
            value = mixed_over_parameter(
                lambda s: math.exp(compound_symmetry_normal_logpdf(yb, s, 2.0 * s) - shift),
                lambda s: stats.halfnorm.pdf(s, scale=1.5),
            )
            return math.log(value) + shift

    else:
        marginal = closed_form

    @functools.cache
    def cached(block):
        return marginal(data[list(block)])

    return lambda b: cached(tuple(b))


def partition_prior(case: str, wrong: bool = False):
    prior = CASES[case][0]
    if prior == "dm":
        return lambda blocks: dirichlet_multinomial_partition_prob(blocks, 1.5, 3)
    theta, d = (0.5, 0.3) if prior == "py" else (1.0, 0.0)
    if wrong:
        theta *= 3.0
    return lambda blocks: eppf([len(b) for b in blocks], theta, d)


def exact_summaries(case: str, log_marginal=None, wrong_prior: bool = False):
    n = CASES[case][1].shape[0]
    parts, probs = exact_partition_posterior(
        n, partition_prior(case, wrong_prior), log_marginal or block_log_marginal(case)
    )
    return co_clustering_matrix(parts, probs, n), cluster_count_probs(parts, probs, n)


def sample(model, seed, **kwargs):
    with model, threadpool_limits(limits=1, user_api="blas"):
        return pm.sample(
            **{**SETTINGS, **kwargs},
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


def discrepancy(idata, co_exact, k_exact) -> float:
    """Largest ``|estimate - exact| / (4.5 SE)`` over the pairs and ``P(K = k)``."""
    z = idata.posterior["z"].values
    n = z.shape[-1]
    iu = np.triu_indices(n, 1)
    pairs = (z[..., :, None] == z[..., None, :])[..., iu[0], iu[1]].astype(float)
    sorted_z = np.sort(z, axis=-1)
    n_clusters = (sorted_z[..., 1:] != sorted_z[..., :-1]).sum(-1) + 1
    np.testing.assert_array_equal(idata.sample_stats["n_clusters"].values, n_clusters)
    k_ind = (n_clusters[..., None] == np.arange(1, n + 1)).astype(float)
    ratios = []
    for draws, exact in ((pairs, co_exact[iu]), (k_ind, k_exact[1:])):
        ratios.append(np.max(np.abs(z_scores(draws, exact))) / 4.5)
    return float(max(ratios))


@functools.cache
def fast_run(case: str):
    seed = 5100 + list(CASES).index(case)
    return sample(build_model(case), seed)


# --------------------------------------------------------------------------------------------
# Detection and assignment
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_assignment(case):
    from pymc.sampling.mcmc import assign_step_methods

    model = build_model(case)
    _, assigned = assign_step_methods(model)
    names = {cls: sorted(model.values_to_rvs[v].name for v in vs) for cls, vs in assigned.items()}
    expected = ["phi", "z"]
    if case in ("halfnormal_scales", "normal_scale_mixture"):
        expected = ["phi", "sigma", "z"]
    elif case == "semi_conjugate":
        expected = ["phi", "tau", "z"]
    assert names == {ConjugateCRPGibbs: expected}


def test_fallbacks_assign_the_general_path():
    """Non-conjugate pairs keep CRPGibbs (slice or NUTS on the slot parameters), no error."""
    from pymc.sampling.mcmc import assign_step_methods

    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Laplace("mu", 0.0, 3.0, shape=6)
        pm.Normal("y", mu[z], 1.0, observed=Y6)
    _, assigned = assign_step_methods(model)
    assert {c.__name__ for c in assigned} == {"CRPGibbs", "SlotSliceSampler"}
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Normal("mu", 0.0, 3.0, shape=6)
        pm.Normal("y", 2.0 * mu[z], 1.0, observed=Y6)  # not the mean itself: no pair
        pm.Normal("w", mu, 1.0, observed=np.zeros(6))  # and a second child
    _, assigned = assign_step_methods(model)
    assert {c.__name__ for c in assigned} == {"CRPGibbs", "NUTS"}
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Normal("mu", 0.0, 3.0, shape=6)
        pm.StudentT("y", nu=4.0, mu=mu[z], sigma=1.0, observed=Y6)
        idata = pm.sample(50, tune=50, chains=1, progressbar=False, random_seed=1)
    assert idata.posterior["mu"].shape == (1, 50, 6)
    assert "diverging" not in idata.sample_stats


def test_slots_coupled_after_the_indexing_are_not_split_up():
    """Every use of the slot parameters is ``ψ[z]``, but a reduction afterwards couples the
    slots (and the labels): slot-by-slot slicing and collapsed sweeps would sample another
    posterior, so the model gets NUTS for the slots and CRPGibbs refuses the labels."""
    from pymc.sampling.mcmc import assign_step_methods

    with pm.Model() as observed_labels:
        z = pmc.CRP("z", 1.0, max_clusters=3, observed=[0, 0, 1, 2])
        mu = pm.Laplace("mu", 0.0, 2.0, shape=3)
        pm.Normal("y", mu[z] + mu[z].mean(), 0.7, observed=Y6[:4])
    _, assigned = assign_step_methods(observed_labels)
    assert {c.__name__ for c in assigned} == {"NUTS"}
    with observed_labels, pytest.raises(ValueError, match="not a continuous slot parameter"):
        SlotSliceSampler([mu])
    with pm.Model() as partner:
        z = pmc.CRP("z", 1.0, max_clusters=3, n=4)
        mu = pm.Normal("mu", 0.0, 2.0, shape=3)
        g = pm.Normal("g", 0.0, 1.0, shape=3)
        pm.Normal("y", mu[z], 0.7 * pm.math.exp(g[z].mean()), observed=Y6[:4])
    _, assigned = assign_step_methods(partner)
    names = {c.__name__: sorted(v.name for v in vs) for c, vs in assigned.items()}
    assert names == {"CRPGibbs": ["z"], "ConjugateCRPGibbs": ["mu"], "NUTS": ["g"]}
    for labels_step in (lambda: pmc.CRPGibbs([z]), lambda: ConjugateCRPGibbs([z, mu, g])):
        with partner, pytest.raises(ValueError, match="depends on labels other than"):
            labels_step()  # (labels not collapsible go to CRPGibbs, which refuses them)
    with partner, pytest.raises(ValueError, match="neither a conjugate slot parameter"):
        ConjugateCRPGibbs([mu, g])  # g is not a partner: its slots are coupled


# --------------------------------------------------------------------------------------------
# Exactness against enumeration
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_partition_posterior_matches_enumeration(case):
    idata = fast_run(case)
    co, k = exact_summaries(case)
    assert discrepancy(idata, co, k) < 1


@pytest.mark.parametrize("case", ["gamma_poisson", "beta_binomial"])
def test_enumeration_check_detects_a_wrong_prior(case):
    """The same draws fail against the posterior of a wrong prior parameter."""
    idata = fast_run(case)
    _, data, _, _ = CASES[case]
    if case == "gamma_poisson":  # prior rate 0.5 -> 0.05

        def wrong(b):
            return gamma_poisson_block_log_marginal(data[list(b)], 2.0, 0.05)

    else:  # prior Beta(2, 2) -> Beta(0.5, 0.5)

        def wrong(b):
            return beta_binomial_block_log_marginal(data[list(b)], TRIALS, 0.5, 0.5)

    co, k = exact_summaries(case, log_marginal=wrong)
    assert discrepancy(idata, co, k) > 1
    co, k = exact_summaries(case, wrong_prior=True)  # concentration 1 -> 3
    assert discrepancy(idata, co, k) > 1


# --------------------------------------------------------------------------------------------
# Slot parameters given observed labels: closed-form posteriors
# --------------------------------------------------------------------------------------------
LABELS = np.array([0, 0, 1, 1, 1, 3])  # slot 2 empty: its draws follow the prior


def closed_form(kind: str, data, slot: int, wrong: bool = False):
    """The exact posterior of slot ``slot`` given ``LABELS`` (scipy frozen distribution)."""
    members = data[LABELS == slot]
    n, s = members.size, float(members.sum())
    if kind == "normal_mean":
        prior_var = (TAU * (2.0 if wrong else 1.0)) ** 2
        prec = 1.0 / prior_var + n
        return stats.norm(s / prec, prec**-0.5)
    if kind == "normal_precision":
        ss = float(np.sum((members - 0.5) ** 2))
        rate = (2.0 if wrong else 1.0) + ss / 2
        return stats.gamma(2.0 + n / 2, scale=1.0 / rate)
    if kind == "gamma_poisson":
        rate = (1.0 if wrong else 0.5) + n
        return stats.gamma(2.0 + s, scale=1.0 / rate)
    if kind == "exponential_poisson":
        rate = (0.5 if wrong else 0.25) + n
        return stats.gamma(1.0 + s, scale=1.0 / rate)
    if kind == "beta_bernoulli":
        a = 1.0 if wrong else 0.5
        return stats.beta(a + s, 0.5 + n - s)
    a = 3.0 if wrong else 2.0
    return stats.beta(a + s, 2.0 + TRIALS * n - s)


DATA_OF = {
    "normal_mean": Y6,
    "normal_precision": Y_SPREAD,
    "gamma_poisson": COUNTS,
    "exponential_poisson": COUNTS,
    "beta_bernoulli": BINARY,
    "beta_binomial": SUCCESSES,
}


@pytest.mark.parametrize("kind", list(DATA_OF))
def test_slot_posterior_given_labels(kind):
    data = DATA_OF[kind]
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=4, n=6, observed=LABELS)
        slot_params(kind, z, data, 4)
    idata = sample(model, seed=77, draws=3000, tune=10)
    assert idata.sample_stats["n_clusters"].values.min() == 3
    phi = idata.posterior["phi"].values.reshape(-1, 4)
    for slot in range(4):
        exact = closed_form(kind, data, slot)
        assert stats.kstest(phi[:, slot], exact.cdf).pvalue > 1e-4, (kind, slot)
    # a wrong prior parameter is detected (slot 0 has two members, slot 2 none)
    worst = min(
        stats.kstest(phi[:, slot], closed_form(kind, data, slot, wrong=True).cdf).pvalue
        for slot in (0, 2)
    )
    assert worst < 1e-6, kind


# --------------------------------------------------------------------------------------------
# Reproducibility, several processes, bad input
# --------------------------------------------------------------------------------------------
def test_same_seed_same_draws_and_cores():
    model = build_model("halfnormal_scales")
    a = sample(model, seed=3, draws=100, tune=20)
    b = sample(model, seed=3, draws=100, tune=20)
    c = sample(model, seed=4, draws=100, tune=20)
    for name in ("z", "phi", "sigma"):
        np.testing.assert_array_equal(a.posterior[name].values, b.posterior[name].values)
    assert not np.array_equal(a.posterior["phi"].values, c.posterior["phi"].values)
    runs = {}
    for cores in (1, 2):  # chains in one process (step reused) or in two (pickled copies)
        with model:
            runs[cores] = pm.sample(
                50, tune=20, chains=2, cores=cores, random_seed=3, progressbar=False,
                compute_convergence_checks=False,
            )  # fmt: skip
    for name in ("z", "phi", "sigma"):
        np.testing.assert_array_equal(
            runs[1].posterior[name].values, runs[2].posterior[name].values
        )


def test_bad_arguments():
    model = build_model("normal_mean")
    with model:
        with pytest.raises(ValueError, match="sweeps"):
            ConjugateCRPGibbs([model["z"], model["phi"]], sweeps=0)
        # labels without their conjugate parameter (given to NUTS by step=): CRPGibbs
        assert isinstance(ConjugateCRPGibbs([model["z"]]), pmc.CRPGibbs)
        idata = pm.sample(
            20, tune=20, chains=1, step=[pm.NUTS([model["phi"]])], random_seed=1,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
        assert idata.posterior["z"].shape == (1, 20, 6)
    with pm.Model() as other:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Laplace("mu", 0.0, 3.0, shape=6)
        pm.Normal("y", mu[z], 1.0, observed=Y6)
    with other:
        with pytest.raises(ValueError, match="conjugate"):
            ConjugateCRPGibbs([mu])
        with pytest.raises(ValueError, match="width"):
            SlotSliceSampler([mu], width=-1.0)


# --------------------------------------------------------------------------------------------
# Split--merge moves alone leave the collapsed label posterior invariant
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prior", ["py", "dm"])
def test_split_merge_alone_is_exact(prior):
    """Only split--merge moves (no sweep), label vectors of N = 4 over L = 4 slots with
    slot-specific priors (so label vectors, not only partitions, are identified), against
    enumeration of all 256 label vectors."""
    from oracles import (
        all_label_vectors,
        crp_label_prob,
        dirichlet_multinomial_label_prob,
        exact_collapsed_label_posterior,
    )

    from pymc_crp.core.conjugate_math import GAMMA_POISSON
    from pymc_crp.core.partition_math import CRP_PRIOR, DIRICHLET_MULTINOMIAL_PRIOR
    from pymc_crp.core.split_merge import split_merge_moves

    y = np.array([0.0, 1.0, 6.0, 8.0])
    hyper = np.array([[2.0, 0.5], [1.0, 0.2], [4.0, 1.0], [1.0, 1.0]])  # Gamma(a_j, rate b_j)
    n_slots = 4
    if prior == "py":
        code, a, b = CRP_PRIOR, 0.8, 0.25

        def log_prior(c):
            return math.log(crp_label_prob(c, a, b, n_slots))

    else:
        code, a, b = DIRICHLET_MULTINOMIAL_PRIOR, 1.5, 0.0

        def log_prior(c):
            return math.log(dirichlet_multinomial_label_prob(c, a, n_slots))

    vectors = all_label_vectors(4, n_slots)
    exact = exact_collapsed_label_posterior(
        vectors,
        log_prior,
        lambda j, idx: gamma_poisson_block_log_marginal(y[idx], *hyper[j]),
    )
    rng = np.random.default_rng(11)
    labels = np.zeros(4, dtype=np.int64)
    counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
    aux = np.zeros((4, n_slots))
    n_draws = 100_000
    seen = np.empty(n_draws, dtype=np.int64)
    for t in range(n_draws):
        split_merge_moves(GAMMA_POISSON, y, aux, hyper, labels, counts, 1, code, a, b, rng)
        np.testing.assert_array_equal(counts, np.bincount(labels, minlength=n_slots))
        seen[t] = labels[0] * 64 + labels[1] * 16 + labels[2] * 4 + labels[3]
    index = vectors @ np.array([64, 16, 4, 1])
    ind = (seen[None, :, None] == index[None, None, :]).astype(float)  # (chain, draw, vector)
    est = ind.mean(axis=(0, 1))
    tol = 4.5 * standard_errors(ind, exact)
    assert np.all(np.abs(est - exact) < tol), np.max(np.abs(est - exact) / tol)
    # and a wrong target (prior parameter changed) is rejected by the same draws
    wrong = exact_collapsed_label_posterior(
        vectors,
        log_prior,
        lambda j, idx: gamma_poisson_block_log_marginal(y[idx], hyper[j, 0], 3 * hyper[j, 1]),
    )
    assert np.max(np.abs(est - wrong) / tol) > 1


# --------------------------------------------------------------------------------------------
# A non-conjugate slot parameter: CRPGibbs on the labels, SlotSliceSampler on the means
# --------------------------------------------------------------------------------------------
def test_slot_slice_sampler_is_exact():
    """``mu ~ Laplace(0, 2)`` per slot, ``y ~ N(mu[z], 1)``: no conjugate pair, so the labels
    keep CRPGibbs and ``mu`` gets SlotSliceSampler (no NUTS, no divergences). Against
    enumeration with each block's mean integrated out by quadrature."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Laplace("mu", 0.0, 2.0, shape=6)
        pm.Normal("y", mu[z], 1.0, observed=Y6)
    idata = sample(model, seed=909, draws=3000)
    assert "diverging" not in idata.sample_stats
    assert "slice_evals" in idata.sample_stats

    @functools.cache
    def marginal(block):
        yb = Y6[list(block)]
        center = float(yb.mean())

        def lik(m):
            return math.exp(float(stats.norm.logpdf(yb, m, 1.0).sum()) - shift)

        shift = float(stats.norm.logpdf(yb, center, 1.0).sum())
        value = mixed_over_parameter(
            lik, lambda m: stats.laplace.pdf(m, 0.0, 2.0), lower=-math.inf, upper=math.inf
        )
        return math.log(value) + shift

    parts, probs = exact_partition_posterior(
        6, lambda blocks: eppf([len(b) for b in blocks], 1.0, 0.0), lambda b: marginal(tuple(b))
    )
    co, k = co_clustering_matrix(parts, probs, 6), cluster_count_probs(parts, probs, 6)
    assert discrepancy(idata, co, k) < 1


def test_one_slot_with_a_partner_parameter_is_accepted():
    """With ``max_clusters=1`` no label can move, so the locality probe that moves labels has
    nothing to check (it once raised NumPy's ``high <= 0`` while building the step)."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=1, n=4)
        mu = pm.Normal("mu", 0.0, 2.0, shape=1)
        g = pm.Normal("g", 0.0, 1.0, shape=1)
        pm.Normal("y", mu[z], pm.math.exp(g[z]), observed=np.array([0.1, 0.2, -0.3, 1.0]))
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert set(selected) == {ConjugateCRPGibbs}
    with model:
        step = ConjugateCRPGibbs([z, mu, g])
    point, _ = step.step(model.initial_point())
    assert np.all(point["z"] == 0)
