"""Benchmark of the ordinary-PyMC path: conjugate/collapsed steps against CRPGibbs + NUTS.

Run: ``python benchmarks/generic_path.py [--draws 1000] [--tune 1000] [--chains 4]
[--models readme example studentt]``.

For each model, ``pm.sample`` runs twice in the same process with the same seed:

* **new**: the steps ``pm.sample`` assigns today — ``ConjugateCRPGibbs`` on the labels and the
  conjugate slot parameters (collapsed sweeps, split--merge moves, exact conjugate draws,
  non-conjugate partners by per-slot slice sampling), ``SlotSliceSampler`` on other slot
  parameters, Escobar--West on the concentration;
* **old**: the previous assignment forced with ``step=``: ``CRPGibbs`` on the labels and NUTS
  on the slot parameters (the concentration still by Escobar--West).

Models: ``readme`` — the README's first example (100 points from N(-3, 1) and N(3, 1),
``mu ~ N(0, 10)`` of 20 slots, known unit variance); ``example`` —
``examples/crp_normal_mixture.py`` (130 points, per-cluster ``sigma ~ HalfNormal(2)``);
``studentt`` — the README data with a Student-t likelihood (``nu = 4``; ``mu`` not conjugate).

Printed per model and path: sampling time (after compilation, chains run one after the
other on one core), divergences, and for the label-invariant quantities (number of
clusters, largest cluster, entropy, concentration) bulk ESS, ESS per second and R-hat;
then the ratio new/old of ESS per second.
"""

from __future__ import annotations

import argparse
import logging
import warnings

import arviz as az
import numpy as np
import pymc as pm
from machine import describe_machine

import pymc_crp as pmc

QUANTITIES = ("z_n_clusters", "z_largest_cluster", "z_entropy", "theta")


def readme_data():
    rng = np.random.default_rng(1)
    return np.r_[rng.normal(-3, 1, 60), rng.normal(3, 1, 40)]


def example_data():
    rng = np.random.default_rng(2026)
    truth = np.repeat([0, 1, 2], [60, 40, 30])
    return rng.normal(np.array([-4.0, 0.5, 5.0])[truth], np.array([0.8, 1.0, 0.6])[truth])


def build(name: str):
    """``(model, slot parameter names)``."""
    y = example_data() if name == "example" else readme_data()
    n_slots = 15 if name == "example" else 20
    with pm.Model() as model:
        theta = pm.Gamma("theta", 1.0, 1.0)
        z = pmc.CRP("z", concentration=theta, max_clusters=n_slots, n=len(y))
        mu = pm.Normal("mu", 0.0, 10.0, shape=n_slots)
        if name == "readme":
            pm.Normal("y", mu[z], 1.0, observed=y)
            return model, ["mu"]
        if name == "example":
            sigma = pm.HalfNormal("sigma", 2.0, shape=n_slots)
            pm.Normal("y", mu[z], sigma[z], observed=y)
            return model, ["mu", "sigma"]
        pm.StudentT("y", nu=4.0, mu=mu[z], sigma=1.0, observed=y)
        return model, ["mu"]


def run(name: str, path: str, args) -> dict:
    model, slot_names = build(name)
    with model:
        step = None
        if path == "old":
            step = [pmc.CRPGibbs([model["z"]]), pm.NUTS([model[n] for n in slot_names])]
        idata = pm.sample(
            args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=1,
            step=step,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    pmc.partition_stats(idata, "z")
    seconds = float(idata.posterior.attrs["sampling_time"])
    ess = az.ess(idata, var_names=list(QUANTITIES), method="bulk")
    rhat = az.rhat(idata, var_names=list(QUANTITIES))
    diverging = idata.sample_stats.get("diverging")
    return {
        "seconds": seconds,
        "divergences": int(diverging.values.sum()) if diverging is not None else 0,
        "ess": {q: float(ess[q]) for q in QUANTITIES},
        "rhat": {q: float(rhat[q]) for q in QUANTITIES},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--models", nargs="+", default=["readme", "example", "studentt"])
    args = parser.parse_args()
    print(describe_machine())
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    print(f"draws={args.draws} tune={args.tune} chains={args.chains} (one core, sequential)")
    for name in args.models:
        results = {path: run(name, path, args) for path in ("new", "old")}
        print(f"\n== {name} ==")
        for path, res in results.items():
            cells = "  ".join(
                f"{q.removeprefix('z_')}: ESS {res['ess'][q]:.0f} "
                f"({res['ess'][q] / res['seconds']:.0f}/s) R-hat {res['rhat'][q]:.3f}"
                for q in QUANTITIES
            )
            print(
                f"{path:>4}: {res['seconds']:6.1f} s, {res['divergences']:4d} divergences | {cells}"
            )
        new, old = results["new"], results["old"]
        ratios = "  ".join(
            f"{q.removeprefix('z_')} x{(new['ess'][q] / new['seconds']) / (old['ess'][q] / old['seconds']):.1f}"  # noqa: E501
            for q in QUANTITIES
        )
        print(
            f"ratio new/old ESS per second: {ratios}  | time x{old['seconds'] / new['seconds']:.1f}"
            f" faster, divergences {new['divergences']} vs {old['divergences']}"
        )


if __name__ == "__main__":
    main()
