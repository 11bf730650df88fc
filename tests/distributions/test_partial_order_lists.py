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
from pymc_crp.core.lists import decode_lists, encode_lists
from pymc_crp.distributions import PartialOrderLists
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


def test_observed_lists_through_pm_data_are_refused():
    """The steps read the observed lists once, so a pm.Data container (whose value pm.set_data
    could swap under them) is refused with a TypeError naming ``observed``."""
    with pm.Model():
        data = pm.Data("obs", encode_lists(LISTS, M))
        with pytest.raises(TypeError, match="observed must hold the lists themselves.*pm.Data"):
            pmc.PartialOrderLists("y", np.zeros((M, K)), None, 0.1, observed=data)


def test_bad_arguments():
    with pytest.raises(ValueError, match="direction"):
        PartialOrderLists.dist(UTILS, LABELS, 0.1, item_sets=encode_lists(LISTS, M), direction="x")
    with pytest.raises(ValueError, match="labels are required"):
        PartialOrderLists.dist(pt.as_tensor(UTILS), None, 0.1, item_sets=encode_lists(LISTS, M))
    with pm.Model() as model:
        p = pm.Normal("p", 0.5, 1.0)
        pmc.PartialOrderLists("y", UTILS[0], None, p, observed=LISTS)
    assert model.compile_logp()({"p": 1.5}) == -np.inf


# --------------------------------------------------------------------------------------------
# The list-likelihood cache: exact, bit for bit, and bounded
# --------------------------------------------------------------------------------------------
def _cache_case(seed=7, n_lists=300, n_items=9, n_slots=4):
    """Lists over varied item sets, with repeats and shared beginnings, and slot utilities."""
    rng = np.random.default_rng(seed)
    base = [list(rng.permutation(n_items)[: rng.integers(1, n_items + 1)]) for _ in range(40)]
    lists = [base[i] for i in rng.integers(0, len(base), size=n_lists)]  # repeats
    lists += [[*base[0][:2], *[x for x in range(n_items) if x not in base[0][:2]]]]
    padded = encode_lists(lists, n_items)
    utilities = rng.normal(size=(n_slots, n_items, 2))
    labels = rng.integers(0, n_slots, size=len(lists))
    return padded, utilities, labels


def _reference(utilities, padded, labels, p, top_down, grad=False):
    from pymc_crp.posets import list_log_likelihoods_stacked

    lengths = (padded >= 0).sum(axis=1)
    closed = partial_order_from_utilities(utilities)
    return list_log_likelihoods_stacked(
        closed, padded, lengths, labels, p, top_down, return_grad=grad
    )


def lists_module():
    from pymc_crp.core import lists

    return lists


@pytest.mark.parametrize("top_down", [True, False])
@pytest.mark.parametrize("p", [0.0, 0.1, 1.0])
def test_cache_hits_give_identical_values(top_down, p):
    lm = lists_module()
    padded, utilities, labels = _cache_case()
    cache = lm.ListLikelihoodCache()
    list_set = cache.list_set(padded, top_down)
    assert cache.list_set(padded, top_down) is list_set  # remembered by identity
    assert list_set.steps.shape[0] < padded.shape[0]  # repeats counted once
    words = lm.order_words(utilities, top_down)
    want = _reference(utilities, padded, labels, p, top_down)
    first = cache.log_likelihoods(list_set, words, labels, p)
    computed = cache.computed
    again = cache.log_likelihoods(list_set, words, labels, p)
    np.testing.assert_array_equal(first, want)  # bit for bit, -inf included
    np.testing.assert_array_equal(again, want)
    assert cache.computed == computed  # all hits
    assert cache.reused >= padded.shape[0] or p == 1.0  # p = 1 needs no counts
    # subsets of rows, in any order, under one order; and the gradient in p
    rows = np.random.default_rng(1).permutation(padded.shape[0])[:50]
    got = cache.log_likelihoods(list_set, words[2:3], np.zeros(50, int), p, rows=rows)
    np.testing.assert_array_equal(
        got, _reference(utilities[2:3], padded[rows], 0 * rows, p, top_down)
    )
    ll, dp = cache.log_likelihoods(list_set, words, labels, p, want_grad=True)
    want_ll, want_dp = _reference(utilities, padded, labels, p, top_down, grad=True)
    np.testing.assert_array_equal(ll, want_ll)
    np.testing.assert_array_equal(dp, want_dp)
    # against the one-list definition (brute-force tested in test_posets)
    direction = "top-down" if top_down else "bottom-up"
    np.testing.assert_allclose(
        first[:20], core_logliks(utilities, labels[:20], decode_lists(padded[:20]), p, direction),
        rtol=1e-12,
    )  # fmt: skip


