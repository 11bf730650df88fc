"""Dirichlet-process normal mixture: pymc_crp against R's bayesm::rDPGibbs (and scikit-learn).

The same simulated 2-D data (4 well-separated Gaussian clusters; N = 1,000 and 5,000 by
default), standardised, are fitted by

* pymc_crp: ``measurement_error_mixture(y, V=None, partition="crp")`` sampled with
  ``pm.sample`` (MixtureCRPGibbs on the labels, the Normal--inverse-Wishart Gibbs step on
  ``(mu, Sigma)``, Escobar--West on ``alpha``); time per iteration from PyMC's own
  ``sampling_time`` (the sampling loop only: model building and compilation excluded);
* bayesm's ``rDPGibbs`` (C++), called through ``Rscript`` with the data in a temporary CSV
  file, timed inside R around the ``rDPGibbs`` call (Debian package ``r-cran-bayesm``;
  installed with ``apt-get`` when missing, as root);
* scikit-learn's variational ``BayesianGaussianMixture`` with a Dirichlet-process weight
  prior, for context (skipped with a note if scikit-learn is not installed).

The models are matched: bayesm's base measure ``μ | Σ ~ N(0, Σ/a)``, ``Σ ~ IW(ν, ν v I)`` with
its hyperparameter grids collapsed to single points (``a = κ0``, ``ν``, ``v = Ω/ν``) equals
our prior ``μ | Σ ~ N(m0 = 0, Σ/κ0)``, ``Σ ~ IW(ν, Ω)``. The concentration priors differ
(bayesm's is the "Istar" power prior on ``α``; ours ``α ~ Gamma(1, 1)``): with thousands of
well-separated points the number of clusters is driven by the data.

Usage::

    python benchmarks/mixture_vs_bayesm.py                  # N = 1000, 5000
    python benchmarks/mixture_vs_bayesm.py --sizes 5000 --draws 2000 --bayesm-iters 300
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from machine import describe_machine

import pymc_crp as pmc

# Prior shared by both samplers (on standardised data).
KAPPA0 = 0.1
NU = 4.0
V_SCALE = 0.0625  # bayesm's v: Ω = ν v I = 0.25 I, E[Σ] = Ω / (ν - D - 1) = 0.25 I

R_SCRIPT = r"""
suppressMessages(library(bayesm))
args <- commandArgs(TRUE)
y <- as.matrix(read.csv(args[1], header = FALSE))
R <- as.integer(args[2]); a <- as.numeric(args[3]); nu <- as.numeric(args[4])
v <- as.numeric(args[5]); seed <- as.integer(args[6])
set.seed(seed)
D <- ncol(y)
Prior <- list(lambda_hyper = list(alim = c(a, a), nulim = rep(log(nu - D + 1), 2),
                                  vlim = c(v, v)))
