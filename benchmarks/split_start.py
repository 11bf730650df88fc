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

- ``default``: ``PartialOrderLabelGibbs`` with its defaults (``annealed_split_merge=0.05``);
- ``infN``: plus ``informed_split_merge=N``;
- ``annR``: with ``annealed_split_merge=R`` (proposals per step; ``ann0``: the moves off, the
  label step of the fourteenth session).

Printed per variant and chain: the fraction of iterations in which the two halves' modal
clusters are the same (the split merged) and the first such iteration, and the number of
clusters at the start and the end; then the ratio of the merged fractions against
``default``.

    python benchmarks/split_start.py --iterations 300 --variants default ann0 inf1

``--probe-levels 20 50 100`` instead prints the log-weights of annealed merge paths of the two
halves (:mod:`pymc_crp.step_methods.po_annealed_split_merge`) with those numbers of levels;
with ``--from-chain 5000`` from a chain's own split state (5,000 rankings of
``po_convergence.py``; ``--seed 2`` gives the first chain of its failing run):

    python benchmarks/split_start.py --from-chain 5000 --seed 2 --probe-levels 50 150 --paths 4
"""

from __future__ import annotations

import argparse
import time
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402
from po_convergence import SHARES, simulate  # noqa: E402
from po_variants import in_default_order  # noqa: E402

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
    annealed = float(variant[3:]) if variant.startswith("ann") else None
    with model:
        step = pmc.PartialOrderLabelGibbs(
            [model["cluster"]], anneal=0, informed_split_merge=informed,
            annealed_split_merge=annealed, tune_annealed_split_merge=annealed,
        )  # fmt: skip
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


def probe_merges(levels, paths, seed, model, values, halves):
    """Log-weights of annealed merge paths of the two ``halves`` (label arrays of lists) at the
    state ``values`` (untransformed values of the model's free variables; the path term of the
    acceptance ratio of ``annealed_split_merge``, the choice terms add about -3 here), for
    each number of levels in ``levels``."""
    from pymc.initial_point import make_initial_point_fn

    from pymc_crp.step_methods.po_annealed_split_merge import _Path, annealing_levels
    from pymc_crp.step_methods.po_prior_split_merge import SplitMergeState

    labels, start = values["cluster"], values["U"]
    first, second = halves
    n_slots = start.shape[0]
    point = make_initial_point_fn(
        model=model, overrides=values, jitter_rvs=set(), return_transformed=True
    )(0)
    s, t = labels[first[0]], labels[second[0]]
    for n_levels in levels:
        with model:
            step = pmc.PartialOrderLabelGibbs(  # alpha integrated out, as pm.sample does
                [model["cluster"], model["alpha"]], annealed_split_merge=1,
                annealed_levels=n_levels,
            )  # fmt: skip
        step.tune, step._beta = False, 1.0
        step.rng = np.random.default_rng(seed)
        discount = float(step._prior_params_fn(point)[1])
        new_weights = step._concentration.new_cluster_weights()
        noise = float(step._term.noise_fn(point))
        ll = np.zeros((labels.size, n_slots))
        for slot in np.unique(labels):
            ll[:, slot] = step._column(start[slot], np.arange(labels.size), noise)
        prior = step._slot_prior(point)
        for _ in range(paths):
            moves = SplitMergeState(
                labels.copy(), ll.copy(), start.copy(), noise, new_weights, discount,
                lambda step=step: step._prior_draws(point)[0],
            )  # fmt: skip
            members = step._members(first, second)
            sides = (labels[members] == t).astype(np.int64)
            path = _Path(
                members, sides, start[s].copy(), start[t].copy(), ll[members, s].copy(),
                ll[members, t].copy(), step._side_logs(members),
            )  # fmt: skip
            n_clusters = int(np.unique(labels).size) - 1
            betas = annealing_levels(n_levels)
            log_weight, began = 0.0, time.perf_counter()
            for k in range(1, betas.size):
                log_weight += step._increment(path, moves, n_clusters, betas[k - 1], betas[k])
                if k < betas.size - 1:
                    step._path_scan(path, moves, prior, float(betas[k]), reverse=False)
            print(
                f"T = {n_levels}: merge path log-weight {log_weight:.1f} "
                f"({time.perf_counter() - began:.1f} s; merged lists' log-likelihood "
                f"{path.ll_s.sum():.1f}, split {ll[first, s].sum() + ll[second, t].sum():.1f})"
            )


def split_start_values(state, seed):
    """The model, the state's values and its halves for :func:`probe_merges`."""
    lists, labels, utilities, u0, halves = state
    model = pmc.models.clustered_partial_orders(lists.tolist(), N_ITEMS, n_dims=N_DIMS)
    n_slots = model.initial_point()["U"].shape[0]
    start = np.random.default_rng(seed).normal(scale=0.5, size=(n_slots, N_ITEMS, N_DIMS))
    start[: len(utilities)] = utilities
    values = {"cluster": labels, "U": start, "U0": u0, "p": NOISE, "tau": TAU}
    return model, values, halves


