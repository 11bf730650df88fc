"""The auxiliary-slot label sweep's kernel against an enumerated partition posterior.

A mixture whose slot parameter takes one of three values (a discrete base measure), so that
the posterior of the partition is exact by enumeration: each block's marginal likelihood is a
sum over the three values. The driver below carries the auxiliaries and the spares across the
sweeps of a step as the label step of clustered partial orders does, and draws each occupied
slot's parameter from its exact conditional between steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from mc_checks import z_scores
from oracles import cluster_count_probs, co_clustering_matrix, eppf, exact_partition_posterior
from scipy.special import logsumexp

from pymc_crp.core.aux_label_sweep import (
    BORN_FROM,
    N_SPARE,
    SweepState,
    aux_label_sweep,
    new_cluster_weights,
)

BASE = np.array([0.5, 0.3, 0.2])  # prior of the slot parameter's three values
# log f(y_i | value): pairs of observations prefer each value, the last one none of them
LOGLIK = np.log(
    np.array(
        [
            [0.8, 0.1, 0.1],
            [0.7, 0.2, 0.1],
            [0.1, 0.8, 0.1],
            [0.2, 0.7, 0.1],
            [0.1, 0.1, 0.8],
            [0.3, 0.3, 0.4],
        ]
    )
)
N_OBS = LOGLIK.shape[0]


def exact_posterior(theta, discount):
    """Co-clustering and ``P(K = k)`` by enumeration of the partitions."""
    parts, probs = exact_partition_posterior(
        N_OBS,
        lambda blocks: eppf([len(b) for b in blocks], theta, discount),
        lambda block: logsumexp(np.log(BASE) + LOGLIK[list(block)].sum(axis=0)),
    )
    return co_clustering_matrix(parts, probs, N_OBS), cluster_count_probs(parts, probs, N_OBS)


def run_chain(seed, n_steps, n_aux, sweeps, theta, discount, n_slots=8):
    """Label vectors after each step of the driver of the module docstring."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(N_OBS, dtype=np.int64)
    values = rng.choice(3, size=n_slots, p=BASE)  # slot parameters
    weights = new_cluster_weights(theta, discount, n_slots)
    logw = np.empty(n_slots + n_aux)
    out = np.empty((n_steps, N_OBS), dtype=np.int64)
    for step in range(n_steps):
        for slot in np.unique(labels):  # exact conditional of an occupied slot's parameter
            log_post = np.log(BASE) + LOGLIK[labels == slot].sum(axis=0)
            post = np.exp(log_post - log_post.max())
            values[slot] = rng.choice(3, p=post / post.sum())
        aux = rng.choice(3, size=n_aux, p=BASE).astype(np.float64)[:, None]
        spares = np.zeros((n_aux, 1))
        n_spare = 0
        for _ in range(sweeps):  # the auxiliaries and spares carried from sweep to sweep
            params = values.astype(np.float64)[:, None]
            ll = LOGLIK[:, values].copy()
            aux_ll = LOGLIK[:, aux[:, 0].astype(np.int64)].copy()
            spare_ll = LOGLIK[:, spares[:, 0].astype(np.int64)].copy()
            sweep = SweepState(labels, n_slots)
            sweep.state[N_SPARE] = n_spare
            order = rng.permutation(N_OBS).astype(np.int64)
            uniforms = rng.random((N_OBS, 3))
            born = np.zeros(n_slots, dtype=np.bool_)
            position = 0
            while position < N_OBS:
                sweep.state[BORN_FROM] = -1
                position = aux_label_sweep(
                    ll, aux_ll, params, aux, labels, sweep.counts, sweep.occupied, sweep.free,
                    sweep.where, sweep.state, order, position, uniforms, weights, discount,
                    logw, spare_ll, spares, born,
                )  # fmt: skip
                t = int(sweep.state[BORN_FROM])
                if t >= 0:  # a new cluster took auxiliary t and no spare was left
                    aux[t, 0] = rng.choice(3, p=BASE)
                    aux_ll[:, t] = LOGLIK[:, int(aux[t, 0])]
            values = params[:, 0].astype(np.int64)
            n_spare = int(sweep.state[N_SPARE])
        out[step] = labels
    return out


@pytest.mark.parametrize(("n_aux", "discount"), [(1, 0.0), (2, 0.4)])
def test_reused_auxiliaries_and_spares_match_enumeration(n_aux, discount):
    """The partition's co-clustering and number of clusters within ``4.5`` standard errors of
    the enumerated posterior (4 chains of 20,000 steps of 4 sweeps each)."""
    theta = 1.0
    co, k_probs = exact_posterior(theta, discount)
    z = np.stack([run_chain(seed, 20_000, n_aux, 4, theta, discount) for seed in range(4)])
    bad = []
    for i in range(N_OBS):
        for j in range(i + 1, N_OBS):
            score = z_scores((z[..., i] == z[..., j]).astype(float), co[i, j])
            if abs(score) > 4.5:
                bad.append((i, j, float(score)))
    n_clusters = np.array([[np.unique(r).size for r in chain] for chain in z])
    for k in range(1, N_OBS + 1):
        score = z_scores((n_clusters == k).astype(float), k_probs[k])
        if abs(score) > 4.5:
            bad.append(("K", k, float(score)))
    assert not bad
