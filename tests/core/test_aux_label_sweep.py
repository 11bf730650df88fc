"""The auxiliary-slot label sweep's kernel against an enumerated partition posterior.

A mixture whose slot parameter takes one of three values (a discrete base measure), so that
the posterior of the partition is exact by enumeration: each block's marginal likelihood is a
sum over the three values. The driver below carries the auxiliaries and the spares across the
sweeps of a step as the label step of clustered partial orders does, and draws each occupied
slot's parameter from its exact conditional between steps.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from mc_checks import z_scores
from oracles import (
    cluster_count_probs,
    co_clustering_matrix,
    crp_label_prob,
    eppf,
    exact_partition_posterior,
)
from scipy.special import logsumexp

from pymc_crp.core.aux_label_sweep import (
    BORN_FROM,
    N_SPARE,
    SPARE_HEAD,
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
        n_spare = head = 0
        for _ in range(sweeps):  # the auxiliaries and spares carried from sweep to sweep
            params = values.astype(np.float64)[:, None]
            ll = LOGLIK[:, values].copy()
            aux_ll = LOGLIK[:, aux[:, 0].astype(np.int64)].copy()
            spare_ll = LOGLIK[:, spares[:, 0].astype(np.int64)].copy()
            sweep = SweepState(labels, n_slots)
            sweep.state[N_SPARE], sweep.state[SPARE_HEAD] = n_spare, head
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
            n_spare, head = int(sweep.state[N_SPARE]), int(sweep.state[SPARE_HEAD])
        out[step] = labels
    return out


@pytest.mark.parametrize(  # one auxiliary, d = 0: slow (45 s); m = 2 and d = 0.4 by default
    ("n_aux", "discount"), [pytest.param(1, 0.0, marks=pytest.mark.slow), (2, 0.4)]
)
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


# One visit enumerated exactly: 3 observations, 3 slots, a slot parameter with two values.
SMALL_BASE = np.array([0.6, 0.4])
SMALL_LOGLIK = np.log(np.array([[0.9, 0.2], [0.3, 0.7], [0.5, 0.45]]))


def small_target(theta, discount, n_slots):
    """``π(c, φ) ∝ P(c) ∏_{occupied j} base(φ_j) ∏_i f(y_i | φ_{c_i})`` over label vectors
    ``c`` (prior ``crp_label_prob``) and the occupied slots' values (empty slots' set to 0)."""
    n_obs = SMALL_LOGLIK.shape[0]
    target = {}
    for labels in itertools.product(range(n_slots), repeat=n_obs):
        occupied = sorted(set(labels))
        for held in itertools.product(range(2), repeat=len(occupied)):
            values = [0] * n_slots
            for slot, value in zip(occupied, held, strict=True):
                values[slot] = value
            weight = crp_label_prob(np.array(labels), theta, discount, n_slots)
            weight *= np.prod(SMALL_BASE[list(held)])
            weight *= np.exp(sum(SMALL_LOGLIK[i, values[c]] for i, c in enumerate(labels)))
            target[(labels, tuple(values))] = weight
    total = sum(target.values())
    return {key: w / total for key, w in target.items()}


def one_visit(key, i, uniforms, theta, discount, n_slots, n_aux):
    """Run the compiled kernel on one visit of observation ``i`` from the extended state
    ``key`` = (labels, slot values, auxiliaries, spares oldest first). Returns the new key,
    the auxiliary the caller must draw afresh (or ``-1``) and the choice weights."""
    labels, values, aux, spares = key
    labels = np.array(labels, dtype=np.int64)
    params = np.array(values, dtype=np.float64)[:, None]
    ll = SMALL_LOGLIK[:, list(values)].copy()
    aux_params = np.array(aux, dtype=np.float64)[:, None]
    aux_ll = SMALL_LOGLIK[:, list(aux)].copy()
    spare_params = np.zeros((n_aux, 1))
    spare_params[: len(spares), 0] = spares
    spare_ll = SMALL_LOGLIK[:, spare_params[:, 0].astype(np.int64)].copy()
    sweep = SweepState(labels, n_slots)
    sweep.state[N_SPARE] = len(spares)
    logw = np.zeros(n_slots + n_aux)
    aux_label_sweep(
        ll, aux_ll, params, aux_params, labels, sweep.counts, sweep.occupied, sweep.free,
        sweep.where, sweep.state, np.array([i], dtype=np.int64), 0, np.array([uniforms]),
        new_cluster_weights(theta, discount, n_slots), discount, logw, spare_ll, spare_params,
        np.zeros(n_slots, dtype=np.bool_),
    )  # fmt: skip
    values = params[:, 0].astype(np.int64) * (sweep.counts > 0)
    held, head = int(sweep.state[N_SPARE]), int(sweep.state[SPARE_HEAD])
    spares = tuple(int(spare_params[(head + k) % n_aux, 0]) for k in range(held))
    new_key = (tuple(labels), tuple(values), tuple(aux_params[:, 0].astype(int)), spares)
    return new_key, int(sweep.state[BORN_FROM]), logw


def visit_exactly(dist, i, theta, discount, n_slots, n_aux):
    """The law of the extended state after one visit of ``i``, every branch of the kernel's
    uniforms (label draw, displaced auxiliary, free slot) and of the caller's fresh draw
    enumerated with its probability."""
    out = {}
    for key, prob in dist.items():
        labels = np.array(key[0])
        singleton = np.count_nonzero(labels == labels[i]) == 1
        others = len(set(np.delete(labels, i)))  # K without i
        n_free = n_slots - others
        n_choices = others + (n_aux if n_free > 0 and theta + discount * others > 0 else 0)
        for t in range(n_aux if singleton else 1):
            u_aux = (t + 0.5) / n_aux
            weights = one_visit(key, i, (0.0, u_aux, 0.5), theta, discount, n_slots, n_aux)[2]
            weights = weights[:n_choices]
            edges = np.concatenate([[0.0], np.cumsum(weights)]) / weights.sum()
            for r in np.flatnonzero(weights > 0):
                u_label = 0.5 * (edges[r] + edges[r + 1])
                slots = range(n_free) if r >= others else [0]
                for k in slots:
                    branch = prob / (n_aux if singleton else 1) * (edges[r + 1] - edges[r])
                    branch /= len(slots)
                    uniforms = (u_label, u_aux, (k + 0.5) / max(n_free, 1))
                    new, fresh, _ = one_visit(key, i, uniforms, theta, discount, n_slots, n_aux)
                    for value, weight in enumerate(SMALL_BASE) if fresh >= 0 else [(None, 1.0)]:
                        aux = list(new[2])
                        if fresh >= 0:
                            aux[fresh] = value
                        drawn = (new[0], new[1], tuple(aux), new[3])
                        out[drawn] = out.get(drawn, 0.0) + branch * weight
    return out


@pytest.mark.parametrize(("n_aux", "discount"), [(1, 0.0), (1, 0.3), (2, 0.3)])
def test_one_visit_at_a_time_keeps_the_posterior_exactly(n_aux, discount):
    """From the target times independent prior auxiliaries and no spares, every visit of three
    sweeps leaves the law of (labels, occupied slots' values) at the target to ``1e-13``, the
    kernel's branches (and the caller's fresh draws) enumerated exactly. Keeping a displaced
    auxiliary only while the ring has room moves it by about 3e-4."""
    theta, n_slots = 1.0, 3
    target = small_target(theta, discount, n_slots)
    dist = {}
    for (labels, values), prob in target.items():
        for aux in itertools.product(range(2), repeat=n_aux):
            dist[(labels, values, aux, ())] = prob * np.prod(SMALL_BASE[list(aux)])
    worst = 0.0
    for i in [0, 1, 2] * 3:
        dist = visit_exactly(dist, i, theta, discount, n_slots, n_aux)
        marginal = {}
        for (labels, values, _, _), prob in dist.items():
            marginal[(labels, values)] = marginal.get((labels, values), 0.0) + prob
        worst = max(worst, max(abs(marginal.get(k, 0.0) - p) for k, p in target.items()))
        assert set(marginal) <= set(target)
    assert worst < 1e-13
