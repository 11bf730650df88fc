"""PartialOrderLists in PyMC: exactness against the numeric core, predictive draws, gradients."""

import itertools

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_crp as pmc
from pymc_crp.lists import PartialOrderLists, decode_lists, encode_lists
from pymc_crp.posets import list_log_likelihood, partial_order_from_utilities

RNG = np.random.default_rng(20261122)
M, K, L = 6, 2, 3
UTILS = RNG.normal(size=(L, M, K))
LISTS = [list(RNG.permutation(M)[: RNG.integers(2, M + 1)]) for _ in range(12)]
LABELS = RNG.integers(0, L, size=len(LISTS))


def core_logliks(utilities, labels, lists, p, direction):
    return np.array(
        [
            list_log_likelihood(partial_order_from_utilities(utilities[a]), y, p, direction)
            for a, y in zip(labels, lists, strict=True)
        ]
    )


@pytest.mark.parametrize("direction", ["top-down", "bottom-up"])
@pytest.mark.parametrize("p", [0.0, 0.05, 0.5])
def test_elementwise_loglik_equals_core(direction, p):
    with pm.Model() as model:
        u = pm.Normal("U", 0.0, 1.0, shape=(L, M, K))
        pmc.PartialOrderLists("y", u, LABELS, p, direction=direction, observed=LISTS)
    logp = model.compile_fn(
        model.logp(vars=[model["y"]], sum=False)[0], inputs=[model.rvs_to_values[u]], point_fn=False
    )
    np.testing.assert_allclose(
        logp(UTILS), core_logliks(UTILS, LABELS, LISTS, p, direction), rtol=1e-12
    )


def test_single_order_and_padded_input():
    padded = encode_lists(LISTS, M)
    assert padded.shape == (12, max(map(len, LISTS)))
    assert decode_lists(padded) == [list(map(int, y)) for y in LISTS]
    rv = PartialOrderLists.dist(UTILS[0], None, 0.1, item_sets=padded)
    got = pm.logp(rv, padded).eval()
    want = core_logliks(UTILS, np.zeros(12, int), LISTS, 0.1, "top-down")
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gradient_in_noise_matches_finite_differences():
    p = pt.dscalar("p")
    rv = PartialOrderLists.dist(UTILS, LABELS, p, item_sets=encode_lists(LISTS, M))
    logp = pm.logp(rv, encode_lists(LISTS, M)).sum()
    fn = pytensor.function([p], [logp, pytensor.grad(logp, p)])
    for p0 in (0.03, 0.3, 0.8):
        fd = (fn(p0 + 1e-6)[0] - fn(p0 - 1e-6)[0]) / 2e-6
        assert fn(p0)[1] == pytest.approx(fd, rel=1e-5)


def test_no_gradient_for_utilities_so_no_nuts():
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 9.0)
        u = pm.Normal("U", 0.0, 1.0, shape=(M, K))
        pmc.PartialOrderLists("y", u, None, p, observed=LISTS)
    with pytest.raises((NotImplementedError, pytensor.gradient.NullTypeGradError)):
        pytensor.grad(model.logp(), model.rvs_to_values[u])
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert selected[pmc.UtilityMetropolis] == [model.rvs_to_values[u]]
    del p


@pytest.mark.parametrize("direction", ["top-down", "bottom-up"])
def test_prior_predictive_follows_core_likelihood(direction):
    """Simulated lists over a fixed item set have frequencies exp(loglik) (chi-square)."""
    eta = np.array([[3.0, 0.0], [2.0, 2.5], [1.0, 1.0], [0.0, 3.0]])
    items = [[0, 1, 2, 3]] * 4000
    rv = PartialOrderLists.dist(
        eta, None, 0.2, item_sets=encode_lists(items, 4), direction=direction
    )
    draws = pm.draw(rv, random_seed=3)
    perms = list(itertools.permutations(range(4)))
    index = {perm: k for k, perm in enumerate(perms)}
    freq = np.bincount([index[tuple(row)] for row in draws], minlength=len(perms))
    adj = partial_order_from_utilities(eta)
    probs = np.exp([list_log_likelihood(adj, perm, 0.2, direction) for perm in perms])
    assert probs.sum() == pytest.approx(1.0)
    assert stats.chisquare(freq, probs * freq.sum()).pvalue > 1e-3


def test_posterior_predictive_and_loo():
    with pmc.models.partial_order(LISTS[:6], M, n_dims=1, noise=0.1):
        idata = pm.sample(
            60,
            tune=60,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
        )
        pp = pm.sample_posterior_predictive(idata, random_seed=2, progressbar=False)
    assert idata.log_likelihood["lists"].shape == (2, 60, 6)
    sims = pp.posterior_predictive["lists"].values
    observed = encode_lists(LISTS[:6], M)
    assert sims.shape == (2, 60, *observed.shape)
    # Each simulated list is a permutation of the observed item set.
    for row_obs, row_sim in zip(observed, sims[0, 0], strict=True):
        assert sorted(row_obs[row_obs >= 0]) == sorted(row_sim[row_sim >= 0])
    assert np.isfinite(az.loo(idata).elpd_loo)


@pytest.mark.parametrize(
    "observed, match",
    [
        ([[0, 1, 1]], "repeat"),
        ([[0, 7]], "observed"),
        ([[]], "observed"),
        ([[0.5, 1]], "observed"),
    ],
)
def test_bad_lists(observed, match):
    with pm.Model():
        with pytest.raises((ValueError, TypeError), match=match):
            pmc.PartialOrderLists("y", np.zeros((M, K)), None, 0.1, observed=observed)


def test_bad_arguments():
    with pytest.raises(ValueError, match="direction"):
        PartialOrderLists.dist(UTILS, LABELS, 0.1, item_sets=encode_lists(LISTS, M), direction="x")
    with pytest.raises(ValueError, match="labels are required"):
        PartialOrderLists.dist(pt.as_tensor(UTILS), None, 0.1, item_sets=encode_lists(LISTS, M))
    with pm.Model() as model:
        p = pm.Normal("p", 0.5, 1.0)
        pmc.PartialOrderLists("y", UTILS[0], None, p, observed=LISTS)
    assert model.compile_logp()({"p": 1.5}) == -np.inf
