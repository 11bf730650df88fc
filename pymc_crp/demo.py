"""Main demo: ``python -m pymc_crp.demo``.

Draws label vectors from the Chinese restaurant process prior and prints the distribution of
the number of clusters next to its exact value from the EPPF.
"""

from __future__ import annotations

import argparse

import numpy as np
import pymc as pm

import pymc_crp as pmc
from pymc_crp.partition_math import crp_label_log_prob


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n, theta = 6, 1.0
    draws = pm.draw(pmc.CRP.dist(theta, max_clusters=n, n=n), 5000, random_seed=args.seed)
    k = np.array([np.unique(row).size for row in draws])
    print(f"CRP(concentration={theta}) prior over {n} observations, 5000 draws")
    print("first draws (slot labels):")
    for row in draws[:3]:
        print("  ", row)
    print(f"mean number of clusters: {k.mean():.3f}")
    print("log p of the first draw:", round(crp_label_log_prob(draws[0], theta, 0.0, n), 4))


if __name__ == "__main__":
    main()
