"""Restricted orders and one-item moves of the bitset orders (pymc_crp.core.restricted_orders)."""

import numpy as np
import pytest

from pymc_crp.core import linext_support
from pymc_crp.core.linext_support import utility_relation_words
from pymc_crp.core.restricted_orders import (
    copy_restricted_equal,
    item_masks,
    move_item_changed,
    move_item_words,
)


@pytest.mark.parametrize("n_items", [5, 70, 128])
@pytest.mark.parametrize("dual", [False, True])
def test_move_item_words_equals_full_recompute(n_items, dual):
    rng = np.random.default_rng(n_items + dual)
    eta = rng.integers(0, 4, size=(n_items, 2)).astype(float)  # many ties and equal rows
    words = utility_relation_words(eta[None], dual)[0]
    for _ in range(60):
        item = int(rng.integers(n_items))
        eta = eta.copy()
        eta[item] = rng.integers(0, 4, size=2)
        new = move_item_words(words, eta, item, dual)
        np.testing.assert_array_equal(new, utility_relation_words(eta[None], dual)[0])
        words = new


def test_item_masks():
    steps = np.array([[0, 65, 3], [127, -1, -1]])
    masks = item_masks(steps)
    assert masks[0, 0] == (1 << 0) | (1 << 3) and masks[0, 1] == 1 << 1
    assert masks[1, 0] == 0 and masks[1, 1] == 1 << 63


def test_copy_restricted_equal_copies_exactly_the_unchanged_lists():
    rng = np.random.default_rng(3)
    n_items = 90
    eta = rng.standard_normal((n_items, 2))
    old = utility_relation_words(eta[None])[0]
    moved = eta.copy()
    moved[7] += 3.0 * rng.standard_normal(2)
    new = utility_relation_words(moved[None])[0]
    steps = np.full((200, 4), -1, dtype=np.int64)
    for u in range(200):
        steps[u, : 2 + u % 3] = rng.choice(n_items, size=2 + u % 3, replace=False)
    lengths = np.sum(steps >= 0, axis=1)
    src = rng.standard_normal((200, 3))
    dst = np.zeros((200, 3))
    src_done, dst_done = np.ones(200, dtype=bool), np.zeros(200, dtype=bool)
    src_done[:5] = False
    copied = copy_restricted_equal(
        old, new, steps, lengths, item_masks(steps), np.arange(200), src, src_done, dst, dst_done
    )
    closed_old = (eta[None, :, :] > eta[:, None, :]).all(-1)  # [x, y]: y above x
    closed_new = (moved[None, :, :] > moved[:, None, :]).all(-1)
    same = np.array(
        [
            np.array_equal(
                closed_old[np.ix_(s[s >= 0], s[s >= 0])], closed_new[np.ix_(s[s >= 0], s[s >= 0])]
            )
            for s in steps
        ]
    )
    expected = same & src_done
    assert 0 < copied == expected.sum() < 200
    assert (~same).sum() > 0
    np.testing.assert_array_equal(dst_done, expected)
    np.testing.assert_array_equal(dst[expected], src[expected])
    assert not dst[~expected].any()


@pytest.mark.parametrize("n_items", [5, 70, 128])
@pytest.mark.parametrize("dual", [False, True])
def test_move_item_changed_picks_the_lists_whose_restricted_order_moved(n_items, dual):
    """Against the boolean dominance orders restricted to each list's items."""
    rng = np.random.default_rng(7 * n_items + dual)
    eta = rng.integers(0, 4, size=(n_items, 2)).astype(float)
    steps = np.full((120, 5), -1, dtype=np.int64)
    for u in range(120):
        steps[u, : 2 + u % 4] = rng.choice(n_items, size=2 + u % 4, replace=False)
    masks = item_masks(steps)
    words = utility_relation_words(eta[None], dual)[0]
    for _ in range(40):
        item = int(rng.integers(n_items))
        moved = eta.copy()
        moved[item] = rng.integers(0, 4, size=2)
        rows = np.flatnonzero((steps == item).any(axis=1))
        new, changed = move_item_changed(words, moved, item, dual, masks, rows)
        np.testing.assert_array_equal(new, move_item_words(words, moved, item, dual))
        before = (eta[None, :, :] > eta[:, None, :]).all(-1)
        after = (moved[None, :, :] > moved[:, None, :]).all(-1)
        expected = [
            t
            for t, u in enumerate(rows)
            if not np.array_equal(
                before[np.ix_(steps[u][steps[u] >= 0], steps[u][steps[u] >= 0])],
                after[np.ix_(steps[u][steps[u] >= 0], steps[u][steps[u] >= 0])],
            )
        ]
        np.testing.assert_array_equal(changed, expected)
        eta, words = moved, new


@pytest.mark.parametrize("n_items", [2, 31, 32, 64, 65, 100, 128])
@pytest.mark.parametrize("n_dims", [1, 2, 3])
def test_sorted_utility_words_equal_the_pairwise_dominance(n_items, n_dims):
    """Both kernels of ``utility_relation_words`` against the boolean dominance order, with
    ties, signed zeros, infinities and NaN (which compares false with everything)."""
    rng = np.random.default_rng(n_items * 10 + n_dims)
    eta = rng.normal(size=(6, n_items, n_dims))
    eta[1] = np.round(eta[1])  # many ties
    eta[2, : n_items // 2] = 0.0
    eta[3, 0] = -0.0
    eta[3, 1 % n_items] = np.inf
    eta[4, : n_items // 3, -1] = np.nan
    eta[5, -1] = -np.inf
    closed = np.all(eta[..., :, None, :] > eta[..., None, :, :], axis=-1)  # [y, x]: y above x
    for dual in (False, True):
        expected = linext_support.relation_words(closed, dual)
        np.testing.assert_array_equal(linext_support._sorted_utility_words(eta, dual), expected)
        np.testing.assert_array_equal(linext_support._utility_words(eta, dual), expected)
        np.testing.assert_array_equal(utility_relation_words(eta, dual), expected)
