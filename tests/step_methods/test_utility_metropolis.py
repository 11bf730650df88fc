"""Utility step methods of partial-order models against exact posteriors.

Oracles:
* K = 1 with independent slot utilities: each slot's order is a uniformly random permutation,
  so the posterior over partitions and over each cluster's order is a finite enumeration.
* K = 2, one order: the prior probability of each partial order on 3 items estimated from
  2·10⁶ prior draws (relative error < 1%), times the exact list likelihood.
* U0 | U, τ, ρ: Gaussian conditional computed with dense linear algebra.
"""

import itertools
import math

import numpy as np
import pymc as pm
import pytest
from mc_checks import z_scores
from oracles import eppf, set_partitions

import pymc_crp as pmc
from pymc_crp.posets import chain_order, list_log_likelihood, partial_order_from_utilities

P_NOISE = 0.15
LISTS = [[0, 1, 2], [0, 1, 2], [0, 2], [2, 1, 0], [2, 1]]
N_LISTS, N_ITEMS = len(LISTS), 3
PERMS = list(itertools.permutations(range(N_ITEMS)))


def order_of(perm):
    """Adjacency of the total order ``perm`` (best first)."""
    adj = np.zeros((N_ITEMS, N_ITEMS), dtype=bool)
    chain = chain_order(N_ITEMS)
    adj[np.ix_(perm, perm)] = chain
    return adj


LIK = np.array(  # LIK[i, s] = p(Y_i | order PERMS[s])
    [[math.exp(list_log_likelihood(order_of(s), y, P_NOISE)) for s in PERMS] for y in LISTS]
)


def exact_k1_posterior(theta=1.0):
    """Co-clustering, P(K = k) and P(order of list 0's cluster = s) by enumeration."""
    co = np.zeros((N_LISTS, N_LISTS))
    k_dist = np.zeros(N_LISTS + 1)
    order0 = np.zeros(len(PERMS))
    total = 0.0
    for blocks in set_partitions(N_LISTS):
        block_liks = [LIK[b].prod(axis=0) / len(PERMS) for b in blocks]  # per order
        weight = eppf([len(b) for b in blocks], theta, 0.0) * np.prod(
            [bl.sum() for bl in block_liks]
        )
        total += weight
        k_dist[len(blocks)] += weight
        for b, bl in zip(blocks, block_liks, strict=True):
            co[np.ix_(b, b)] += weight
            if 0 in b:
                order0 += weight * bl / bl.sum()
    return co / total, k_dist / total, order0 / total


