"""Effective samples per second of ``rho`` and ``tau``: interweaved moves against the random walk.

Model: ``pmc.models.clustered_partial_orders`` (``max_clusters=6``; ``n_dims=2`` on lists
simulated from planted partial orders, ``n_dims=3`` on the demo's witness lists). Three
samplers, same data, seeds and everything else:

- ``slice``: the default, ``NonCentredHyperparameterMetropolis`` on ``rho`` and ``tau``
  (a random walk with the utilities fixed, then a slice draw of the joint non-centred move);
- ``interweaved``: the same with the non-centred move a random walk
  (``noncentred_move="metropolis"``, the default before the slice draw);
- ``centred``: ``HyperparameterMetropolis`` on ``rho`` and ``tau`` (the random walk alone,
  the default before the interweaved move).

Prints bulk ESS (ArviZ) of ``rho`` and ``tau`` over all chains, sampling seconds, and the
ratios of ESS per second (slice / interweaved, slice / centred), for a weakly and a strongly
informative simulated data set and the witness lists.

    python benchmarks/rho_mixing.py [--draws 1000] [--tune 500] [--chains 4]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from functools import partial

warnings.filterwarnings("ignore")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.posets import partial_order_from_utilities, sample_list  # noqa: E402


def simulate(n_lists, n_items, length, rng, n_orders=2, rho=0.6, p=0.1):
    cov = (1 - rho) * np.eye(2) + rho
    orders = [
        partial_order_from_utilities(rng.multivariate_normal(np.zeros(2), cov, size=n_items))
        for _ in range(n_orders)
    ]
    lists = []
    for i in range(n_lists):
        items = rng.choice(n_items, size=length, replace=False)
        lists.append(sample_list(orders[i % n_orders], items, p, rng).tolist())
    return lists


def run(model, make_step, args):
    with model:
        step = [make_step([model[name]]) for name in ("rho", "tau")]
        start = time.perf_counter()
        idata = pm.sample(
            args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=1,
            step=step,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
        )
        seconds = time.perf_counter() - start
    ess = az.ess(idata, var_names=["rho", "tau"])
    rhat = az.rhat(idata, var_names=["rho", "tau"])
    return float(ess["rho"]), float(ess["tau"]), seconds, float(rhat["rho"]), float(rhat["tau"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    args = parser.parse_args()
    print(describe_machine())
    logging.getLogger("pymc").setLevel(logging.ERROR)
    rng = np.random.default_rng(2026)
    witness = pmc.datasets.load_witness_lists()
    data = {
        "weak (14 lists, 5 items)": (simulate(14, 5, 3, rng), 5, 2),
        "strong (200 lists, 8 items)": (simulate(200, 8, 6, rng), 8, 2),
        "witness lists (15, 16 items)": (witness.lists, witness.n_items, 3),
    }
    variants = {
        "slice": pmc.NonCentredHyperparameterMetropolis,
        "interweaved": partial(
            pmc.NonCentredHyperparameterMetropolis, noncentred_move="metropolis"
        ),
        "centred": pmc.HyperparameterMetropolis,
    }
    print(f"{args.chains} chains x {args.draws} draws after {args.tune} tuning steps")
    print(
        f"{'data':30s} {'sampler':12s} {'ESS rho':>8s} {'ESS tau':>8s} {'seconds':>8s} "
        f"{'R-hat rho':>9s} {'tau':>6s}"
    )
    for label, (lists, n_items, n_dims) in data.items():
        results = {}
        for name, make_step in variants.items():
            model = pmc.models.clustered_partial_orders(
                lists, n_items, n_dims=n_dims, max_clusters=6
            )
            results[name] = run(model, make_step, args)
            ess_rho, ess_tau, seconds, rhat_rho, rhat_tau = results[name]
            print(
                f"{label:30s} {name:12s} {ess_rho:8.1f} {ess_tau:8.1f} {seconds:8.1f} "
                f"{rhat_rho:9.3f} {rhat_tau:6.3f}"
            )
        a_rho, a_tau, a_s = results["slice"][:3]
        for other in ("interweaved", "centred"):
            b_rho, b_tau, b_s = results[other][:3]
            print(
                f"{label:30s} ratio of ESS/s (slice / {other}): "
                f"rho {(a_rho / a_s) / (b_rho / b_s):.1f}x, "
                f"tau {(a_tau / a_s) / (b_tau / b_s):.1f}x"
            )


if __name__ == "__main__":
    main()
