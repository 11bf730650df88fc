"""Benchmark of :func:`pymc_crp.point_estimate_partition` against the best sampled partition.

Synthetic posterior draws around a planted partition with 10 clusters: each draw copies the
truth, reassigns a random 2-10 % of the items to a random cluster (one of the 10 or one of two
extra ones), and with probability 0.2 merges two of the clusters. For each ``N`` and loss the
script prints the wall time of the SALSO-style search (``point_estimate_partition``) and of
the baseline that picks the sampled partition with the least expected loss, their ratio, and
the expected loss each achieves.

Run: ``python benchmarks/point_estimate.py [--n 1000 5000] [--draws 1000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from machine import describe_machine

from pymc_crp.posterior.draws import canonical_draws
from pymc_crp.posterior.point_estimate import (
    _check_loss,
    _draw_cross_terms,
    _Draws,
    point_estimate_partition,
)


def synthetic_draws(n_items: int, n_draws: int, n_clusters: int = 10, seed: int = 0):
    """``(truth, draws)``: noisy perturbations of a planted partition."""
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(n_clusters, 5.0))
    truth = rng.choice(n_clusters, size=n_items, p=weights)
    draws = np.tile(truth, (n_draws, 1))
    for s in range(n_draws):
        noisy = rng.random(n_items) < rng.uniform(0.02, 0.10)
        draws[s, noisy] = rng.integers(0, n_clusters + 2, size=noisy.sum())
        if rng.random() < 0.2:
            a, b = rng.choice(n_clusters, size=2, replace=False)
            draws[s, draws[s] == a] = b
    return truth, draws


def best_sampled_partition(draws: np.ndarray, loss: str):
    """Baseline: the draw with the least expected loss (exact, over all draws)."""
    prepared = _Draws(draws, _check_loss(loss))
    cross = _draw_cross_terms(prepared.labels, prepared.n_blocks, prepared.weights, prepared.F)
    losses = (prepared.self_terms + prepared.draw_term - 2.0 * cross) / prepared.Z
    best = int(np.argmin(losses))
    return prepared.labels[best].astype(np.int64), float(max(losses[best], 0.0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=16)
    args = parser.parse_args(argv)
    print(describe_machine())

    # compile the numba kernels outside the timings
    _, small = synthetic_draws(30, 20, seed=1)
    for loss in ("VI", "binder"):
        point_estimate_partition(small, loss=loss, n_runs=2)
        best_sampled_partition(small, loss)

    header = (
        f"{'N':>6} {'loss':>6} {'search s':>9} {'baseline s':>10} {'ratio':>6} "
        f"{'search loss':>12} {'baseline loss':>13} {'K est':>5} {'K truth':>7} {'= truth':>7}"
    )
    print(f"{args.draws} draws, {args.runs} runs")
    print(header)
    for n in args.n:
        truth, draws = synthetic_draws(n, args.draws)
        truth_canon = canonical_draws(truth[None, :])[0][0]
        for loss in ("VI", "binder"):
            t0 = time.perf_counter()
            labels, value = point_estimate_partition(
                draws, loss=loss, n_runs=args.runs, return_loss=True
            )
            t_search = time.perf_counter() - t0
            t0 = time.perf_counter()
            _, base_value = best_sampled_partition(draws, loss)
            t_base = time.perf_counter() - t0
            print(
                f"{n:>6} {loss:>6} {t_search:>9.2f} {t_base:>10.2f} {t_search / t_base:>6.1f} "
                f"{value:>12.6f} {base_value:>13.6f} {labels.max() + 1:>5} "
                f"{truth_canon.max() + 1:>7} {str(np.array_equal(labels, truth_canon)):>7}"
            )


if __name__ == "__main__":
    main()
