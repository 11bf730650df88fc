"""Benchmark: counting linear extensions.

Times ``pymc_crp.posets.count_linear_extensions`` (exact big integer) and
``log_count_linear_extensions`` (float64) on random 2-dimensional orders of 20-50 items
and on crowns of 20-40 items, against two competitors measured in the same run:

- networkx enumeration ``len(list(nx.all_topological_sorts(G)))`` (skipped when the
  count exceeds 1e6), and
- a plain-Python memoised recursion ``C(H) = Σ_{j maximal in H} C(H − j)`` with
  ``functools.cache`` (an unbounded ``lru_cache``) over frozensets (abandoned after a time budget).

Run with ``python benchmarks/linear_extensions.py``. Targets (single-threaded, after
JIT warm-up): random 2-D order of 40 items < 50 ms; 30-item crown < 100 ms. The kernels
are cached on disk after their first compilation, so the first call of a later run only
loads them (the report says which happened).
"""

from __future__ import annotations

import functools
import math
import sys
import time

import networkx as nx
import numpy as np
from machine import describe_machine

from pymc_crp import posets as P
from pymc_crp.core import linext_kernels as _linext

NX_LIMIT = 1_000_000
PY_BUDGET_S = 20.0


class _Timeout(Exception):
    pass


def best_time(fn, repeats=5, min_total=0.2):
    """Best wall time over ``repeats`` runs (more while under ``min_total`` seconds)."""
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < min_total and len(times) < 50):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def python_count(closed, budget=PY_BUDGET_S):
    """Plain-Python memoised recursion over frozensets; raises _Timeout past the budget."""
    n = closed.shape[0]
    above = [frozenset(int(i) for i in np.flatnonzero(closed[:, x])) for x in range(n)]
    deadline = time.perf_counter() + budget
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    @functools.cache
    def count(h):
        if len(h) <= 1:
            return 1
        if time.perf_counter() > deadline:
            raise _Timeout
        return sum(count(h - {x}) for x in h if not (above[x] & h))

    return count(frozenset(range(n)))


def networkx_count(closed):
    g = nx.DiGraph()
    g.add_nodes_from(range(closed.shape[0]))
    g.add_edges_from(zip(*np.nonzero(P.transitive_reduction(closed)), strict=True))
    return len(list(nx.all_topological_sorts(g)))


def fmt_ms(seconds):
    return f"{seconds * 1e3:10.2f}"


def main():
    print(describe_machine())
    rng_warm = np.random.default_rng(0)
    t0 = time.perf_counter()
    P.count_linear_extensions(P.random_two_dimensional_order(6, rng_warm))
    t1 = time.perf_counter()
    P.log_count_linear_extensions(P.random_two_dimensional_order(6, rng_warm))
    t2 = time.perf_counter()
    cached = bool(_linext.count_kernel.stats.cache_hits)
    how = "loaded from the disk cache" if cached else "JIT-compiled (now cached on disk)"
    print(f"First call, kernel {how}: count {t1 - t0:.2f} s, log-count {t2 - t1:.2f} s\n")

    cases = []
    # Small orders first, where networkx enumeration is feasible.
    for n, seed in ((12, 12), (15, 15)):
        rng = np.random.default_rng(seed)
        cases.append((f"random 2-D, n={n} (seed {seed})", P.random_two_dimensional_order(n, rng)))
    for k in (5, 6):
        cases.append((f"crown {k}+{k}", P.crown_order(k)))
    for n, seed in ((20, 20), (30, 30), (40, 40), (50, 50)):
        rng = np.random.default_rng(seed)
        cases.append((f"random 2-D, n={n} (seed {seed})", P.random_two_dimensional_order(n, rng)))
    for k in (10, 15, 20):
        cases.append((f"crown {k}+{k}", P.crown_order(k)))

    header = (
        f"{'order':<28} {'count':>12} {'exact ms':>10} {'log ms':>10} "
        f"{'networkx ms':>12} {'python ms':>10} {'nx/ours':>9} {'py/ours':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, adj in cases:
        t_exact, count = best_time(lambda adj=adj: P.count_linear_extensions(adj))
        t_log, log_count = best_time(lambda adj=adj: P.log_count_linear_extensions(adj))
        assert abs(log_count - math.log(count)) < 1e-9 * max(1.0, math.log(count))

        if count <= NX_LIMIT:
            t0 = time.perf_counter()
            assert networkx_count(adj) == count
            t_nx = time.perf_counter() - t0
            nx_ms, nx_ratio = fmt_ms(t_nx), f"{t_nx / t_exact:9.0f}"
        else:
            nx_ms, nx_ratio = "   skipped", "        -"

        try:
            t0 = time.perf_counter()
            assert python_count(adj) == count
            t_py = time.perf_counter() - t0
            py_ms, py_ratio = fmt_ms(t_py), f"{t_py / t_exact:9.0f}"
        except _Timeout:
            py_ms, py_ratio = f">{PY_BUDGET_S * 1e3:9.0f}", f">{PY_BUDGET_S / t_exact:8.0f}"

        print(
            f"{name:<28} {count:12.4g} {fmt_ms(t_exact)} {fmt_ms(t_log)} "
            f"{nx_ms:>12} {py_ms:>10} {nx_ratio} {py_ratio}"
        )
    print(
        f"\nnetworkx skipped when the count exceeds {NX_LIMIT:.0e}; the Python recursion "
        f"is abandoned after {PY_BUDGET_S:.0f} s. Ratios are competitor time / exact-count time."
    )


if __name__ == "__main__":
    main()
