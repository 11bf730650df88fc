"""Benchmark: the restricted-order memo of count ratios against counting without it.

Times ``pymc_crp.core.order_memo.memo_ratios_kernel`` (the kernel behind every list
likelihood of a new order) on a stream of orders from a random walk of 2-D utilities (each
step moves one item, as the utility moves do), with the lists' memo (``OrderMemo`` at the
likelihood cache's size) and with a memo of capacity 0 (counting only), measured in the same
run; the ratios are checked equal bit for bit. Two kinds of lists:

- 5,000 full rankings of 10 items: every order is new to the memo, and the lists, all over
  the same items, share one count table within a call, so only the first list of a call
  looks in the memo (the ratio should stay near 1: 1.00 on a quiet machine; before that rule
  every list looked, 0.65, and a step of the clustered model at 5,000 such rankings took 1.22
  times as long);
- 1,000 lists of 10 of 100 items (the many-items shape): a move of one item leaves most
  lists' restricted orders as they were, so the memo serves most of them (ratio 3.6).

Run with ``python benchmarks/order_memo.py [--orders N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from machine import describe_machine

from pymc_crp.core.linext_support import float_binomials, utility_relation_words
from pymc_crp.core.lists import DEFAULT_CACHE_BYTES, ListSet
from pymc_crp.core.order_memo import OrderMemo, memo_ratios_kernel

CASES = (  # name, lists, items, items per list
    ("full rankings", 5000, 10, 10),
    ("10 of 100 items", 1000, 100, 10),
)


def random_lists(rng, n_lists, n_items, length):
    """``n_lists`` lists of ``length`` distinct random items of ``n_items``, random order."""
    return np.stack([rng.choice(n_items, size=length, replace=False) for _ in range(n_lists)])


def walk_orders(rng, n_orders, n_items):
    """Orders ``(n_orders, 4, n_items)`` of a random walk of 2-D utilities, one item moved by
    ``N(0, 0.5^2)`` per step."""
    eta = rng.standard_normal((n_items, 2))
    path = np.empty((n_orders, n_items, 2))
    for t in range(n_orders):
        eta[rng.integers(n_items)] += rng.normal(0.0, 0.5, 2)
        path[t] = eta
    return utility_relation_words(path)


def run(list_set, orders, memo):
    """Seconds to count the ratios of every list under each order in turn; the last ratios."""
    rows = np.arange(list_set.steps.shape[0], dtype=np.int64)
    out = np.empty((rows.size, max(list_set.steps.shape[1] - 1, 0)))
    args = (list_set.steps, list_set.lengths, rows, list_set.row_ids, float_binomials(), 10**7)
    start = time.perf_counter()
    for rel in orders:
        assert memo_ratios_kernel(rel, *args, out, *memo.arrays)
    return time.perf_counter() - start, out.copy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    args = parser.parse_args()
    print(describe_machine())
    rng = np.random.default_rng(0)
    print(f"{args.orders} orders of a random walk of 2-D utilities, one item moved per step")
    print(f"{'lists':16s} {'memo (s)':>9s} {'no memo (s)':>12s} {'ratio':>6s} {'hits':>6s}")
    for name, n_lists, n_items, length in CASES:
        list_set = ListSet(random_lists(rng, n_lists, n_items, length))
        orders = walk_orders(rng, args.orders, n_items)
        n_rows, width = list_set.steps.shape
        run(list_set, orders[:2], OrderMemo(n_rows, width, 0))  # compile
        memo = OrderMemo(n_rows, width, DEFAULT_CACHE_BYTES // 16)
        with_memo, got = run(list_set, orders, memo)
        without, want = run(list_set, orders, OrderMemo(n_rows, width, 0))
        np.testing.assert_array_equal(got, want)
        looked = memo.meta[1] + memo.meta[2]
        hits = memo.meta[1] / looked if looked else 0.0
        print(f"{name:16s} {with_memo:9.3f} {without:12.3f} {without / with_memo:6.2f} {hits:6.1%}")


if __name__ == "__main__":
    main()
