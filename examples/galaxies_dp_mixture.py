"""Galaxy velocities (Roeder 1990) as a one-dimensional Dirichlet-process normal mixture.

The 82 velocities (in 1000 km/s) are modelled as ``y_i ~ N(μ_{z_i}, σ²_{z_i})`` with CRP labels
``z``, ``(μ_k, σ²_k)`` Normal--inverse-Wishart (inverse-gamma in 1-D) and ``α ~ Gamma(1, 1)``.
``pm.sample`` assigns the exact Gibbs steps automatically (labels: MixtureCRPGibbs; ``mu``,
``Sigma``: NormalInverseWishartGibbs; ``alpha``: Escobar--West). The script prints the
posterior of the number of clusters and of ``α`` and saves the posterior predictive density
with a 90% band over a histogram of the data.

    python examples/galaxies_dp_mixture.py [--out DIR] [--draws 2000] [--chains 2]
"""

from __future__ import annotations

import argparse
import pathlib
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from scipy import stats  # noqa: E402

import pymc_crp  # noqa: E402,F401 - registers the package's step methods
from pymc_crp.datasets import load_galaxies  # noqa: E402
from pymc_crp.models import default_mixture_prior, measurement_error_mixture  # noqa: E402


def predictive_density(idata, grid, prior, n_draws=500, seed=0):
    r"""Posterior predictive density of a new velocity on ``grid``, per posterior draw.

    Given the labels, cluster parameters and ``α`` of a draw (``N`` observations, sizes
    ``n_k``): ``p(x | ·) = Σ_k n_k/(N+α) N(x; μ_k, σ²_k) + α/(N+α) p_0(x)``, where ``p_0`` is
    the prior predictive of a new cluster, a Student t with ``ν`` degrees of freedom, location
    ``m0`` and squared scale ``Ω (κ0 + 1) / (κ0 ν)``.
    """
    post = idata.posterior.stack(sample=("chain", "draw"))
    rng = np.random.default_rng(seed)
    picks = rng.choice(post.sizes["sample"], size=min(n_draws, post.sizes["sample"]), replace=False)
    m0, kappa0, nu = float(prior["m0"][0]), prior["kappa0"], prior["nu"]
    omega = float(np.asarray(prior["Omega"]).reshape(-1)[0])
    new_cluster = stats.t(df=nu, loc=m0, scale=np.sqrt(omega * (kappa0 + 1) / (kappa0 * nu)))
    p0 = new_cluster.pdf(grid)
    labels = post["cluster"].values.T  # (sample, N)
    mu = post["mu"].values[:, 0, :].T  # (sample, L)
    sigma2 = post["Sigma"].values[:, 0, 0, :].T
    alpha = post["alpha"].values
    n = labels.shape[1]
    dens = np.empty((len(picks), len(grid)))
    for row, s in enumerate(picks):
        counts = np.bincount(labels[s], minlength=mu.shape[1])
        occupied = counts > 0
        comp = (
            stats.norm.pdf(grid[:, None], mu[s, occupied], np.sqrt(sigma2[s, occupied]))
            @ counts[occupied]
        )
        dens[row] = (comp + alpha[s] * p0) / (n + alpha[s])
    return dens


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        default=str(pathlib.Path(__file__).parent / "output"),
        help="folder for the PNG (created if missing)",
    )
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)

    y = load_galaxies() / 1000.0  # 1000 km/s
    prior = default_mixture_prior(y)
    print(f"{len(y)} galaxies, velocities {y.min():.3f}..{y.max():.3f} (1000 km/s)")
    print(
        f"prior: m0 = {prior['m0'][0]:.2f}, kappa0 = {prior['kappa0']}, nu = {prior['nu']}, "
        f"Omega = {prior['Omega'][0, 0]:.2f} (E sigma^2 = Omega / (nu - 2)), alpha ~ Gamma(1, 1)"
    )

    model = measurement_error_mixture(y, None, partition="crp", max_clusters=30)
    start = time.perf_counter()
    with model:
        idata = pm.sample(
            args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=1,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    print(
        f"sampling took {time.perf_counter() - start:.1f} s "
        f"({idata.sample_stats.attrs['sampling_time']:.1f} s in the sampling loop)"
    )

    k = idata.sample_stats["n_clusters"].values.ravel()
    values, counts = np.unique(k, return_counts=True)
    print("\nposterior of the number of clusters K:")
    for v, c in zip(values, counts, strict=True):
        print(f"  K = {v:2d}: {c / k.size:6.3f} {'#' * int(round(60 * c / k.size))}")
    print(f"  posterior mean K = {k.mean():.2f}, mode = {values[counts.argmax()]}")
    alpha = idata.posterior["alpha"].values.ravel()
    print(
        f"alpha: posterior mean {alpha.mean():.3f}, 90% interval "
        f"({np.quantile(alpha, 0.05):.3f}, {np.quantile(alpha, 0.95):.3f})"
    )
    if bool(idata.sample_stats["slots_full"].values.any()):
        print("warning: the 30 slots were all occupied at some point; increase max_clusters")

    grid = np.linspace(5, 40, 400)
    dens = predictive_density(idata, grid, prior)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.hist(y, bins=40, density=True, color="0.85", edgecolor="0.6", label="data")
    ax.fill_between(
        grid, *np.quantile(dens, [0.05, 0.95], axis=0), color="C0", alpha=0.3, label="90% band"
    )
    ax.plot(grid, dens.mean(0), color="C0", lw=2, label="posterior predictive density")
    ax.plot(y, np.full_like(y, -0.005), "|", color="k", ms=8)
    ax.set_xlabel("velocity (1000 km/s)")
    ax.set_ylabel("density")
    ax.set_title(f"Galaxies: DP normal mixture (posterior mode K = {values[counts.argmax()]})")
    ax.legend()
    fig.tight_layout()
    path = out / "galaxies_density.png"
    fig.savefig(path, dpi=120)
    print(f"\ndensity plot saved to {path}")
    return idata


if __name__ == "__main__":
    main()
