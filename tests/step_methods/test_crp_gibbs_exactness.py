"""Models where ``CRPGibbs`` once gave silent wrong answers, checked against exact answers.

The label step under test is ``CRPGibbs``, forced with ``step=`` (``pm.sample`` gives models
with a conjugate pair to ``ConjugateCRPGibbs``, tested in test_conjugate.py); the other
variables get their default steps.

Each statistical test compares ``pm.sample`` draws with an exact posterior computed in
tests/oracles.py by enumerating set partitions (or pairs of them) with every continuous
parameter integrated out in closed form (Gaussian marginals) or by quadrature (Student-t
observations, a random concentration). Tolerances as in test_crp_gibbs.py:
``|estimate - exact| < 4.5 SE`` per quantity (``mc_checks.z_scores``).

1. Parameters that the labels do not index (a per-observation effect, per-observation
   Student-t scales, regression coefficients, the means of another label vector) must not be
   refreshed as "empty slots".
2. Slot parameters whose transform couples the rows (``ordered``) are left to their own step.
3. The locality check is sharp (reordered or sorted labels are refused).
4. Observed labels through ``pm.Data`` with a Gamma concentration.
5. Rao--Blackwellised membership probabilities agree with the frequencies on a real chain.
6. The truncated CRP (``max_clusters < n``) with a random concentration is one distribution.
7. Error messages (imputed missing values) and observations laid out ``(T, N)``.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from mc_checks import standard_errors, z_scores
from oracles import (
    cluster_count_probs,
    co_clustering_indicator,
    co_clustering_matrix,
    dirichlet_multinomial_partition_prob,
    eppf,
    exact_partition_posterior,
    exact_posterior_over,
    gaussian_log_density,
    mixed_over_parameter,
    normal_block_log_marginal,
    set_partitions,
    student_t_block_log_marginal,
    truncated_crp_partition_prob,
)
from scipy import stats
from test_crp_gibbs import FAST, assert_matches_exact, discrepancy, sample_model

import pymc_crp as pmc
from pymc_crp.posterior.relabel import (
    _membership_stat,
    _prepare,
    _rao_blackwell_ecr,
    ecr_permutations,
)

Y5 = np.array([-2.1, -1.8, 0.3, 2.2, 2.5])
N5 = 5
TAU = 3.0


def crp_prior(theta=1.0, d=0.0):
    return lambda blocks: eppf([len(b) for b in blocks], theta, d)


def exact_from_partitions(parts, probs, n):
    return co_clustering_matrix(parts, probs, n), cluster_count_probs(parts, probs, n)


def slot_param_names(model, label="z"):
    with model:
        step = pmc.CRPGibbs([model[label]])
    return sorted(rv.name for rv in step._slot_params)


# --------------------------------------------------------------------------------------------
# 1. Parameters that the labels do not index are left alone
# --------------------------------------------------------------------------------------------
def per_observation_effect_model():
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=N5, n=N5)
        mu = pm.Normal("mu", 0.0, TAU, shape=N5)
        b = pm.Normal("b", 0.0, 0.8, shape=N5)
        pm.Normal("y", mu[z] + b, 1.0, observed=Y5)
    return model


def test_per_observation_effect_matches_exact():
    """``mu[z] + b`` with ``b`` of length N = L: b is no slot parameter."""
    model = per_observation_effect_model()
    assert slot_param_names(model) == ["mu"]
    idata = sample_model(model, FAST, seed=51)
    parts, probs = exact_partition_posterior(
        N5, crp_prior(), lambda b: normal_block_log_marginal(Y5[b], math.sqrt(1 + 0.8**2), TAU)
    )
    co, k = exact_from_partitions(parts, probs, N5)
    assert co[0, 3] == pytest.approx(0.156, abs=0.002)  # the exact value
    assert_matches_exact(idata, co, k, what="per-observation effect")


NU = 4.0


def test_student_t_scale_mixture_matches_exact():
    """``y ~ N(mu[z], 1/sqrt(lam))`` with ``lam`` of length N = L: lam is no slot parameter."""
    y = np.array([-2.0, -1.6, 0.2, 2.1, 2.6])
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=N5, n=N5)
        mu = pm.Normal("mu", 0.0, TAU, shape=N5)
        lam = pm.Gamma("lam", NU / 2, NU / 2, shape=N5)
        pm.Normal("y", mu[z], 1.0 / pt.sqrt(lam), observed=y)
    assert slot_param_names(model) == ["mu"]
    idata = sample_model(model, FAST, seed=52)
    parts, probs = exact_partition_posterior(
        N5, crp_prior(), lambda b: student_t_block_log_marginal(y[b], NU, TAU)
    )
    assert_matches_exact(idata, *exact_from_partitions(parts, probs, N5), what="Student-t")


X_REG = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7], [-0.8, 0.9, 1.1], [0.1, -0.3, -1.4],
                  [1.5, 1.0, 0.2]])  # fmt: skip


def test_dirichlet_multinomial_with_regression_matches_exact():
    """Three groups and three regression coefficients: beta is no slot parameter."""
    with pm.Model() as model:
        z = pmc.DirichletMultinomialPartition("z", 1.5, n_groups=3, n=N5)
        mu = pm.Normal("mu", 0.0, TAU, shape=3)
        beta = pm.Normal("beta", 0.0, 1.0, shape=3)
        pm.Normal("y", mu[z] + pt.dot(X_REG, beta), 1.0, observed=Y5)
    assert slot_param_names(model) == ["mu"]
    idata = sample_model(model, FAST, seed=53)
    parts = [p for p in set_partitions(N5) if len(p) <= 3]

    def log_weight(blocks):
        cov = np.eye(N5) + TAU**2 * co_clustering_indicator(blocks, N5) + X_REG @ X_REG.T
        prior = dirichlet_multinomial_partition_prob(blocks, 1.5, 3)
        return math.log(prior) + gaussian_log_density(Y5, cov)

    probs = exact_posterior_over(parts, log_weight)
    assert_matches_exact(idata, *exact_from_partitions(parts, probs, N5), what="DM regression")


N4 = 4
Y4 = np.array([-1.9, -0.2, 0.4, 2.3])


def test_two_label_vectors_sharing_a_term_match_exact():
    """``y ~ N(mu1[z1] + mu2[z2], 1)`` with L equal for both: each step refreshes its own
    means only, and the joint posterior of the two partitions is exact."""
    with pm.Model() as model:
        z1 = pmc.CRP("z1", 1.0, 0.0, max_clusters=N4, n=N4)
        z2 = pmc.CRP("z2", 0.7, 0.0, max_clusters=N4, n=N4)
        mu1 = pm.Normal("mu1", 0.0, TAU, shape=N4)
        mu2 = pm.Normal("mu2", 0.0, 1.0, shape=N4)
        pm.Normal("y", mu1[z1] + mu2[z2], 0.7, observed=Y4)
    assert slot_param_names(model, "z1") == ["mu1"]  # not mu2: its rows follow z2
    assert slot_param_names(model, "z2") == ["mu2"]
    with model:
        steps = [pmc.CRPGibbs([z1]), pmc.CRPGibbs([z2])]
    idata = sample_model(model, {"draws": 2000, "tune": 500, "chains": 2}, seed=54, step=steps)
    parts = list(set_partitions(N4))
    pairs = [(a, b) for a in parts for b in parts]

    def log_weight(pair):
        a, b = pair
        cov = 0.49 * np.eye(N4) + TAU**2 * co_clustering_indicator(a, N4)
        cov += co_clustering_indicator(b, N4)
        prior = crp_prior(1.0)(a) * crp_prior(0.7)(b)
        return math.log(prior) + gaussian_log_density(Y4, cov)

    probs = exact_posterior_over(pairs, log_weight)
    iu = np.triu_indices(N4, 1)
    for which, name in [(0, "z1"), (1, "z2")]:
        co = sum(
            p * co_clustering_indicator(pair[which], N4)
            for pair, p in zip(pairs, probs, strict=True)
        )
        z = idata.posterior[name].values
        same = (z[..., :, None] == z[..., None, :])[..., iu[0], iu[1]].astype(float)
        ratio, est = discrepancy(same, co[iu])
        assert ratio.max() < 1, f"{name}: {np.round(est, 3)} vs {np.round(co[iu], 3)}"


def test_piecewise_constant_slot_parameters_are_refreshed():
    """Utilities of partial orders enter the list likelihood only through their order: the
    probe moves each row by independent noise (a common shift would change no order)."""
    lists = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2], [2, 0, 1], [1, 2]]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=2, max_clusters=3)
    assert slot_param_names(model, "cluster") == ["U"]


# --------------------------------------------------------------------------------------------
# 2. A transform that couples the rows (ordered means)
# --------------------------------------------------------------------------------------------
def test_ordered_means_run_and_match_exact():
    """Ordered slot means are left to NUTS (no refresh through the ordered transform); the
    partition posterior equals the unordered model's (the ordering only names the slots)."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=N5, n=N5)
        mu = pm.Normal(
            "mu",
            0.0,
            TAU,
            shape=N5,
            transform=pm.distributions.transforms.ordered,
            initval=np.linspace(-2.0, 2.0, N5),
        )
        pm.Normal("y", mu[z], 1.0, observed=Y5)
    assert slot_param_names(model) == []
    idata = sample_model(model, FAST, seed=55)
    assert np.all(np.diff(idata.posterior["mu"].values, axis=-1) > 0)
    parts, probs = exact_partition_posterior(
        N5, crp_prior(), lambda b: normal_block_log_marginal(Y5[b], 1.0, TAU)
    )
    assert_matches_exact(idata, *exact_from_partitions(parts, probs, N5), what="ordered")