def test_cache_changing_p_and_equal_content_share_entries():
    lm = lists_module()
    padded, utilities, labels = _cache_case(seed=8)
    cache = lm.ListLikelihoodCache()
    words = lm.order_words(utilities)
    list_set = cache.list_set(padded)
    for p in (0.1, 0.3, 0.1, 0.0):  # log-likelihoods per p recombined from the same ratios
        got = cache.log_likelihoods(list_set, words, labels, p)
        np.testing.assert_array_equal(got, _reference(utilities, padded, labels, p, True))
    copy_set = cache.list_set(padded.copy())  # another array, same content: same token
    assert copy_set is not list_set and copy_set.token == list_set.token
    computed = cache.computed
    cache.log_likelihoods(copy_set, words, labels, 0.2)
    assert cache.computed == computed
    with pytest.raises(ValueError, match="labels must lie"):
        cache.log_likelihoods(list_set, words, labels + 4, 0.2)


def test_cache_is_bounded_on_a_stream_of_orders_and_item_sets():
    lm = lists_module()
    rng = np.random.default_rng(9)
    padded, _, _ = _cache_case(seed=9, n_lists=200)
    cache = lm.ListLikelihoodCache(max_bytes=200_000, max_list_sets=3)
    list_set = cache.list_set(padded)
    for _ in range(300):  # distinct orders: each a new entry
        u = rng.normal(size=(1, 9, 2))
        got = cache.log_likelihoods(list_set, lm.order_words(u), np.zeros(len(padded), int), 0.1)
        np.testing.assert_array_equal(
            got, _reference(u, padded, np.zeros(len(padded), int), 0.1, True)
        )
        assert cache.entry_bytes <= cache.max_bytes
    assert 0 < len(cache) < 300
    entry_size = cache.entry_bytes / len(cache)
    assert cache.entry_bytes + cache.memo_bytes > cache.max_bytes - 2 * entry_size  # full
    sets = []
    for k in range(20):  # distinct item sets (lists arrays): a bounded number remembered
        lists = encode_lists([rng.permutation(9)[: 3 + k % 6] for _ in range(50)], 9)
        sets.append(lists)
        cache.log_likelihoods(cache.list_set(lists), lm.order_words(u), np.zeros(50, int), 0.1)
        assert len(cache._sets) <= 3 and cache.entry_bytes <= cache.max_bytes
    assert cache.nbytes <= cache.max_bytes + 3 * max(s.nbytes for _, s in cache._sets.values())
    # an entry larger than the bound is used once, not stored
    tiny = lm.ListLikelihoodCache(max_bytes=100)
    zeros = np.zeros(len(padded), int)
    got = tiny.log_likelihoods(tiny.list_set(padded), lm.order_words(u), zeros, 0.1)
    np.testing.assert_array_equal(got, _reference(u, padded, zeros, 0.1, True))
    assert len(tiny) == 0 and tiny.entry_bytes == 0


def test_ratio_kernel_sharing_beginnings_changes_nothing():
    from pymc_crp.core import linext_kernels as K
    from pymc_crp.core import linext_support as T

    lm = lists_module()
    padded, utilities, _ = _cache_case(seed=10)
    list_set = lm.ListSet(padded)
    words = lm.order_words(utilities[:1])
    n_rows, width = list_set.steps.shape[0], list_set.steps.shape[1] - 1
    out = []
    for perm in (np.arange(n_rows), np.random.default_rng(0).permutation(n_rows)):
        ratios = np.full((n_rows, width), np.nan)
        starts = np.array([0, n_rows])
        args = (list_set.steps, list_set.lengths, perm, starts, True, T.float_binomials(), 10**6)
        assert K.ratios_kernel(words, *args, ratios)
        out.append(ratios)
    np.testing.assert_array_equal(out[0], out[1])


def test_cache_limit_error_and_op_uses_the_cache():
    from pymc_crp.core import linext_support as T
    from pymc_crp.posets import LinearExtensionLimitError, crown_order

    lm = lists_module()
    words = T.relation_words(crown_order(12))[None]  # needs many memoised sets
    cache = lm.ListLikelihoodCache()
    lists = encode_lists([list(range(24))], 24)
    with pytest.raises(LinearExtensionLimitError):
        cache.log_likelihoods(cache.list_set(lists), words, [0], 0.1, max_states=10)
    assert cache.log_likelihoods(cache.list_set(lists), words, [0], 0.1) < 0.0
    global_cache = lm.list_likelihood_cache()
    global_cache.clear()
    rv = PartialOrderLists.dist(UTILS, LABELS, 0.1, item_sets=encode_lists(LISTS, M))
    got = pm.logp(rv, encode_lists(LISTS, M)).eval()
    assert len(global_cache) > 0
    np.testing.assert_allclose(got, core_logliks(UTILS, LABELS, LISTS, 0.1, "top-down"), rtol=1e-12)
