"""Tests of relabelling (ECR, Stephens) and membership probabilities.

Draws are simulated with known label switching: each draw permutes the slots of a planted
3-component mixture (means -5, 0, 5), so the raw per-slot posterior means are mixed and the
relabelled ones must recover the planted means.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pytest

from pymc_crp.posterior.draws import canonical_draws
from pymc_crp.posterior.relabel import (
    ecr_permutations,
    membership_probabilities,
    relabel,
    stephens_permutations,
)

MEANS = np.array([-5.0, 0.0, 5.0])


def switched_mixture(seed=0, chains=2, draws=150, n_per=12, n_slots=4, noise=0.05):
    """Draws of (z, mu, w, membership_probs) with random slot permutations per draw."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(3), n_per)  # items ordered by component: cluster 0 = mean -5
    n = truth.size
    s = chains * draws
    soft = np.full((n, 3), 0.05)
    soft[np.arange(n), truth] = 0.9
    z = np.empty((s, n), dtype=np.int64)
    mu = np.empty((s, n_slots))
    w = np.empty((s, 2, n_slots))  # slot axis second: found by its length
    member = np.zeros((s, n, n_slots))
    perms = np.empty((s, n_slots), dtype=np.int64)
    for d in range(s):
        perm = rng.permutation(n_slots)  # component k lives in slot perm[k]
        perms[d] = perm
        comp = truth.copy()
        flip = rng.random(n) < noise
        comp[flip] = rng.integers(0, 3, flip.sum())
        z[d] = perm[comp]
        mu[d, perm[:3]] = MEANS + rng.normal(0, 0.2, 3)
        mu[d, perm[3:]] = rng.normal(0, 10, n_slots - 3)  # empty slot: prior draw
        w[d, 0, perm] = np.arange(n_slots)
        w[d, 1] = 7.0
        member[d][:, perm[:3]] = soft
    shape = (chains, draws)
    idata = az.from_dict(
        posterior={
            "z": z.reshape(*shape, n),
            "mu": mu.reshape(*shape, n_slots),
            "w": w.reshape(*shape, 2, n_slots),
        },
        sample_stats={"membership_probs": member.reshape(*shape, n, n_slots)},
    )
    return idata, truth, soft, perms


@pytest.mark.parametrize("method", ["ecr", "stephens"])
def test_relabel_recovers_planted_means(method):
    idata, truth, _, _ = switched_mixture()
    raw = idata.posterior["mu"].mean(("chain", "draw")).values
    assert np.abs(raw[:3] - MEANS).max() > 2.0  # label switching mixes the raw slot means
    out = relabel(idata, "z", ["mu", "w"], method=method)
    means = out.posterior["mu"].mean(("chain", "draw")).values
    np.testing.assert_allclose(means[:3], MEANS, atol=0.1)
    # the stored permutation maps old slots to new ones, consistently for every parameter
    perm = out.sample_stats["z_permutation"].values
    np.testing.assert_array_equal(np.sort(perm, axis=-1), np.broadcast_to(np.arange(4), perm.shape))
    w_old = idata.posterior["w"].values[:, :, 0, :]
    w_new = out.posterior["w"].values[:, :, 0, :]
    np.testing.assert_array_equal(np.take_along_axis(w_new, perm, axis=-1), w_old)
    # the partition of every draw is unchanged; the input is not modified
    flat_old = idata.posterior["z"].values.reshape(-1, truth.size)
    flat_new = out.posterior["z"].values.reshape(-1, truth.size)
    np.testing.assert_array_equal(canonical_draws(flat_old)[0], canonical_draws(flat_new)[0])
    assert "z_permutation" not in idata.sample_stats
    assert out.posterior["mu"].dims == idata.posterior["mu"].dims


def test_stephens_without_membership_stats():
    idata, _, _, _ = switched_mixture(seed=3)
    del idata.sample_stats["membership_probs"]
    out = relabel(idata, "z", ["mu"], method="stephens")
    means = out.posterior["mu"].mean(("chain", "draw")).values
    np.testing.assert_allclose(means[:3], MEANS, atol=0.1)