def sample_k1(utility_prior, random_seed):
    """``(model, idata)``: the ``LISTS`` clustered by ``CRP(1)`` over ``N_LISTS`` slots whose
    1-D utilities ``utility_prior(name, shape)`` makes; 2 chains × (300 + 2,500)."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=N_LISTS, n=N_LISTS)
        u = utility_prior("U", (N_LISTS, N_ITEMS, 1))
        pmc.PartialOrderLists("y", u, z, P_NOISE, observed=LISTS)
        idata = pm.sample(
            2500,
            tune=300,
            chains=2,
            cores=1,
            random_seed=random_seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return model, idata


@pytest.fixture(scope="module")
def k1_idata():
    return sample_k1(
        lambda name, shape: pmc.EquicorrelatedNormal(name, mu=np.zeros(shape), rho=0.0), 11
    )


def within_mc_error(indicator, exact, k=4.5):
    """Whether the mean is within ``k`` standard errors of ``exact`` (``mc_checks.z_scores``:
    ArviZ's MCSE bounded below by ``sqrt(q (1 - q) / n_eff)`` at the exact ``q``: ``n_eff`` the
    indicator's ESS, or all draws for a rare event)."""
    return abs(z_scores(indicator, exact)) < k, (indicator.mean(), exact)


def test_steps_assigned(k1_idata):
    model, _ = k1_idata
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert set(selected) == {pmc.CRPGibbs, pmc.UtilityMetropolis}


def assert_k1_partition_exact(z):
    """Co-clustering and ``P(K = k)`` of the label draws ``z`` (chain, draw, list) against
    :func:`exact_k1_posterior`."""
    co_exact, k_exact, _ = exact_k1_posterior()
    for i, j in itertools.combinations(range(N_LISTS), 2):
        ok, info = within_mc_error((z[..., i] == z[..., j]).astype(float), co_exact[i, j])
        assert ok, (i, j, info)
    n_clusters = np.array([[len(np.unique(row)) for row in chain] for chain in z])
    for k in range(1, N_LISTS + 1):
        ok, info = within_mc_error((n_clusters == k).astype(float), k_exact[k])
        assert ok, (k, info)


def assert_k1_order_exact(z, u):
    """``P(order of list 0's cluster = s)`` of the draws (``u``: chain, draw, slot, item)
    against :func:`exact_k1_posterior`."""
    _, _, order_exact = exact_k1_posterior()
    slot_utils = np.take_along_axis(u, z[..., 0][..., None, None], axis=2)[:, :, 0]
    ranks = np.argsort(-slot_utils, axis=-1)
    codes = np.array([[PERMS.index(tuple(r)) for r in chain] for chain in ranks])
    for s in range(len(PERMS)):
        ok, info = within_mc_error((codes == s).astype(float), order_exact[s])
        assert ok, (PERMS[s], info)


def test_clustered_k1_partition_posterior_is_exact(k1_idata):
    _, idata = k1_idata
    assert_k1_partition_exact(idata.posterior["z"].values)


def test_clustered_k1_order_posterior_is_exact(k1_idata):
    """The order of list 0's cluster: P(order = s | Y) by enumeration."""
    _, idata = k1_idata
    assert_k1_order_exact(idata.posterior["z"].values, idata.posterior["U"].values[..., 0])


@pytest.mark.slow  # 40 s; the default run checks the element-wise prior with one order
def test_clustered_k1_with_an_elementwise_prior_is_exact():
    """The slots' utilities with an element-wise Normal prior (not equicorrelated: the item
    moves score each slot's rows with the compiled prior density) give the posterior of the
    equicorrelated prior with ``ρ = 0``: co-clustering, ``K`` and list 0's cluster's order."""
    _, idata = sample_k1(lambda name, shape: pm.Normal(name, 0.0, 1.0, shape=shape), 12)
    assert_k1_partition_exact(idata.posterior["z"].values)
    assert_k1_order_exact(idata.posterior["z"].values, idata.posterior["U"].values[..., 0])


def test_wrong_oracle_is_rejected(k1_idata):
    """The comparison has power: an oracle that ignores the lists (prior only) fails."""
    _, idata = k1_idata
    z = idata.posterior["z"].values
    prior_co = 1.0 / 2.0  # CRP(1): P(c_0 = c_1) = 1/(1 + θ)
    assert not within_mc_error((z[..., 0] == z[..., 1]).astype(float), prior_co)[0]


# --------------------------------------------------------------------------------------------
# One order, K = 2
# --------------------------------------------------------------------------------------------
RHO = 0.5
LISTS_K2 = [[0, 1, 2], [0, 2, 1], [1, 0], [0, 2]]


def prior_order_probabilities(n_draws=2_000_000, seed=0):
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((n_draws, N_ITEMS, 2))
    common = rng.standard_normal((n_draws, N_ITEMS, 1))
    u = math.sqrt(1 - RHO) * eps + math.sqrt(RHO) * common
    adj = np.all(u[:, :, None, :] > u[:, None, :, :], axis=-1)
    codes = adj.reshape(n_draws, -1) @ (1 << np.arange(N_ITEMS * N_ITEMS))
    values, counts = np.unique(codes, return_counts=True)
    return dict(zip(values.tolist(), (counts / n_draws).tolist(), strict=True))


def test_single_order_k2_posterior_over_orders_is_exact():
    prior = prior_order_probabilities()
    weights = {}
    for code, prob in prior.items():
        adj = ((code >> np.arange(9)) & 1).astype(bool).reshape(3, 3)
        lik = np.exp(sum(list_log_likelihood(adj, y, P_NOISE) for y in LISTS_K2))
        weights[code] = prob * lik
    norm = sum(weights.values())
    with pm.Model():
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((N_ITEMS, 2)), rho=RHO)
        pmc.PartialOrderLists("y", u, None, P_NOISE, observed=LISTS_K2)
        idata = pm.sample(
            3000,
            tune=300,
            chains=2,
            cores=1,
            random_seed=4,
            progressbar=False,
            compute_convergence_checks=False,
        )
    u_draws = idata.posterior["U"].values
    adj = np.all(u_draws[..., :, None, :] > u_draws[..., None, :, :], axis=-1)
    codes = adj.reshape(*adj.shape[:2], -1) @ (1 << np.arange(9))
    for code, w in sorted(weights.items(), key=lambda kv: -kv[1])[:6]:
        ok, info = within_mc_error((codes == code).astype(float), w / norm)
        assert ok, (code, info)


