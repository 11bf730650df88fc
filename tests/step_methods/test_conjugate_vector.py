"""Tests of the vector-valued conjugate slot parameters: multivariate normal means and
Dirichlet--categorical probabilities (see test_conjugate.py for the method)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
from oracles import (
    cluster_count_probs,
    co_clustering_matrix,
    dirichlet_categorical_block_log_marginal,
    eppf,
    exact_partition_posterior,
    mvnormal_block_log_marginal,
)
from scipy import stats
from test_conjugate import discrepancy, sample

import pymc_crp as pmc

# --------------------------------------------------------------------------------------------
# Multivariate normal means
# --------------------------------------------------------------------------------------------
Y_2D = np.array([[-2.0, 1.5], [-1.6, 1.9], [0.1, -0.3], [1.8, -2.2], [2.3, -1.7]])
SIGMA_2D = np.array([[1.0, 0.3], [0.3, 0.6]])
PRIOR_COV_2D = np.array([[9.0, -2.0], [-2.0, 4.0]])
PRIOR_MEAN_2D = np.array([0.5, -0.5])


def mvnormal_model(labels=None, n_slots=5):
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=n_slots, n=5, observed=labels)
        mu = pm.MvNormal("phi", PRIOR_MEAN_2D, cov=PRIOR_COV_2D, shape=(n_slots, 2))
        pm.MvNormal("y", mu[z], cov=SIGMA_2D, observed=Y_2D)
    return model


def test_mvnormal_mean_matches_enumeration():
    model = mvnormal_model()
    from pymc.sampling.mcmc import assign_step_methods

    _, assigned = assign_step_methods(model)
    assert {c.__name__ for c in assigned} == {"ConjugateCRPGibbs"}
    idata = sample(model, seed=4242)

    @functools.cache
    def marginal(block):
        return mvnormal_block_log_marginal(Y_2D[list(block)], SIGMA_2D, PRIOR_MEAN_2D,
                                           PRIOR_COV_2D)  # fmt: skip

    parts, probs = exact_partition_posterior(
        5, lambda blocks: eppf([len(b) for b in blocks], 1.0, 0.0), lambda b: marginal(tuple(b))
    )
    co, k = co_clustering_matrix(parts, probs, 5), cluster_count_probs(parts, probs, 5)
    assert discrepancy(idata, co, k) < 1
    wrong_parts, wrong_probs = exact_partition_posterior(  # prior covariance x 1/9: detected
        5,
        lambda blocks: eppf([len(b) for b in blocks], 1.0, 0.0),
        lambda b: mvnormal_block_log_marginal(
            Y_2D[list(b)], SIGMA_2D, PRIOR_MEAN_2D, PRIOR_COV_2D / 9
        ),  # fmt: skip
    )
    co_w = co_clustering_matrix(wrong_parts, wrong_probs, 5)
    k_w = cluster_count_probs(wrong_parts, wrong_probs, 5)
    assert discrepancy(idata, co_w, k_w) > 1


def test_mvnormal_slot_posterior_given_labels():
    labels = np.array([0, 0, 1, 1, 1])  # slot 2 empty: prior
    idata = sample(mvnormal_model(labels, n_slots=3), seed=99, draws=3000, tune=10)
    phi = idata.posterior["phi"].values.reshape(-1, 3, 2)
    w = np.linalg.inv(SIGMA_2D)
    q = np.linalg.inv(PRIOR_COV_2D)
    for slot in range(3):
        members = Y_2D[labels == slot]
        cov = np.linalg.inv(q + len(members) * w)
        mean = cov @ (q @ PRIOR_MEAN_2D + w @ members.sum(axis=0))
        for d in range(2):
            exact = stats.norm(mean[d], math.sqrt(cov[d, d]))
            assert stats.kstest(phi[:, slot, d], exact.cdf).pvalue > 1e-4, (slot, d)
        # the correlation of the two coordinates is the posterior's (the labels are observed,
        # so every step draws phi afresh from its conditional: independent draws, whose sample
        # correlation has standard error (1 - corr²) / sqrt(n))
        corr = np.corrcoef(phi[:, slot, 0], phi[:, slot, 1])[0, 1]
        want = cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1])
        assert abs(corr - want) < 4.5 * (1 - want**2) / math.sqrt(phi.shape[0])


# --------------------------------------------------------------------------------------------
# Dirichlet--categorical
# --------------------------------------------------------------------------------------------
CATEGORIES = np.array([0, 0, 1, 2, 2, 2])
ALPHA_CAT = np.array([0.5, 1.0, 2.0])


def categorical_model(labels=None, n_slots=6):
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=n_slots, n=6, observed=labels)
        p = pm.Dirichlet("phi", a=ALPHA_CAT, shape=(n_slots, 3))
        pm.Categorical("y", p=p[z], observed=CATEGORIES)
    return model


def test_dirichlet_categorical_matches_enumeration():
    from pymc.sampling.mcmc import assign_step_methods

    model = categorical_model()
    _, assigned = assign_step_methods(model)
    assert {c.__name__ for c in assigned} == {"ConjugateCRPGibbs"}
    idata = sample(model, seed=31)

    def summaries(alpha):
        parts, probs = exact_partition_posterior(
            6,
            lambda blocks: eppf([len(b) for b in blocks], 1.0, 0.0),
            lambda b: dirichlet_categorical_block_log_marginal(CATEGORIES[list(b)], alpha),
        )
        return co_clustering_matrix(parts, probs, 6), cluster_count_probs(parts, probs, 6)

    assert discrepancy(idata, *summaries(ALPHA_CAT)) < 1
    assert discrepancy(idata, *summaries(ALPHA_CAT * 10)) > 1  # a wrong prior is detected


def test_dirichlet_slot_posterior_given_labels():
    labels = np.array([0, 0, 1, 1, 1, 3])  # slot 2 empty: prior
    idata = sample(categorical_model(labels, n_slots=4), seed=5, draws=3000, tune=10)
    phi = idata.posterior["phi"].values.reshape(-1, 4, 3)
    np.testing.assert_allclose(phi.sum(-1), 1.0)
    for slot in range(4):
        post = ALPHA_CAT + np.bincount(CATEGORIES[labels == slot], minlength=3)
        for c in range(3):  # Dirichlet margins are Beta(a_c, sum(a) - a_c)
            exact = stats.beta(post[c], post.sum() - post[c])
            assert stats.kstest(phi[:, slot, c], exact.cdf).pvalue > 1e-4, (slot, c)