def chain_state(n_lists, seed):
    """A chain's own state: ``po_convergence.py``'s data (data seed 0, ``n_lists`` rankings),
    one chain of ``pm.sample`` defaults (the first chain of a run with ``random_seed=seed``)
    after its 1,000 tuning iterations; the halves are the two largest clusters whose lists
    come mostly from the same planted group. Returns ``(model, values, halves)``."""
    lists, truth = simulate(n_lists, np.random.default_rng(0))
    model = pmc.models.clustered_partial_orders(lists, N_ITEMS, n_dims=N_DIMS)
    began = time.perf_counter()
    with model:
        idata = pm.sample(
            1, chains=1, cores=1, random_seed=seed, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    values = {rv.name: idata.posterior[rv.name].values[0, -1] for rv in model.free_RVs}
    labels = values["cluster"]
    sizes = np.bincount(labels)
    majority = {k: np.bincount(truth[labels == k]).argmax() for k in np.flatnonzero(sizes)}
    print(f"chain of random_seed={seed} tuned in {time.perf_counter() - began:.0f} s; clusters:")
    for k in np.argsort(-sizes)[: len(majority)]:
        print(f"  slot {k}: {sizes[k]} lists, planted groups {np.bincount(truth[labels == k])}")
    for k in np.argsort(-sizes):
        twin = [j for j in np.argsort(-sizes) if j != k and majority.get(j) == majority.get(k)]
        if sizes[k] and twin:
            halves = (np.flatnonzero(labels == k), np.flatnonzero(labels == twin[0]))
            print(f"halves: slots {k} and {twin[0]} (planted group {majority[k]})")
            return model, values, halves
    raise SystemExit("no planted group is split over two clusters in this chain")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=300, help="per chain (half tuning)")
    parser.add_argument("--seed", type=int, default=1, help="random_seed of pm.sample")
    parser.add_argument("--variants", nargs="+", default=["default"])
    parser.add_argument(
        "--probe-levels", type=int, nargs="*", default=[],
        help="instead of sampling: log-weights of merge paths of the halves with these T",
    )  # fmt: skip
    parser.add_argument("--paths", type=int, default=2, help="merge paths per T (probe)")
    parser.add_argument(
        "--from-chain", type=int, default=0, metavar="LISTS",
        help="probe from a chain's own state on LISTS rankings instead of the split start "
        "(chain_state; --seed is its random_seed)",
    )  # fmt: skip
    args = parser.parse_args()
    print(describe_machine())
    if args.iterations < 2:
        parser.error("--iterations must be at least 2")
    if args.probe_levels:
        if args.from_chain:
            model, values, halves = chain_state(args.from_chain, args.seed)
        else:
            model, values, halves = split_start_values(split_state(), args.seed)
        probe_merges(args.probe_levels, args.paths, args.seed, model, values, halves)
        return
    state = split_state()
    results = {v: run(v, args.iterations, args.seed, state) for v in args.variants}
    base = results.get("default")
    for variant, fraction in results.items():
        ratio = f"{fraction / base:.2f}x" if base else "n/a (default never merged)"
        print(f"{variant}: merged in {fraction:.3f} of iterations; against default {ratio}")


if __name__ == "__main__":
    main()
