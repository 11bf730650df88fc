"""Mixing of the partial-order utilities at a fixed partition: the within-interval draws.

The lists of ``po_convergence.py`` (full rankings of 10 items from 5 planted partial orders, 3
latent dimensions, ``p = 0.1``) with their labels held at the planted partition, so that only
the utility step and the hyperparameter steps move (those ``pm.sample`` assigns to
``clustered_partial_orders``, ``n_dims=3``). Variants of ``UtilityMetropolis`` are run from
the same start with the same seeds, 4 chains each, one after the other in one process; after a
third of the iterations (tuning) the steps stop tuning and the rest are kept. Printed per
variant: ms per iteration and, for the total log-likelihood of the lists, ``tau``, ``rho``,
``p`` and the number of relations of the five planted clusters' orders, the bulk ESS, its rate
per second and the rank-normalised R-hat; then the ESS/s ratio of each variant against the
first.

    python benchmarks/utility_mixing.py                       # cols0 (before) against cols1
    python benchmarks/utility_mixing.py --variants cols0 cols1 --iterations 2400 --repeats 6
    python benchmarks/utility_mixing.py --variants cells0 cells1 hops1 --iterations 1500
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
from po_convergence import simulate  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.core.lists import list_likelihood_cache, order_words  # noqa: E402

QUANTITIES = ("loglik", "tau", "rho", "p", "relations")


def variant_kwargs(variant: str) -> dict:
    """``cellsN``: N within-interval scans; ``colsN``: N passes of column shifts and scalings
    (``cols0``: the utility step before them); ``hopsN``: N sweeps of moves to the next
    interval; ``gibbsN``: coordinate Gibbs of N items per slot; ``itemsN``: N random-walk
    sweeps of each slot's items; ``hmcN``: N exact Hamiltonian trajectories of each slot
    (the other moves at their defaults). ``collN`` (handled by :func:`run_chain`): N collapsed
    moves of each of ``tau`` and ``rho`` per step of ``UtilityMeanGibbs``, the utility step at
    its defaults."""
    keys = (
        ("cells", "cell_sweeps"),
        ("cols", "column_moves"),
        ("hops", "cell_hops"),
        ("gibbs", "coordinate_items"),
        ("items", "item_sweeps"),
        ("hmc", "hmc_trajectories"),
    )
    for prefix, key in keys:
        if variant.startswith(prefix):
            return {key: int(variant[len(prefix) :])}
    raise ValueError(f"unknown variant {variant!r}")


def run_chain(model, truth, variant, chain, iterations):
    """One chain at the planted partition; returns (traces, seconds of the kept iterations)."""
    with model:
        if variant.startswith("coll"):  # collapsed tau/rho moves of the U0 step
            moves = int(variant[4:])
            extra = [pmc.UtilityMeanGibbs([model["U0"]], collapsed_moves=moves)]
        else:
            extra = [pmc.UtilityMetropolis([model["U"]], **variant_kwargs(variant))]
        provided, selected = pm.sampling.mcmc.assign_step_methods(model, extra)
        steps = pm.sampling.mcmc.instantiate_steppers(model, provided, selected)
    steps = steps if isinstance(steps, list) else [steps]
    steps = [s for s in steps if not isinstance(s, pmc.PartialOrderLabelGibbs)]
    for i, step in enumerate(steps):
        step.set_rng(np.random.default_rng(100 * chain + i))
    lists = np.asarray(model.rvs_to_values[model["lists"]].data)
    cache = list_likelihood_cache()
    list_set = cache.list_set(lists, True)
    point = model.initial_point(random_seed=0)
    point["cluster"] = truth.astype(np.int64)
    n_tune = iterations // 3
    traces = {q: [] for q in QUANTITIES}
    seconds = 0.0
    for it in range(iterations):
        if it == n_tune:
            for step in steps:
                step.stop_tuning()
        start = time.perf_counter()
        for step in steps:
            point, _ = step.step(point)
        if it < n_tune:
            continue
        seconds += time.perf_counter() - start
        p = 1.0 / (1.0 + np.exp(-point["p_logodds__"]))
        words = order_words(point["U"], True)
        traces["loglik"].append(cache.log_likelihoods(list_set, words, truth, float(p)).sum())
        traces["tau"].append(float(point["tau_interval__"]))
        traces["rho"].append(float(point["rho_logodds__"]))
        traces["p"].append(float(point["p_logodds__"]))
        u = point["U"][: truth.max() + 1]
        traces["relations"].append(int(np.all(u[:, :, None] > u[:, None, :], axis=-1).sum()))
    return traces, seconds


def run(model, truth, variant, iterations, chains, repeat=0):
    """``chains`` chains of one variant (repeat ``r`` seeds them as chains ``4r, 4r+1, …``)."""
    traces = {q: [] for q in QUANTITIES}
    seconds = 0.0
    for chain in range(chains):
        one, secs = run_chain(model, truth, variant, chain + chains * repeat, iterations)
        seconds += secs
        for q in QUANTITIES:
            traces[q].append(one[q])
    kept = chains * (iterations - iterations // 3)
    out = {"ms_iter": 1e3 * seconds / kept, "seconds": seconds}
    for q in QUANTITIES:
        values = np.asarray(traces[q], dtype=float)
        out[q] = (float(az.ess(values, method="bulk")), float(az.rhat(values)))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lists", type=int, default=300)
    parser.add_argument("--iterations", type=int, default=900)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--variants", nargs="+", default=["cols0", "cols1"])
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of each variant with other chain seeds"
    )
    args = parser.parse_args()
    print(describe_machine())
    lists, truth = simulate(args.lists, np.random.default_rng(0))
    model = pmc.models.clustered_partial_orders(lists, 10, n_dims=3)
    print(
        f"{args.lists} lists at the planted partition, {args.chains} chains x {args.iterations} "
        f"iterations (a third tuning); load average {os.getloadavg()[0]:.2f}"
    )
    runs = {
        v: [run(model, truth, v, args.iterations, args.chains, r) for r in range(args.repeats)]
        for v in args.variants
    }
    for variant, repeats in runs.items():
        for res in repeats:
            cells = "  ".join(
                f"{q} {res[q][0]:.0f} ({res[q][0] / res['seconds']:.2f}/s, R-hat {res[q][1]:.3f})"
                for q in QUANTITIES
            )
            print(f"{variant:8s} {res['ms_iter']:6.1f} ms/iter  {cells}")
    results = {  # pooled over the repeats: total ESS and seconds
        v: {
            "seconds": sum(r["seconds"] for r in repeats),
            **{q: (float(sum(r[q][0] for r in repeats)),) for q in QUANTITIES},
        }
        for v, repeats in runs.items()
    }
    base = results[args.variants[0]]
    if args.repeats > 1:
        for variant, res in results.items():
            means = "  ".join(f"{q} {res[q][0] / args.repeats:.0f}" for q in QUANTITIES)
            print(f"{variant:8s} mean bulk ESS over {args.repeats} repeats: {means}")
    for variant in args.variants[1:]:
        res = results[variant]
        ratios = "  ".join(
            f"{q} {res[q][0] / res['seconds'] / (base[q][0] / base['seconds']):.2f}x"
            for q in QUANTITIES
        )
        print(f"ESS/s {variant} / {args.variants[0]}: {ratios}")


if __name__ == "__main__":
    main()
