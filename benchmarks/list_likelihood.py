"""Benchmark: queue-jumping list log-likelihoods.

1,000 lists of length 10 over 20 items under one order (a random 2-D order, and orders
from random utilities with K = 2 and K = 3), top-down and bottom-up, p = 0.1:

- ``list_log_likelihoods`` (public, validates its input),
- ``list_log_likelihoods_padded`` (the kernel a PyMC Op calls; no validation),
- ``list_log_likelihoods_stacked`` with 5 orders and per-list labels,

against a plain-Python implementation of the same formula (docs/mathematics.md, *Partial
orders*) whose
counts come from a ``functools.lru_cache`` recursion over frozensets, shared by all
lists of a call (the same caching the kernel does). Results are checked to agree.

Run with ``python benchmarks/list_likelihood.py``. Target: < 20 ms per 1,000 lists after
JIT warm-up (the first call is reported separately: a JIT compilation on the first run,
a load from the on-disk cache afterwards).
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np
from machine import describe_machine

from pymc_crp import posets as P
from pymc_crp.core import linext_kernels as _linext
from pymc_crp.core import linext_support as _tables
from pymc_crp.core.lists import ListLikelihoodCache

N_ITEMS, N_LISTS, LENGTH, P_ERR = 20, 1000, 10, 0.1


def best_time(fn, repeats=7, min_total=0.3):
    """Best wall time over ``repeats`` runs (more while under ``min_total`` seconds)."""
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < min_total and len(times) < 50):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def python_log_likelihoods(closed, lists, p, top_down=True):
    """Plain-Python queue-jumping log-likelihoods of many lists under one order."""
    n = closed.shape[0]
    rel = closed if top_down else closed.T
    above = [frozenset(int(i) for i in np.flatnonzero(rel[:, x])) for x in range(n)]

    @functools.cache
    def count(h):
        if len(h) <= 1:
            return 1
        return sum(count(h - {x}) for x in h if not (above[x] & h))

    out = []
    for y in lists:
        y = [int(v) for v in (y if top_down else y[::-1])]
        m = len(y)
        remaining = frozenset(y)
        ll = 0.0
        for j, item in enumerate(y):
            r = m - j
            term = p / r
            if not (above[item] & remaining):
                term += (1 - p) * count(remaining - {item}) / count(remaining)
            if term == 0.0:
                ll = -math.inf
                break
            ll += math.log(term)
            remaining = remaining - {item}
        out.append(ll)
    return np.array(out)


def main():
    print(describe_machine())
    rng = np.random.default_rng(2025)
    lists = np.array([rng.choice(N_ITEMS, size=LENGTH, replace=False) for _ in range(N_LISTS)])
    lengths = np.full(N_LISTS, LENGTH)

    warm = P.random_two_dimensional_order(6, rng)
    t0 = time.perf_counter()
    P.list_log_likelihoods_padded(warm, lists[:2, :4] % 6, np.full(2, 4), P_ERR)
    cached = bool(_linext.ratios_kernel.stats.cache_hits)
    how = "loaded from the disk cache" if cached else "JIT-compiled (now cached on disk)"
    print(f"First call, kernel {how}: {time.perf_counter() - t0:.2f} s")
    print(f"{N_LISTS} lists of length {LENGTH} over {N_ITEMS} items, p = {P_ERR}\n")

    orders = [
        ("random 2-D order", P.random_two_dimensional_order(N_ITEMS, rng)),
        ("utilities K=2", P.partial_order_from_utilities(rng.normal(size=(N_ITEMS, 2)))),
        ("utilities K=3", P.partial_order_from_utilities(rng.normal(size=(N_ITEMS, 3)))),
    ]
    header = (
        f"{'order':<18} {'direction':<10} {'C(h)':>10} {'public ms':>10} {'kernel ms':>10} "
        f"{'python ms':>10} {'py/public':>10} {'py/kernel':>10}"
    )
    print(header)
    print("-" * len(header))
    for name, adj in orders:
        for direction in ("top-down", "bottom-up"):
            top_down = direction == "top-down"
            t_pub, ll_pub = best_time(
                lambda a=adj, d=direction: P.list_log_likelihoods(a, lists, P_ERR, d)
            )
            t_ker, ll_ker = best_time(
                lambda a=adj, t=top_down: P.list_log_likelihoods_padded(a, lists, lengths, P_ERR, t)
            )
            t0 = time.perf_counter()
            ll_py = python_log_likelihoods(adj, lists, P_ERR, top_down)
            t_py = time.perf_counter() - t0
            np.testing.assert_allclose(ll_pub, ll_py, rtol=1e-10)
            np.testing.assert_allclose(ll_ker, ll_py, rtol=1e-10)
            count = P.count_linear_extensions(adj)
            print(
                f"{name:<18} {direction:<10} {count:10.3g} {t_pub * 1e3:10.2f} {t_ker * 1e3:10.2f} "
                f"{t_py * 1e3:10.1f} {t_py / t_pub:10.0f} {t_py / t_ker:10.0f}"
            )

    # Clustered use: 5 orders, each list follows the order of its label.
    stack = np.stack([P.random_two_dimensional_order(N_ITEMS, rng) for _ in range(5)])
    labels = rng.integers(0, 5, size=N_LISTS)
    t_st, ll_st = best_time(
        lambda: P.list_log_likelihoods_stacked(stack, lists, lengths, labels, P_ERR, True)
    )
    t0 = time.perf_counter()
    ll_py = np.empty(N_LISTS)
    for a in range(5):
        rows = np.flatnonzero(labels == a)
        ll_py[rows] = python_log_likelihoods(stack[a], lists[rows], P_ERR)
    t_py = time.perf_counter() - t0
    np.testing.assert_allclose(ll_st, ll_py, rtol=1e-10)
    print(
        f"\nstacked, 5 random 2-D orders, labels per list: {t_st * 1e3:.2f} ms "
        f"(python {t_py * 1e3:.1f} ms, ratio {t_py / t_st:.0f})"
    )

    # The same call through the list-likelihood cache (what the PyMC Op and UtilityMetropolis
    # use): a miss counts the lists' ratios, a hit (same orders again, any p) only combines.
    padded = lists.astype(np.int64)
    words = _tables.relation_words(stack)
    t_miss, t_hit, t_new_p = [], [], []
    for _ in range(7):
        cache = ListLikelihoodCache()
        list_set = cache.list_set(padded)
        t0 = time.perf_counter()
        ll_miss = cache.log_likelihoods(list_set, words, labels, P_ERR)
        t1 = time.perf_counter()
        ll_hit = cache.log_likelihoods(list_set, words, labels, P_ERR)
        t2 = time.perf_counter()
        cache.log_likelihoods(list_set, words, labels, 2 * P_ERR)
        t3 = time.perf_counter()
        t_miss.append(t1 - t0)
        t_hit.append(t2 - t1)
        t_new_p.append(t3 - t2)
    np.testing.assert_array_equal(ll_miss, ll_st)
    np.testing.assert_array_equal(ll_hit, ll_st)
    print(
        f"cached: miss {min(t_miss) * 1e3:.2f} ms, hit {min(t_hit) * 1e3:.3f} ms, "
        f"hit at a new p {min(t_new_p) * 1e3:.3f} ms (stacked/hit {t_st / min(t_hit):.0f})"
    )


if __name__ == "__main__":
    main()