def test_membership_probabilities():
    idata, truth, soft, _ = switched_mixture(seed=1)
    rb = membership_probabilities(idata, "z")
    np.testing.assert_allclose(rb[:, :3], soft, atol=1e-12)  # exact after relabelling
    np.testing.assert_allclose(rb.sum(axis=1), 1.0)
    freq = membership_probabilities(idata, "z", rao_blackwell=False)
    assert freq.shape == (truth.size, 3) or freq.shape == (truth.size, 4)
    np.testing.assert_array_equal(freq.argmax(axis=1), truth)
    # after relabel() each draw's permutation came from its own labels: method=None then gives
    # the relabelled frequencies (a Rao-Blackwellised average would be biased)
    already = relabel(idata, "z", method="stephens")
    relabelled = already.posterior["z"].values.reshape(-1, truth.size)
    want = np.stack([(relabelled == k).mean(axis=0) for k in range(3)], axis=1)
    np.testing.assert_allclose(membership_probabilities(already, "z", method=None)[:, :3], want)


def test_permutation_functions():
    z = np.array([[2, 2, 0, 1], [0, 0, 1, 2]])
    pivot = np.array([0, 0, 1, 2])
    perm = ecr_permutations(z, pivot, 3)
    np.testing.assert_array_equal(np.take_along_axis(perm, z, axis=1), np.tile(pivot, (2, 1)))
    probs = np.zeros((2, 4, 3))
    np.put_along_axis(probs, z[:, :, None], 1.0, axis=2)
    perm_s, n_iter = stephens_permutations(probs, perm)
    np.testing.assert_array_equal(perm_s, perm)
    assert n_iter == 1


def test_relabel_errors():
    idata, _, _, _ = switched_mixture(draws=5)
    with pytest.raises(ValueError, match="method"):
        relabel(idata, "z", ["mu"], method="hungarian")
    with pytest.raises(TypeError, match="params"):
        relabel(idata, "z", "mu")
    with pytest.raises(ValueError, match="params"):
        relabel(idata, "z", ["nu"])
    with pytest.raises(ValueError, match="pivot"):
        relabel(idata, "z", ["mu"], pivot=[0, 1])
    with pytest.raises(ValueError, match="slot_dims"):
        relabel(idata, "z", ["mu"], slot_dims={"mu": "nope"})
    idata.posterior["v"] = (("chain", "draw", "pair"), idata.posterior["mu"].values[..., :2])
    with pytest.raises(ValueError, match="no axis of length 4"):
        relabel(idata, "z", ["v"])
    with pytest.raises(TypeError, match="InferenceData"):
        relabel({"z": 0}, "z")


def test_relabel_end_to_end_dm_mixture():
    """A finite Dirichlet--multinomial mixture sampled by pm.sample, relabelled by ECR.

    (Without the ``membership_probs`` stat: pm.sample's default trace cannot store it yet, a
    known CRPGibbs issue, so the memberships are the relabelled label frequencies.)
    """
    import pymc as pm

    import pymc_crp as pmc

    rng = np.random.default_rng(7)
    y = np.concatenate([rng.normal(m, 0.5, 10) for m in MEANS])
    start = time.perf_counter()
    with pm.Model():
        z = pmc.DirichletMultinomialPartition("z", 3.0, n_groups=3, n=y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=3)
        pm.Normal("y", mu[z], 0.5, observed=y)
        idata = pm.sample(
            draws=200,
            tune=200,
            chains=4,
            cores=1,
            random_seed=11,
            progressbar=False,
            compute_convergence_checks=False,
        )
    elapsed = time.perf_counter() - start
    out = relabel(idata, "z", ["mu"])
    means = out.posterior["mu"].mean(("chain", "draw")).values
    np.testing.assert_allclose(means, MEANS, atol=0.4)
    probs = membership_probabilities(idata, "z")
    assert (probs.argmax(axis=1) == np.repeat(np.arange(3), 10)).mean() > 0.95
    assert elapsed < 60, f"pm.sample took {elapsed:.1f} s"
