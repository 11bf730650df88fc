"""Clustered partial orders: recover groups of assessors from simulated ranked lists.

    python examples/clustered_partial_orders.py

Three planted partial orders over 10 items; 40 lists of length 5-8 from each, with
queue-jumping noise p = 0.05. Fits pmc.models.clustered_partial_orders, prints the number of
clusters, the adjusted Rand index of the point estimate against the truth, and draws the
consensus order of each cluster next to the planted one (clustered_partial_orders_output/).
"""

import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_crp as pmc  # noqa: E402
from pymc_crp.posets import partial_order_from_utilities, sample_list  # noqa: E402


def main():
    rng = np.random.default_rng(1)
    n_items = 10
    orders = [partial_order_from_utilities(rng.normal(size=(n_items, 2))) for _ in range(3)]
    lists, truth = [], []
    for g, adj in enumerate(orders):
        for _ in range(40):
            items = rng.choice(n_items, size=rng.integers(5, 9), replace=False)
            lists.append(sample_list(adj, items, 0.05, rng).tolist())
            truth.append(g)
    truth = np.array(truth)
    model = pmc.models.clustered_partial_orders(lists, n_items, n_dims=2, max_clusters=10)
    with model:
        idata = pm.sample(1000, tune=1000, chains=2, random_seed=2)
    consensus = pmc.consensus_order(idata, utilities="U", labels="cluster")
    print("clusters:", len(consensus.orders))
    print("adjusted Rand index:", round(pmc.adjusted_rand_index(consensus.partition, truth), 3))
    out = Path("clustered_partial_orders_output")
    out.mkdir(exist_ok=True)
    n = len(consensus.orders)
    fig, axes = plt.subplots(2, max(n, 3), figsize=(4 * max(n, 3), 8), squeeze=False)
    for g in range(n):
        pmc.plot_partial_order(consensus.probabilities[g], ax=axes[0, g])
        axes[0, g].set_title(f"estimated cluster {g}")
    for g, adj in enumerate(orders):
        pmc.plot_partial_order(adj, ax=axes[1, g])
        axes[1, g].set_title(f"planted order {g}")
    fig.tight_layout()
    fig.savefig(out / "orders.png")
    print(f"plots in {out.resolve()}")


if __name__ == "__main__":
    main()
