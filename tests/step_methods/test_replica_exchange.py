"""ReplicaExchange and the likelihood temperature of the steps, against enumeration.

Oracle (tests/oracles.py, ``exact_clustered_total_orders`` with a likelihood ``power``):
5 lists over 3 items, ``n_dims = 1`` and independent slot utilities (``τ = 0``), so each
cluster's order is a uniformly random total order; the tempered posterior (prior × L^β) over
partitions is a finite sum over set partitions and orders.
"""

import itertools
import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from oracles import (
    exact_clustered_total_orders,
    exact_clustered_total_orders_random_noise,
    total_order_list_lik,
)
from test_po_labels import mismatches

import pymc_crp as pmc
from pymc_crp.step_methods.replica_exchange import geometric_ladder, swap_log_ratio

P_NOISE = 0.15
LISTS = [[0, 1, 2], [0, 1, 2], [0, 2], [2, 1, 0], [2, 1]]
N_LISTS, N_ITEMS, N_SLOTS = len(LISTS), 3, 6


def tiny_model(random_noise=False):
    """``z ~ CRP(1)``, slot utilities ``N(0, 1)`` (one dimension), the lists; the noise is
    ``P_NOISE`` or ``p ~ Beta(1, 9)``."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=N_SLOTS, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((N_SLOTS, N_ITEMS, 1)), rho=0.0)
        p = pm.Beta("p", 1.0, 9.0) if random_noise else P_NOISE
        pmc.PartialOrderLists("y", u, z, p, observed=LISTS)
    return model


def label_step(model):
    """The labels' step (the custom model records no roles, so it is given explicitly), with
    one round of moves per step (the default's three are tested in test_po_labels)."""
    return pmc.PartialOrderLabelGibbs(  # the annealed split-merge: its own test file
        [model["z"]], n_aux=2, merge_split=3, anneal=0, sweeps=1, annealed_split_merge=0,
        tune_annealed_split_merge=0,
    )  # fmt: skip


def given_steps(model):
    """Steps given explicitly: the labels' and, with a random noise, ``p``'s (PyMC would
    assign NUTS, which takes no temperature)."""
    steps = [label_step(model)]
    if "p" in model.named_vars:
        steps.append(pmc.HyperparameterMetropolis([model["p"]]))
    return steps


def sample(model, step, draws, seed, **kwargs):
    with model:
        idata = pm.sample(
            draws,
            tune=300,
            chains=2,
            cores=1,
            random_seed=seed,
            step=step,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )
    return idata


def oracle(power):
    return exact_clustered_total_orders(LISTS, N_ITEMS, P_NOISE, 1.0, 0.0, power=power)


# --------------------------------------------------------------------------------------------
# Exactness
# --------------------------------------------------------------------------------------------
def noise_mismatch(idata, mean_p, k=4.5, floor=0.002):
    """Whether the posterior mean of ``p`` is further than ``k`` MCSE (+ floor) from the
    oracle's."""
    draws = idata.posterior["p"].values
    return abs(draws.mean() - mean_p) > k * float(np.ravel(az.mcse(draws))[0]) + floor


@pytest.mark.slow  # opt-in tempering; the cold chain against enumeration stays in the default run
def test_tempered_steps_sample_prior_times_likelihood_to_the_power():
    """The label, utility and noise steps at ``likelihood_temperature = 0.5`` (no exchanges)
    have the stationary distribution prior × L^0.5 (``p ~ Beta(1, 9)`` integrated out)."""
    model = tiny_model(random_noise=True)
    with model:
        steps = [*given_steps(model), pmc.UtilityMetropolis([model["U"]])]
    for step in steps:
        step.likelihood_temperature = 0.5
    idata = sample(model, steps, 2500, seed=3)
    z = idata.posterior["z"].values
    co, k_dist, mean_p = exact_clustered_total_orders_random_noise(
        LISTS, N_ITEMS, 1.0, 9.0, 1.0, power=0.5
    )
    assert not mismatches(z, co, k_dist)
    assert not noise_mismatch(idata, mean_p)
    co, k_dist, mean_p = exact_clustered_total_orders_random_noise(LISTS, N_ITEMS, 1.0, 9.0, 1.0)
    assert mismatches(z, co, k_dist)  # power against the untempered posterior
    assert noise_mismatch(idata, mean_p)


@pytest.mark.slow  # ~40 s
def test_cold_chain_with_random_noise_matches_the_posterior():
    """Exchanges with the noise ``p ~ Beta(1, 9)`` sampled (tempered in the hot replicas)."""
    model = tiny_model(random_noise=True)
    with model:
        step = pmc.ReplicaExchange(betas=[1.0, 0.5, 0.2], steps=lambda: given_steps(model))
    idata = sample(model, step, 2500, seed=8)
    co, k_dist, mean_p = exact_clustered_total_orders_random_noise(LISTS, N_ITEMS, 1.0, 9.0, 1.0)
    assert not mismatches(idata.posterior["z"].values, co, k_dist)
    assert not noise_mismatch(idata, mean_p)


@pytest.mark.slow  # ~12 s
def test_coordinate_draws_are_tempered():
    """The exact coordinate Gibbs draws of the utilities alone, at ``β = 0.3``."""
    model = tiny_model()
    with model:
        steps = [
            label_step(model),
            pmc.UtilityMetropolis([model["U"]], item_sweeps=0, pcn=False, coordinate_items=-1),
        ]
    for step in steps:
        step.likelihood_temperature = 0.3
    z = sample(model, steps, 2000, seed=4).posterior["z"].values
    assert not mismatches(z, *oracle(0.3))
    assert mismatches(z, *oracle(1.0))


@pytest.fixture(scope="module")
def replica_run():
    model = tiny_model()
    with model:
        step = pmc.ReplicaExchange(betas=[1.0, 0.4, 0.1], steps=lambda: [label_step(model)])
    # 1,000 draws: the tempered posterior is 29 standard errors away on its farthest quantity
    return sample(model, step, 1000, seed=5)


def test_cold_chain_matches_the_posterior(replica_run):
    z = replica_run.posterior["z"].values
    assert not mismatches(z, *oracle(1.0))
    assert mismatches(z, *oracle(0.4))  # not the tempered one


def test_stats(replica_run):
    stats = replica_run.sample_stats
    for name in ("swap_accepted_0", "swap_accepted_1", "swap_rate", "cold_loglik"):
        assert name in stats
    a0, a1 = stats["swap_accepted_0"].values, stats["swap_accepted_1"].values
    # Even-odd scheme: pair 0 at even iterations, pair 1 at odd ones.
    assert np.all(np.isnan(a0) != np.isnan(a1))
    assert 0.05 < np.nanmean(a0) < 1.0 and 0.05 < np.nanmean(a1) < 1.0
    rate = stats["swap_rate"].values
    assert np.all((rate >= 0) & (rate <= 1))
    assert np.all(np.isfinite(stats["cold_loglik"].values))
    assert np.all(stats["cold_loglik"].values < 0)


def test_cold_loglik_is_the_lists_loglik(replica_run):
    model = tiny_model()
    logp = model.compile_logp(vars=[model["y"]], jacobian=False)
    post = replica_run.posterior
    n_draws = post.sizes["draw"]
    for c, d in ((0, 0), (1, n_draws // 2), (1, n_draws - 1)):
        point = {"z": post["z"].values[c, d], "U": post["U"].values[c, d]}
        got = float(replica_run.sample_stats["cold_loglik"].values[c, d])
        assert got == pytest.approx(float(logp(point)), rel=1e-10)


# --------------------------------------------------------------------------------------------
# The exchange, the ladder and bad input
# --------------------------------------------------------------------------------------------
def test_swap_log_ratio():
    assert swap_log_ratio(1.0, 0.5, -10.0, -12.0) == pytest.approx(0.5 * -2.0)
    assert swap_log_ratio(1.0, 0.5, -12.0, -10.0) == pytest.approx(1.0)
    assert swap_log_ratio(0.3, 0.0, -5.0, -1.0) == pytest.approx(0.3 * 4.0)
    # The exchange moves the better-fitting state to the colder temperature for sure.
    assert swap_log_ratio(1.0, 0.2, -math.inf, -3.0) == math.inf
    assert swap_log_ratio(1.0, 0.2, -3.0, -math.inf) == -math.inf
    assert swap_log_ratio(1.0, 0.2, -math.inf, -math.inf) == 0.0
    # min(1, r) equals the ratio of the product targets before and after the exchange.
    bi, bj, li, lj = 0.9, 0.35, -7.5, -4.25
    before, after = bi * li + bj * lj, bi * lj + bj * li
    assert swap_log_ratio(bi, bj, li, lj) == pytest.approx(after - before)


def test_swap_acceptance_frequency():
    """With the replicas' steps fixed in place (identity moves), the accepted fraction of
    exchanges is min(1, exp((β_0 - β_1)(ℓ_1 - ℓ_0)))."""
    model = tiny_model()
    with model:
        step = pmc.ReplicaExchange(betas=[1.0, 0.3], steps=lambda: [label_step(model)])
    step.set_rng(np.random.default_rng(0))
    step._replicas = [_Identity() for _ in step._replicas]
    cold = {"z": np.zeros(N_LISTS, dtype=np.int64), "U": np.zeros((N_SLOTS, N_ITEMS, 1))}
    cold["U"][0, :, 0] = [2.0, 1.0, 0.0]  # order 0 > 1 > 2
    hot = {"z": cold["z"].copy(), "U": cold["U"].copy()}
    hot["U"][0, :, 0] = [2.0, 0.0, 1.0]  # order 0 > 2 > 1
    lls = [float(step._loglik_fn(p)) for p in (cold, hot)]
    for ll, perm in zip(lls, [(0, 1, 2), (0, 2, 1)], strict=True):
        assert ll == pytest.approx(
            sum(math.log(total_order_list_lik(perm, y, P_NOISE)) for y in LISTS)
        )
    expected = min(1.0, math.exp(swap_log_ratio(1.0, 0.3, *lls)))
    accepted = []
    for _ in range(4000):
        step._iteration, step._hot_points = 0, [dict(hot)]
        _, (stats,) = step.step(dict(cold))
        accepted.append(stats["swap_accepted_0"])
        assert stats["swap_rate"] == pytest.approx(expected)
    assert 0.05 < expected < 0.95
    assert abs(np.mean(accepted) - expected) < 4.5 * math.sqrt(expected * (1 - expected) / 4000)


class _Identity:
    def step(self, point):
        return point, [{}]


def test_geometric_ladder():
    np.testing.assert_allclose(geometric_ladder(3, 0.25), [1.0, 0.5, 0.25])
    assert geometric_ladder(4)[0] == 1.0 and geometric_ladder(4)[-1] == pytest.approx(0.1)


@pytest.mark.parametrize(
    "betas",
    [[1.0, 1.0, 0.5], [1.0, 0.2, 0.5], [0.9, 0.5], [1.0, -0.1], [1.0, 0.5, np.nan], [1.0], 1.0],
)
def test_bad_betas(betas):
    model = tiny_model()
    with model, pytest.raises(ValueError, match="betas"):
        pmc.ReplicaExchange(betas=betas, steps=lambda: [label_step(model)])


def test_bad_arguments():
    model = tiny_model()
    with model:
        for n_temps in (1, 2.5, True):
            with pytest.raises(ValueError, match="n_temps"):
                pmc.ReplicaExchange(n_temps=n_temps)
        with pytest.raises(ValueError, match="min_beta"):
            pmc.ReplicaExchange(min_beta=1.0)
        with pytest.raises(ValueError, match="all the model's free variables"):
            pmc.ReplicaExchange([model["U"]], steps=lambda: [label_step(model)])
    with pm.Model():
        pm.Normal("x", 0.0, 1.0, observed=[0.1])
        pm.Normal("mu", 0.0, 1.0)
        with pytest.raises(ValueError, match="PartialOrderLists"):
            pmc.ReplicaExchange()


def test_steps_without_temperature_upstream_of_the_lists_are_refused():
    """CRPGibbs on the labels (the default of a custom model) and, with covariates, the
    sampler of the covariate effects ``beta`` cannot be tempered."""
    model = tiny_model()
    with model, pytest.raises(ValueError, match="CRPGibbs assigned to z"):
        pmc.ReplicaExchange()
    lists = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2, 1]]
    covariates = np.eye(3)[:, :1]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=1, covariates=covariates)
    with model, pytest.raises(ValueError, match="does not take a likelihood temperature"):
        pmc.ReplicaExchange()


