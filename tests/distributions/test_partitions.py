"""Tests of the partition priors (CRP, DirichletMultinomialPartition) against oracles."""

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from oracles import (
    all_label_vectors,
    crp_label_prob,
    dirichlet_multinomial_label_prob,
    exact_cluster_count_distribution,
)
from pymc.logprob.utils import ParameterValueError
from scipy import stats

import pymc_crp as pmc
from pymc_crp.core.partition_math import (
    crp_conditional_weights,
    crp_label_log_prob,
    dirichlet_multinomial_conditional_weights,
    dirichlet_multinomial_label_log_prob,
    relabel_by_appearance,
    slot_counts,
)

PY_PARAMS = [(1.0, 0.0), (0.5, 0.0), (2.5, 0.3), (-0.2, 0.5), (0.1, 0.9)]


def batched_logp(dist, values):
    """Log-density of many label vectors in one graph evaluation."""
    value = pt.matrix("value", dtype="int64")
    fn = pytensor.function([value], pm.logp(dist, value))
    return fn(values)


# --------------------------------------------------------------------------------------------
# Exact values
# --------------------------------------------------------------------------------------------
def test_dirichlet_multinomial_worked_example():
    labels = np.array([0, 0, 1, 2, 1])
    rv = pmc.DirichletMultinomialPartition.dist(1.0, n_groups=3, n=5)
    value = np.exp(pm.logp(rv, labels).eval())
    assert value == pytest.approx(5.49e-4, rel=1e-3)
    assert value == pytest.approx(dirichlet_multinomial_label_prob(labels, 1.0, 3), rel=1e-12)
    assert np.exp(dirichlet_multinomial_label_log_prob(labels, 1.0, 3)) == pytest.approx(value)


@pytest.mark.parametrize("theta, d", PY_PARAMS)
def test_crp_label_vectors_sum_to_one(theta, d):
    n = 5
    values = all_label_vectors(n, n)
    rv = pmc.CRP.dist(theta, d, max_clusters=n, n=n, shape=values.shape)
    total = np.exp(batched_logp(rv, values)).sum()
    assert total == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("gamma, n_groups", [(1.0, 3), (0.3, 4), (7.0, 2)])
def test_dirichlet_multinomial_label_vectors_sum_to_one(gamma, n_groups):
    n = 5
    values = all_label_vectors(n, n_groups)
    rv = pmc.DirichletMultinomialPartition.dist(gamma, n_groups=n_groups, n=n, shape=values.shape)
    assert np.exp(batched_logp(rv, values)).sum() == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("theta, d", PY_PARAMS)
def test_crp_logp_matches_closed_form_on_random_labels(theta, d):
    rng = np.random.default_rng(11)
    n, n_slots = 9, 12
    values = rng.integers(0, n_slots, size=(40, n))
    values[:5] = rng.integers(0, 2, size=(5, n))  # few clusters
    rv = pmc.CRP.dist(theta, d, max_clusters=n_slots, n=n, shape=values.shape)
    got = batched_logp(rv, values)
    want = np.log([crp_label_prob(v, theta, d, n_slots) for v in values])
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(
        [crp_label_log_prob(v, theta, d, n_slots) for v in values], want, rtol=1e-10
    )


def test_dirichlet_multinomial_logp_matches_closed_form():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 4, size=(30, 8))
    rv = pmc.DirichletMultinomialPartition.dist(1.7, n_groups=4, n=8, shape=values.shape)
    want = np.log([dirichlet_multinomial_label_prob(v, 1.7, 4) for v in values])
    np.testing.assert_allclose(batched_logp(rv, values), want, rtol=1e-10)


def test_dirichlet_multinomial_tends_to_crp_for_many_groups():
    """A -> infinity: the induced partition probability tends to the CRP's EPPF."""
    labels = np.array([0, 0, 1, 2, 1, 0])
    n_groups = 100_000
    counts = slot_counts(labels, 3)
    log_partition_dm = dirichlet_multinomial_label_log_prob(labels, 1.3, n_groups) + math.log(
        math.perm(n_groups, 3)
    )
    log_partition_crp = crp_label_log_prob(labels, 1.3, 0.0, 6) + math.log(math.perm(6, 3))
    assert counts.sum() == 6
    assert log_partition_dm == pytest.approx(log_partition_crp, abs=1e-3)