@pytest.mark.parametrize("prior", ["normal", "laplace"])
def test_single_order_with_an_elementwise_prior_is_exact(prior):
    """Utilities with an element-wise prior (not equicorrelated: the item moves score rows
    with the compiled prior density; Laplace is not Gaussian either, so no pCN moves): with
    ``n_dims = 1`` and i.i.d. utilities every total order has prior probability 1/6, so the
    posterior over the orders is proportional to the lists' likelihood, and functions of the
    utilities that do not change when the items are permuted (their sum, their range) keep
    their prior distribution (estimated from 2·10⁶ prior draws)."""
    exact = LIK.prod(axis=0) / LIK.prod(axis=0).sum()
    rng = np.random.default_rng(0)
    draws = (rng.normal if prior == "normal" else rng.laplace)(size=(2_000_000, N_ITEMS))
    invariant = {
        "sum > 1": lambda u: u.sum(axis=-1) > 1.0,
        "range > 2": lambda u: np.ptp(u, axis=-1) > 2.0,
    }
    with pm.Model():
        if prior == "normal":
            u = pm.Normal("U", 0.0, 1.0, shape=(N_ITEMS, 1))
        else:
            u = pm.Laplace("U", 0.0, 1.0, shape=(N_ITEMS, 1))
        pmc.PartialOrderLists("y", u, None, P_NOISE, observed=LISTS)
        step = pmc.UtilityMetropolis([u])
        assert step._prior_fn is not None and step._equi_fn is None
        idata = pm.sample(
            2000,
            tune=300,
            chains=2,
            cores=1,
            step=step,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    utilities = idata.posterior["U"].values[..., 0]
    ranks = np.argsort(-utilities, axis=-1)  # best first
    for s, perm in enumerate(PERMS):
        ok, info = within_mc_error(np.all(ranks == perm, axis=-1).astype(float), exact[s])
        assert ok, (perm, info)
    for name, event in invariant.items():
        ok, info = within_mc_error(event(utilities).astype(float), event(draws).mean())
        assert ok, (name, info)


# --------------------------------------------------------------------------------------------
# U0 Gibbs
# --------------------------------------------------------------------------------------------
def test_utility_mean_gibbs_matches_dense_conditional():
    lists = [[0, 1, 2], [2, 1, 0]]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=2, max_clusters=4)
    step = pmc.UtilityMeanGibbs(  # the conditional of U0 given tau and rho: no tau/rho moves,
        [model["U0"]], model=model, rng=np.random.default_rng(1), collapsed_moves=0, cycles=1
    )  # one cycle (the occupied slots are not moved)
    rng = np.random.default_rng(2)
    point = model.initial_point(random_seed=0)
    tau, rho = 0.6, 0.3
    point["tau_interval__"] = np.log(tau / (1 - tau))
    point["rho_logodds__"] = np.log(rho / (1 - rho))
    point["U"] = rng.normal(size=(4, 3, 2))
    point["cluster"] = np.array([2, 0])  # slots 0 and 2 occupied: U0 given those two only
    sigma = (1 - rho) * np.eye(2) + rho
    precision = np.linalg.inv(sigma) * (1 + 2 * tau**2 / (1 - tau**2))
    cov = np.linalg.inv(precision)
    steps = [step.step(point)[0] for _ in range(20_000)]
    draws = np.array([s["U0"] for s in steps])
    for s in steps[:3]:  # occupied slots kept, empty ones redrawn
        np.testing.assert_array_equal(s["U"][[0, 2]], point["U"][[0, 2]])
        assert not np.any(s["U"][[1, 3]] == point["U"][[1, 3]])
    # The empty slots follow N(tau U0, (1 - tau^2) Sigma) given the new U0.
    # Each row is an independent draw, so each entry of the sample covariance has standard
    # error sqrt((S_ab² + S_aa S_bb) / n) about S = (1 - tau²) Sigma.
    resid = np.array([(s["U"][[1, 3]] - tau * s["U0"]) for s in steps]).reshape(-1, 2)
    want = (1 - tau**2) * sigma
    cov_se = np.sqrt((want**2 + np.outer(np.diag(want), np.diag(want))) / resid.shape[0])
    assert np.all(np.abs(np.cov(resid.T) - want) < 4.5 * cov_se)
    for j in range(3):
        occupied = point["U"][[0, 2], j].sum(axis=0)
        mean = cov @ (np.linalg.inv(sigma) @ occupied) * tau / (1 - tau**2)
        se = np.sqrt(np.diag(cov) / len(draws))
        assert np.all(np.abs(draws[:, j].mean(axis=0) - mean) < 4.5 * se)
        emp_cov = np.cov(draws[:, j].T)
        assert np.allclose(emp_cov, cov, atol=4.5 * np.sqrt(2.0 / len(draws)) * cov.max())


