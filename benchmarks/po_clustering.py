"""Milliseconds per full iteration of the clustered partial-order model.

One iteration = label sweep (CRPGibbs, with the list x slot likelihood matrix) + utility
updates of every slot (UtilityMetropolis) + U0 Gibbs + hyperparameters (rho, tau, p) + the
concentration. Data: lists of length 10 over 10 items simulated from 3 planted orders.
Competitors in the same run, on the same model, seed and starting point:

- ``no cache``: the same step methods with the cross-call list-likelihood cache switched
  off (``list_likelihood_cache().max_bytes = 0``: every call counts its lists again; the
  rest stays: repeated lists counted once per call, shared list beginnings, reuse of the
  likelihoods when a move leaves the order unchanged). Same chain, so the ratio is what
  the cache adds on top (little at 1,000 lists, where per-call overhead dominates);
- ``generic``: the generic PyMC assignment for the utilities (pm.Metropolis on the whole U
  block, which re-evaluates every list at each proposal), timed over fewer iterations.

The variants run interleaved (ours, no cache, ours, no cache, ...) so that load changes on a
shared machine hit both alike; the load average is printed.

    python benchmarks/po_clustering.py [--lists 1000 5000] [--iterations 30] [--rounds 3]

The previous implementation (counting every list at every call, before this cache) is
compared in ``benchmarks/README.md`` (section "Clustered partial orders"): it cannot be
imported next to the current one, so that comparison alternates processes.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.core.lists import DEFAULT_CACHE_BYTES, list_likelihood_cache  # noqa: E402
from pymc_crp.posets import partial_order_from_utilities, sample_list  # noqa: E402


def simulate(n_lists, rng, n_items=10, length=10, p=0.05):
    orders = [partial_order_from_utilities(rng.normal(size=(n_items, 2))) for _ in range(3)]
    lists = []
    for i in range(n_lists):
        items = rng.choice(n_items, size=length, replace=False)
        lists.append(sample_list(orders[i % 3], items, p, rng).tolist())
    return lists


def time_iterations(model, n_iter, extra_steps=None, seed=1):
    """Mean seconds per iteration of the compound step PyMC would build for ``model``."""
    with model:
        provided, selected = pm.sampling.mcmc.assign_step_methods(model, extra_steps)
        step = pm.sampling.mcmc.instantiate_steppers(model, provided, selected)
        if isinstance(step, list):
            step = pm.CompoundStep(step)
        point = model.initial_point(random_seed=0)
        step.set_rng(np.random.default_rng(seed))
        for _ in range(5):  # warm-up: compilation and first tuning
            point, _ = step.step(point)
        start = time.perf_counter()
        for _ in range(n_iter):
            point, _ = step.step(point)
    return (time.perf_counter() - start) / n_iter


def time_with_cache(model, n_iter, max_bytes):
    """:func:`time_iterations` with the list-likelihood cache bound set to ``max_bytes``."""
    cache = list_likelihood_cache()
    cache.clear()
    cache.max_bytes = max_bytes
    try:
        return time_iterations(model, n_iter)
    finally:
        cache.max_bytes = DEFAULT_CACHE_BYTES


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lists", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(describe_machine())
    rng = np.random.default_rng(0)
    print(f"load average at start: {os.getloadavg()}")
    header = f"{'lists':>6} {'ms/iter':>9} {'us/list':>8} {'no cache':>9} {'ratio':>6}"
    print(f"{header} {'generic ms/iter':>16} {'ratio':>6}")
    for n_lists in args.lists:
        lists = simulate(n_lists, rng)
        model = pmc.models.clustered_partial_orders(lists, 10, n_dims=2, max_clusters=10)
        ours, uncached = [], []
        for _ in range(args.rounds):  # interleaved
            ours.append(time_with_cache(model, args.iterations, DEFAULT_CACHE_BYTES))
            uncached.append(time_with_cache(model, args.iterations, 0))
        ours, uncached = float(np.median(ours)), float(np.median(uncached))
        generic_iters = max(3, args.iterations // 10)
        with model:
            generic_step = [pm.Metropolis([model["U"]])]
        generic = time_iterations(model, generic_iters, generic_step)
        print(
            f"{n_lists:>6} {1e3 * ours:>9.1f} {1e6 * ours / n_lists:>8.1f} "
            f"{1e3 * uncached:>9.1f} {uncached / ours:>6.1f} "
            f"{1e3 * generic:>16.1f} {generic / ours:>6.1f}"
        )
    print(f"load average at end: {os.getloadavg()}")
    print("target: < 50 ms per iteration at 1,000 lists")


if __name__ == "__main__":
    main()