Mcmc <- list(R = R, keep = 1, nprint = 0, SCALE = FALSE, maxuniq = 200)
t <- system.time(out <- rDPGibbs(Prior = Prior, Data = list(y = y), Mcmc = Mcmc))
write(t[["elapsed"]], file = args[7])
write(out$Istardraw, file = args[8], ncolumns = 1)
z <- out$nmix$zdraw
write(t(z[nrow(z), , drop = FALSE]), file = args[9], ncolumns = 1)
"""


def simulate(n: int, seed: int = 0, separation: float = 6.0):
    """``n`` 2-D points from 4 unit-variance clusters at the corners of a square."""
    rng = np.random.default_rng(seed)
    centres = separation * np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=float)
    truth = rng.integers(0, 4, size=n)
    y = centres[truth] + rng.normal(size=(n, 2))
    y = (y - y.mean(0)) / y.std(0)
    return y, truth


def mode(values) -> int:
    values = np.asarray(values, dtype=int)
    return int(np.bincount(values).argmax())


# --------------------------------------------------------------------------------------------
# pymc_crp
# --------------------------------------------------------------------------------------------
def run_pymc_crp(y, truth, draws: int, tune: int, seed: int, profile: bool) -> dict:
    import pymc as pm

    import pymc_crp  # noqa: F401 - registers the step methods
    from pymc_crp.models.normal_mixture import measurement_error_mixture

    d = y.shape[1]
    prior = {"m0": np.zeros(d), "kappa0": KAPPA0, "nu": NU, "Omega": NU * V_SCALE * np.eye(d)}
    start = time.perf_counter()
    model = measurement_error_mixture(y, None, partition="crp", max_clusters=20, prior=prior)
    with model:
        idata = pm.sample(
            draws,
            tune=tune,
            chains=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    total = time.perf_counter() - start
    sampling = float(idata.sample_stats.attrs["sampling_time"])
    n_clusters = idata.sample_stats["n_clusters"].values.ravel()
    labels = idata.posterior["cluster"].values[0, -1]
    out = {
        "ms_per_iter": 1000 * sampling / (draws + tune),
        "setup_s": total - sampling,
        "mode_k": mode(n_clusters),
        "k_counts": np.bincount(n_clusters).tolist(),
        "ari": pmc.adjusted_rand_index(labels, truth),
    }
    if profile:
        out["profile_ms"] = profile_steps(model, idata)
    return out


def profile_steps(model, idata, n_iter: int = 30) -> dict:
    """Milliseconds per call of each step method (and of the label step's parts)."""
    from pymc_crp.core.label_sweep import likelihood_weights
    from pymc_crp.step_methods import ConcentrationGibbs
    from pymc_crp.step_methods.normal_gibbs import MixtureCRPGibbs, NormalInverseWishartGibbs

    point = model.initial_point(random_seed=0)
    post = idata.posterior.isel(chain=0, draw=-1)
    point["cluster"] = post["cluster"].values
    point["mu"] = post["mu"].values
    transform = model.rvs_to_transforms[model["Sigma"]]
    point[model.rvs_to_values[model["Sigma"]].name] = transform.forward_numpy(post["Sigma"].values)
    point["alpha_log__"] = np.log(post["alpha"].values)
    steps = {
        "labels (MixtureCRPGibbs)": MixtureCRPGibbs(model=model),
        "mu, Sigma (NormalInverseWishartGibbs)": NormalInverseWishartGibbs(model=model),
        "alpha (ConcentrationGibbs)": ConcentrationGibbs([model["alpha"]], model=model),
    }
    times = {}
    for name, step in steps.items():
        step.step(point)
        t = time.perf_counter()
        for _ in range(n_iter):
            step.step(point)
        times[name] = 1000 * (time.perf_counter() - t) / n_iter
    label_step = steps["labels (MixtureCRPGibbs)"]
    t = time.perf_counter()
    for _ in range(n_iter):
        matrix = label_step._loglik_fn(point)
    times["  of which: likelihood matrix (numba)"] = 1000 * (time.perf_counter() - t) / n_iter
    t = time.perf_counter()
    for _ in range(n_iter):
        likelihood_weights(matrix)
    times["  of which: exp/normalise (likelihood_weights)"] = (
        1000 * (time.perf_counter() - t) / n_iter
    )
    return times


# --------------------------------------------------------------------------------------------
# bayesm
# --------------------------------------------------------------------------------------------
def ensure_bayesm() -> str | None:
    """Path of Rscript with bayesm available, installing r-cran-bayesm if needed; else None."""
    rscript = shutil.which("Rscript")

    def has_bayesm():
        if rscript is None:
            return False
        res = subprocess.run(
            [rscript, "-e", "library(bayesm)"], capture_output=True, text=True, check=False
        )
        return res.returncode == 0

    if has_bayesm():
        return rscript
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        print("NOTE: R package bayesm not found and cannot apt-get install it; skipping bayesm")
        return None
    print("NOTE: R package bayesm not found: installing r-cran-bayesm with apt-get ...")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
    res = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "r-cran-bayesm"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    rscript = shutil.which("Rscript")
    if res.returncode != 0 or not has_bayesm():
        print("NOTE: installing r-cran-bayesm failed; skipping bayesm")
        return None
    return rscript


def run_bayesm(rscript: str, y, truth, iters: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: os.path.join(tmp, f"{k}.txt") for k in ("script", "elapsed", "k", "z")}
        data = os.path.join(tmp, "y.csv")
        np.savetxt(data, y, delimiter=",", fmt="%.17g")
        with open(paths["script"], "w") as fh:
            fh.write(R_SCRIPT)
        cmd = [
            rscript,
            paths["script"],
            data,
            str(iters),
            repr(KAPPA0),
            repr(NU),
            repr(V_SCALE),
            str(seed),
            paths["elapsed"],
            paths["k"],
            paths["z"],
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"Rscript failed:\n{res.stderr[-2000:]}")
        elapsed = float(np.loadtxt(paths["elapsed"]))
        k = np.loadtxt(paths["k"]).astype(int)
        z = np.loadtxt(paths["z"]).astype(int)
    burn = len(k) // 3
    return {
        "ms_per_iter": 1000 * elapsed / iters,
        "mode_k": mode(k[burn:]),
        "k_counts": np.bincount(k[burn:]).tolist(),
        "ari": pmc.adjusted_rand_index(z, truth),
    }


# --------------------------------------------------------------------------------------------
# scikit-learn
# --------------------------------------------------------------------------------------------
def run_sklearn(y, truth, seed: int) -> dict | None:
    try:
        from sklearn.mixture import BayesianGaussianMixture
    except ImportError:
        return None
    model = BayesianGaussianMixture(
        n_components=20,
        weight_concentration_prior_type="dirichlet_process",
        covariance_type="full",
        max_iter=500,
        random_state=seed,
    )
    start = time.perf_counter()
    model.fit(y)
    elapsed = time.perf_counter() - start
    labels = model.predict(y)
    return {
        "fit_s": elapsed,
        "n_iter": int(model.n_iter_),
        "k": int(np.sum(model.weights_ > 0.01)),
        "ari": pmc.adjusted_rand_index(labels, truth),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--draws", type=int, default=1500, help="pymc_crp draws")
    parser.add_argument("--tune", type=int, default=500, help="pymc_crp tuning iterations")
    parser.add_argument(
        "--bayesm-iters",
        type=int,
        default=None,
        help="rDPGibbs iterations (default: 1000 for N <= 1000, else 300)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    print(describe_machine())

    rscript = ensure_bayesm()
    results = {}
    for n in args.sizes:
        y, truth = simulate(n, seed=args.seed)
        print(f"\n=== N = {n} (4 true clusters, D = 2) ===", flush=True)
        ours = run_pymc_crp(y, truth, args.draws, args.tune, args.seed, not args.no_profile)
        print(
            f"pymc_crp : {ours['ms_per_iter']:8.2f} ms/iter  mode K = {ours['mode_k']}  "
            f"ARI(last draw) = {ours['ari']:.3f}  (setup+compile {ours['setup_s']:.1f} s; "
            f"K counts {ours['k_counts']})",
            flush=True,
        )
        entry = {"pymc_crp": ours}
        if rscript is not None:
            iters = args.bayesm_iters or (1000 if n <= 1000 else 300)
            theirs = run_bayesm(rscript, y, truth, iters, args.seed)
            entry["bayesm"] = theirs
            print(
                f"bayesm   : {theirs['ms_per_iter']:8.2f} ms/iter  mode K = {theirs['mode_k']}  "
                f"ARI(last draw) = {theirs['ari']:.3f}  ({iters} iterations; "
                f"K counts {theirs['k_counts']})",
                flush=True,
            )
            print(f"speed-up : {theirs['ms_per_iter'] / ours['ms_per_iter']:.1f}x per iteration")
        skl = run_sklearn(y, truth, args.seed)
        if skl is None:
            print("sklearn  : not installed (pip install scikit-learn) - skipped")
        else:
            entry["sklearn"] = skl
            print(
                f"sklearn  : {1000 * skl['fit_s']:8.1f} ms total fit ({skl['n_iter']} VB "
                f"iterations)  K(weight > 1%) = {skl['k']}  ARI = {skl['ari']:.3f}"
            )
        if "profile_ms" in ours:
            print("where the pymc_crp time goes (ms per call):")
            for name, ms in ours["profile_ms"].items():
                print(f"    {name:<48s} {ms:7.3f}")
        results[n] = entry

    print(
        "\n| N | pymc_crp ms/iter | bayesm ms/iter | ratio | mode K (ours / bayesm) |"
        " ARI (ours / bayesm / sklearn) |"
    )
    print("|---|---|---|---|---|---|")
    for n, entry in results.items():
        ours, theirs, skl = entry["pymc_crp"], entry.get("bayesm"), entry.get("sklearn")
        b_ms = f"{theirs['ms_per_iter']:.1f}" if theirs else "n/a"
        ratio = f"{theirs['ms_per_iter'] / ours['ms_per_iter']:.1f}x" if theirs else "n/a"
        b_k = theirs["mode_k"] if theirs else "n/a"
        b_ari = f"{theirs['ari']:.3f}" if theirs else "n/a"
        s_ari = f"{skl['ari']:.3f}" if skl else "n/a"
        print(
            f"| {n} | {ours['ms_per_iter']:.2f} | {b_ms} | {ratio} | {ours['mode_k']} / {b_k} |"
            f" {ours['ari']:.3f} / {b_ari} / {s_ari} |"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({str(k): v for k, v in results.items()}, fh, indent=2)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