def test_utility_step_reproducible_and_validates():
    lists = [[0, 1, 2], [2, 1, 0], [1, 0]]
    model = pmc.models.partial_order(lists, 3, n_dims=2, noise=0.1)
    point = model.initial_point(random_seed=0)
    a = pmc.UtilityMetropolis([model["U"]], model=model, rng=np.random.default_rng(5))
    b = pmc.UtilityMetropolis([model["U"]], model=model, rng=np.random.default_rng(5))
    pa, pb = point, point
    for _ in range(5):
        pa, _ = a.step(pa)
        pb, _ = b.step(pb)
    np.testing.assert_array_equal(pa["U"], pb["U"])
    assert not np.array_equal(pa["U"], point["U"])
    with pytest.raises(ValueError, match="UtilityMetropolis needs"):
        pmc.UtilityMetropolis([model["rho"]], model=model)
    adj = partial_order_from_utilities(pa["U"])
    assert adj.shape == (3, 3)


def test_the_label_steps_private_utility_step_shares_the_compiled_prior():
    """The utility step and the label step's private utility step of one model use the same
    compiled prior functions (compiled once per model); another model compiles its own."""
    lists = [[0, 1, 2], [2, 1, 0], [1, 0]]

    def utility_steps(model):
        with model:
            step = pmc.UtilityMetropolis([model["U"]])
            labels = pmc.PartialOrderLabelGibbs([model["cluster"]], utility_moves=1)
        return step, labels._between_utilities

    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=1, max_clusters=4)
    step, private = utility_steps(model)
    for name in ("_mean_fn", "_draw_fn", "_draw_rng", "_equi_fn"):
        assert getattr(private, name) is getattr(step, name) is not None
    assert step._prior_fn is None  # equicorrelated rows are scored in closed form
    other, _ = utility_steps(
        pmc.models.clustered_partial_orders(lists, 3, n_dims=1, max_clusters=4)
    )
    assert other._equi_fn is not step._equi_fn


