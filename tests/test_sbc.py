"""Tests of the SBC harness (pymc_crp.sbc) on exact posteriors, without MCMC.

Normal-normal model: ``μ ~ N(0, 1)``, ``y_1..y_5 | μ ~ N(μ, 1)``, exact posterior
``N(Σy / (n + 1), 1 / (n + 1))``. Exact posterior draws must pass (p > 0.01); draws from a
posterior with the wrong variance or a shifted mean must fail (p < 0.01). A discrete model
(``k ~ Poisson(3)``, ``y_i ~ N(k, 1)``, exact posterior on a grid) checks the tie-breaking:
exact draws pass, draws shifted by one fail. Seeds are fixed, so the outcomes are
deterministic.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_crp as pmc
from pymc_crp.sbc import (
    DefaultStep,
    SBCResult,
    rank_statistic,
    run_sbc,
    thin_by_ess,
    uniformity_test,
)

N_OBS = 5
S = 200


def simulate_normal(rng):
    mu = rng.normal()
    return {"mu": mu}, rng.normal(mu, 1.0, N_OBS)


def normal_fit(scale=1.0, shift=0.0, draws=400):
    """Exact posterior draws, with the sd multiplied by ``scale`` and the mean shifted by
    ``shift`` posterior sds (both wrong unless 1 and 0)."""

    def fit(y, seed):
        rng = np.random.default_rng(seed)
        var = 1.0 / (N_OBS + 1)
        mean = y.sum() * var + shift * np.sqrt(var)
        return {"mu": rng.normal(mean, scale * np.sqrt(var), draws)}

    return fit


def simulate_poisson(rng):
    k = rng.poisson(3.0)
    return {"k": float(k)}, rng.normal(k, 1.0, N_OBS)


def poisson_fit(offset=0):
    grid = np.arange(40)

    def fit(y, seed):
        logp = stats.poisson.logpmf(grid, 3.0) + stats.norm.logpdf(y[:, None], grid).sum(0)
        prob = np.exp(logp - logp.max())
        rng = np.random.default_rng(seed)
        return {"k": rng.choice(grid, size=300, p=prob / prob.sum()) + offset}

    return fit


def pvalue(simulate, fit, seed=1, n_keep=49):
    result = run_sbc(simulate, fit, S, n_keep=n_keep, seed=seed)
    (test,) = result.tests().values()
    return test.pvalue


def test_exact_posterior_passes():
    assert pvalue(simulate_normal, normal_fit()) > 0.01


@pytest.mark.parametrize("scale, shift", [(0.6, 0.0), (1.6, 0.0), (1.0, 0.5)])
def test_wrong_posterior_fails(scale, shift):
    assert pvalue(simulate_normal, normal_fit(scale, shift)) < 0.01


def test_discrete_ties_pass_and_shift_fails():
    assert pvalue(simulate_poisson, poisson_fit()) > 0.01
    assert pvalue(simulate_poisson, poisson_fit(offset=1)) < 0.01


def test_rank_statistic_breaks_ties_uniformly():
    rng = np.random.default_rng(0)
    draws = np.array([1.0, 2.0, 2.0, 2.0, 3.0])
    ranks = [rank_statistic(2.0, draws, rng) for _ in range(4000)]
    counts = np.bincount(ranks, minlength=6)
    assert counts[0] == 0 and counts[5] == 0
    assert stats.chisquare(counts[1:5]).pvalue > 0.001
    assert rank_statistic(2.5, draws, rng) == 4
    assert rank_statistic(-1.0, draws, rng) == 0
    with pytest.raises(ValueError, match="finite"):
        rank_statistic(np.nan, draws, rng)


def test_thin_by_ess_keeps_the_end_at_the_ess_stride():
    rng = np.random.default_rng(3)
    x = np.zeros(2000)
    for t in range(1, x.size):  # AR(1), phi = 0.9: ESS about D / 19
        x[t] = 0.9 * x[t - 1] + rng.normal()
    kept = thin_by_ess(x, 1000)
    stride = int(np.argmax(x == kept[-2])) - int(np.argmax(x == kept[-3]))
    assert kept[-1] == x[-1]
    assert 10 <= stride <= 40 and kept.size == len(x[::-1][::stride])
    assert thin_by_ess(x, 1000, ess=100.0).size == 100
    assert thin_by_ess(x, 7, ess=100.0).size == 7
    assert thin_by_ess(rng.normal(size=300), 49).size == 49
    assert thin_by_ess(np.ones(50), 49).size == 49  # constant chain (e.g. K): no thinning


def test_uniformity_test_bins_and_pvalue():
    ranks = np.arange(200) % 50  # exactly uniform on 0..49
    test = uniformity_test(ranks, 49)
    assert test.counts.size == 10 and not test.randomised  # at most 20 bins, dividing 50
    assert test.statistic == 0.0 and test.pvalue == 1.0
    skewed = np.r_[np.zeros(30, int), np.arange(70) % 50]
    test = uniformity_test(skewed, 49, n_bins=10)
    expected = stats.chisquare(np.bincount(skewed * 10 // 50, minlength=10))
    assert test.pvalue == pytest.approx(expected.pvalue)
    varying = uniformity_test(np.zeros(40, int), np.arange(40) % 7 + 3)
    assert varying.randomised and varying.counts.sum() == 40 and varying.counts.size == 8
    assert uniformity_test(np.arange(60) % 17, 16).randomised  # L + 1 = 17 is prime
    with pytest.raises(ValueError, match="0..n_draws"):
        uniformity_test(np.full(10, 5), 4)
    with pytest.raises(ValueError, match="at least 5"):
        uniformity_test([0, 1], 3)


def test_run_sbc_is_reproducible_and_stops_on_budget():
    a = run_sbc(simulate_normal, normal_fit(), 12, n_keep=9, seed=5)
    b = run_sbc(simulate_normal, normal_fit(), 6, n_keep=9, seed=5)
    assert a.ranks["mu"][:6] == b.ranks["mu"] and a.n_sims == 12
    assert set(a.n_draws["mu"]) == {9}
    c = run_sbc(simulate_normal, normal_fit(), 1000, n_keep=9, seed=5, time_budget=0.0)
    assert c.n_sims == 1
    assert "mu" in a.summary()


def test_shards_combine_to_the_whole_run():
    whole = run_sbc(simulate_normal, normal_fit(), 11, n_keep=9, seed=5)
    parts = [
        run_sbc(simulate_normal, normal_fit(), 11, n_keep=9, seed=5, shard=(k, 3))
        for k in (2, 0, 1)
    ]
    assert [part.sims for part in parts] == [[2, 5, 8], [0, 3, 6, 9], [1, 4, 7, 10]]
    joined = SBCResult.combine(parts)
    assert joined.sims == list(range(11)) == whole.sims
    assert joined.ranks == whole.ranks and joined.n_draws == whole.n_draws
    with pytest.raises(ValueError, match="disjoint"):
        SBCResult.combine([parts[0], parts[0]])
    with pytest.raises(ValueError, match="shard"):
        run_sbc(simulate_normal, normal_fit(), 11, shard=(3, 3))


def _small_crp_model(y):
    with pm.Model() as model:
        y_obs = pm.Data("y_obs", y)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmc.CRP("z", alpha, 0.0, max_clusters=4, n=len(y))
        mu = pm.Normal("mu", 0.0, 3.0, shape=4)
        pm.Normal("y", mu[z], 1.0, observed=y_obs)
    return model


def test_default_step_reproduces_pm_sample():
    """The prebuilt steps give the same draws as pm.sample's own assignment, also after
    another fit (adapted state is restored)."""
    y = np.array([-2.0, -1.7, 0.1, 2.2])
    model = _small_crp_model(y)
    kwargs = {"draws": 30, "tune": 30, "chains": 1, "random_seed": 11, "progressbar": False}
    kwargs |= {"compute_convergence_checks": False, "return_inferencedata": False}
    prebuilt = DefaultStep(model)
    assert prebuilt.assignment == {
        "ConcentrationGibbs": ["alpha_log__"],
        "ConjugateCRPGibbs": ["z", "mu"],  # mu is a conjugate slot parameter
    }
    with model:
        reference = pm.sample(**kwargs)
        pm.set_data({"y_obs": y + 5.0})
        pm.sample(**kwargs, step=prebuilt())
        pm.set_data({"y_obs": y})
        again = pm.sample(**kwargs, step=prebuilt())
    for name in ("alpha", "z", "mu"):
        np.testing.assert_array_equal(reference.get_values(name), again.get_values(name))


def test_default_step_rejects_nuts_only_models():
    with pm.Model() as model:
        pm.Normal("x")
    with pytest.raises(ValueError, match="init_nuts"):
        DefaultStep(model)