# --------------------------------------------------------------------------------------------
# 3. A sharp locality check
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", ["reversed", "sorted"])
@pytest.mark.parametrize("refresh", [True, False])
def test_labels_other_than_own_are_refused(index, refresh):
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=N5, n=N5)
        mu = pm.Normal("mu", 0.0, TAU, shape=N5)
        labels = z[::-1] if index == "reversed" else pt.sort(z)
        pm.Normal("y", mu[labels], 1.0, observed=Y5)
    with model, pytest.raises(ValueError, match="depends on labels other than z"):
        pmc.CRPGibbs([z], refresh_empty_slots=refresh)


def test_observations_that_do_not_line_up_with_the_labels_are_refused():
    """A partly masked (N, 2) array with N missing and N observed entries, unevenly per row:
    PyMC splits it into flat observed and missing vectors of length N whose elements are not
    one per label, so the locality check must refuse them (not mis-assign rows to labels)."""
    mask = np.array([[True, True], [True, False], [False, True], [True, False], [False, False]])
    data = np.ma.masked_array(np.column_stack([Y5, Y5 + 1.0]), mask=mask)
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=N5, n=N5)
        mu = pm.Normal("mu", 0.0, TAU, shape=N5)
        with pytest.warns(UserWarning):  # PyMC's ImputationWarning
            pm.Normal("y", mu[z][:, None] + np.array([0.0, 1.0]), 1.0, observed=data)
    with model, pytest.raises(ValueError, match="do not line up with the labels"):
        pmc.CRPGibbs([z])


