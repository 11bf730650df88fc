"""Count ratios through the restricted-order memo (pymc_crp.core.order_memo) against brute
force and the general kernel."""

import itertools

import numpy as np
import pytest

from pymc_crp.core import linext_kernels as K
from pymc_crp.core.linext_support import float_binomials, utility_relation_words
from pymc_crp.core.lists import ListSet
from pymc_crp.core.order_memo import (
    MAX_SMALL_LENGTH,
    TABLE_RUN_FACTOR,
    OrderMemo,
    memo_ratios_kernel,
)


def _extensions(items, above) -> int:
    """Linear extensions of the order ``above`` (set of pairs ``(y, x)``: y above x) on
    ``items``, by enumerating the permutations (best first)."""
    return sum(
        all(perm.index(y) < perm.index(x) for y, x in above if x in perm and y in perm)
        for perm in itertools.permutations(items)
    )


def _brute_ratios(eta, lst):
    """``1{Y_j maximal in T_j} e(T_j - Y_j) / e(T_j)`` by enumeration (``eta``: utilities;
    ``y`` above ``x`` iff ``eta[y] > eta[x]`` in every dimension)."""
    above = {(y, x) for y in lst for x in lst if y != x and np.all(eta[y] > eta[x])}
    out = []
    for j in range(len(lst) - 1):
        rest = lst[j:]
        top = lst[j]
        if any((y, top) in above for y in rest):
            out.append(0.0)
            continue
        out.append(_extensions(rest[1:], above) / _extensions(rest, above))
    return np.array(out)


def _lists(rng, n_lists, n_items, width, min_len=1):
    padded = np.full((n_lists, width), -1, dtype=np.int64)
    for i in range(n_lists):
        m = int(rng.integers(min_len, width + 1))
        padded[i, :m] = rng.choice(n_items, size=m, replace=False)
    return padded


def _memo_ratios(rel, list_set, memo, perm=None):
    perm = np.arange(list_set.steps.shape[0]) if perm is None else perm
    out = np.full((list_set.steps.shape[0], max(list_set.steps.shape[1] - 1, 0)), np.nan)
    args = (list_set.steps, list_set.lengths, perm, list_set.row_ids, float_binomials(), 10**7)
    assert memo_ratios_kernel(rel, *args, out, *memo.arrays)
    return out


def _checked_ratios(eta, list_set, perm=None, brute_up_to=None):
    """The memo kernel's ratios of lists ``perm`` (all, in order, if None) under the dominance
    order of ``eta``, checked against the general kernel (bit for bit) and brute force (the
    lists of at most ``brute_up_to`` items; all if None)."""
    rel = utility_relation_words(eta[None])
    perm = np.arange(list_set.steps.shape[0]) if perm is None else perm
    got = _memo_ratios(rel[0], list_set, OrderMemo(*list_set.steps.shape, 2**20), perm)
    want = np.full_like(got, np.nan)
    assert K.ratios_kernel(
        rel, list_set.steps, list_set.lengths, perm, np.array([0, perm.size]), True,
        float_binomials(), 10**7, want,
    )  # fmt: skip
    for row in perm:
        n = list_set.lengths[row]
        np.testing.assert_array_equal(got[row, : n - 1], want[row, : n - 1])
        if brute_up_to is None or n <= brute_up_to:
            brute = _brute_ratios(eta, [int(x) for x in list_set.steps[row, :n]])
            np.testing.assert_allclose(got[row, : n - 1], brute, rtol=1e-12, atol=0.0)
    return got