def test_default_repeats_follow_the_list_entries():
    """Item sweeps (at most 5) and hyperparameter updates (at most 3) per step."""
    from pymc_crp.step_methods.list_terms import repeats_for_entries

    entries = (1, 36, 400, 401, 666, 667, 999, 1000, 1001, 10_000)
    assert [repeats_for_entries(e, 5) for e in entries] == [5, 5, 5, 4, 3, 2, 2, 2, 1, 1]
    assert [repeats_for_entries(e, 3) for e in entries] == [3, 3, 3, 3, 3, 2, 2, 2, 1, 1]
    short = pmc.models.partial_order([[0, 1, 2], [2, 1, 0], [1, 0]], 3, n_dims=2, noise=0.1)
    assert pmc.UtilityMetropolis([short["U"]], model=short).item_sweeps == 5
    assert pmc.UtilityMetropolis([short["U"]], model=short, item_sweeps=1).item_sweeps == 1
    assert pmc.HyperparameterMetropolis([short["rho"]], model=short).repeats == 3
    many = pmc.models.partial_order([[0, 1, 2, 3]] * 501, 4, n_dims=2, noise=0.1)
    assert pmc.UtilityMetropolis([many["U"]], model=many).item_sweeps == 1  # 2,004 entries
    assert pmc.HyperparameterMetropolis([many["rho"]], model=many).repeats == 1
    clustered = pmc.models.clustered_partial_orders([[0, 1, 2, 3]] * 501, 4, n_dims=2)
    assert pmc.HyperparameterMetropolis([clustered["p"]], model=clustered).repeats == 5


def test_hyperparameter_repeats_are_that_many_updates(monkeypatch):
    """A ``p`` step with ``repeats=3`` is three steps with ``repeats=1``, draw for draw, and
    evaluates the lists 4 times, not 6 (the updates share the value at the present ``p``); a
    ``tau`` step with ``repeats=3`` makes 3 x 3 centred and 3 non-centred moves."""
    lists = [[0, 1, 2], [2, 1, 0], [1, 0]]
    model = pmc.models.clustered_partial_orders(lists, 3, n_dims=2, max_clusters=4)
    point = model.initial_point(random_seed=0)
    one = pmc.HyperparameterMetropolis(
        [model["p"]], model=model, repeats=1, rng=np.random.default_rng(3)
    )
    three = pmc.HyperparameterMetropolis(
        [model["p"]], model=model, repeats=3, rng=np.random.default_rng(3)
    )
    evaluations = {"one": 0, "three": 0}
    target = pmc.HyperparameterMetropolis._log_target

    def count(self, theta, pt):
        evaluations["three" if self is three else "one"] += 1
        return target(self, theta, pt)

    monkeypatch.setattr(pmc.HyperparameterMetropolis, "_log_target", count)
    a, b = dict(point), dict(point)
    for _ in range(4):
        for _ in range(3):
            a, _ = one.step(a)
        b, _ = three.step(b)
    assert evaluations == {"one": 4 * 3 * 2, "three": 4 * 4}
    monkeypatch.undo()
    for name in point:
        np.testing.assert_array_equal(a[name], b[name])
    assert not np.array_equal(a["p_logodds__"], point["p_logodds__"])
    calls = {"centred": 0, "noncentred": 0}
    step = pmc.NonCentredHyperparameterMetropolis([model["tau"]], model=model, repeats=3)
    centred, slice_move = pmc.HyperparameterMetropolis._update, step._slice_move
    centred_occupied = step._centred_occupied_move

    def count_centred(self, pt, current=None):
        calls["centred"] += 1
        return centred(self, pt, current)

    def count_centred_occupied(pt):
        calls["centred"] += 1
        return centred_occupied(pt)

    def count_slice(pt):
        calls["noncentred"] += 1
        return slice_move(pt)

    monkeypatch.setattr(pmc.HyperparameterMetropolis, "_update", count_centred)
    monkeypatch.setattr(step, "_centred_occupied_move", count_centred_occupied)
    monkeypatch.setattr(step, "_slice_move", count_slice)
    step.step(dict(point))
    assert calls == {"centred": 9, "noncentred": 3}


