"""Convergence of the clustered partial-order sampler: the current default against the old one.

Data shaped like the held-out preference data of issue 15: full rankings of 10 items from 5
planted partial orders (3 latent dimensions; ``U0 ~ N(0, I)``, planted ``U^(a) ~ N(0.5 U0,
0.75 I)``, cluster shares 0.35/0.25/0.2/0.12/0.08) with queue-jumping noise ``p = 0.1``.
Both samplers run on the same lists with ``pm.sample`` defaults apart from the settings below
(steps assigned automatically):

- ``old``: ``CRPGibbs`` on the labels with ``max_clusters=10`` (scores every slot, refreshes
  every empty slot; the package's behaviour before this benchmark);
- ``new``: the package's default for ``clustered_partial_orders`` (``max_clusters`` at its
  default).

Variants that give steps keep ``pm.sample``'s order of the steps (the given step takes
the place of the default one for its variables).

Printed per variant: for each label-invariant quantity (number of clusters, largest cluster,
partition entropy, total log-likelihood of the lists, ``p``, ``tau``, ``rho``, ``alpha``) the
rank-normalised R-hat, bulk ESS and bulk ESS per second of sampling; the new/old ratio of ESS
per second; ms per iteration; the agreement (ARI) of the chains' point-estimate partitions
(`ari_trivial` 1 when every estimate is one cluster or all singletons, where the ARI is 1 or 0
by construction) and the split R-hat of the co-clustering indicators pooled over pairs (`psm_rhat`,
`pmc.similarity_rhat`), which stays meaningful when the posterior is diffuse.
A second table times one iteration of the new step set at ``max_clusters`` 10 and large.

    python benchmarks/po_convergence.py                  # short: 300 lists, 4 x (300 + 300)
    python benchmarks/po_convergence.py --lists 1000 --tune 1000 --draws 1000 --cores 2
    python benchmarks/po_convergence.py --data witness --tune 1000 --draws 1000 --baseline new
    python benchmarks/po_convergence.py --data heterogeneous --lists 1000 --tune 1000 \
        --draws 1000 --cores 2 --baseline alpha --variants new
    python benchmarks/po_convergence.py --data many --lists 1000 --tune 1000 --draws 1000 \
        --cores 2 --baseline new --variants new --timing-iterations 0
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

warnings.filterwarnings("ignore")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402
from po_variants import in_default_order, variant_steps  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.core.lists import list_likelihood_cache, order_words  # noqa: E402
from pymc_crp.posets import partial_order_from_utilities, sample_list  # noqa: E402

SHARES = (0.35, 0.25, 0.2, 0.12, 0.08)
QUANTITIES = (
    "n_clusters",
    "largest_cluster",
    "entropy",
    "loglik",
    "p",
    "tau",
    "rho",
    "alpha",
)


def simulate(n_lists, rng, n_items=10, n_dims=3, p=0.1, tau=0.5, planted=False):
    """Full rankings from 5 planted partial orders; returns ``(lists, planted labels)``, and
    with ``planted`` also ``(U0, planted utilities)``."""
    u0 = rng.normal(size=(n_items, n_dims))
    utilities = [tau * u0 + np.sqrt(1 - tau**2) * rng.normal(size=u0.shape) for _ in SHARES]
    orders = [partial_order_from_utilities(u) for u in utilities]
    truth = rng.choice(len(SHARES), size=n_lists, p=SHARES)
    items = np.arange(n_items)
    lists = [sample_list(orders[a], items, p, rng).tolist() for a in truth]
    return (lists, truth, u0, utilities) if planted else (lists, truth)


def simulate_heterogeneous(n_lists, rng, n_items=10, shares=(0.5, 0.3, 0.2)):
    """Full rankings that no partial order generates, shaped like survey data (a stand-in for
    real preferences): a Plackett--Luce mixture with individual variation. Item worths
    ``μ0 ~ N(0, 1.5²)``; each of 3 groups (``shares``) shifts them by ``N(0, 0.7²)``; each
    ranking sorts its group's worths plus ``N(0, 0.5²)`` and standard Gumbel noise. Returns
    ``(lists, group labels)``."""
    base = rng.normal(0.0, 1.5, n_items)
    worths = [base + rng.normal(0.0, 0.7, n_items) for _ in shares]
    groups = rng.choice(len(shares), size=n_lists, p=shares)
    lists = [
        np.argsort(-(worths[g] + rng.normal(0.0, 0.5, n_items) + rng.gumbel(size=n_items))).tolist()
        for g in groups
    ]
    return lists, groups


def total_loglik(model, idata):
    """Per-draw total log-likelihood of the lists ``(chain, draw)``."""
    lists = np.asarray(model.rvs_to_values[model["lists"]].data)
    cache = list_likelihood_cache()
    list_set = cache.list_set(lists, True)
    post = idata.posterior
    u, z, p = post["U"].values, post["cluster"].values, post["p"].values
    out = np.empty(z.shape[:2])
    for c, d in itertools.product(range(z.shape[0]), range(z.shape[1])):
        words = order_words(u[c, d], True)
        out[c, d] = cache.log_likelihoods(list_set, words, z[c, d], float(p[c, d])).sum()
    return out


N_DIMS = [3]  # latent dimensions of the model (2 for the ballots)


def run(lists, n_items, args, variant, seed):
    n_slots = 10 if variant == "old" else None
    if variant.startswith(("old", "new")) and variant[3:]:  # e.g. old50, new10: other L
        n_slots, variant = int(variant[3:]), variant[:3]
    kwargs = {"n_dims": N_DIMS[0]}
    if n_slots is not None:
        kwargs["max_clusters"] = n_slots
    model = pmc.models.clustered_partial_orders(lists, n_items, **kwargs)
    step = in_default_order(model, variant_steps(model, variant))
    with model:
        start = time.perf_counter()
        idata = pm.sample(
            args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            random_seed=seed,
            step=step,
            progressbar=False,
            compute_convergence_checks=False,
        )
        wall = time.perf_counter() - start
    sampling = float(idata.posterior.attrs.get("sampling_time", wall))
    pmc.partition_stats(idata, "cluster")
    post = idata.posterior
    for key in ("n_clusters", "largest_cluster", "entropy"):
        post[key] = post[f"cluster_{key}"]
    post["loglik"] = (("chain", "draw"), total_loglik(model, idata))
    names = [q for q in QUANTITIES if q in post]
    if args.block_means:
        print_block_means(post, args.block_means, variant, seed)
    rhat = az.rhat(post[names])
    ess = az.ess(post[names], method="bulk")
    n_iter = args.chains * (args.tune + args.draws)
    with warnings.catch_warnings(record=True) as caught:  # (warnings are ignored above)
        warnings.simplefilter("always")
        agreement = pmc.chain_agreement(idata, "cluster")
    trivial = any("point estimate" in str(w.message) for w in caught)
    aris = agreement[np.triu_indices(len(agreement), 1)]
    return {
        "rhat": {n: float(rhat[n]) for n in names},
        "ess": {n: float(ess[n]) for n in names},
        "seconds": sampling,
        "ms_iter": 1e3 * sampling * min(args.cores, args.chains) / n_iter,
        "ari_min": float(aris.min()) if aris.size else float("nan"),
        # 1: every chain's estimate one cluster (+ a singleton) or all singletons, so the ARI
        # is 1 or 0 by construction (pmc.chain_agreement's warning); read psm_rhat instead
        "ari_trivial": float(trivial),
        "psm_rhat": pmc.similarity_rhat(idata, "cluster"),
        "k_mean": float(post["n_clusters"].mean()),
        "informed": float(
            np.sum(idata.sample_stats["informed_splits"].values)
            + np.sum(idata.sample_stats["informed_merges"].values)
        )
        if "informed_splits" in idata.sample_stats
        else float("nan"),
        "slots_full": float(np.mean(idata.sample_stats["slots_full"].values))
        if "slots_full" in idata.sample_stats
        else float("nan"),
    }


def print_block_means(post, block, variant, seed):
    """Each chain's means of K, the entropy, the log-likelihood and ``tau`` over consecutive
    blocks of ``block`` kept draws: a chain drifting (burn-in) shows a trend, chains in
    different modes show levels that stay apart."""
    names = ("n_clusters", "entropy", "loglik", "tau")
    print(f"block means of {block} draws ({variant}, random_seed={seed}): " + " / ".join(names))
    for c in range(post.sizes["chain"]):
        cells = []
        for b in range(0, post.sizes["draw"] - block + 1, block):
            k, h, ll, tau = (float(post[q].values[c, b : b + block].mean()) for q in names)
            cells.append(f"{k:.1f}/{h:.2f}/{ll:.0f}/{tau:.2f}")
        print(f"  chain {c}: " + "  ".join(cells))


def time_iterations(model, n_iter, labels, seed=1, old=False, settle=0):
    """Mean seconds per iteration of the compound step ``pm.sample`` would build (with
    ``CRPGibbs`` on the labels if ``old``), from the same state for every ``max_clusters``:
    the given labels, utilities after 40 warm-up iterations of the other steps; timed after
    tuning (no annealing or adaptation), as the steps run for the kept draws. ``settle``
    iterations of every step (the labels' too) run before the timing, so that the number of
    clusters has left the given labels for the posterior's. Returns the seconds and the mean
    number of occupied clusters over the timed iterations (the cost follows them, and with
    few slots the truncation caps them)."""
    with model:
        extra = [pmc.CRPGibbs([model["cluster"]])] if old else None
        provided, selected = pm.sampling.mcmc.assign_step_methods(model, extra)
        steps = pm.sampling.mcmc.instantiate_steppers(model, provided, selected)
        steps = steps if isinstance(steps, list) else [steps]
        for i, step in enumerate(steps):
            step.set_rng(np.random.default_rng(seed + i))
        point = model.initial_point(random_seed=0)
        point["cluster"] = np.asarray(labels, dtype=np.int64)
        label_steps = (pmc.CRPGibbs, pmc.PartialOrderLabelGibbs)
        for _ in range(40):  # warm-up: compilation, tuning, utilities fitted to the clusters
            for step in steps:
                if not isinstance(step, label_steps):
                    point, _ = step.step(point)
        for step in steps:  # time the steps as they run for the kept draws
            step.stop_tuning()
        for _ in range(settle):
            for step in steps:
                point, _ = step.step(point)
        occupied = 0
        start = time.perf_counter()
        for _ in range(n_iter):
            for step in steps:
                point, _ = step.step(point)
            occupied += np.unique(point["cluster"]).size
    return (time.perf_counter() - start) / n_iter, occupied / n_iter


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lists", type=int, default=300)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated lists")
    parser.add_argument(
        "--sampler-seeds",
        type=int,
        nargs="+",
        default=None,
        help="random_seed of pm.sample, one run per seed and variant (default: --seed + 1); "
        "with several, the spread of R-hat and chain agreement over the seeds is printed",
    )
    parser.add_argument("--timing-iterations", type=int, default=30, help="0: no timing tables")
    parser.add_argument(
        "--block-means",
        type=int,
        default=0,
        help="also print each chain's means of K, entropy, loglik and tau over blocks of this "
        "many kept draws (drift within a chain against levels apart between chains)",
    )
    parser.add_argument(
        "--data",
        choices=("synthetic", "heterogeneous", "witness", "albury", "many"),
        default="synthetic",
        help="synthetic: the simulated lists above; heterogeneous: --lists full rankings of "
        "10 items from a Plackett-Luce mixture with individual variation (simulate_"
        "heterogeneous: not from the model, like real survey data); witness: the demo's 15 "
        "witness lists (pmc.datasets.load_witness_lists); albury: examples/albury_ballots.py's "
        "1,000 ballots, n_dims=2; many: --lists lists of 10 items, each over its own subset of "
        "--many-items items (100 if not given), from 5 planted orders (simulate_many_items) "
        "(the timing tables are skipped for all but synthetic)",
    )
    parser.add_argument("--large-slots", type=int, default=100)
    parser.add_argument("--skip-chains", action="store_true", help="only the timing tables")
    parser.add_argument(
        "--baseline", default="old", help="the variant the others are compared with (default old)"
    )
    parser.add_argument(
        "--many-items",
        type=int,
        default=0,
        help="also time lists of 10 items, each over its own subset of this many items (with "
        "--data many: the items of the chains' lists, default 100)",
    )
    parser.add_argument(
        "--settle",
        type=int,
        default=0,
        help="iterations of all steps before the many-items timing (the number of clusters "
        "of lists over 100 items settles at about 17, not the 5 planted; default 0)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        default=["new"],
        help="new (the default steps), alpha (the default before the concentration was "
        "integrated out of the label moves: Escobar-West on alpha), margN (N utility "
        "proposals per anchored slot with the movable lists' labels summed out), coordN (N "
        "coordinate draws per step with them summed out), wmN (N "
        "moves per round of the split of two clusters' lists through their weight), tmN (N "
        "pairs per try of the tuning-phase merges; tm0: none, the default before them), prev (the "
        "defaults before "
        "utility_moves=1 and five "
        "updates of p), gibbsN (coordinate Gibbs of N items per slot), cellsN (N scans of"
        " within-interval utility draws; cells0 is the utility step before them), auxN (N"
        " auxiliary slots), reuse/fresh (the sweeps' auxiliaries reused from round to round or"
        " drawn for each sweep, whatever the lists' item sets), infN (N informed split-merge"
        " proposals per step), msN (N "
        "merge-split proposals per step, no annealing; ms0 is the label step before "
        "merge-split and annealing), swN (N rounds of label moves per step), annN (label "
        "moves annealed over N tuning steps), collN (N collapsed tau/rho moves per step "
        "of UtilityMeanGibbs), coneN (N order-keeping Hamiltonian trajectories of each "
        "occupied slot per list-free cycle of UtilityMeanGibbs; cone0: the default before "
        "them), isN (N item sweeps per UtilityMetropolis step), single "
        "(one item sweep and one update of rho, tau and p per step: the rule for large "
        "data), repN (N updates of rho, tau and p per step), prepN / trepN (N updates of "
        "p / tau per step), ilvN (N alternations of the label step with 8/N rounds and "
        "the utility step), noiseN (joint moves of p and the labels along a path of N "
        "points), ordN (the joint move with the orders following: N item sweeps at each "
        "of 10 points; ordNtT: T points; ordNall: every slot in its pool), hmcN (N exact "
        "Hamiltonian trajectories of each slot's utilities), newL / oldL "
        "(max_clusters=L); a+b joins the steps of a and b (e.g. sw2+hmc2)",
    )
    args = parser.parse_args()
    print(describe_machine())
    rng = np.random.default_rng(args.seed)
    if args.data == "witness":
        witness = pmc.datasets.load_witness_lists()
        lists, n_items = witness.lists, witness.n_items
        described = f"the {len(lists)} witness lists over {n_items} items"
    elif args.data == "albury":
        ballots = pmc.datasets.load_albury_ballots(min_length=2, n_ballots=1000, seed=2015)
        lists, n_items = ballots.lists, ballots.n_items
        N_DIMS[0] = 2
        described = f"{len(lists)} Albury ballots over {n_items} candidates, n_dims=2"
    elif args.data == "many":
        n_items = args.many_items or 100
        lists, _ = simulate_many_items(args.lists, n_items, rng)
        described = f"{args.lists} lists of 10 of {n_items} items, 5 planted orders (3 dims)"
    elif args.data == "heterogeneous":
        lists, _ = simulate_heterogeneous(args.lists, rng)
        n_items = 10
        described = f"{args.lists} heterogeneous Plackett-Luce rankings of 10 items"
    else:
        lists, truth = simulate(args.lists, rng)
        n_items = 10
        described = f"{args.lists} full rankings of 10 items, 5 planted orders (3 dims), p = 0.1"
    print(
        f"{described}; {args.chains} chains x ({args.tune} tune + {args.draws} draws), "
        f"cores={args.cores}"
    )
    if not args.skip_chains:
        variants = tuple(dict.fromkeys((args.baseline, *args.variants)))  # each run once
        seeds = args.sampler_seeds or [args.seed + 1]
        runs = {v: [run(lists, n_items, args, v, seed) for seed in seeds] for v in variants}
        for seed_index, seed in enumerate(seeds):
            old = runs[args.baseline][seed_index]
            for variant in variants[1:] or variants:  # --variants X --baseline X: X alone
                print(f"--- {variant} against {args.baseline} (random_seed={seed}) ---")
                report(old, runs[variant][seed_index])
        if len(seeds) > 1:
            spread(runs, seeds)
    if args.data != "synthetic" or args.timing_iterations < 1:
        return
    # From the planted partition plus 3 small clusters (8 clusters), for every variant.
    start = truth.copy()
    start[:9] = 5 + np.arange(9) % 3
    print(f"ms per iteration ({args.timing_iterations} iterations from 8 clusters):")
    model = pmc.models.clustered_partial_orders(lists, 10, n_dims=3, max_clusters=10)
    old_time, old_k = time_iterations(model, args.timing_iterations, start, old=True)
    print(f"  old, max_clusters=10   {1e3 * old_time:8.1f}   (mean occupied {old_k:.1f})")
    times, ks = {}, {}
    for n_slots in (10, args.large_slots):
        model = pmc.models.clustered_partial_orders(lists, 10, n_dims=3, max_clusters=n_slots)
        times[n_slots], ks[n_slots] = time_iterations(model, args.timing_iterations, start)
        print(
            f"  new, max_clusters={n_slots:<4} {1e3 * times[n_slots]:8.1f}   "
            f"(mean occupied {ks[n_slots]:.1f})"
        )
    large = args.large_slots
    per_cluster = (times[large] / ks[large]) / (times[10] / ks[10])
    print(
        f"  ratio large/10: {times[large] / times[10]:.2f} (target < 1.5); per occupied "
        f"cluster {per_cluster:.2f}"
    )
    if args.many_items:
        many, many_truth = simulate_many_items(args.lists, args.many_items, rng)
        model = pmc.models.clustered_partial_orders(many, args.many_items, n_dims=3)
        t_many, k_many = time_iterations(
            model, args.timing_iterations, many_truth, settle=args.settle
        )
        model = pmc.models.clustered_partial_orders(lists, 10, n_dims=3)
        t_ten, k_ten = time_iterations(model, args.timing_iterations, truth, settle=args.settle)
        print(
            f"  {args.lists} lists over {args.many_items} items {1e3 * t_many:8.1f} (mean "
            f"occupied {k_many:.1f}), over 10 items {1e3 * t_ten:8.1f} ({k_ten:.1f}): ratio "
            f"{t_many / t_ten:.2f} (target < 3); per occupied cluster "
            f"{(t_many / k_many) / (t_ten / k_ten):.2f}"
        )


def simulate_many_items(n_lists, n_items, rng, length=10, p=0.1, n_dims=3):
    """Lists of ``length`` items, each over its own random subset of ``n_items`` items, from 5
    planted orders."""
    orders = [partial_order_from_utilities(rng.normal(size=(n_items, n_dims))) for _ in SHARES]
    truth = rng.choice(len(SHARES), size=n_lists, p=SHARES)
    lists = [
        sample_list(orders[a], rng.choice(n_items, size=length, replace=False), p, rng).tolist()
        for a in truth
    ]
    return lists, truth


def spread(runs, seeds):
    """Per variant, the smallest and largest R-hat of each quantity and chain agreement over
    the sampler seeds."""
    print(f"--- spread over random_seed {seeds} ---")
    for variant, results in runs.items():
        print(f"{variant}:")
        for name in QUANTITIES:
            values = [r["rhat"][name] for r in results if name in r["rhat"]]
            if values:
                print(f"  R-hat {name:<16} {min(values):6.3f} .. {max(values):6.3f}")
        aris = [r["ari_min"] for r in results]
        print(f"  ARI min between chains  {min(aris):6.3f} .. {max(aris):6.3f}")
        psm = [r["psm_rhat"] for r in results]
        print(f"  R-hat co-clustering     {min(psm):6.3f} .. {max(psm):6.3f}")


def report(old, new):
    """R-hat, bulk ESS and ESS per second of both runs, and the new/old ratio of ESS/s."""
    print(f"{'quantity':<16} {'R-hat old':>9} {'new':>6} {'ESS old':>8} {'new':>7} "
          f"{'ESS/s old':>9} {'new':>7} {'ratio':>6}")  # fmt: skip
    for name in QUANTITIES:
        if name not in new["ess"]:
            continue
        eps_old = old["ess"].get(name, np.nan) / old["seconds"]
        eps_new = new["ess"][name] / new["seconds"]
        print(
            f"{name:<16} {old['rhat'].get(name, np.nan):>9.3f} {new['rhat'][name]:>6.3f} "
            f"{old['ess'].get(name, np.nan):>8.0f} {new['ess'][name]:>7.0f} "
            f"{eps_old:>9.2f} {eps_new:>7.2f} {eps_new / eps_old:>6.2f}"
        )
    keys = ("seconds", "ms_iter", "ari_min", "ari_trivial", "psm_rhat", "k_mean", "informed")
    for key in (*keys, "slots_full"):
        print(f"{key:<16} old {old[key]:>9.3f}   new {new[key]:>9.3f}")


if __name__ == "__main__":
    main()