def test_memo_ratios_equal_brute_force():
    rng = np.random.default_rng(0)
    n_items = 80
    eta = rng.standard_normal((n_items, 2))
    padded = _lists(rng, 60, n_items, 6)
    list_set = ListSet(padded)
    got = _memo_ratios(utility_relation_words(eta[None])[0], list_set, OrderMemo(60, 6, 2**20))
    for row in range(list_set.steps.shape[0]):
        n = list_set.lengths[row]
        want = _brute_ratios(eta, [int(x) for x in list_set.steps[row, :n]])
        np.testing.assert_allclose(got[row, : n - 1], want, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize(("n_items", "width"), [(10, 10), (120, 10), (40, MAX_SMALL_LENGTH + 2)])
def test_memo_ratios_equal_the_general_kernel_bit_for_bit(n_items, width):
    """Short lists (rank space), long lists (general kernel), lists over the same items."""
    rng = np.random.default_rng(n_items + width)
    padded = _lists(rng, 150, n_items, width, min_len=width // 2)
    list_set = ListSet(padded)
    memo = OrderMemo(*list_set.steps.shape, 2**20)
    for _ in range(3):
        rel = utility_relation_words(rng.standard_normal((1, n_items, 3)))
        perm = np.sort(rng.choice(list_set.steps.shape[0], size=100, replace=False))
        want = np.full((list_set.steps.shape[0], width - 1), np.nan)
        ok = K.ratios_kernel(
            rel, list_set.steps, list_set.lengths, perm, np.array([0, perm.size]), True,
            float_binomials(), 10**7, want,
        )  # fmt: skip
        assert ok
        for _ in range(2):  # counted, then from the memo
            got = _memo_ratios(rel[0], list_set, memo, perm)
            for row in perm:
                n = list_set.lengths[row] - 1
                np.testing.assert_array_equal(got[row, :n], want[row, :n])
    assert memo.meta[1] > 0 and memo.meta[2] > 0  # hits and misses


def test_memo_serves_lists_whose_restricted_order_is_unchanged():
    rng = np.random.default_rng(5)
    n_items = 60
    padded = _lists(rng, 40, n_items, 8, min_len=8)
    list_set = ListSet(padded)
    memo = OrderMemo(*list_set.steps.shape, 2**20)
    eta = rng.standard_normal((n_items, 2))
    first = _memo_ratios(utility_relation_words(eta[None])[0], list_set, memo)
    moved = eta.copy()
    moved[list_set.steps[0, 0]] += 5.0  # one item moves: lists without it are unchanged
    hits = memo.meta[1]
    second = _memo_ratios(utility_relation_words(moved[None])[0], list_set, memo)
    unchanged = ~np.any(list_set.steps == list_set.steps[0, 0], axis=1)
    assert memo.meta[1] - hits >= unchanged.sum()
    np.testing.assert_array_equal(second[unchanged], first[unchanged])
    fresh = _memo_ratios(utility_relation_words(moved[None])[0], list_set, OrderMemo(40, 8, 0))
    np.testing.assert_array_equal(second, fresh)  # no memo (capacity 0): the same ratios


def test_full_rankings_look_in_the_memo_once_per_call():
    """Lists over the same items share their counts within a call: only the first looks in
    the memo (full rankings, where the look-ups cost more than the counts), and the ratios
    equal brute force."""
    rng = np.random.default_rng(3)
    n_items = 7
    padded = np.stack([rng.permutation(n_items) for _ in range(40)])
    list_set = ListSet(padded)
    memo = OrderMemo(*list_set.steps.shape, 2**20)
    eta = rng.standard_normal((n_items, 2))
    got = _memo_ratios(utility_relation_words(eta[None])[0], list_set, memo)
    assert memo.meta[1] + memo.meta[2] == 1  # one look-up (a miss) for all the lists
    for row in range(list_set.steps.shape[0]):
        want = _brute_ratios(eta, [int(x) for x in list_set.steps[row]])
        np.testing.assert_allclose(got[row], want, rtol=1e-12, atol=0.0)


def test_memo_is_emptied_when_full_and_stays_exact():
    rng = np.random.default_rng(8)
    padded = _lists(rng, 30, 20, 5, min_len=5)
    list_set = ListSet(padded)
    memo = OrderMemo(*list_set.steps.shape, 16 * (8 * 6 + 8 * 4 + 8))  # 16 entries
    assert memo.vals.shape[0] == 16
    for _ in range(5):
        rel = utility_relation_words(rng.standard_normal((1, 20, 2)))[0]
        got = _memo_ratios(rel, list_set, memo)
        np.testing.assert_array_equal(got, _memo_ratios(rel, list_set, OrderMemo(30, 5, 0)))
    assert memo.meta[3] > 0


def test_orders_of_several_components_equal_brute_force_and_the_general_kernel():
    """Restricted orders that fall apart into chains and isolated items (counted by
    components): brute force, and the general kernel bit for bit."""
    rng = np.random.default_rng(11)
    n_items = 36
    group, place = np.arange(n_items) % 4, rng.standard_normal(n_items)
    # a chain per group; items of different groups incomparable (one dimension up, one down)
    eta = np.column_stack([place + 10.0 * group, place - 10.0 * group])
    eta[group == 3] = rng.standard_normal((9, 2)) * 40.0  # and a sparse group
    padded = _lists(rng, 200, n_items, 9, min_len=2)
    for row in padded[:40]:  # linear extensions of the chains: many non-zero ratios
        row[:9] = sorted(rng.choice(27, size=9, replace=False), key=lambda x: -place[x])
    list_set = ListSet(padded)
    got = _checked_ratios(eta, list_set)
    assert np.count_nonzero(got[list_set.lengths > 2] > 0) > 100  # not all zero ratios


def test_full_rankings_and_shorter_lists_under_orders_of_several_components():
    """Full rankings (every item: their item sets compared by length alone) interleaved with
    shorter lists over the same items, under orders whose comparability graph falls apart (the
    counts of the components' products kept across steps and lists): the general kernel bit
    for bit, and brute force."""
    rng = np.random.default_rng(12)
    n_items = 8
    group, place = np.arange(n_items) % 3, rng.standard_normal(n_items)
    eta = np.column_stack([place + 10.0 * group, place - 10.0 * group])  # three chains
    full = [sorted(rng.permutation(n_items), key=lambda x: (rng.random() < 0.3, -place[x]))
            for _ in range(60)]  # fmt: skip
    padded = np.full((90, n_items), -1, dtype=np.int64)
    padded[:60] = full
    padded[60:] = _lists(rng, 30, n_items, n_items, min_len=2)
    list_set = ListSet(padded)
    assert np.any(list_set.lengths == n_items) and np.any(list_set.lengths < n_items)
    for dims in (eta, rng.standard_normal((n_items, 3))):  # several components; random
        got = _checked_ratios(dims, list_set)
        assert np.count_nonzero(got[list_set.lengths == n_items] > 0) > 60


def test_runs_of_lists_over_one_item_set_read_from_the_table_of_every_subset():
    """Runs of lists over one item set long enough to count every subset at once
    (``TABLE_RUN_FACTOR``), a run too short for it, and lists counted by the general kernel
    (longer than ``MAX_SMALL_LENGTH``, and than the memo's longest) between them: the general
    kernel bit for bit, and brute force for the short lists."""
    rng = np.random.default_rng(13)
    n_items = 70
    eta = rng.standard_normal((n_items, 2))
    eta[:12] = np.sort(rng.standard_normal(12))[:, None] * [1.0, 1.0]  # a chain among them
    seven, five, six = rng.choice(n_items, 7, replace=False), np.arange(5), np.arange(6, 12)
    runs = [
        [rng.permutation(seven) for _ in range(40)],  # 40 > 2^7 / 8: by the table
        [rng.permutation(n_items)[:66]],  # longer than the memo keeps
        [rng.permutation(five) for _ in range(3)],  # 3 < 2^5 / 8: by down-sets
        [rng.permutation(six) for _ in range(30)],  # by the table, a chain and more
        [rng.permutation(n_items)[: MAX_SMALL_LENGTH + 2]],
        [rng.permutation(five) for _ in range(20)],  # by the table, after a long list
        [rng.choice(n_items, 4, replace=False) for _ in range(5)],
    ]
    assert 40 * TABLE_RUN_FACTOR > 2**7 and 3 * TABLE_RUN_FACTOR < 2**5
    lists = [row for run in runs for row in run]
    padded = np.full((len(lists), 66), -1, dtype=np.int64)
    for row, lst in zip(padded, lists, strict=True):
        row[: len(lst)] = lst
    list_set = ListSet(padded)
    perm = list_set.inverse.copy()  # the runs in order (a repeated list counted twice)
    got = _checked_ratios(eta, list_set, perm, brute_up_to=7)
    short = list_set.lengths[perm] <= 7
    assert np.count_nonzero(got[perm[short]] > 0) > 100  # not all zero ratios
