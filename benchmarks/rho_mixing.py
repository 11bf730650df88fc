"""Effective samples per second of ``rho`` and ``tau``: interweaved moves against the random walk.

Model: ``pmc.models.clustered_partial_orders`` (``n_dims=2``, ``max_clusters=6``) on lists
simulated from planted partial orders. Two samplers, same data, seeds and everything else:

- ``interweaved``: the default, ``NonCentredHyperparameterMetropolis`` on ``rho`` and ``tau``
  (a random walk with the utilities fixed, then the joint non-centred move);
- ``centred``: ``HyperparameterMetropolis`` on ``rho`` and ``tau`` (the random walk alone,
  the default before the interweaved move).

Prints bulk ESS (ArviZ) of ``rho`` and ``tau`` over all chains, sampling seconds, and the
ratio of ESS per second (interweaved / centred), for a weakly and a strongly informative
data set.

    python benchmarks/rho_mixing.py [--draws 1000] [--tune 500] [--chains 2]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

warnings.filterwarnings("ignore")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

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


def run(model, steps, args):
    with model:
        step = [cls([model[name]]) for name, cls in steps.items()]
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
    return float(ess["rho"]), float(ess["tau"]), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    rng = np.random.default_rng(2026)
    data = {
        "weak (14 lists, 5 items)": (simulate(14, 5, 3, rng), 5),
        "strong (200 lists, 8 items)": (simulate(200, 8, 6, rng), 8),
    }
    variants = {
        "interweaved": pmc.NonCentredHyperparameterMetropolis,
        "centred": pmc.HyperparameterMetropolis,
    }
    print(f"{args.chains} chains x {args.draws} draws after {args.tune} tuning steps")
    print(f"{'data':30s} {'sampler':12s} {'ESS rho':>8s} {'ESS tau':>8s} {'seconds':>8s}")
    for label, (lists, n_items) in data.items():
        results = {}
        for name, cls in variants.items():
            model = pmc.models.clustered_partial_orders(lists, n_items, max_clusters=6)
            results[name] = run(model, {"rho": cls, "tau": cls}, args)
            ess_rho, ess_tau, seconds = results[name]
            print(f"{label:30s} {name:12s} {ess_rho:8.1f} {ess_tau:8.1f} {seconds:8.1f}")
        (a_rho, a_tau, a_s), (b_rho, b_tau, b_s) = results["interweaved"], results["centred"]
        print(
            f"{label:30s} ratio of ESS/s (interweaved / centred): "
            f"rho {(a_rho / a_s) / (b_rho / b_s):.1f}x, tau {(a_tau / a_s) / (b_tau / b_s):.1f}x"
        )


if __name__ == "__main__":
    main()