# --------------------------------------------------------------------------------------------
# 4. Observed labels through pm.Data
# --------------------------------------------------------------------------------------------
def concentration_posterior_mean(n: int, k: int, shape=2.0, rate=1.0) -> float:
    """E[alpha | K = k] for alpha ~ Gamma(shape, rate) and an untruncated DP partition."""
    sizes = (n - k + 1,) + (1,) * (k - 1)
    pdf = stats.gamma(shape, scale=1.0 / rate).pdf
    mass = mixed_over_parameter(lambda t: eppf(sizes, t, 0.0), pdf)
    return mixed_over_parameter(lambda t: t * eppf(sizes, t, 0.0), pdf) / mass


def test_observed_labels_in_pm_data_with_gamma_concentration():
    labels = np.array([0, 0, 1, 2, 1, 0])
    with pm.Model() as model:
        data = pm.Data("labels", labels)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pmc.CRP("z", alpha, max_clusters=6, n=6, observed=data)
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert set(selected) == {pmc.ConcentrationGibbs}
    for observed, seed in [(labels, 1), (np.array([0, 1, 2, 3, 4, 4]), 2)]:
        pm.set_data({"labels": observed}, model=model)
        with model:
            idata = pm.sample(
                2000, tune=200, chains=2, random_seed=seed, progressbar=False,
                compute_convergence_checks=False,
            )  # fmt: skip
        draws = idata.posterior["alpha"].values
        exact = concentration_posterior_mean(6, len(np.unique(observed)))
        assert abs(z_scores(draws, exact, indicators=False)) < 4.5, (draws.mean(), exact)


