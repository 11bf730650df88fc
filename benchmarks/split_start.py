"""Does the label step merge a planted group split in two by an incomparable pair?

The partition lottery of ``po_convergence.py`` (a chain of the annealed start settles in a
partition with one planted group in two) is rare, so this script makes the state directly:
1,000 full rankings of 10 items from 5 planted partial orders (3 latent dimensions, ``p =
0.1``; the data of ``po_convergence.py`` with data seed 2015), the largest planted group split
by the incomparable pair ``(a, b)`` its lists order most evenly (lists with ``a`` first in
one cluster, ``b`` first in the other), each half's utilities the planted ones with ``a``
(respectively ``b``) raised above the other in every dimension, the other groups at their
planted labels and utilities. Then 2 chains x (``--iterations``/2 tuning + the same kept)
iterations of the default steps with ``anneal=0`` (``β = 1`` from the start), for each label
step given with ``--variants``:

- ``default``: ``PartialOrderLabelGibbs`` with its defaults;
- ``infN``: plus ``informed_split_merge=N``.

Printed per variant and chain: the fraction of iterations in which the two halves' modal
clusters are the same (the split merged) and the first such iteration, and the number of
clusters at the start and the end; then the ratio of the merged fractions against
``default``.

    python benchmarks/split_start.py --iterations 300 --variants default inf1
"""

from __future__ import annotations

import argparse
import time
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from po_convergence import SHARES, in_default_order, simulate  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.posets import partial_order_from_utilities  # noqa: E402

N_LISTS, N_ITEMS, N_DIMS, NOISE, TAU = 1000, 10, 3, 0.1, 0.5


def split_state(seed=2015):
    """``(lists, labels, planted utilities, U0, halves)`` of the split start."""
    lists, truth, u0, planted = simulate(
        N_LISTS, np.random.default_rng(seed), N_ITEMS, N_DIMS, NOISE, TAU, planted=True
    )
    lists = np.array(lists)
    orders = [partial_order_from_utilities(u) for u in planted]
    members = np.flatnonzero(truth == 0)  # the largest planted group
    position = np.argsort(lists, axis=1)
    pairs = [
        (abs(np.mean(position[members, a] < position[members, b]) - 0.5), a, b)
        for a in range(N_ITEMS)
        for b in range(a + 1, N_ITEMS)
        if not (orders[0][a, b] or orders[0][b, a])
    ]
    _, a, b = min(pairs)
    second = members[position[members, a] > position[members, b]]
    labels = truth.copy()
    labels[second] = len(SHARES)
    first_half = planted[0].copy()
    first_half[a] = np.maximum(first_half[a], first_half[b] + 0.1)
    second_half = planted[0].copy()
    second_half[b] = np.maximum(second_half[b], second_half[a] + 0.1)
    utilities = [*planted[1:], second_half]
    print(
        f"largest planted group: {members.size} lists, split by the pair ({a}, {b}) into "
        f"{members.size - second.size} + {second.size}"
    )
    halves = (np.setdiff1d(members, second), second)
    return lists, labels, [first_half, *utilities], u0, halves


def run(variant, iterations, seed, state):
    lists, labels, utilities, u0, halves = state
    model = pmc.models.clustered_partial_orders(lists.tolist(), N_ITEMS, n_dims=N_DIMS)
    n_slots = model.initial_point()["U"].shape[0]
    start = np.random.default_rng(seed).normal(scale=0.5, size=(n_slots, N_ITEMS, N_DIMS))
    start[: len(utilities)] = utilities
    informed = int(variant[3:]) if variant.startswith("inf") else 0
    with model:
        step = pmc.PartialOrderLabelGibbs(
            [model["cluster"]], anneal=0, informed_split_merge=informed
        )
        began = time.perf_counter()
        idata = pm.sample(
            iterations // 2,
            tune=iterations // 2,
            chains=2,
            cores=1,
            random_seed=seed,
            step=in_default_order(model, [step]),
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            initvals={"cluster": labels, "U": start, "U0": u0, "p": NOISE, "tau": TAU},
        )
    seconds = time.perf_counter() - began
    z = np.concatenate(
        [idata.warmup_posterior["cluster"].values, idata.posterior["cluster"].values], axis=1
    )
    merged = []
    for c, chain in enumerate(z):
        modal = [[np.bincount(d[half]).argmax() for half in halves] for d in chain]
        together = np.array([one == two for one, two in modal])
        k = [len(np.unique(d)) for d in chain]
        first = int(np.argmax(together)) if together.any() else None
        print(
            f"{variant} chain {c}: halves in one cluster in {together.mean():.3f} of "
            f"{together.size} iterations (first: {first}); clusters {k[0]} at the start, "
            f"{k[-1]} at the end"
        )
        merged.append(together.mean())
    print(f"{variant}: {seconds:.0f} s")
    return float(np.mean(merged))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=300, help="per chain (half tuning)")
    parser.add_argument("--seed", type=int, default=1, help="random_seed of pm.sample")
    parser.add_argument("--variants", nargs="+", default=["default"])
    args = parser.parse_args()
    if args.iterations < 2:
        parser.error("--iterations must be at least 2")
    state = split_state()
    results = {v: run(v, args.iterations, args.seed, state) for v in args.variants}
    base = results.get("default")
    for variant, fraction in results.items():
        ratio = f"{fraction / base:.2f}x" if base else "n/a (default never merged)"
        print(f"{variant}: merged in {fraction:.3f} of iterations; against default {ratio}")


if __name__ == "__main__":
    main()
