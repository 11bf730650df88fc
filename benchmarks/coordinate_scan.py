"""Benchmark: the coordinate Gibbs scan of the split--merge moves, compiled against Python.

Every annealed split--merge proposal of ``PartialOrderLabelGibbs`` (on by default) makes
``2 (T - 1)`` scans of exact coordinate Gibbs draws of two slots' utilities over the two
clusters' lists (``T = 50`` levels), and every informed proposal two or more. The scan
(:func:`pymc_crp.step_methods.po_coordinate_scan.coordinate_scan`) is one compiled call; its
previous implementation, kept here as the competitor, evaluated each coordinate's candidate
orders through the Python list-likelihood cache and drew in NumPy/SciPy.

Setting: 1,000 heterogeneous full rankings of 10 items (``po_convergence.py --data
heterogeneous``), ``K = 3`` latent dimensions, ``p = 0.2``; groups of 20, 100 and 400 lists
with random weights in ``(0, 1]``; each implementation makes a chain of 20 scans, each from
the last one's result, from its own prior draw (the caches of the list likelihoods fill as
they would along a path). Both are first checked to give the same log-density of reaching a
common target. Prints the milliseconds per scan of each and their ratio. Run with
``python benchmarks/coordinate_scan.py``; ``--many-items 100`` takes instead 1,000 lists of 10
of 100 items from 5 planted orders (``po_convergence.py --data many``).
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np
from machine import describe_machine
from po_convergence import simulate_heterogeneous, simulate_many_items

from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.core.restricted_orders import item_masks
from pymc_crp.core.utility_gibbs import (
    equicorrelated_conditional,
    interval_mixture_log_density,
    interval_points,
    sample_interval_mixture,
)
from pymc_crp.step_methods.po_coordinate_scan import coordinate_scan

N_LISTS, N_ITEMS, N_DIMS, NOISE = 1000, 10, 3, 0.2


def python_scan(term, psi, rows, weights, prior, noise, rng, target=None) -> float:
    """The previous implementation: each coordinate's candidate orders built in NumPy, each
    distinct one evaluated through the Python cache, the draw by SciPy."""
    cache = list_likelihood_cache()
    log_q = 0.0
    for item in range(psi.shape[0]):
        with_item = term.contains[rows, item]
        item_rows, item_weights = rows[with_item], weights[with_item]
        for k in range(psi.shape[1]):
            mu, sd = equicorrelated_conditional(
                psi[item], prior.mean[item], float(prior.rho[item]), float(prior.scale[item]), k
            )
            low, high, inside = interval_points(np.delete(psi[:, k], item))
            candidates = np.repeat(psi[None], inside.shape[0], axis=0)
            candidates[:, item, k] = inside
            words = order_words(candidates, term.top_down)
            log_lik = np.empty((inside.shape[0], item_rows.size))
            seen = {}
            for c in range(inside.shape[0]):
                key = words[c].tobytes()
                if key in seen:
                    log_lik[c] = log_lik[seen[key]]
                    continue
                seen[key] = c
                log_lik[c] = cache.order_log_likelihoods(term.list_set, words[c], item_rows, noise)
            log_lik = log_lik @ item_weights
            if target is None:
                x, _ = sample_interval_mixture(
                    log_lik, low, high, mu, sd, rng.random(), rng.random()
                )
            else:
                x = float(target[item, k])
            log_q += interval_mixture_log_density(log_lik, low, high, mu, sd, x)
            psi[item, k] = x
    return log_q


def chain_ms(scan, term, rows, weights, prior, rng, n_scans=20) -> float:
    """Milliseconds per scan over a chain of ``n_scans`` scans, each from the last one's
    result (as the levels of an annealed path follow each other), from a fresh prior draw."""
    psi = rng.normal(size=prior.mean.shape)
    start = time.perf_counter()
    for _ in range(n_scans):
        scan(term, psi, rows, weights, prior, NOISE, rng)
    return 1e3 * (time.perf_counter() - start) / n_scans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--many-items", type=int, default=0, help="lists of 10 of this many items (default: 10)"
    )
    args = parser.parse_args()
    print(describe_machine())
    rng = np.random.default_rng(0)
    if args.many_items:
        n_items = args.many_items
        lists, _ = simulate_many_items(N_LISTS, n_items, rng)
        setting = f"{N_LISTS} lists of 10 of {n_items} items"
    else:
        n_items = N_ITEMS
        lists, _ = simulate_heterogeneous(N_LISTS, rng, N_ITEMS)
        setting = f"{N_LISTS} heterogeneous rankings of {N_ITEMS} items"
    lists = np.asarray(lists, dtype=np.int64)
    contains = np.zeros((N_LISTS, n_items), dtype=bool)
    for i, row in enumerate(lists):
        contains[i, row[row >= 0]] = True
    term = SimpleNamespace(
        contains=contains, top_down=True, item_words=item_masks(lists),
        list_set=list_likelihood_cache().list_set(lists, True),
    )  # fmt: skip
    prior = SimpleNamespace(
        mean=np.zeros((n_items, N_DIMS)), rho=np.full(n_items, 0.5), scale=np.ones(n_items)
    )
    print(f"{setting}, K = {N_DIMS}, p = {NOISE}")
    print(f"{'lists':>6} {'compiled ms':>12} {'Python ms':>10} {'ratio':>7}")
    for size in (20, 100, 400):
        rows = np.sort(rng.choice(N_LISTS, size=size, replace=False))
        weights = rng.uniform(0.0, 1.0, size) + 1e-3
        start = rng.normal(size=(n_items, N_DIMS))
        target = rng.normal(size=(n_items, N_DIMS))
        a = coordinate_scan(term, start.copy(), rows, weights, prior, NOISE, None, target=target)
        b = python_scan(term, start.copy(), rows, weights, prior, NOISE, None, target=target)
        assert abs(a - b) < 1e-8 * (1 + abs(b)), (a, b)
        compiled = chain_ms(coordinate_scan, term, rows, weights, prior, rng)
        python = chain_ms(python_scan, term, rows, weights, prior, rng)
        print(f"{size:>6} {compiled:>12.2f} {python:>10.2f} {python / compiled:>6.1f}x")


if __name__ == "__main__":
    main()
