"""Clustering 2-D measurements with known, heteroscedastic measurement error.

Simulates latent values ``θ_i`` from 3 Gaussian clusters and observations
``y_i ~ N(θ_i, V_i)`` with a different, known covariance ``V_i`` per observation (some
precise, some very noisy), then fits

* the measurement-error DP mixture ``measurement_error_mixture(y, V)`` (exact Gibbs steps for
  the labels, ``theta``, ``(mu, Sigma)`` and ``alpha``), and
* the naive mixture that ignores the errors (``V=None``),

and compares the number of clusters, the recovered partition (adjusted Rand index against
the truth), the within-cluster covariances, and how well ``θ`` is recovered (posterior mean
versus the raw ``y``). A scatter plot is saved to the output folder.

    python examples/measurement_error_2d.py [--out DIR] [--n 300] [--draws 1000]
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

import pymc_crp as pmc  # noqa: E402 - also registers the package's step methods
from pymc_crp.models.normal_mixture import measurement_error_mixture  # noqa: E402

CENTRES = np.array([[0.0, 0.0], [4.0, 1.0], [1.0, 4.5]])
COVS = np.array([[[0.6, 0.3], [0.3, 0.5]], [[0.4, -0.2], [-0.2, 0.6]], [[0.5, 0.0], [0.0, 0.3]]])


def simulate(n, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=n)
    theta = CENTRES[truth] + np.einsum(
        "nab,nb->na", np.linalg.cholesky(COVS[truth]), rng.normal(size=(n, 2))
    )
    # Heteroscedastic errors: random orientation, scales log-uniform on [0.1, 1.2].
    scales = np.exp(rng.uniform(np.log(0.1), np.log(1.2), size=(n, 2)))
    angle = rng.uniform(0, np.pi, size=n)
    rot = np.stack([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    rot = np.moveaxis(rot, -1, 0)
    v = rot @ (scales[:, :, None] ** 2 * np.eye(2)) @ np.swapaxes(rot, -1, -2)
    v = 0.5 * (v + np.swapaxes(v, -1, -2))
    y = theta + np.einsum("nab,nb->na", np.linalg.cholesky(v), rng.normal(size=(n, 2)))
    return y, v, theta, truth


def summarise(name, idata, truth):
    k = idata.sample_stats["n_clusters"].values.ravel()
    values, counts = np.unique(k, return_counts=True)
    labels = idata.posterior["cluster"].values.reshape(-1, len(truth))
    thinned = labels[:: max(1, len(labels) // 200)]
    ari = np.array([pmc.adjusted_rand_index(lab, truth) for lab in thinned])
    dist = ", ".join(f"K={v}: {c / k.size:.2f}" for v, c in zip(values, counts, strict=True))
    print(f"{name}: P(K) {dist}")
    print(f"{' ' * len(name)}  ARI against the truth: mean {ari.mean():.3f} over draws")
    return labels


def cluster_covariances(idata, truth):
    """Posterior mean Σ of the slot holding the observation nearest each true centre."""
    post = idata.posterior.stack(sample=("chain", "draw"))
    labels = post["cluster"].values.T
    sigma = np.moveaxis(post["Sigma"].values, -1, 0)  # (sample, L, 2, 2)
    out = []
    for c in range(3):
        members = np.flatnonzero(truth == c)
        ref = members[0]
        slots = labels[:, ref]
        out.append(sigma[np.arange(len(slots)), slots].mean(0))
    return np.array(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "output"))
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    y, v, theta, truth = simulate(args.n, args.seed)
    sd = np.sqrt(np.linalg.eigvalsh(v))
    print(f"{args.n} observations, measurement-error sds from {sd.min():.2f} to {sd.max():.2f}")
    kwargs = dict(
        draws=args.draws,
        tune=args.tune,
        chains=2,
        cores=1,
        progressbar=False,
        compute_convergence_checks=False,
    )

    start = time.perf_counter()
    with measurement_error_mixture(y, v, max_clusters=20):
        me = pm.sample(random_seed=args.seed, **kwargs)
    print(f"measurement-error model sampled in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    with measurement_error_mixture(y, None, max_clusters=20):
        naive = pm.sample(random_seed=args.seed + 1, **kwargs)
    print(f"naive model sampled in {time.perf_counter() - start:.1f} s\n")

    labels = summarise("with V (measurement error)", me, truth)
    summarise("naive (V ignored)         ", naive, truth)

    theta_hat = me.posterior["theta"].mean(("chain", "draw")).values
    rmse_y = np.sqrt(np.mean(np.sum((y - theta) ** 2, axis=1)))
    rmse_theta = np.sqrt(np.mean(np.sum((theta_hat - theta) ** 2, axis=1)))
    print(
        f"\nrecovery of the latent values: RMSE of y = {rmse_y:.3f}, "
        f"RMSE of the posterior mean of theta = {rmse_theta:.3f}"
    )

    print("\nwithin-cluster covariance (true / with V / naive), per true cluster:")
    for c, (s_me, s_naive) in enumerate(
        zip(cluster_covariances(me, truth), cluster_covariances(naive, truth), strict=True)
    ):
        fmt = lambda m: f"[{m[0, 0]:.2f} {m[0, 1]:+.2f}; {m[1, 1]:.2f}]"  # noqa: E731
        print(f"  cluster {c}: {fmt(COVS[c])}  {fmt(s_me)}  {fmt(s_naive)}")

    # Assignment uncertainty: P(i in the same cluster as the first member of its true cluster).
    refs = np.array([np.flatnonzero(truth == c)[0] for c in range(3)])
    together = (labels == labels[:, refs[truth]]).mean(0)
    uncertain = np.flatnonzero(together < 0.9)
    print(f"\n{uncertain.size} observations are placed with their true cluster in < 90% of draws")

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharex=True, sharey=True)
    axes[0].scatter(y[:, 0], y[:, 1], c=truth, cmap="viridis", s=12, alpha=0.7)
    axes[0].set_title("observations y (colour: true cluster)")
    axes[1].scatter(theta_hat[:, 0], theta_hat[:, 1], c=truth, cmap="viridis", s=12, alpha=0.7)
    axes[1].scatter(
        theta_hat[uncertain, 0],
        theta_hat[uncertain, 1],
        facecolors="none",
        edgecolors="r",
        s=60,
        label="uncertain assignment",
    )
    axes[1].set_title("posterior mean of theta")
    axes[1].legend(loc="lower right")
    fig.tight_layout()
    path = out / "measurement_error_2d.png"
    fig.savefig(path, dpi=110)
    print(f"scatter plot saved to {path}")
    return me, naive


if __name__ == "__main__":
    main()
