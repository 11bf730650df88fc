"""The list-likelihood cache (pymc_crp.core.lists) against the direct stacked likelihood, with
the count ratios of unchanged lists taken from the entries of other orders (hints)."""

import numpy as np
import pytest

from pymc_crp.core.lists import ListLikelihoodCache, order_words
from pymc_crp.core.posets import list_log_likelihoods_stacked, partial_order_from_utilities

N_ITEMS, N_DIMS, P = 100, 2, 0.2


def _lists(rng, n_lists=300):
    padded = np.full((n_lists, 10), -1, dtype=np.int64)
    for i in range(n_lists):
        m = int(rng.integers(2, 11))
        padded[i, :m] = rng.choice(N_ITEMS, size=m, replace=False)
    padded[n_lists // 2 :: 7] = padded[: (n_lists + 13) // 14]  # some repeated lists
    return padded


def _direct(eta_stack, padded, labels, top_down, p=P):
    closed = np.stack([partial_order_from_utilities(e) for e in eta_stack])
    lengths = np.sum(padded >= 0, axis=1)
    return list_log_likelihoods_stacked(closed, padded, lengths, labels, p, top_down)


def _orders(rng, eta):
    """A sequence of related and unrelated utilities: one-item moves, ρ-like maps of all rows
    (``x' = r_⊥ x + (r_1 - r_⊥) mean(x)``), and fresh draws."""
    out = [eta]
    for t in range(24):
        eta = eta.copy()
        if t % 6 == 5:
            eta = rng.standard_normal(eta.shape)
        elif t % 3 == 2:
            r_perp, r_one = 1.0 + 0.3 * rng.standard_normal(), 1.0 + 0.3 * rng.standard_normal()
            mean = eta.mean(axis=-1, keepdims=True)
            eta = r_perp * (eta - mean) + r_one * mean
        else:
            eta[rng.integers(N_ITEMS)] += 1.5 * rng.standard_normal(N_DIMS)
        out.append(eta)
    return out


@pytest.mark.parametrize("top_down", [True, False])
@pytest.mark.parametrize("hint_mode", ["last", "explicit", "random"])
def test_hint_copies_are_bit_for_bit(top_down, hint_mode):
    rng = np.random.default_rng(11 + top_down)
    padded = _lists(rng)
    cache = ListLikelihoodCache()
    list_set = cache.list_set(padded, top_down)
    etas = _orders(rng, rng.standard_normal((N_ITEMS, N_DIMS)))
    labels = np.zeros(padded.shape[0], dtype=np.int64)
    seen, previous, changed_steps = [], None, 0
    for eta in etas:
        words = order_words(eta[None], top_down)
        if hint_mode == "last" or not seen:
            hint = None
        elif hint_mode == "explicit":
            hint = seen[-1][0]
        else:
            hint = seen[int(rng.integers(len(seen)))][0]
        got = cache.log_likelihoods(list_set, words, labels, P, hint=hint)
        expected = _direct(eta[None], padded, labels, top_down)
        np.testing.assert_array_equal(got, expected)
        if previous is not None:
            differ = got != previous
            changed_steps += bool(differ.any() and not differ.all())
        seen.append(words)
        previous = got
    # the copies were exercised, and next to lists whose likelihood changed
    assert cache.copied > 0 and changed_steps >= 10
    assert cache.computed < len(etas) * list_set.steps.shape[0]


def test_hint_over_slots_and_rows_and_gradient():
    rng = np.random.default_rng(5)
    padded = _lists(rng, 200)
    cache = ListLikelihoodCache()
    list_set = cache.list_set(padded, True)
    eta = rng.standard_normal((3, N_ITEMS, N_DIMS))
    labels = rng.integers(0, 3, size=padded.shape[0])
    for t in range(12):
        eta = eta.copy()
        eta[t % 3, rng.integers(N_ITEMS)] += rng.standard_normal(N_DIMS)
        rows = np.sort(rng.choice(padded.shape[0], size=120, replace=False))
        words = order_words(eta)
        ll, dp = cache.log_likelihoods(list_set, words, labels[rows], P, rows=rows, want_grad=True)
        closed = np.stack([partial_order_from_utilities(e) for e in eta])
        lengths = np.sum(padded >= 0, axis=1)
        ell, edp = list_log_likelihoods_stacked(
            closed, padded[rows], lengths[rows], labels[rows], P, return_grad=True
        )
        np.testing.assert_array_equal(ll, ell)
        np.testing.assert_array_equal(dp, edp)
    assert cache.copied > 0


def _one_slot(rng):
    """200 lists, a fresh cache and their list set, one slot's utilities and its labels."""
    padded = _lists(rng, 200)
    cache = ListLikelihoodCache()
    list_set = cache.list_set(padded, True)
    eta = rng.standard_normal((N_ITEMS, N_DIMS))
    return padded, cache, list_set, eta, np.zeros(padded.shape[0], dtype=np.int64)


def test_fill_takes_the_unchanged_lists_of_the_hint():
    rng = np.random.default_rng(8)
    padded, cache, list_set, eta, labels = _one_slot(rng)
    old = order_words(eta[None])
    cache.log_likelihoods(list_set, old, labels, P, hint=False)
    moved = eta.copy()
    moved[int(padded[0, 0])] += 2.0
    new = order_words(moved[None])
    computed = cache.computed
    cache.fill(list_set, new[0], np.arange(padded.shape[0]), old[0])
    n_changed = cache.computed - computed
    assert 0 < n_changed < list_set.steps.shape[0]
    got = cache.log_likelihoods(list_set, new, labels, P, hint=False)
    assert cache.computed - computed == n_changed  # all served from the filled entry
    np.testing.assert_array_equal(got, _direct(moved[None], padded, labels, True))


def test_proposals_are_counted_without_entries_and_stored_by_fill():
    rng = np.random.default_rng(9)
    padded, cache, list_set, eta, labels = _one_slot(rng)
    words = order_words(eta[None])
    cache.log_likelihoods(list_set, words, labels, P, hint=False)
    for t in range(30):
        item = int(rng.integers(N_ITEMS))
        moved = eta.copy()
        moved[item] += rng.standard_normal(N_DIMS)
        new = order_words(moved[None])
        rows = np.flatnonzero((padded == item).any(axis=1))
        n_entries = len(cache)
        got = cache.proposal_log_likelihoods(list_set, new, rows, P)
        expected = _direct(moved[None], padded, labels, True)
        np.testing.assert_array_equal(got, expected[rows])
        assert len(cache) == n_entries  # no entry for a proposal
        if t % 2:  # accepted: the new order's entry holds every list, bit for bit
            cache.fill(list_set, new[0], np.arange(padded.shape[0]), words[0])
            computed = cache.computed
            full = cache.log_likelihoods(list_set, new, labels, P, hint=False)
            assert cache.computed == computed
            np.testing.assert_array_equal(full, expected)
            eta, words = moved, new


def test_kept_proposals_serve_moves_back_and_stay_within_the_bound():
    rng = np.random.default_rng(12)
    padded = _lists(rng, 200)
    cache = ListLikelihoodCache(max_bytes=2**20)
    list_set = cache.list_set(padded, True)
    labels = np.zeros(padded.shape[0], dtype=np.int64)
    etas = [rng.standard_normal((N_ITEMS, N_DIMS)) for _ in range(3)]
    rows = np.sort(rng.choice(padded.shape[0], size=40, replace=False))
    for eta in etas:
        cache.proposal_log_likelihoods(list_set, order_words(eta[None]), rows, P)
    computed = cache.computed
    for eta in etas[::-1]:  # moves back: served from the kept ratios, rows in any order
        sub = rng.permutation(rows)[:25]
        got = cache.proposal_log_likelihoods(list_set, order_words(eta[None]), sub, P)
        np.testing.assert_array_equal(got, _direct(eta[None], padded, labels, True)[sub])
        # the pending ratios are those of the lists asked for, in their order
        pending = cache.pending_ratios(list_set, order_words(eta[None]), sub)
        assert pending.shape[0] == sub.size
        computed_now = cache.computed
        other = cache.pending_ratios(list_set, order_words(eta[None]), sub[:5])  # other lists
        valid = np.arange(pending.shape[1]) < list_set.lengths[list_set.inverse[sub[:5]], None] - 1
        np.testing.assert_array_equal(other[valid], pending[:5][valid])  # (padding: unused)
        assert cache.computed - computed_now == 5  # counted through the entry
        computed += 5
    assert cache.computed == computed
    for _ in range(200):  # many proposals: the cache keeps within its bound
        eta = rng.standard_normal((N_ITEMS, N_DIMS))
        cache.proposal_log_likelihoods(list_set, order_words(eta[None]), rows, P)
        cache.log_likelihoods(list_set, order_words(eta[None]), labels, P, hint=False)
    assert cache.proposal_bytes <= cache.max_bytes // 4
    assert cache.nbytes - list_set.nbytes <= cache.max_bytes