def test_observed_labels_out_of_range_are_refused():
    with pm.Model(), pytest.raises(ValueError, match="observed labels of z must lie in 0..5"):
        pmc.CRP("z", 1.0, max_clusters=6, n=6, observed=pm.Data("d", np.array([0, 1, 7, 0, 1, 2])))
    with pm.Model() as model:
        data = pm.Data("d", np.array([0, 1, 2, 0, 1, 2]))
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pmc.CRP("z", alpha, max_clusters=6, n=6, observed=data)
    pm.set_data({"d": np.array([0, 1, 9, 0, 1, 2])}, model=model)
    with model:
        step = pmc.ConcentrationGibbs([alpha])
    with pytest.raises(ValueError, match="observed labels must lie in 0..5"):
        step.step(model.initial_point(random_seed=0))


# --------------------------------------------------------------------------------------------
# 5. Rao--Blackwellised membership probabilities after relabelling
# --------------------------------------------------------------------------------------------
Y11 = np.array([-2.2, -1.9, -1.5, -0.4, 0.0, 0.3, 0.6, 1.8, 2.1, 2.4, 3.0])


@pytest.fixture(scope="module")
def membership_chain():
    n = Y11.size
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=n, n=n)
        mu = pm.Normal("mu", 0.0, TAU, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y11)
    with model:
        step = pmc.CRPGibbs([z], membership_probs=True)
    return sample_model(model, {"draws": 3000, "tune": 500, "chains": 1}, seed=3, step=[step])


def paired_z_scores(diffs):
    """``mean / MCSE`` of each column of per-draw paired differences ``(draws, q)`` (0 for a
    column that never differs)."""
    se = standard_errors(diffs[None])
    se = np.where((diffs.std(axis=0) > 0) & (se > 0), se, np.inf)
    return np.abs(diffs.mean(axis=0)) / se


def test_rao_blackwellised_memberships_match_frequencies_after_relabelling(membership_chain):
    idata = membership_chain
    _, _, flat, n_slots, pivot = _prepare(idata, "z", (), "ecr", None, None, "membership_probs")
    perm = ecr_permutations(flat, pivot, n_slots)
    n_items = flat.shape[1]
    member = _membership_stat(idata, "membership_probs", None, n_items=n_items).values
    member = member.reshape(-1, n_items, n_slots)
    diffs = np.empty((flat.shape[0], n_items, n_slots))
    for s in range(flat.shape[0]):
        rb = _rao_blackwell_ecr(flat[s : s + 1], member[s : s + 1], pivot, perm[s : s + 1])
        freq = np.zeros((n_items, n_slots))
        freq[np.arange(n_items), perm[s][flat[s]]] = 1.0
        diffs[s] = rb - freq
    assert paired_z_scores(diffs.reshape(len(diffs), -1)).max() < 4.5
    # the public function returns the mean of the Rao--Blackwellised terms
    rb = pmc.membership_probabilities(idata, "z")
    freq = pmc.membership_probabilities(idata, "z", rao_blackwell=False)
    k = min(rb.shape[1], freq.shape[1])
    np.testing.assert_allclose(rb[:, :k], (freq + diffs.mean(axis=0))[:, :k], atol=1e-9)
    # the old estimator (each draw's own permutation for every candidate) is biased here
    biased = np.zeros((n_items, n_slots))
    for s in range(flat.shape[0]):
        biased[:, perm[s]] += member[s]
    assert freq[0, 0] - biased[0, 0] / flat.shape[0] > 0.03


def test_rao_blackwellised_memberships_match_frequencies_without_relabelling(membership_chain):
    idata = membership_chain
    z = idata.posterior["z"].values.reshape(-1, Y11.size)
    member = _membership_stat(idata, "membership_probs", None, n_items=Y11.size).values
    member = member.reshape(len(z), Y11.size, -1)
    onehot = np.zeros_like(member)
    np.put_along_axis(onehot, z[:, :, None], 1.0, axis=2)
    assert paired_z_scores((member - onehot).reshape(len(z), -1)).max() < 4.5
    np.testing.assert_allclose(
        pmc.membership_probabilities(idata, "z", method=None)[:, :3],
        member.mean(axis=0)[:, :3],
        atol=1e-12,
    )