def test_builder_model_assigns_tempered_steps():
    """In a model of ``clustered_partial_orders`` every step that evaluates the lists takes
    the replica's temperature; the others (U0) target list-free conditionals, and the label
    step draws α given the number of clusters (a list-free conditional too)."""
    lists = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2, 1]]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=2)
    with model:
        step = pmc.ReplicaExchange(betas=[1.0, 0.5, 0.0])
    for compound, beta in zip(step._replicas, (1.0, 0.5, 0.0), strict=True):
        leaves = {}
        for leaf in _leaves(compound):
            leaves.setdefault(type(leaf), []).append(getattr(leaf, "likelihood_temperature", None))
        assert leaves[pmc.PartialOrderLabelGibbs] == [beta]
        assert leaves[pmc.UtilityMetropolis] == [beta]
        assert leaves[pmc.NonCentredHyperparameterMetropolis] == [beta, beta]  # rho, tau
        assert leaves[pmc.HyperparameterMetropolis] == [beta]  # p
        assert leaves[pmc.UtilityMeanGibbs] == [None]
        assert pmc.ConcentrationGibbs not in leaves  # α is in the label step's block
        (labels,) = [s for s in _leaves(compound) if isinstance(s, pmc.PartialOrderLabelGibbs)]
        assert {v.name for v in labels.vars} == {"alpha_log__", "cluster"}


