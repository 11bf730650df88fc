"""Replica exchange against the default sampler of the clustered partial-order model.

Simulated full rankings of 10 items from 5 planted partial orders (``po_convergence.simulate``)
or the demo's witness lists, ``clustered_partial_orders(n_dims=3)``. Both variants run
``pm.sample`` with the same seed, chains, tuning and draws and the same label step settings;
the second gives
``step=pmc.ReplicaExchange(...)``. Printed per variant: seconds of sampling, rank-normalised
R-hat and bulk ESS of the number of clusters, the partition entropy and the lists'
log-likelihood, the exchange acceptance rate of each adjacent pair; then the ratios
replica exchange / default measured in this run (seconds, ESS, ESS per second).

    python benchmarks/replica_exchange.py                      # 100 lists, 2 x (300 + 300)
    python benchmarks/replica_exchange.py --temps 4 --min-beta 0.3
    python benchmarks/replica_exchange.py --demo --tune 500 --draws 500
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

warnings.filterwarnings("ignore")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402
from po_convergence import simulate, total_loglik  # noqa: E402

import pymc_crp as pmc  # noqa: E402

QUANTITIES = ("n_clusters", "entropy", "loglik")


def run(lists, n_items, args, tempered):
    model = pmc.models.clustered_partial_orders(lists, n_items, n_dims=3)

    def label_steps():
        return [pmc.PartialOrderLabelGibbs([model["cluster"]], anneal=args.anneal)]

    with model:
        build = time.perf_counter()
        if tempered:
            ladder = pmc.step_methods.replica_exchange.geometric_ladder(args.temps, args.min_beta)
            step = pmc.ReplicaExchange(betas=ladder, steps=label_steps)
        else:
            step = label_steps()
        build = time.perf_counter() - build
        idata = pm.sample(
            args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            random_seed=args.seed,
            step=step,
            progressbar=False,
            compute_convergence_checks=False,
        )
    pmc.partition_stats(idata, "cluster")
    post = idata.posterior
    for key in ("n_clusters", "entropy"):
        post[key] = post[f"cluster_{key}"]
    post["loglik"] = (("chain", "draw"), total_loglik(model, idata))
    rhat, ess = az.rhat(post[list(QUANTITIES)]), az.ess(post[list(QUANTITIES)], method="bulk")
    stats = idata.sample_stats
    swaps = [float(np.nanmean(stats[k].values)) for k in sorted(stats) if "swap_accepted_" in k]
    return {
        "seconds": float(post.attrs["sampling_time"]),
        "build": build,
        "rhat": {q: float(rhat[q]) for q in QUANTITIES},
        "ess": {q: float(ess[q]) for q in QUANTITIES},
        "mean": {q: float(post[q].mean()) for q in QUANTITIES},
        "swaps": swaps,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lists", type=int, default=100)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--anneal", type=int, default=150)
    parser.add_argument("--temps", type=int, default=4)
    parser.add_argument("--min-beta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--demo", action="store_true", help="the demo's 15 witness lists")
    args = parser.parse_args()
    print(describe_machine())
    if args.demo:
        data = pmc.datasets.load_witness_lists()
        lists, n_items = data.lists, data.n_items
        what = f"the demo's {len(lists)} witness lists over {n_items} items"
    else:
        lists, n_items = simulate(args.lists, np.random.default_rng(args.seed))[0], 10
        what = f"{args.lists} full rankings of 10 items, 5 planted orders"
    print(
        f"{what}; {args.chains} chains x "
        f"({args.tune} tune + {args.draws} draws), cores={args.cores}, anneal={args.anneal}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    results = {
        name: run(lists, n_items, args, name != "default") for name in ("default", "replicas")
    }
    ladder = pmc.step_methods.replica_exchange.geometric_ladder(args.temps, args.min_beta)
    print(f"replicas: betas {np.round(ladder, 3).tolist()}")
    for name, res in results.items():
        print(f"--- {name}: {res['seconds']:.1f} s sampling ({res['build']:.1f} s to build)")
        for q in QUANTITIES:
            print(
                f"  {q:<11} mean {res['mean'][q]:9.2f}  R-hat {res['rhat'][q]:6.3f}  "
                f"bulk ESS {res['ess'][q]:7.1f}"
            )
        if res["swaps"]:
            print("  exchange acceptance per pair:", [round(s, 3) for s in res["swaps"]])
    base, rep = results["default"], results["replicas"]
    ratio = rep["seconds"] / base["seconds"]
    print(f"replicas / default: seconds {ratio:.2f}")
    for q in QUANTITIES:
        ess_ratio = rep["ess"][q] / base["ess"][q]
        print(f"  {q:<11} ESS {ess_ratio:5.2f}, ESS per second {ess_ratio / ratio:5.2f}")


if __name__ == "__main__":
    main()
