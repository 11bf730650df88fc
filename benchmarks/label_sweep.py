"""Benchmark of the collapsed label step: the numba sweep, the likelihood matrix, a full step.

Run: ``python benchmarks/label_sweep.py [--repeats R] [--sizes 10000 100000]``.

1. One Gibbs sweep over the labels (:func:`pymc_crp.core.label_sweep.gibbs_label_sweep`, after
   :func:`~pymc_crp.core.label_sweep.likelihood_weights`) for N observations and L = 20 slots with
   a random log-likelihood matrix (fixed seed, after JIT warm-up, median of R repeats),
   against a plain-NumPy loop over the observations doing the same computation (vectorised
   over the slots of each observation). Both get the same visiting order and uniforms, and
   the script checks that they draw the same labels.
2. Inside ``CRPGibbs`` for a normal mixture ``y ~ N(mu[z], 1)``: the likelihood-matrix
   evaluation ``step._loglik_fn(point)`` and a full ``step.step(point)``.

Target: below 5 ms per 10^4 observations for the sweep itself.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from functools import partial

import numpy as np
from machine import describe_machine

from pymc_crp.core.label_sweep import gibbs_label_sweep, likelihood_weights
from pymc_crp.core.partition_math import CRP_PRIOR, DIRICHLET_MULTINOMIAL_PRIOR

N_SLOTS = 20
NO_PROBS = np.empty((0, 0))  # do not record membership probabilities
PRIORS = {
    # name: (code, param a, param b)
    "CRP(theta=1, d=0.25)": (CRP_PRIOR, 1.0, 0.25),
    "DM(gamma=1.5, A=20)": (DIRICHLET_MULTINOMIAL_PRIOR, 1.5, 0.0),
}


def numpy_sweep(lik_weights, labels, counts, order, uniforms, prior, concentration, discount):
    """Reference sweep in plain NumPy: a Python loop over observations, vectorised over slots.

    Same weights as docs/mathematics.md, *Label step* (CRP: ``n_j - d`` occupied,
    ``(θ + dK)/(L - K)`` per
    empty slot, equal weights for a lone observation; DM: ``n_a + γ/A``) and the same
    inverse-CDF draw (first slot whose running sum exceeds ``u * total``), so it reproduces
    the numba kernel's labels exactly.
    """
    n_slots = lik_weights.shape[1]
    n_full = 0
    for t in range(order.shape[0]):
        i = order[t]
        counts[labels[i]] -= 1
        if prior == CRP_PRIOR:
            occupied = counts > 0
            k = int(np.count_nonzero(occupied))
            if k == 0:
                empty_w = 1.0
            elif k < n_slots:
                empty_w = (concentration + discount * k) / (n_slots - k)
            else:
                empty_w = 0.0
                n_full += 1
            prior_w = np.where(occupied, counts - discount, empty_w)
        else:
            prior_w = counts + concentration / n_slots
        cum = np.cumsum(prior_w * lik_weights[i])
        choice = int(np.searchsorted(cum, uniforms[t] * cum[-1], side="right"))
        choice = min(choice, n_slots - 1)
        labels[i] = choice
        counts[choice] += 1
    return n_full


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_sweep(sweep, lik_weights, start_labels, order, uniforms, code, a, b, out):
    """One sweep from a fresh copy of the starting labels; the labels land in ``out``."""
    labels = start_labels.copy()
    counts = np.bincount(labels, minlength=lik_weights.shape[1]).astype(np.int64)
    if sweep == "numba":
        gibbs_label_sweep(lik_weights, labels, counts, order, uniforms, code, a, b, NO_PROBS)
    else:
        numpy_sweep(lik_weights, labels, counts, order, uniforms, code, a, b)
    out[sweep] = labels


def bench_sweeps(sizes, repeats, numpy_repeats):
    rows = []
    rng = np.random.default_rng(2024)
    # JIT warm-up (compilation is not timed)
    warm = likelihood_weights(rng.normal(size=(50, N_SLOTS)))[0]
    for code, a, b in PRIORS.values():
        start = rng.integers(0, N_SLOTS, 50)
        run_sweep("numba", warm, start, rng.permutation(50), rng.random(50), code, a, b, {})

    for n in sizes:
        loglik = rng.normal(0.0, 2.0, size=(n, N_SLOTS))
        start = rng.integers(0, N_SLOTS, n).astype(np.int64)
        order = rng.permutation(n).astype(np.int64)
        uniforms = rng.random(n)
        t_weights = median_time(partial(likelihood_weights, loglik), repeats)
        lik_weights = likelihood_weights(loglik)[0]
        for prior_name, (code, a, b) in PRIORS.items():
            out = {}
            args = (lik_weights, start, order, uniforms, code, a, b, out)
            t_numba = median_time(partial(run_sweep, "numba", *args), repeats)
            t_numpy = median_time(partial(run_sweep, "numpy", *args), numpy_repeats)
            agree = np.mean(out["numba"] == out["numpy"])
            # diagnostic: the same sweep visiting rows in memory order (no cache misses from
            # the random permutation)
            in_order = (lik_weights, start, np.arange(n), uniforms, code, a, b, {})
            t_in_order = median_time(partial(run_sweep, "numba", *in_order), repeats)
            rows.append((n, prior_name, t_weights, t_numba, t_numpy, agree, t_in_order))
    return rows


def numpy_weights(loglik):
    """The former NumPy ``likelihood_weights``: checks, row max, ``exp`` of the shifted matrix."""
    if np.isnan(loglik).any() or np.isposinf(loglik).any():
        raise FloatingPointError("NaN or +inf")
    row_max = loglik.max(axis=1, keepdims=True)
    impossible = ~np.isfinite(row_max[:, 0])
    row_max[impossible] = 0.0
    weights = np.exp(loglik - row_max)
    weights[impossible] = 1.0
    return weights, impossible


def bench_weights(sizes, repeats):
    """``likelihood_weights`` (one numba pass) against the NumPy formula, same matrices."""
    rng = np.random.default_rng(7)
    rows = []
    for n in sizes:
        loglik = rng.normal(0.0, 2.0, size=(n, N_SLOTS))
        np.testing.assert_allclose(
            likelihood_weights(loglik)[0], numpy_weights(loglik)[0], rtol=1e-15, atol=0.0
        )
        t_fused = median_time(partial(likelihood_weights, loglik), repeats)
        t_numpy = median_time(partial(numpy_weights, loglik), repeats)
        rows.append((n, t_fused, t_numpy))
    return rows


def bench_step(sizes, repeats):
    import pymc as pm

    import pymc_crp as pmc

    rows = []
    for n in sizes:
        rng = np.random.default_rng(7)
        centres = np.linspace(-10, 10, 8)
        y = rng.normal(centres[rng.integers(0, 8, n)], 1.0)
        with pm.Model() as model:
            z = pmc.CRP("z", 1.0, 0.0, max_clusters=N_SLOTS, n=n)
            mu = pm.Normal("mu", 0.0, 10.0, shape=N_SLOTS)
            pm.Normal("y", mu[z], 1.0, observed=y)
            start = time.perf_counter()
            step = pmc.CRPGibbs([z])
            t_build = time.perf_counter() - start
        point = model.initial_point(random_seed=0)
        point["z"] = rng.integers(0, 10, n)  # 10 occupied slots, 10 empty
        point["mu"] = rng.normal(0.0, 10.0, N_SLOTS)
        step.step(point)  # warm-up
        t_loglik = median_time(partial(step._loglik_fn, point), repeats)
        t_step = median_time(partial(step.step, point), repeats)
        rows.append((n, t_build, t_loglik, t_step))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--numpy-repeats", type=int, default=3)
    parser.add_argument("--skip-step", action="store_true")
    args = parser.parse_args()
    print(describe_machine())

    import numba

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"{platform.machine()}; L = {N_SLOTS} slots; median of {args.repeats} repeats "
        f"({args.numpy_repeats} for the NumPy loop)\n"
    )
    print("1. One label sweep (random log-likelihood matrix)")
    header = (
        f"{'N':>7} {'prior':<22} {'weights ms':>10} {'sweep ms':>9} {'ms/1e4':>7} "
        f"{'numpy ms':>9} {'np ms/1e4':>9} {'speed-up':>8} {'same labels':>11} "
        f"{'in-order ms':>11}"
    )
    print(header)
    print("-" * len(header))
    for n, name, t_w, t_nb, t_np, agree, t_seq in bench_sweeps(
        args.sizes, args.repeats, args.numpy_repeats
    ):
        per = 1e4 / n * 1e3
        print(
            f"{n:>7} {name:<22} {t_w * 1e3:>10.2f} {t_nb * 1e3:>9.2f} {t_nb * per:>7.3f} "
            f"{t_np * 1e3:>9.1f} {t_np * per:>9.1f} {t_np / t_nb:>7.0f}x {agree:>11.0%} "
            f"{t_seq * 1e3:>11.2f}"
        )
    print("\n   weights = likelihood_weights(loglik) (exp of the row-shifted matrix), timed once")
    print("   per N; sweep = gibbs_label_sweep alone; target: sweep < 5 ms per 1e4 observations;")
    print("   in-order = the same sweep visiting observations 0..N-1 (memory order), diagnostic")

    print(f"\n   weights, N x {N_SLOTS}: one numba pass against the NumPy formula (median)")
    for n, t_fused, t_numpy in bench_weights(args.sizes, args.repeats):
        print(
            f"{n:>7} fused {t_fused * 1e3:8.2f} ms   numpy {t_numpy * 1e3:8.2f} ms   "
            f"ratio {t_numpy / t_fused:5.1f}x"
        )

    if args.skip_step:
        return
    print("\n2. Inside CRPGibbs, normal mixture y ~ N(mu[z], 1), CRP(1, 0), L = 20")
    header = f"{'N':>7} {'build s':>8} {'loglik ms':>10} {'ms/1e4':>7} {'step ms':>8} {'ms/1e4':>7}"
    print(header)
    print("-" * len(header))
    for n, t_build, t_ll, t_step in bench_step(args.sizes, args.repeats):
        per = 1e4 / n * 1e3
        print(
            f"{n:>7} {t_build:>8.2f} {t_ll * 1e3:>10.2f} {t_ll * per:>7.2f} "
            f"{t_step * 1e3:>8.2f} {t_step * per:>7.2f}"
        )
    print(
        "\n   loglik = step._loglik_fn(point) (N x L matrix); step = step.step(point): refresh"
        "\n   of the empty slots, likelihood matrix, weights, permutation/uniforms and the sweep"
    )


if __name__ == "__main__":
    main()