def _leaves(step):
    methods = getattr(step, "methods", None)
    if methods is None:
        return [step]
    return [leaf for m in methods for leaf in _leaves(m)]


@pytest.mark.slow  # ~2 min
def test_built_model_cold_chain_agrees_with_the_default_sampler():
    """``clustered_partial_orders`` (``n_dims = 2``: ``ρ``, ``τ``, ``U0``, ``p``, ``α`` all
    sampled, no enumeration oracle): the cold chain and the default sampler agree on the
    co-clustering, ``K`` and the hyperparameters within 4.5 combined standard errors."""

    def summaries(tempered, seed):
        model = pmc.models.clustered_partial_orders(LISTS, N_ITEMS, n_dims=2)
        with model:

            def steps():
                return [pmc.PartialOrderLabelGibbs([model["cluster"]], anneal=50)]

            step = pmc.ReplicaExchange(betas=[1.0, 0.5, 0.2], steps=steps) if tempered else steps()
        post = sample(model, step, 1500, seed).posterior
        z = post["cluster"].values
        out = {
            f"co{i}{j}": (z[..., i] == z[..., j]).astype(float)
            for i, j in itertools.combinations(range(N_LISTS), 2)
        }
        out["K"] = np.array([[len(np.unique(r)) for r in chain] for chain in z], dtype=float)
        out.update({v: post[v].values for v in ("p", "tau", "rho", "alpha")})
        return {k: (v.mean(), float(np.ravel(az.mcse(v))[0])) for k, v in out.items()}

    default, replicas = summaries(False, 11), summaries(True, 12)
    far = {
        k: (default[k][0], replicas[k][0])
        for k in default
        if abs(default[k][0] - replicas[k][0]) > 4.5 * np.hypot(default[k][1], replicas[k][1])
    }
    assert not far