# --------------------------------------------------------------------------------------------
# Random draws
# --------------------------------------------------------------------------------------------
def _chi_square_pvalue(observed_counts, probs):
    expected = probs * observed_counts.sum()
    return stats.chisquare(observed_counts, expected).pvalue


@pytest.mark.parametrize("theta, d", [(1.0, 0.0), (0.7, 0.4)])
def test_crp_draws_number_of_clusters_matches_eppf(theta, d):
    n, n_draws = 6, 20_000
    rv = pmc.CRP.dist(theta, d, max_clusters=n, n=n)
    draws = pm.draw(rv, n_draws, random_seed=2024)
    k = np.array([len(np.unique(row)) for row in draws])
    exact = exact_cluster_count_distribution(n, theta, d)
    probs = np.array([exact[j] for j in range(1, n + 1)])
    freq = np.bincount(k, minlength=n + 1)[1:]
    # Each frequency within 4.5 Monte Carlo standard errors, and a global chi-square test.
    se = np.sqrt(probs * (1 - probs) / n_draws)
    assert np.all(np.abs(freq / n_draws - probs) < 4.5 * se + 1e-12)
    assert _chi_square_pvalue(freq, probs) > 1e-3
    mean_k = k.mean()
    assert mean_k == pytest.approx(np.dot(np.arange(1, n + 1), probs), abs=4.5 * k.std() / 141)


def test_crp_draws_follow_label_vector_density():
    """Draws are exact for the label-vector density (slots uniformly placed), not only for K."""
    n, n_slots, n_draws = 4, 4, 20_000
    rv = pmc.CRP.dist(1.2, 0.2, max_clusters=n_slots, n=n)
    draws = pm.draw(rv, n_draws, random_seed=5)
    codes = draws @ (n_slots ** np.arange(n)[::-1])
    values = all_label_vectors(n, n_slots)
    probs = np.array([crp_label_prob(v, 1.2, 0.2, n_slots) for v in values])
    freq = np.bincount(codes, minlength=n_slots**n)
    assert _chi_square_pvalue(freq, probs) > 1e-3


def test_truncated_crp_draws_are_conditioned_on_max_clusters():
    """With L < N draws follow the CRP conditioned on K <= L (exact h-transform)."""
    n, n_slots, n_draws = 6, 2, 20_000
    theta, d = 3.0, 0.25
    rv = pmc.CRP.dist(theta, d, max_clusters=n_slots, n=n)
    draws = pm.draw(rv, n_draws, random_seed=9)
    values = all_label_vectors(n, n_slots)
    probs = np.array([crp_label_prob(v, theta, d, n_slots) for v in values])
    probs /= probs.sum()
    codes = draws @ (n_slots ** np.arange(n)[::-1])
    freq = np.bincount(codes, minlength=n_slots**n)
    assert _chi_square_pvalue(freq, probs) > 1e-3


def test_dirichlet_multinomial_draws_follow_density():
    n, n_groups, n_draws = 4, 3, 20_000
    rv = pmc.DirichletMultinomialPartition.dist(0.8, n_groups=n_groups, n=n)
    draws = pm.draw(rv, n_draws, random_seed=17)
    values = all_label_vectors(n, n_groups)
    probs = np.array([dirichlet_multinomial_label_prob(v, 0.8, n_groups) for v in values])
    codes = draws @ (n_groups ** np.arange(n)[::-1])
    freq = np.bincount(codes, minlength=n_groups**n)
    assert _chi_square_pvalue(freq, probs) > 1e-3


def test_batched_parameters_and_size():
    rv = pmc.CRP.dist(np.array([0.5, 50.0]), max_clusters=30, n=30, size=(500, 2))
    draws = pm.draw(rv, random_seed=1)
    assert draws.shape == (500, 2, 30)
    k = np.array([[len(np.unique(x)) for x in row] for row in draws])
    assert k[:, 0].mean() < 3 < 15 < k[:, 1].mean()  # E[K] is 2.9 and 17.1
    dm = pmc.DirichletMultinomialPartition.dist(np.array([1.0, 2.0, 3.0]), n_groups=4, n=7)
    assert pm.draw(dm, random_seed=1).shape == (3, 7)


