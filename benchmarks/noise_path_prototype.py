"""Prototype (not in the package): the joint move of ``p`` and the labels with utility steps.

**Not an exact sampler**; the exact move is ``PartialOrderLabelGibbs(noise_moves=1,
noise_item_sweeps=k, noise_all_slots=True)`` (``po_convergence.py`` variants ``ordN``,
``ordNall``), kept here as the measurement that led to it. This script measured whether a
move along the ridge of the number of clusters and ``p`` (``benchmarks/README.md``, "Mid-sized
data") pays before it is built. The move is the ``noise_moves`` path of ``PartialOrderLabelGibbs``
(``pymc_crp.core.noise_path``: a random walk ``v' = v + s ε`` on logit ``p``, the labels
following along ``T`` points by restricted Gibbs sweeps, accepted with the non-equilibrium
work), with two changes:

- the pool holds every slot (the shipped move keeps a few empty slots, so that along the path
  a list can found a new cluster only there, with ``1/(L - K)`` of the birth mass each; with
  the utilities moving, emptied slots get prior draws and the clusters die out along the path);
- at each point of the path, after the label sweep, one step of the model's
  ``UtilityMetropolis`` at ``p_t`` (the orders follow the lists that move).

``UtilityMetropolis`` is a fixed-order composition of moves, not a reversible kernel, so the
work formula is not yet justified for it (a palindromic or randomly ordered composition would
be). No test checks this move against enumeration. The script runs chains of the ordinary
steps with and without one such proposal per iteration after the annealed start, on the
benchmark's simulated full rankings (``po_convergence.simulate``), and prints R-hat, bulk ESS
and ESS per second of the label-invariant summaries and ``p`` for both, with the ratio.

    python benchmarks/noise_path_prototype.py --lists 60 --chains 4
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

warnings.filterwarnings("ignore")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402
from po_convergence import simulate  # noqa: E402
from scipy.special import betaln, expit  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.core.lists import list_likelihood_cache, order_words  # noqa: E402
from pymc_crp.core.noise_path import noise_path  # noqa: E402

QUANTITIES = ("K", "largest", "entropy", "loglik", "p")


class PathMove:
    """One proposal of ``p`` (Beta(1, 9) prior) that the labels and utilities follow."""

    def __init__(self, label_step, utility_step, path, scale, rng):
        self.lab, self.ut, self.path, self.scale, self.rng = (
            label_step, utility_step, path, scale, rng,
        )  # fmt: skip
        self.cache = list_likelihood_cache()
        self.list_set = label_step._term.list_set
        self.lengths = self.list_set.lengths[self.list_set.inverse]
        self.rows = np.arange(self.lengths.shape[0])
        self.pool = np.arange(label_step.n_slots, dtype=np.int64)

    def loglik(self, labels, utilities, p) -> float:
        words = order_words(utilities, True, slots=labels)
        return float(self.cache.log_likelihoods(self.list_set, words, labels, p).sum())

    def __call__(self, point) -> bool:
        rng, n_slots = self.rng, self.pool.size
        labels = np.array(point["cluster"], dtype=np.int64)
        utilities = np.array(point["U"])
        theta, discount = (float(x) for x in self.lab._prior_params_fn(point))
        v = float(point["p_logodds__"])
        v_new = v + self.scale * rng.standard_normal()
        values = v + (v_new - v) * np.arange(self.path + 1) / self.path
        ps = expit(values)
        work, moving = 0.0, dict(point)
        for t in range(self.path):
            if t > 0:
                words = order_words(utilities, True, slots=self.pool)
                ratios = np.stack(
                    [self.cache.ratios(self.list_set, words[s], self.rows) for s in self.pool]
                )
                counts = np.bincount(labels, minlength=n_slots).astype(np.int64)
                noise_path(
                    rng, np.ascontiguousarray(ratios), self.lengths, labels, counts, self.pool,
                    n_slots, np.full(3, ps[t]), 1.0, theta, discount,
                )  # fmt: skip
                moving.update(cluster=labels.copy(), U=utilities, p_logodds__=np.asarray(values[t]))
                moving, _ = self.ut.step(moving)
                utilities = np.array(moving["U"])
            work += self.loglik(labels, utilities, ps[t + 1])
            work -= self.loglik(labels, utilities, ps[t])
        work += log_prior(v_new) - log_prior(v)
        if math.log(rng.random()) >= work:
            return False
        point.update(cluster=labels, U=utilities, p_logodds__=np.asarray(v_new))
        return True


def log_prior(v: float) -> float:
    """Log density of logit ``p`` under ``p ~ Beta(1, 9)`` (Jacobian ``p (1 - p)``)."""
    p = expit(v)
    return float(9 * np.log1p(-p) + np.log(p) - betaln(1, 9))


def run_chain(model, chain, args, with_move):
    """Summaries ``(draws, 5)`` of one chain, its seconds, the proposals made and accepted."""
    rng = np.random.default_rng(100 + chain + 10_000 * args.sampler_seed)
    provided, selected = pm.sampling.mcmc.assign_step_methods(model, None)
    steps = pm.sampling.mcmc.instantiate_steppers(model, provided, selected)
    for i, step in enumerate(steps):
        step.set_rng(np.random.default_rng(1000 * chain + i + 10_000 * args.sampler_seed))
    point = model.initial_point(random_seed=chain + 100 * args.sampler_seed)
    label_step = next(s for s in steps if isinstance(s, pmc.PartialOrderLabelGibbs))
    utility_step = next(s for s in steps if isinstance(s, pmc.UtilityMetropolis))
    move = PathMove(label_step, utility_step, args.path, args.scale, rng)
    out, proposed, accepted = [], 0, 0
    start = time.perf_counter()
    for it in range(args.tune + args.draws):
        if it == args.tune:
            for step in steps:
                step.stop_tuning()
        for step in steps:
            point, _ = step.step(point)
        if with_move and it >= label_step.anneal:
            proposed += 1
            accepted += move(point)
        if it >= args.tune:
            labels = np.asarray(point["cluster"])
            sizes = np.bincount(labels)
            sizes = sizes[sizes > 0]
            share = sizes / sizes.sum()
            p = float(expit(point["p_logodds__"]))
            loglik = move.loglik(labels, np.asarray(point["U"]), p)
            out.append((sizes.size, sizes.max(), -(share * np.log(share)).sum(), loglik, p))
    return np.array(out), time.perf_counter() - start, proposed, accepted


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lists", type=int, default=60)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--path", type=int, default=10, help="points T of the path")
    parser.add_argument("--scale", type=float, default=0.5, help="step on logit p")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated lists")
    parser.add_argument("--sampler-seed", type=int, default=0, help="seeds of the chains")
    args = parser.parse_args()
    print(describe_machine())
    lists, _ = simulate(args.lists, np.random.default_rng(args.seed))
    model = pmc.models.clustered_partial_orders(lists, 10, n_dims=3)
    rates = {}
    for with_move in (False, True):
        name = "path move" if with_move else "default"
        with model:
            runs = [run_chain(model, c, args, with_move) for c in range(args.chains)]
        draws = np.stack([r[0] for r in runs])
        seconds = sum(r[1] for r in runs)
        proposals = sum(r[2] for r in runs)
        accepted = sum(r[3] for r in runs)
        share = f", {accepted}/{proposals} proposals accepted" if with_move else ""
        print(f"{name}: {seconds:.0f} s for {args.chains} chains{share}")
        rates[name] = {}
        for j, quantity in enumerate(QUANTITIES):
            rhat = float(az.rhat(draws[:, :, j]))
            ess = float(az.ess(draws[:, :, j], method="bulk"))
            rates[name][quantity] = ess / seconds
            print(
                f"  {quantity:8s} R-hat {rhat:.3f}  bulk ESS {ess:6.0f}  ESS/s {ess / seconds:.3f}"
            )
    ratios = ", ".join(
        f"{q} {rates['path move'][q] / rates['default'][q]:.2f}x" for q in QUANTITIES
    )
    print(f"ESS/s path move / default: {ratios}")


if __name__ == "__main__":
    main()
