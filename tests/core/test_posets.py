"""Tests of pymc_crp.posets against independent oracles.

The oracles here are written from the definitions, not from the package's formulas:
linear extensions by enumerating permutations (and networkx), and list probabilities by
running the queue-jumping generative process over every possible sequence of choices.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter, defaultdict

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_crp import posets as P

# ----------------------------------------------------------------------------------
# Independent oracles


def closure_oracle(adj):
    """Warshall closure with plain loops."""
    c = np.array(adj, dtype=bool)
    n = c.shape[0]
    for k in range(n):
        for i in range(n):
            if c[i, k]:
                for j in range(n):
                    if c[k, j]:
                        c[i, j] = True
    return c


def brute_extensions(closed, items):
    """All orderings of ``items`` in which no later item is above an earlier one."""
    items = list(items)
    if not items:
        return [()]
    perms = np.array(list(itertools.permutations(items)), dtype=np.int64).reshape(-1, len(items))
    ok = np.ones(len(perms), dtype=bool)
    for a, b in itertools.combinations(range(len(items)), 2):
        ok &= ~closed[perms[:, b], perms[:, a]]
    return [tuple(int(v) for v in row) for row in perms[ok]]


def brute_list_distribution(closed, items, p, direction):
    """Probability of every list from running the queue-jumping process on all choices.

    Top-down: with prob. ``p`` the next item is uniform on the remaining ones, otherwise
    it is the first item of a uniformly drawn linear extension of the remaining suborder
    (all extensions enumerated). Bottom-up: the last open position is filled the same way
    with the last item of the extension.
    """
    dist = defaultdict(float)
    top_down = direction == "top-down"

    @functools.cache
    def end_item_law(remaining):
        exts = brute_extensions(closed, sorted(remaining))
        ends = Counter(e[0] if top_down else e[-1] for e in exts)
        return {x: c / len(exts) for x, c in ends.items()}

    def rec(remaining, placed, prob):
        if not remaining:
            dist[tuple(placed)] += prob
            return
        law = end_item_law(remaining)
        for x in sorted(remaining):
            choice_prob = p / len(remaining) + (1 - p) * law.get(x, 0.0)
            if choice_prob > 0:
                new = placed + [x] if top_down else [x] + placed
                rec(remaining - {x}, new, prob * choice_prob)

    rec(frozenset(int(i) for i in items), [], 1.0)
    return dict(dist)


def bitmask_count(closed):
    """Exact count by a plain-Python memoised recursion over bitmasks of remaining items."""
    n = closed.shape[0]
    above = [sum(1 << i for i in range(n) if closed[i, x]) for x in range(n)]

    @functools.cache
    def count(mask):
        if mask & (mask - 1) == 0:
            return 1
        total = 0
        for x in range(n):
            if mask >> x & 1 and not above[x] & mask:
                total += count(mask & ~(1 << x))
        return total

    return count((1 << n) - 1)


def networkx_count(closed):
    g = nx.DiGraph()
    g.add_nodes_from(range(closed.shape[0]))
    g.add_edges_from(zip(*np.nonzero(closed), strict=True))
    return sum(1 for _ in nx.all_topological_sorts(g))


def random_dag_order(n, density, rng):
    """A random partial order: random relabelling of a random upper-triangular relation."""
    upper = np.triu(rng.random((n, n)) < density, 1)
    perm = rng.permutation(n)
    adj = np.zeros((n, n), dtype=bool)
    adj[np.ix_(perm, perm)] = upper
    return adj


def catalan(n):
    return math.comb(2 * n, n) // (n + 1)


# The worked example: 0 ≻ 1 ≻ 2, 0 ≻ 3, 2 ≻ 4, 3 ≻ 4; the items 1, 2 (a chain) and 3
# interleave in 3 ways between 0 and 4.
WORKED_EDGES = [(0, 1), (1, 2), (0, 3), (2, 4), (3, 4)]


def worked_example():
    adj = np.zeros((5, 5), dtype=bool)
    for i, j in WORKED_EDGES:
        adj[i, j] = True
    return adj


# ----------------------------------------------------------------------------------
# Orders, closure, reduction


def test_partial_order_from_utilities_matches_definition():
    rng = np.random.default_rng(1)
    eta = rng.integers(0, 3, size=(9, 2)).astype(float)  # ties on purpose
    adj = P.partial_order_from_utilities(eta)
    for i in range(9):
        for j in range(9):
            assert adj[i, j] == all(eta[i, k] > eta[j, k] for k in range(2))
    assert np.array_equal(closure_oracle(adj), adj)
    stack = P.partial_order_from_utilities(np.stack([eta, -eta]))
    assert np.array_equal(stack[0], adj) and np.array_equal(stack[1], adj.T)


def test_single_dimension_gives_total_order():
    adj = P.partial_order_from_utilities(np.array([[0.3], [2.0], [-1.0]]))
    assert P.count_linear_extensions(adj) == 1
    assert P.is_linear_extension(adj, [1, 0, 2])


def test_closure_and_reduction_against_oracle():
    rng = np.random.default_rng(2)
    for _ in range(20):
        adj = random_dag_order(int(rng.integers(1, 12)), 0.3, rng)
        closed = P.transitive_closure(adj)
        assert np.array_equal(closed, closure_oracle(adj))
        red = P.transitive_reduction(adj)
        assert np.array_equal(closure_oracle(red), closed)
        # No cover relation is implied by the others.
        for i, j in zip(*np.nonzero(red), strict=True):
            fewer = red.copy()
            fewer[i, j] = False
            assert not closure_oracle(fewer)[i, j]
        assert np.array_equal(P.validate_partial_order(red), closed)


def test_is_linear_extension_on_subsets():
    adj = worked_example()
    exts = brute_extensions(closure_oracle(adj), range(5))
    for perm in itertools.permutations(range(5)):
        assert P.is_linear_extension(adj, perm) == (perm in exts)
    assert P.is_linear_extension(adj, [3, 1, 4])
    assert not P.is_linear_extension(adj, [4, 0])  # 0 ≻ 4 by transitivity


def test_example_generators():
    rng = np.random.default_rng(3)
    two_d = P.random_two_dimensional_order(12, rng)
    assert np.array_equal(closure_oracle(two_d), two_d)
    assert not two_d.diagonal().any()
    crown = P.crown_order(3)
    assert crown.shape == (6, 6) and crown.sum() == 6
    assert P.chain_order(4).sum() == 6 and P.antichain_order(4).sum() == 0
    grid = P.grid_order(2, 3)
    assert grid[0, 5] and grid[1, 4] and not grid[3, 1] and not grid[2, 3]


# ----------------------------------------------------------------------------------
# Counting


def test_count_matches_permutations_and_networkx():
    rng = np.random.default_rng(4)
    for trial in range(25):
        n = int(rng.integers(1, 9))
        adj = random_dag_order(n, float(rng.choice([0.1, 0.3, 0.6])), rng)
        closed = closure_oracle(adj)
        brute = len(brute_extensions(closed, range(n)))
        assert P.count_linear_extensions(adj) == brute
        assert P.log_count_linear_extensions(adj) == pytest.approx(math.log(brute), abs=1e-12)
        if trial < 10:
            assert networkx_count(closed) == brute


def test_count_of_subsets_matches_permutations():
    rng = np.random.default_rng(5)
    adj = P.random_two_dimensional_order(10, rng)
    for _ in range(10):
        items = rng.choice(10, size=int(rng.integers(0, 8)), replace=False)
        assert P.count_linear_extensions(adj, items) == len(brute_extensions(adj, items))


def test_closed_forms():
    for m in (0, 1, 5, 12, 25):
        assert P.count_linear_extensions(P.antichain_order(m)) == math.factorial(m)
        assert P.count_linear_extensions(P.chain_order(m)) == 1
    for n in (1, 2, 5, 10, 20, 30):
        assert P.count_linear_extensions(P.grid_order(2, n)) == catalan(n)
        assert P.log_count_linear_extensions(P.grid_order(2, n)) == pytest.approx(
            math.log(catalan(n)), rel=1e-13
        )
    # Disjoint chains of lengths 3, 4, 5, 2: the multinomial coefficient.
    sizes = [3, 4, 5, 2]
    adj = np.zeros((14, 14), dtype=bool)
    start = 0
    for s in sizes:
        adj[start : start + s, start : start + s] = P.chain_order(s)
        start += s
    multinomial = math.factorial(14) // math.prod(math.factorial(s) for s in sizes)
    assert P.count_linear_extensions(adj) == multinomial


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_crown_small_against_brute_force(n):
    crown = P.crown_order(n)
    brute = len(brute_extensions(crown, range(2 * n)))
    assert brute == (n + 1) * math.factorial(n) * math.factorial(n - 1)
    assert P.count_linear_extensions(crown) == brute


def test_big_exact_counts():
    # 30-item crown (15 + 15): about 1.8e24 > 2**64, checked against a Python big-int DP.
    crown = P.crown_order(15)
    exact = P.count_linear_extensions(crown)
    assert isinstance(exact, int)
    assert exact == bitmask_count(crown)
    assert exact == 16 * math.factorial(15) * math.factorial(14)
    assert exact > 2**64
    # Above 128 items: components are counted separately and combined.
    assert P.count_linear_extensions(P.antichain_order(150)) == math.factorial(150)
    assert P.count_linear_extensions(P.chain_order(150)) == 1
    grid = P.grid_order(2, 64)  # 128 items, a single kernel call with many primes
    assert P.count_linear_extensions(grid) == catalan(64)
    two_grids = np.zeros((136, 136), dtype=bool)
    two_grids[:128, :128] = grid
    two_grids[128:, 128:] = P.grid_order(2, 4)
    assert P.count_linear_extensions(two_grids) == math.comb(136, 8) * catalan(64) * catalan(4)
    assert P.log_count_linear_extensions(two_grids) == pytest.approx(
        math.log(math.comb(136, 8) * catalan(64) * catalan(4)), rel=1e-12
    )
    # An exact count of a random 2-D order of 24 items against the Python DP.
    rng = np.random.default_rng(6)
    adj = P.random_two_dimensional_order(24, rng)
    assert P.count_linear_extensions(adj) == bitmask_count(adj)


def test_limit_error_is_raised_quickly():
    with pytest.raises(P.LinearExtensionLimitError, match="max_states=500"):
        P.count_linear_extensions(P.crown_order(20), max_states=500)
    with pytest.raises(P.LinearExtensionLimitError):
        P.sample_linear_extension(P.crown_order(20), np.random.default_rng(0), max_states=500)
    with pytest.raises(P.LinearExtensionLimitError):
        P.list_log_likelihood(P.crown_order(20), list(range(40)), 0.0, max_states=500)
    crowns = np.stack([P.crown_order(20), P.crown_order(20)])
    padded = np.arange(40)[None, :]
    with pytest.raises(P.LinearExtensionLimitError):
        P.list_log_likelihoods_stacked(crowns, padded, [40], [1], 0.0, max_states=500)
    big = np.zeros((130, 130), dtype=bool)
    big[:129, 129] = True
    big[0, 1:129] = True  # connected, 130 items, not a chain
    with pytest.raises(P.LinearExtensionLimitError, match="130 items"):
        P.count_linear_extensions(big)


# ----------------------------------------------------------------------------------
# List likelihood


def test_worked_example():
    adj = worked_example()
    assert len(brute_extensions(closure_oracle(adj), range(5))) == 3
    assert P.count_linear_extensions(adj) == 3
    for direction in ("top-down", "bottom-up"):
        ll = P.list_log_likelihood(adj, [0, 1, 2, 3, 4], 0.0, direction)
        assert ll == pytest.approx(math.log(1 / 3), abs=1e-14)
        assert P.list_log_likelihood(adj, [1, 0, 2, 3, 4], 0.0, direction) == -np.inf


@pytest.mark.parametrize("direction", ["top-down", "bottom-up"])
def test_likelihood_matches_generative_process(direction):
    rng = np.random.default_rng(7)
    for _ in range(4):
        adj = random_dag_order(7, 0.3, rng)
        closed = closure_oracle(adj)
        items = sorted(int(i) for i in rng.choice(7, size=6, replace=False))
        lists = [list(perm) for perm in itertools.permutations(items)]
        for p in (0.0, 0.2, 1.0):
            dist = brute_list_distribution(closed, items, p, direction)
            probs = np.exp(P.list_log_likelihoods(adj, lists, p, direction))
            oracle = np.array([dist.get(tuple(y), 0.0) for y in lists])
            np.testing.assert_allclose(probs, oracle, rtol=1e-12, atol=1e-15)
            assert probs.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("direction", ["top-down", "bottom-up"])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1.0])
def test_likelihood_sums_to_one(direction, p):
    rng = np.random.default_rng(8)
    for adj in (P.random_two_dimensional_order(7, rng), P.crown_order(3), worked_example()):
        m = adj.shape[0]
        lists = np.array(list(itertools.permutations(range(m))))
        total = np.exp(P.list_log_likelihoods(adj, lists, p, direction)).sum()
        assert total == pytest.approx(1.0, abs=1e-12)
        # p = 0: the linear extensions share the mass equally.
        if p == 0.0:
            ll = P.list_log_likelihoods(adj, lists, p, direction)
            finite = np.isfinite(ll)
            assert finite.sum() == P.count_linear_extensions(adj)
            np.testing.assert_allclose(ll[finite], -P.log_count_linear_extensions(adj))


def test_bottom_up_is_top_down_of_reversed_list_under_dual():
    rng = np.random.default_rng(9)
    adj = P.random_two_dimensional_order(15, rng)
    for _ in range(20):
        y = rng.choice(15, size=int(rng.integers(1, 12)), replace=False)
        for p in (0.0, 0.3):
            a = P.list_log_likelihood(adj, y, p, "bottom-up")
            b = P.list_log_likelihood(adj.T, y[::-1], p, "top-down")
            assert a == pytest.approx(b, rel=1e-12, abs=1e-300) or a == b == -np.inf


def test_batched_padded_and_stacked_agree_with_single():
    rng = np.random.default_rng(10)
    m_items = 20
    orders = np.stack([P.random_two_dimensional_order(m_items, rng) for _ in range(3)])
    lists = [rng.choice(m_items, size=int(rng.integers(1, 10)), replace=False) for _ in range(40)]
    labels = rng.integers(0, 3, size=40)
    padded, lengths = P.validate_rankings(lists, m_items)
    for direction, top_down in (("top-down", True), ("bottom-up", False)):
        for p in (0.0, 0.15):
            single = np.array(
                [
                    P.list_log_likelihood(orders[c], y, p, direction)
                    for c, y in zip(labels, lists, strict=True)
                ]
            )
            batched = P.list_log_likelihoods(orders[0], padded, p, direction)
            expect0 = [P.list_log_likelihood(orders[0], y, p, direction) for y in lists]
            np.testing.assert_allclose(batched, expect0, rtol=1e-12)
            stacked = P.list_log_likelihoods_stacked(orders, padded, lengths, labels, p, top_down)
            np.testing.assert_allclose(stacked, single, rtol=1e-12)
    # Orders above 128 items fall back to one list at a time.
    big = np.zeros((130, 130), dtype=bool)
    big[:20, :20] = orders[0]
    np.testing.assert_allclose(
        P.list_log_likelihoods(big, lists, 0.15), P.list_log_likelihoods(orders[0], lists, 0.15)
    )


def test_two_word_sets_above_64_items():
    # Item sets of more than 64 items use both words of the kernel's bitsets.
    for n in (32, 33, 40):
        assert P.count_linear_extensions(P.grid_order(2, n)) == catalan(n)
    rng = np.random.default_rng(16)
    big = P.partial_order_from_utilities(rng.normal(size=(100, 2)))
    lists = [rng.choice(100, size=int(rng.integers(2, 9)), replace=False) for _ in range(60)]
    lists += [np.arange(60, 72), np.array([99, 64, 63, 0, 70])]
    for direction in ("top-down", "bottom-up"):
        for p in (0.0, 0.2):
            batched = P.list_log_likelihoods(big, lists, p, direction)  # absolute bitsets
            single = [P.list_log_likelihood(big, y, p, direction) for y in lists]  # relabelled
            np.testing.assert_allclose(batched, single, rtol=1e-12)
    # A 70-chain and two free items (72 items, one kernel call): each free item lands
    # uniformly on the 72 positions.
    adj = np.zeros((72, 72), dtype=bool)
    adj[:70, :70] = P.chain_order(70)
    draws = P.sample_linear_extension(adj, rng, size=2160)
    assert all(P.is_linear_extension(adj, row) for row in draws[:20])
    for free in (70, 71):
        observed = Counter(int(k) for k in np.argmax(draws == free, axis=1))
        assert _chisquare_pvalue(observed, {k: 1 / 72 for k in range(72)}, len(draws)) > 0.001


def test_gradient_with_respect_to_p():
    rng = np.random.default_rng(11)
    adj = P.random_two_dimensional_order(12, rng)
    lists = [rng.choice(12, size=8, replace=False) for _ in range(10)]
    padded, lengths = P.validate_rankings(lists, 12)
    for top_down in (True, False):
        for p in (0.05, 0.5, 0.95):
            ll, grad = P.list_log_likelihoods_padded(
                adj, padded, lengths, p, top_down, return_grad=True
            )
            h = 1e-6
            up = P.list_log_likelihoods_padded(adj, padded, lengths, p + h, top_down)
            down = P.list_log_likelihoods_padded(adj, padded, lengths, p - h, top_down)
            np.testing.assert_allclose(grad, (up - down) / (2 * h), rtol=1e-5, atol=1e-6)
        # p = 1: one-sided difference (the gradient still needs the count ratios).
        at_one, grad1 = P.list_log_likelihoods_padded(
            adj, padded, lengths, 1.0, top_down, return_grad=True
        )
        h = 1e-7
        back = P.list_log_likelihoods_padded(adj, padded, lengths, 1.0 - h, top_down)
        np.testing.assert_allclose(grad1, (at_one - back) / h, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------------
# Sampling


def _chisquare_pvalue(observed: Counter, probs: dict, n_draws: int) -> float:
    keys = sorted(probs)
    f_obs = np.array([observed.get(k, 0) for k in keys], dtype=float)
    assert f_obs.sum() == n_draws  # nothing outside the support
    f_exp = np.array([probs[k] for k in keys]) * n_draws
    f_exp *= n_draws / f_exp.sum()
    return stats.chisquare(f_obs, f_exp).pvalue


def test_sample_linear_extension_is_uniform():
    rng = np.random.default_rng(12)
    for adj in (P.grid_order(2, 4), worked_example(), P.crown_order(2)):
        exts = brute_extensions(closure_oracle(adj), range(adj.shape[0]))
        draws = P.sample_linear_extension(adj, rng, size=400 * len(exts))
        observed = Counter(tuple(int(v) for v in row) for row in draws)
        probs = {e: 1 / len(exts) for e in exts}
        assert _chisquare_pvalue(observed, probs, len(draws)) > 0.001
    single = P.sample_linear_extension(worked_example(), rng)
    assert single.shape == (5,) and P.is_linear_extension(worked_example(), single)


def test_sample_linear_extension_of_subset_and_above_kernel_size():
    rng = np.random.default_rng(13)
    adj = P.random_two_dimensional_order(30, rng)
    items = rng.choice(30, size=12, replace=False)
    for row in P.sample_linear_extension(adj, rng, items, size=50):
        assert sorted(row) == sorted(items) and P.is_linear_extension(adj, row)
    # 131 items: a 130-chain and one free item, which must land uniformly anywhere.
    big = np.zeros((131, 131), dtype=bool)
    big[:130, :130] = P.chain_order(130)
    draws = P.sample_linear_extension(big, rng, size=2620)
    assert all(P.is_linear_extension(big, row) for row in draws[:20])
    position = np.argmax(draws == 130, axis=1)
    observed = Counter(int(k) for k in position)
    probs = {k: 1 / 131 for k in range(131)}
    assert _chisquare_pvalue(observed, probs, len(draws)) > 0.001


@pytest.mark.parametrize("direction", ["top-down", "bottom-up"])
@pytest.mark.parametrize("p", [0.0, 0.5])
def test_sample_list_matches_likelihood(direction, p):
    rng = np.random.default_rng(14 if direction == "top-down" else 15)
    adj = P.random_two_dimensional_order(8, rng)
    items = [1, 2, 4, 5, 7]
    lists = [tuple(perm) for perm in itertools.permutations(items)]
    probs = dict(zip(lists, np.exp(P.list_log_likelihoods(adj, lists, p, direction)), strict=True))
    support = {k: v for k, v in probs.items() if v > 0}
    n_draws = 30_000
    draws = P.sample_list(adj, items, p, rng, direction, size=n_draws)
    observed = Counter(tuple(int(v) for v in row) for row in draws)
    assert _chisquare_pvalue(observed, support, n_draws) > 0.001
    one = P.sample_list(adj, items, p, rng, direction)
    assert sorted(one) == items


def test_sampling_uses_only_the_generator():
    adj = P.random_two_dimensional_order(10, np.random.default_rng(0))
    a = P.sample_list(adj, range(10), 0.2, np.random.default_rng(5), size=3)
    b = P.sample_list(adj, range(10), 0.2, np.random.default_rng(5), size=3)
    assert np.array_equal(a, b)
    c = P.sample_linear_extension(adj, np.random.default_rng(5), size=3)
    d = P.sample_linear_extension(adj, np.random.default_rng(5), size=3)
    assert np.array_equal(c, d)


# ----------------------------------------------------------------------------------
# Validation


def test_bad_partial_orders():
    with pytest.raises(ValueError, match="adj must be a square"):
        P.count_linear_extensions(np.zeros((2, 3), dtype=bool))
    with pytest.raises(ValueError, match="adj must be a boolean"):
        P.count_linear_extensions(np.zeros((3, 3)))
    refl = np.zeros((3, 3), dtype=bool)
    refl[1, 1] = True
    with pytest.raises(ValueError, match=r"adj\[1, 1\] is True"):
        P.validate_partial_order(refl)
    cyc = np.zeros((3, 3), dtype=bool)
    cyc[0, 1] = cyc[1, 2] = cyc[2, 0] = True
    with pytest.raises(ValueError, match="adj has a cycle"):
        P.list_log_likelihood(cyc, [0, 1], 0.1)
    with pytest.raises(ValueError, match="eta must be a 2-D"):
        P.partial_order_from_utilities(np.zeros(4))
    with pytest.raises(ValueError, match="eta must be finite"):
        P.partial_order_from_utilities(np.array([[0.0], [np.nan]]))


def test_bad_lists_and_arguments():
    adj = P.random_two_dimensional_order(6, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    cases = [
        ([[0, 1], [2, 3], [4], [5, 1, 5]], r"lists\[3\] repeats item 5"),
        ([[0, 1], [7]], r"lists\[1\] contains item 7 outside 0..5"),
        ([[0, 1], [-1]], r"lists\[1\] contains item -1 outside"),
        ([[0, 1], []], r"lists\[1\] is empty"),
        ([[0, 1.5]], r"lists\[0\] contains non-integer value 1.5"),
        ([np.array([0.0, 1.0])], r"lists\[0\] must contain integers"),
        ([[0, True]], r"lists\[0\] contains non-integer value True"),
        ([], "lists holds no lists"),
        (np.array([[0, -1, 2]]), r"lists\[0\] has -1 padding before"),
        (np.array([[0, 1], [-1, -1]]), r"lists\[1\] is empty"),
        (np.array([0, 1]), "must be 2-D"),
        ("012", "lists must be a list"),
    ]
    for lists, message in cases:
        with pytest.raises(ValueError, match=message):
            P.list_log_likelihoods(adj, lists, 0.1)
    with pytest.raises(ValueError, match=r"ranking repeats item 2"):
        P.list_log_likelihood(adj, [2, 2], 0.1)
    with pytest.raises(ValueError, match="ranking must be one-dimensional"):
        P.list_log_likelihood(adj, [[0, 1]], 0.1)
    for bad_p in (-0.1, 1.5, np.nan, np.inf, "0.1", True, [0.1]):
        with pytest.raises(ValueError, match="p must be"):
            P.list_log_likelihood(adj, [0, 1], bad_p)
        with pytest.raises(ValueError, match="p must be"):
            P.sample_list(adj, [0, 1], bad_p, rng)
    with pytest.raises(ValueError, match="direction must be"):
        P.list_log_likelihoods(adj, [[0, 1]], 0.1, direction="sideways")
    with pytest.raises(ValueError, match="direction must be"):
        P.sample_list(adj, [0, 1], 0.1, rng, direction="up")
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        P.sample_linear_extension(adj, 42)
    with pytest.raises(ValueError, match=r"items contains item 9"):
        P.count_linear_extensions(adj, [0, 9])
    with pytest.raises(ValueError, match="items repeats item 0"):
        P.sample_list(adj, [0, 0], 0.1, rng)
    with pytest.raises(ValueError, match="max_states must be"):
        P.count_linear_extensions(adj, max_states=0)
    with pytest.raises(ValueError, match="size must be"):
        P.sample_linear_extension(adj, rng, size=-1)
    padded, lengths = P.validate_rankings([[0, 1], [2, 3]], 6)
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        P.list_log_likelihoods_stacked(np.stack([adj, adj]), padded, lengths, [0, 2], 0.1)
    with pytest.raises(ValueError, match="closed_stack must have shape"):
        P.list_log_likelihoods_stacked(adj, padded, lengths, [0, 0], 0.1)


# ----------------------------------------------------------------------------------
# Properties


@st.composite
def utility_orders(draw):
    m = draw(st.integers(1, 7))
    k = draw(st.integers(1, 3))
    values = draw(st.lists(st.integers(0, 4), min_size=m * k, max_size=m * k))
    return P.partial_order_from_utilities(np.array(values, dtype=float).reshape(m, k))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(adj=utility_orders(), data=st.data())
def test_properties(adj, data):
    m = adj.shape[0]
    count = P.count_linear_extensions(adj)
    assert 1 <= count <= math.factorial(m)
    assert P.log_count_linear_extensions(adj) == pytest.approx(math.log(count), abs=1e-12)
    # Dropping cover relations can only add linear extensions.
    red = P.transitive_reduction(adj)
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=m * m, max_size=m * m)))
    weaker = red & keep.reshape(m, m)
    assert P.count_linear_extensions(weaker) >= count
    # Likelihoods are log-probabilities.
    y = data.draw(st.permutations(range(m)))
    p = data.draw(st.sampled_from([0.0, 0.05, 0.5, 1.0]))
    for direction in ("top-down", "bottom-up"):
        ll = P.list_log_likelihood(adj, y, p, direction)
        assert ll <= 1e-12 and not np.isnan(ll)
        assert np.isfinite(ll) == (p > 0 or P.is_linear_extension(adj, y))


def test_numeric_core_does_not_import_pymc():
    import ast
    import pathlib

    import pymc_crp.core.linext_kernels as linext
    import pymc_crp.core.linext_sampling as sampling
    import pymc_crp.core.linext_support as tables
    import pymc_crp.core.poset_examples as examples
    import pymc_crp.core.poset_validation as validation

    for module in (P, linext, sampling, tables, validation, examples):
        tree = ast.parse(pathlib.Path(module.__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("pymc", "pytensor") for n in names), names
