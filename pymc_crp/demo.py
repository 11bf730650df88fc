"""Main demo: ``python -m pymc_crp.demo``.

Fits the clustered hierarchical partial-order model to the witness lists of the 1135 royal
charters (15 ranked lists of bishops, shipped with the package) with ``pm.sample``, prints
the posterior number of clusters and the hyperparameters with R-hat and ESS, the R-hat of the
co-clustering indicators pooled over pairs of lists (and says whether every R-hat is at most
1.01), the point-estimate clustering of the lists with how sure the
posterior is of it (co-clustering probabilities), and writes plots (consensus order of each
cluster as a Hasse diagram, posterior similarity, number of clusters by chain) to a folder it
names.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")

import arviz as az  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_crp as pmc  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pymc_crp.demo", description=__doc__)
    parser.add_argument("--output", default="pymc_crp_demo", help="folder for the plots")
    parser.add_argument("--draws", type=int, default=2000, help="kept draws per chain")
    parser.add_argument("--tune", type=int, default=1000, help="tuning iterations per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument(
        "--cores",
        type=int,
        default=None,
        help="processes (default: one per chain, at most the CPUs this process may use; "
        "PyMC's own default counts half of them)",
    )
    parser.add_argument("--dims", type=int, default=3, help="latent dimensions K")
    parser.add_argument(
        "--max-clusters", type=int, default=None, help="slots (default: the model's default)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-progressbar", action="store_true")
    args = parser.parse_args(argv)
    if args.cores is not None and args.cores < 1:
        parser.error(f"--cores must be a positive number of processes, got {args.cores}")
    return args


def default_cores(chains: int) -> int:
    """One process per chain, at most the CPUs this process may run on (PyMC's default,
    half of ``os.cpu_count()``, runs the demo's 4 chains in one process on 2 CPUs)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(chains, cpus))


def main(argv=None) -> az.InferenceData:
    args = parse_args(argv)
    cores = default_cores(args.chains) if args.cores is None else args.cores
    data = pmc.datasets.load_witness_lists()
    print(f"Data: {len(data.lists)} witness lists over {data.n_items} bishops (1135 charters).")
    slots = {} if args.max_clusters is None else {"max_clusters": args.max_clusters}
    model = pmc.models.clustered_partial_orders(data.lists, data.n_items, n_dims=args.dims, **slots)
    start = time.perf_counter()
    with model:
        idata = pm.sample(
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=cores,
            random_seed=args.seed,
            progressbar=not args.no_progressbar,
            compute_convergence_checks=False,
        )
    print(f"Sampling (with compilation) took {time.perf_counter() - start:.0f} s.")

    pmc.partition_stats(idata, "cluster")
    summary = pmc.cluster_summary(idata, "cluster", var_names=["p", "tau", "rho"])
    print("\nLabel-invariant summaries (R-hat and ESS are meaningful for these):")
    print(summary[["mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "r_hat"]].to_string())
    co_clustering = pmc.similarity_rhat(idata, "cluster")
    print(f"Co-clustering R-hat (split, pooled over the pairs of lists): {co_clustering:.3f}")
    worst = max(float(summary["r_hat"].max()), co_clustering)
    if worst <= 1.01:
        print(f"All R-hat <= 1.01 (largest {worst:.3f}): the {args.chains} chains agree.")
    else:
        print(
            f"WARNING: largest R-hat {worst:.3f} > 1.01: the chains disagree; rerun with more "
            "--draws and --tune before reading the results below."
        )
    n_clusters = idata.posterior["cluster_n_clusters"].values.ravel()
    values, counts = np.unique(n_clusters, return_counts=True)
    print("\nPosterior of the number of clusters:")
    for k, c in zip(values, counts, strict=True):
        print(f"  K = {k}: {c / n_clusters.size:.3f}")

    consensus = pmc.consensus_order(idata, utilities="U", labels="cluster", threshold=0.5)
    partition = consensus.partition
    similarity = pmc.posterior_similarity(idata, "cluster")
    report_clustering(partition, similarity, data.lists)

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    names = [str(b) for b in range(1, data.n_items + 1)]
    n_groups = len(consensus.orders)
    fig, axes = plt.subplots(1, n_groups, figsize=(5 * n_groups, 5), squeeze=False)
    for g, ax in enumerate(axes[0]):
        used = sorted({item for i in np.flatnonzero(partition == g) for item in data.lists[i]})
        probs = consensus.probabilities[g][np.ix_(used, used)]
        pmc.plot_partial_order(probs, labels=[names[j] for j in used], threshold=0.5, ax=ax)
        ax.set_title(f"cluster {g}: consensus order of its bishops")
    fig.tight_layout()
    fig.savefig(out / "consensus_orders.png", dpi=120)
    plt.close(fig)
    ax = pmc.plot_similarity(idata, "cluster")
    ax.figure.savefig(out / "similarity.png", dpi=120)
    plt.close(ax.figure)
    axes = pmc.plot_n_clusters(idata, "cluster")
    np.ravel(axes)[0].figure.savefig(out / "n_clusters.png", dpi=120)
    plt.close("all")
    print(
        f"\nPlots written to {out.resolve()}/ (consensus_orders.png, similarity.png, "
        "n_clusters.png)"
    )
    return idata


def report_clustering(partition, similarity, lists) -> None:
    """Print the point-estimate clustering with the posterior co-clustering probabilities
    within and between its clusters (how sure the posterior is of it)."""
    n_groups = int(partition.max()) + 1
    off_diagonal = ~np.eye(len(partition), dtype=bool)
    print(
        "\nPoint-estimate clustering of the lists (VI loss), with the mean posterior probability "
        "that two lists share a cluster:"
    )
    for g in range(n_groups):
        members = np.flatnonzero(partition == g)
        shown = ["-".join(str(b + 1) for b in lists[i]) for i in members]
        block = similarity[np.ix_(members, members)][off_diagonal[np.ix_(members, members)]]
        within = f"{block.mean():.2f}" if block.size else "- (one list)"
        print(f"  cluster {g} (within {within}): lists {', '.join(shown)}")
    if n_groups > 1:
        between = similarity[partition[:, None] != partition[None, :]].mean()
        print(f"  between clusters: {between:.2f}")
    pairs = similarity[off_diagonal]
    if n_groups == 1 or np.all((pairs > 0.2) & (pairs < 0.8)):
        print(
            "  The posterior is not sure of separate groups: every pair of lists shares a "
            f"cluster with probability between {pairs.min():.2f} and {pairs.max():.2f}, so "
            "these lists do not support a clustering; read the clusters above with that in "
            "mind (similarity.png shows all pairs)."
        )


if __name__ == "__main__":
    main()