# --------------------------------------------------------------------------------------------
# 6. Truncated CRP with a random concentration
# --------------------------------------------------------------------------------------------
def truncated_flat_model():
    """``theta ~ Gamma(2, 1)``, ``z ~ CRP(theta)`` with L = 2 < n = 8, a flat likelihood."""
    with pm.Model() as model:
        theta = pm.Gamma("theta", 2.0, 1.0)
        z = pmc.CRP("z", theta, 0.0, max_clusters=2, n=8)
        pm.Normal("y", pt.zeros(2)[z], 1.0, observed=np.zeros(8))
    return model


def exact_truncated_prior():
    """E[theta] and P(K = 1) under the joint prior (the posterior of the flat model)."""
    pdf = stats.gamma(2.0).pdf

    def p_one_block(theta):
        return truncated_crp_partition_prob([8], theta, 0.0, 2)

    return 2.0, mixed_over_parameter(p_one_block, pdf)


@pytest.mark.parametrize("sampler", ["default", "nuts"])
def test_truncated_crp_with_random_concentration_is_one_distribution(sampler):
    model = truncated_flat_model()
    mean_theta, p_k1 = exact_truncated_prior()
    step = None
    if sampler == "nuts":
        with model:
            step = [pm.NUTS([model["theta"]]), pmc.CRPGibbs([model["z"]])]
    idata = sample_model(model, {"draws": 3000, "tune": 500, "chains": 2}, seed=61, step=step)
    theta = idata.posterior["theta"].values
    k1 = (idata.posterior["z"].values.std(axis=-1) == 0).astype(float)
    assert abs(z_scores(theta, mean_theta, indicators=False)) < 4.5, (theta.mean(), mean_theta)
    assert abs(z_scores(k1, p_k1)) < 4.5, (k1.mean(), p_k1)
    # prior predictive draws agree with the same numbers
    prior = pm.sample_prior_predictive(4000, model=model, random_seed=62).prior
    assert abs(prior["theta"].values.mean() - mean_theta) < 4.5 * math.sqrt(2.0 / 4000)
    pk1 = (prior["z"].values.std(axis=-1) == 0).mean()
    assert abs(pk1 - p_k1) < 4.5 * math.sqrt(p_k1 * (1 - p_k1) / 4000)


def test_truncated_crp_density_is_normalised_over_label_vectors():
    """Σ_c p(c | theta, d) = 1 over all L^n label vectors, for several theta and d."""
    import itertools

    values = np.array(list(itertools.product(range(2), repeat=6)))
    for theta, d in [(0.4, 0.0), (2.5, 0.0), (0.8, 0.3), (-0.2, 0.5)]:
        rv = pmc.CRP.dist(theta, d, max_clusters=2, n=6, shape=values.shape)
        total = np.exp(pm.logp(rv, values).eval()).sum()
        assert total == pytest.approx(1.0, abs=1e-12)


# --------------------------------------------------------------------------------------------
# 7. Messages, and observations laid out (T, N)
# --------------------------------------------------------------------------------------------
def test_missing_values_give_a_clear_error():
    y = np.array([-2.1, -1.8, np.nan, 0.3, 2.2, 2.5])
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=6, n=6)
        mu = pm.Normal("mu", 0.0, TAU, shape=6)
        pm.Normal("y", mu[z], 1.0, observed=y)
    with model, pytest.raises(ValueError, match="automatic imputation of missing values"):
        pmc.CRPGibbs([z])


def test_observations_laid_out_time_by_item_match_exact():
    """``y`` of shape (T, N) with the labels on the last axis: a legitimate model."""
    y = np.array([[-2.0, -1.7, 0.4, 2.1, 2.6], [-2.3, -1.5, 0.1, 2.4, 2.2]])
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, 0.0, max_clusters=N5, n=N5)
        mu = pm.Normal("mu", 0.0, TAU, shape=N5)
        pm.Normal("y", mu[z], 1.0, observed=y)
    assert slot_param_names(model) == ["mu"]
    idata = sample_model(model, FAST, seed=71)
    parts, probs = exact_partition_posterior(
        N5, crp_prior(), lambda b: normal_block_log_marginal(y[:, b].ravel(), 1.0, TAU)
    )
    assert_matches_exact(idata, *exact_from_partitions(parts, probs, N5), what="(T, N)")