def test_utility_step_same_chain_with_and_without_the_cache():
    """The list-likelihood cache and the reuse of unchanged orders change no draw."""
    from pymc_crp.core.lists import DEFAULT_CACHE_BYTES, list_likelihood_cache

    rng = np.random.default_rng(11)
    orders = [partial_order_from_utilities(rng.normal(size=(7, 2))) for _ in range(2)]
    lists = []
    for i in range(60):
        items = rng.choice(7, size=4 + i % 4, replace=False)
        lists.append(pmc.posets.sample_list(orders[i % 2], items, 0.1, rng).tolist())
    model = pmc.models.clustered_partial_orders(lists, 7, n_dims=2, max_clusters=4)
    cache = list_likelihood_cache()
    traces = []
    for max_bytes in (DEFAULT_CACHE_BYTES, 0):
        cache.clear()
        cache.max_bytes = max_bytes
        try:
            with model:
                step = pm.sampling.mcmc.instantiate_steppers(
                    model, *pm.sampling.mcmc.assign_step_methods(model, None)
                )
                step = pm.CompoundStep(step) if isinstance(step, list) else step
                step.set_rng(np.random.default_rng(3))
                point, trace = model.initial_point(random_seed=0), []
                for _ in range(15):
                    point, _ = step.step(point)
                    trace.append(np.concatenate([np.ravel(point[k]) for k in sorted(point)]))
            traces.append(np.array(trace))
            if max_bytes:
                assert cache.reused > 0 and len(cache) > 0
            else:
                assert len(cache) == 0
        finally:
            cache.max_bytes = DEFAULT_CACHE_BYTES
    np.testing.assert_array_equal(traces[0], traces[1])


def test_lists_with_an_unchanged_restricted_order_keep_their_likelihood():
    """``_ListTerm.restricted_changed``: after one item's utilities move, a list it reports
    unchanged has the same likelihood under the new order (checked with the brute-force
    ``list_log_likelihood`` of the posets core), and some lists are reported unchanged."""
    from pymc_crp.step_methods.utility_metropolis import _ListTerm

    rng = np.random.default_rng(3)
    n_items = 70  # two bitset words
    lists = [rng.choice(n_items, size=6, replace=False).tolist() for _ in range(300)]
    model = pmc.models.partial_order(lists, n_items, n_dims=2)
    term = _ListTerm(model, model["lists"], model.rvs_to_values[model["U"]], None)
    from pymc_crp.core.lists import order_words

    reported_unchanged = 0
    for _ in range(20):
        u = rng.normal(size=(n_items, 2))
        item = int(rng.integers(n_items))
        moved = u.copy()
        moved[item] += 0.7 * rng.normal(size=2)
        rows = np.flatnonzero([item in y for y in lists])
        old, new = order_words(u[None])[0], order_words(moved[None])[0]
        changed = term.restricted_changed(old, new, item, rows)
        before, after = partial_order_from_utilities(u), partial_order_from_utilities(moved)
        for row, flag in zip(rows, changed, strict=True):
            same = list_log_likelihood(before, lists[row], 0.1) == pytest.approx(
                list_log_likelihood(after, lists[row], 0.1)
            )
            items = lists[row]
            restricted_same = np.array_equal(
                before[np.ix_(items, items)], after[np.ix_(items, items)]
            )
            assert flag != restricted_same  # exactly the lists whose restricted order moved
            if not flag:
                reported_unchanged += 1
                assert same
    assert reported_unchanged > 0


