"""Effective samples per second of the item-covariate effects ``beta``: the order-keeping moves
of ``CovariateShiftMetropolis`` (the default) against PyMC's ``Metropolis`` on ``beta`` (the
step ``pm.sample`` assigned before).

Data: lists simulated from the models' own generative story with item covariates (one
covariate ``x ~ N(0, 1)`` per item, ``beta = 0.8``), queue-jumping noise ``p = 0.1``:

- ``single``: ``partial_order(n_dims=2, covariates=x)``, 40 lists of 4--6 of 8 items;
- ``clustered``: ``clustered_partial_orders(n_dims=2, covariates=x)``, 60 lists of 4--6 of 8
  items from 2 planted utility matrices.

Every sampler runs with ``pm.sample`` defaults for every other variable, the same data and
seeds. Prints, per data set and sampler: sampling seconds, R-hat and bulk ESS of ``beta`` and
of ``p``, and the ratio of ESS per second of ``beta`` (default / PyMC's Metropolis; on the
clustered data also default / the shift moves with ``U0`` held, ``mean_follows=False``).

``--part cycles`` instead compares, on the clustered data, the ``U0`` step's default with item
covariates (ten list-free cycles, each with cell draws of the occupied slots in their Gumbel
scores) against one cycle (``UtilityMeanGibbs(cycles=1)``, the default before), printing
R-hat, bulk ESS and the ratio of ESS per second of ``beta``, ``tau``, ``rho``, ``p`` and the
number of clusters. ``--part labels`` compares, the same way, the default label step with item
covariates (``PartialOrderLabelGibbs`` on the labels and the concentration, ``max_clusters``
at its default) against ``CRPGibbs`` with ``ConcentrationGibbs`` and ``max_clusters=10`` (the
default before).

    python benchmarks/covariate_shift.py [--part beta|cycles|labels] [--draws 1000]
        [--tune 1000] [--chains 4] [--cores 2] [--seed 1]
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
from machine import describe_machine  # noqa: E402
from scipy import special  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.posets import partial_order_from_utilities, sample_list  # noqa: E402

N_ITEMS, BETA, NOISE = 8, 0.8, 0.1
SAMPLERS = ("metropolis", "U0 held", "default")
"""Samplers of ``beta`` on the clustered data: PyMC's ``Metropolis``, the shift moves with
``U0`` and the empty slots held (``mean_follows=False``, the default before they followed), the
default."""


def simulate(n_lists, n_orders, rng):
    """Lists over random subsets of 4--6 items, from ``n_orders`` utility matrices
    ``U ~ N(0, I)`` ordered by ``eta = G⁻¹(Φ(U)) + x beta``; returns ``(lists, x)``."""
    x = rng.normal(size=(N_ITEMS, 1))
    orders = []
    for _ in range(n_orders):
        u = rng.normal(size=(N_ITEMS, 2))
        eta = -np.log(-special.log_ndtr(u)) + x * BETA
        orders.append(partial_order_from_utilities(eta))
    lists = []
    for i in range(n_lists):
        items = rng.choice(N_ITEMS, size=int(rng.integers(4, 7)), replace=False)
        lists.append(sample_list(orders[i % n_orders], items, NOISE, rng).tolist())
    return lists, x


def run(model, sampler, args):
    with model:
        step = {
            "metropolis": lambda: [pm.Metropolis([model["beta"]])],
            "U0 held": lambda: [pmc.CovariateShiftMetropolis([model["beta"]], mean_follows=False)],
            "one cycle": lambda: [pmc.UtilityMeanGibbs([model["U0"]], cycles=1)],
            "CRPGibbs": lambda: [
                pmc.CRPGibbs([model["cluster"]]),
                pmc.ConcentrationGibbs([model["alpha"]]),
            ],
        }.get(sampler, lambda: None)()
        start = time.perf_counter()
        idata = pm.sample(
            args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            step=step,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        seconds = time.perf_counter() - start
    post = idata.posterior
    out = {"seconds": seconds}
    for name in ("beta", "p", "tau", "rho"):
        if name in post:
            values = post[name].values.reshape(post.sizes["chain"], post.sizes["draw"], -1)
            out[name] = (float(az.rhat(values[..., 0])), float(az.ess(values[..., 0])))
    if "cluster" in post:
        labels = post["cluster"].values
        n_clusters = np.array([[len(np.unique(row)) for row in chain] for chain in labels])
        n_clusters = n_clusters.astype(float)
        out["K"] = (float(az.rhat(n_clusters)), float(az.ess(n_clusters)))
    return out


def compare_with_default(build, args, old_sampler, old_kwargs=None):
    """The default against ``old_sampler`` on the clustered data (``--part cycles``: one cycle
    of the ``U0`` step; ``--part labels``: ``CRPGibbs`` with 10 slots), built with
    ``old_kwargs``."""
    names = ("beta", "tau", "rho", "p", "K")
    print(f"{'sampler':<10} {'seconds':>8} " + " ".join(f"{n + ' R-hat/ESS':>16}" for n in names))
    results = {}
    for sampler, kwargs in ((old_sampler, old_kwargs or {}), ("default", {})):
        results[sampler] = r = run(build(**kwargs), sampler, args)
        cells = " ".join(f"{r[n][0]:9.3f}/{r[n][1]:6.0f}" for n in names)
        print(f"{sampler:<10} {r['seconds']:8.1f} {cells}")
    new, old = results["default"], results[old_sampler]
    ratios = " ".join(
        f"{n} {(new[n][1] / new['seconds']) / (old[n][1] / old['seconds']):.2f}" for n in names
    )
    print(f"ESS/s, default / {old_sampler}: {ratios}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--part", choices=("beta", "cycles", "labels"), default="beta")
    args = parser.parse_args()
    print(describe_machine())
    logging.getLogger("pymc").setLevel(logging.ERROR)
    rng = np.random.default_rng(0)
    single_lists, single_x = simulate(40, 1, rng)
    clustered_lists, clustered_x = simulate(60, 2, rng)
    data = {
        "single": lambda: pmc.models.partial_order(
            single_lists, N_ITEMS, n_dims=2, covariates=single_x
        ),
        "clustered": lambda **kwargs: pmc.models.clustered_partial_orders(
            clustered_lists, N_ITEMS, n_dims=2, covariates=clustered_x, **kwargs
        ),
    }
    print(
        f"{args.chains} chains x ({args.tune} tune + {args.draws} draws), cores={args.cores}, "
        f"seed {args.seed}"
    )
    if args.part == "cycles":
        compare_with_default(data["clustered"], args, "one cycle")
        return
    if args.part == "labels":
        compare_with_default(data["clustered"], args, "CRPGibbs", {"max_clusters": 10})
        return
    print(f"{'data':<10} {'sampler':<11} {'seconds':>8} {'R-hat beta':>10} {'ESS beta':>9} "
          f"{'R-hat p':>8} {'ESS p':>7}")  # fmt: skip
    for name, build in data.items():
        results = {}
        samplers = ("metropolis", "default") if name == "single" else SAMPLERS
        for sampler in samplers:
            results[sampler] = r = run(build(), sampler, args)
            print(f"{name:<10} {sampler:<11} {r['seconds']:8.1f} {r['beta'][0]:10.3f} "
                  f"{r['beta'][1]:9.0f} {r['p'][0]:8.3f} {r['p'][1]:7.0f}")  # fmt: skip
        per_second = {s: r["beta"][1] / r["seconds"] for s, r in results.items()}
        for other, label in (("metropolis", "PyMC's Metropolis"), ("U0 held", "U0 held")):
            if other in per_second:
                print(
                    f"{name:<10} ESS/s of beta, default / {label}: "
                    f"{per_second['default'] / per_second[other]:.2f}"
                )


if __name__ == "__main__":
    main()
