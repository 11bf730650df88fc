"""Clusters of voters in real ballots: NSW Legislative Assembly 2015, district of Albury.

    python examples/albury_ballots.py

1,000 ballots ranking at least two of the 5 candidates, drawn with a fixed seed from the 18,621
such ballots of the district (823 of them rank all 5, 153 two, 16 three, 8 four;
``pymc_crp.datasets.load_albury_ballots``). Fits ``pmc.models.clustered_partial_orders`` (2
latent dimensions, CRP prior), samples 4 chains, and prints R-hat and ESS of the label-invariant
quantities, the point-estimate partition (the size of each cluster, its most common ballots and
first preferences) and how sure the posterior is of it (co-clustering probabilities).

Measured (seed 2015; the package's defaults of 2026-11-29; the first 1,000 draws of a run of 4
chains x (1,000 tune + 4,000 draws) with ``cores=2``, which are the draws this script gives, as
``cores`` does not change them): the chains have NOT converged after PyMC's default length:

    quantity                 mean    sd     R-hat  bulk ESS
    cluster_n_clusters       36.1    7.6    1.050   60
    cluster_largest_cluster  176.1   30.7   1.143   19
    cluster_entropy          2.79    0.18   1.123   22
    p                        0.042   0.020  1.125   26
    tau                      0.38    0.18   1.006  248
    rho                      0.64    0.15   1.095   35
    alpha                    6.0     1.8    1.029  117

Chain means of the number of clusters 35.6, 38.5, 33.9, 36.3; none of the draws took all 128 slots.
Longer chains (the same run, 586 s for all 4 x 5,000 iterations on 2 cores), largest R-hat and
smallest bulk ESS over these seven quantities and the lists' log-likelihood: 1.143 / 19 after 1,000
draws per chain, 1.072 / 42 after 2,000, 1.040 / 131 after 3,000, 1.030 / 179 after 4,000 (the
largest cluster is the slowest quantity throughout): extrapolating, these ballots need about 10,000
draws per chain (``pm.sample(draws=10000, chains=4, cores=2)``, about 22 minutes on 2 cores) for
R-hat near 1.01. They sit on the ridge of the number of clusters and the noise p described in the
README. The VI point estimate has 75 clusters: 12 of at least 5 ballots and 58 singletons. The
large ones are voter blocs: 511 ballots mostly headed by APLIN (Liberal, 450 first preferences;
APL>WAD 73 times, APL>WAD>MAR>JAC>KIN 40), 166 headed by JACKSON (Labor, 153; JAC>KIN>MAR>WAD>APL
148 times: Greens second, Liberal last), 72 and 67 more headed by JACKSON or KING with APLIN third
(JAC>APL>KIN>MAR>WAD 26, JAC>KIN>APL>MAR>WAD 25) or the two minor candidates third
(JAC>KIN>WAD>MAR>APL 25, JAC>KIN>MAR>APL>WAD 24), then 36 and 26 JACKSON-first ballots, 17
WADE-first and small clusters headed by JACKSON or KING. The clustering is uncertain: a ballot
shares a cluster with its point-estimate mates with median probability 0.24, 30% of pairs of
ballots have a co-clustering probability between 0.1 and 0.9, and two identical ballots share a
cluster with mean probability 0.57 (in a draw, the 148 JAC>KIN>MAR>WAD>APL ballots have 86% of them
in one cluster on average, the 40 APL>WAD>MAR>JAC>KIN 57%, the others in clusters of median size
42). Read the large blocs, not the small clusters.

Data: © State of New South Wales through the NSW Electoral Commission, licensed under CC BY 4.0
(https://creativecommons.org/licenses/by/4.0/), via PrefLib data set 00058 "nswla". Changed:
ballots ranking one candidate dropped and a random subsample of 1,000 taken.
"""

import time
import warnings
from collections import Counter
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.datasets import load_albury_ballots  # noqa: E402

SHORT = {
    "JACKSON Ross": "JAC",
    "WADE Kym": "WAD",
    "MARRA John": "MAR",
    "APLIN Greg": "APL",
    "KING Niloufer": "KIN",
}


def ballot(lst, names):
    """A ballot as short candidate names, best first."""
    return ">".join(SHORT.get(names[i], names[i]) for i in lst)


def main(out=Path("albury_ballots_output")):
    data = load_albury_ballots(min_length=2, n_ballots=1000, seed=2015)
    print(data.description)
    names = data.item_names
    model = pmc.models.clustered_partial_orders(
        data.lists, data.n_items, n_dims=2, item_names=names
    )
    start = time.perf_counter()
    with model:
        idata = pm.sample(chains=4, random_seed=2015)
    print(f"\nsampling wall time: {time.perf_counter() - start:.0f} s")
    out.mkdir(exist_ok=True)
    idata.to_netcdf(out / "idata.nc")

    pmc.partition_stats(idata, "cluster")
    invariant = ["cluster_n_clusters", "cluster_largest_cluster", "cluster_entropy"]
    invariant += ["p", "tau", "rho", "alpha"]
    summary = az.summary(idata, var_names=invariant, round_to=3)
    print("\nlabel-invariant quantities:")
    print(summary[["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk", "ess_tail"]].to_string())
    if "slots_full" in idata.sample_stats:
        full = float(idata.sample_stats["slots_full"].mean())
        print(
            f"draws with every one of the {idata.posterior.sizes['slot']} slots taken: {full:.3f}"
        )
    k = idata.posterior["cluster_n_clusters"].values
    print("number of clusters, per chain: mean", np.round(k.mean(axis=1), 1))

    labels, loss = pmc.point_estimate_partition(idata, "cluster", return_loss=True)
    sim = pmc.posterior_similarity(idata, "cluster")
    sizes = np.bincount(labels)
    print(
        f"\npoint estimate (expected VI loss {loss:.3f}): {sizes.size} clusters, "
        f"{np.sum(sizes >= 5)} of at least 5 ballots, {np.sum(sizes == 1)} singletons"
    )
    for k in np.argsort(-sizes):
        members = np.flatnonzero(labels == k)
        if members.size < 5:
            continue
        first = Counter(SHORT[names[data.lists[i][0]]] for i in members)
        common = Counter(tuple(data.lists[i]) for i in members).most_common(3)
        within = sim[np.ix_(members, members)].mean()
        print(f"cluster {k}: {members.size} ballots, mean co-clustering within {within:.2f}")
        print("  first preferences:", ", ".join(f"{n} {c}" for n, c in first.most_common()))
        print("  most common ballots:", "; ".join(f"{ballot(b, names)} ({c})" for b, c in common))
    # how sure: the probability that each ballot shares a cluster with its point-estimate mates
    mates = np.array([sim[i, labels == labels[i]].mean() for i in range(labels.size)])
    off = sim[np.triu_indices(labels.size, 1)]
    unsure = np.mean((off > 0.1) & (off < 0.9))
    print(
        f"\nco-clustering with point-estimate mates: median {np.median(mates):.2f}, "
        f"10% quantile {np.quantile(mates, 0.1):.2f}"
    )
    print(f"pairs of ballots with 0.1 < P(same cluster) < 0.9: {unsure:.3f}")
    same = [
        sim[i, j]
        for i in range(labels.size)
        for j in range(i + 1, labels.size)
        if data.lists[i] == data.lists[j]
    ]
    print(f"pairs of identical ballots: mean P(same cluster) {np.mean(same):.2f}")


if __name__ == "__main__":
    main()