def test_draws_are_reproducible_and_seed_dependent():
    rv = pmc.CRP.dist(1.0, max_clusters=20, n=50)
    a = pm.draw(rv, 3, random_seed=7)
    b = pm.draw(rv, 3, random_seed=7)
    c = pm.draw(rv, 3, random_seed=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_relabel_by_appearance():
    np.testing.assert_array_equal(relabel_by_appearance([5, 5, 2, 7, 2]), [0, 0, 1, 2, 1])
    np.testing.assert_array_equal(
        relabel_by_appearance(np.array([[3, 1, 3], [0, 0, 2]])), [[0, 1, 0], [0, 0, 1]]
    )


# --------------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------------
def test_gradient_matches_finite_differences():
    theta, d = pt.dscalar("theta"), pt.dscalar("d")
    labels = np.array([0, 0, 3, 1, 1, 1, 4, 0, 2])
    rv = pmc.CRP.dist(theta, d, max_clusters=6, n=labels.size)
    logp = pm.logp(rv, labels)
    fn = pytensor.function([theta, d], [logp, *pytensor.grad(logp, [theta, d])])
    for t0, d0 in [(1.3, 0.0), (0.8, 0.35), (-0.1, 0.4)]:
        _, g_theta, g_d = fn(t0, d0)
        h = 1e-6
        fd_theta = (fn(t0 + h, d0)[0] - fn(t0 - h, d0)[0]) / (2 * h)
        fd_d = (fn(t0, d0 + h)[0] - fn(t0, d0 - h if d0 > 0 else d0)[0]) / (2 * h if d0 > 0 else h)
        assert g_theta == pytest.approx(fd_theta, rel=1e-5)
        assert g_d == pytest.approx(fd_d, rel=1e-4)
        assert np.isfinite(g_theta) and np.isfinite(g_d)

    gamma = pt.dscalar("gamma")
    dm = pmc.DirichletMultinomialPartition.dist(gamma, n_groups=4, n=labels.size)
    logp = pm.logp(dm, np.minimum(labels, 3))
    f = pytensor.function([gamma], [logp, pytensor.grad(logp, gamma)])
    fd = (f(2.0 + 1e-6)[0] - f(2.0 - 1e-6)[0]) / 2e-6
    assert f(2.0)[1] == pytest.approx(fd, rel=1e-5)


def test_nuts_can_sample_concentration_and_discount():
    labels = np.array([0, 0, 1, 1, 1, 2, 0, 3])
    with pm.Model() as model:
        theta = pm.Gamma("theta", 2.0, 1.0)
        d = pm.Beta("d", 1.0, 3.0)
        pmc.CRP("z", theta, d, max_clusters=8, observed=labels)
    dlogp = model.compile_dlogp()
    grad = dlogp(model.initial_point(random_seed=0))
    assert grad.shape == (2,) and np.all(np.isfinite(grad))
    assert model.compile_logp()(model.initial_point(random_seed=0)) > -np.inf


# --------------------------------------------------------------------------------------------
# Conditional weights of one label
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("theta, d", [(1.0, 0.0), (0.6, 0.3)])
def test_crp_conditional_weights_match_joint_ratios(theta, d):
    rng = np.random.default_rng(1)
    n_slots = 6
    for _ in range(10):
        labels = rng.integers(0, 3, size=7)
        e = 2
        joint = []
        for j in range(n_slots):
            lab = labels.copy()
            lab[e] = j
            joint.append(crp_label_prob(lab, theta, d, n_slots))
        joint = np.array(joint) / np.sum(joint)
        counts = np.bincount(np.delete(labels, e), minlength=n_slots)
        np.testing.assert_allclose(crp_conditional_weights(counts, theta, d), joint, rtol=1e-10)


def test_dirichlet_multinomial_conditional_weights_match_joint_ratios():
    labels = np.array([0, 2, 2, 1, 0, 2])
    e, n_groups, gamma = 4, 4, 1.5
    joint = []
    for a in range(n_groups):
        lab = labels.copy()
        lab[e] = a
        joint.append(dirichlet_multinomial_label_prob(lab, gamma, n_groups))
    joint = np.array(joint) / np.sum(joint)
    counts = np.bincount(np.delete(labels, e), minlength=n_groups)
    np.testing.assert_allclose(
        dirichlet_multinomial_conditional_weights(counts, gamma), joint, rtol=1e-12
    )


def test_crp_conditional_weights_full_slots_give_no_new_cluster():
    weights = crp_conditional_weights(np.array([2, 1, 3]), 1.0, 0.2)
    assert np.all(weights > 0)
    np.testing.assert_allclose(weights, np.array([1.8, 0.8, 2.8]) / 5.4)


# --------------------------------------------------------------------------------------------
# Models: observed, dims, prior predictive
# --------------------------------------------------------------------------------------------
def test_model_features():
    coords = {"obs": np.arange(6)}
    with pm.Model(coords=coords) as model:
        theta = pm.Gamma("theta", 1.0, 1.0)
        z = pmc.CRP("z", theta, max_clusters=6, dims="obs")
        pmc.DirichletMultinomialPartition("w", 1.0, n_groups=3, observed=[0, 1, 1, 2])
    assert model.initial_point(random_seed=0)["z"].tolist() == [0] * 6
    assert z.type.dtype == "int64"
    prior = pm.sample_prior_predictive(draws=50, model=model, random_seed=1).prior
    assert prior["z"].dims == ("chain", "draw", "obs")
    assert prior["z"].values.max() < 6
    logp = model.compile_logp()(model.initial_point(random_seed=0))
    assert np.isfinite(logp)


# --------------------------------------------------------------------------------------------
# Invalid parameters and values
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"concentration": 1.0, "discount": -0.1}, ValueError, "discount"),
        ({"concentration": 1.0, "discount": 1.0}, ValueError, "discount"),
        ({"concentration": 0.0, "discount": 0.0}, ValueError, "concentration"),
        ({"concentration": -0.5, "discount": 0.3}, ValueError, "concentration"),
        ({"concentration": np.nan, "discount": 0.0}, ValueError, "concentration"),
        ({"concentration": 1.0, "max_clusters": 0}, ValueError, "max_clusters"),
        ({"concentration": 1.0, "max_clusters": 2.5}, TypeError, "max_clusters"),
        ({"concentration": 1.0, "n": -1}, ValueError, "n"),
    ],
)
def test_crp_invalid_parameters(kwargs, error, match):
    args = {"max_clusters": 5, "n": 4, **kwargs}
    with pytest.raises(error, match=match):
        pmc.CRP.dist(**args)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"gamma": 0.0}, ValueError, "gamma"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"gamma": 1.0, "n_groups": 0}, ValueError, "n_groups"),
        ({"gamma": 1.0, "n_groups": "3"}, TypeError, "n_groups"),
    ],
)
def test_dirichlet_multinomial_invalid_parameters(kwargs, error, match):
    args = {"n_groups": 3, "n": 4, **kwargs}
    with pytest.raises(error, match=match):
        pmc.DirichletMultinomialPartition.dist(**args)