def test_cache_entries_left_by_a_step_are_exact():
    """After a step over many items (most moves touch few lists), the cache entries of the
    final orders hold every list, bit for bit those of the direct stacked likelihood, so the
    next steps at that state count nothing."""
    from pymc_crp.core.lists import list_likelihood_cache, order_words
    from pymc_crp.core.posets import list_log_likelihoods_stacked

    rng = np.random.default_rng(4)
    n_items = 80
    lists = [rng.choice(n_items, size=int(rng.integers(3, 8)), replace=False) for _ in range(150)]
    labels = rng.integers(0, 3, size=len(lists))
    model = pmc.models.clustered_partial_orders(lists, n_items, n_dims=2, max_clusters=4)
    with model:
        step = pmc.UtilityMetropolis([model["U"]], rng=np.random.default_rng(0))
    point = model.initial_point(random_seed=0)
    point["cluster"] = labels
    point["U"] = rng.normal(size=point["U"].shape)
    cache = list_likelihood_cache()
    cache.clear()
    for _ in range(3):
        point, _ = step.step(point)
    term = step._terms[0]
    p = float(term.noise_fn(point))
    computed = cache.computed
    got = cache.log_likelihoods(term.list_set, order_words(point["U"]), labels, p)
    assert cache.computed == computed  # all served from the entries
    closed = np.stack([partial_order_from_utilities(u) for u in point["U"]])
    padded = term.lists
    expected = list_log_likelihoods_stacked(closed, padded, np.sum(padded >= 0, axis=1), labels, p)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("k", [1, 3, 7, 9])
def test_row_log_ratio_has_the_bits_of_the_stacked_density(k):
    """The item moves' prior ratio repeats equicorrelated_logpdf's arithmetic exactly."""
    from pymc_crp.distributions.equicorrelated_normal import (
        equicorrelated_log_ratio,
        equicorrelated_logpdf,
    )

    rng = np.random.default_rng(k)
    constants = {}
    for _ in range(2000):
        new, old, mu = (rng.standard_normal(k) * 10.0 ** rng.integers(-2, 3) for _ in range(3))
        rho = np.float64(rng.choice([0.0, rng.uniform(0, 1), 1 - 1e-9]))
        scale = np.float64(10.0 ** rng.uniform(-2, 2))
        both = equicorrelated_logpdf(np.stack((new, old)), mu, rho, scale)
        got = equicorrelated_log_ratio(new, old, mu, rho, scale, constants)
        assert got == float(both[0] - both[1])


@pytest.mark.parametrize("stacked", [True, False])
def test_compiled_item_sweeps_are_the_python_moves_bit_for_bit(stacked, monkeypatch):
    """``_item_sweep`` (one compiled call per sweep) draws and decides exactly as the
    one-item moves of ``_item_move``: the same utilities, stats and tuned scales."""
    from pymc_crp.step_methods.utility_metropolis import UtilityMetropolis

    rng = np.random.default_rng(8)
    n_items = 90  # two bitset words
    orders = [partial_order_from_utilities(rng.normal(size=(n_items, 3))) for _ in range(3)]
    lists = []
    for i in range(200):
        items = rng.choice(n_items, size=int(rng.integers(3, 12)), replace=False)
        lists.append(pmc.posets.sample_list(orders[i % 3], items, 0.1, rng).tolist())
    if stacked:
        model = pmc.models.clustered_partial_orders(lists, n_items, n_dims=3, max_clusters=5)
    else:
        model = pmc.models.partial_order(lists, n_items, n_dims=3)
    runs = []
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(UtilityMetropolis, "_compiled_sweeps", lambda self, sweep: False)
        with model:
            step = pmc.UtilityMetropolis([model["U"]], item_sweeps=2, rng=np.random.default_rng(1))
        point = model.initial_point(random_seed=0)
        if stacked:
            point["cluster"] = np.arange(len(lists)) % 3
        trace = []
        for i in range(8):
            if i == 5:
                step.stop_tuning()
            point, (stats,) = step.step(point)
            trace.append((point["U"].copy(), stats))
        runs.append(trace)
    for (u_a, stats_a), (u_b, stats_b) in zip(*runs, strict=True):
        np.testing.assert_array_equal(u_a, u_b)
        assert stats_a == pytest.approx(stats_b, nan_ok=True, rel=0, abs=0)