@pytest.mark.parametrize(
    "observed, error",
    [([0, 1, 5], ValueError), ([0, -1, 1], ValueError), ([0.0, 1.5, 1.0], ValueError)],
)
def test_invalid_observed_labels(observed, error):
    with pm.Model():
        with pytest.raises(error, match="observed"):
            pmc.CRP("z", 1.0, max_clusters=5, observed=observed)
        with pytest.raises(error, match="observed"):
            pmc.DirichletMultinomialPartition("w", 1.0, n_groups=5, observed=observed)


def test_invalid_values_give_minus_inf_not_nan():
    crp = pmc.CRP.dist(1.0, 0.2, max_clusters=4, n=3)
    dm = pmc.DirichletMultinomialPartition.dist(1.0, n_groups=4, n=3)
    for bad in ([0, 4, 1], [-1, 0, 0], [9, 9, 9]):
        assert pm.logp(crp, np.array(bad)).eval() == -np.inf
        assert pm.logp(dm, np.array(bad)).eval() == -np.inf


def test_invalid_symbolic_parameters():
    """Invalid parameters reaching logp as values: an error in pm.logp, -inf in a model."""
    theta = pt.dscalar("theta")
    rv = pmc.CRP.dist(theta, 0.5, max_clusters=3, n=3)
    fn = pytensor.function([theta], pm.logp(rv, np.array([0, 1, 1])))
    with pytest.raises(ParameterValueError, match="concentration > -discount"):
        fn(-0.7)
    with pm.Model() as model:
        t = pm.Normal("t", 0.0, 1.0)
        pmc.CRP("z", t, 0.5, max_clusters=3, observed=[0, 1, 1])
    logp = model.compile_logp()
    assert logp({"t": -0.7}) == -np.inf
    assert np.isfinite(logp({"t": 0.3}))
