"""Scale: time per iteration and peak memory at two sizes per model (issue 8).

Cases (each size runs in its own subprocess, so that the process peak is its own):

- ``crp-normal``: the generic route, a 2-D normal mixture written by hand with
  ``pmc.CRP`` labels (``CRPGibbs``), ``mu ~ N(0, 10²)`` per slot (NUTS) and a Gamma(1, 1)
  concentration (Escobar--West); unit observation noise. N = 25,000 and 100,000.
- ``mixture``: ``pmc.models.measurement_error_mixture(y, V=None)`` on the same data
  (``CRPGibbs`` + conjugate normal--inverse-Wishart updates). N = 25,000 and 100,000.
- ``po``: ``pmc.models.clustered_partial_orders`` on lists of length 10 over 10 items from
  3 planted orders (as in ``po_clustering.py``). 2,500 and 10,000 lists.

Each subprocess builds the model and the compound step PyMC would assign, runs warm-up
iterations (compilation, first tuning), times ``--iterations`` iterations, then repeats a
few iterations under ``tracemalloc``. Reported: ms per iteration; ``traced MB``: the peak
of Python/NumPy allocations during those iterations above what was allocated before them
(the per-iteration working memory: likelihood matrices, caches filling up); ``maxrss MB``:
the peak resident size of the whole process (``resource.getrusage(RUSAGE_SELF).ru_maxrss``:
interpreter, PyMC/PyTensor, compiled functions, data and model included); for ``po`` the
list-likelihood cache's size and entry count at the end against its bound
(``list_likelihood_cache().max_bytes``, 64 MiB by default).

Linear memory: from the small to the large size (4x) the traced peak and the growth of
``maxrss`` grow about 4x; an N x N matrix would need 80 GB at N = 100,000.

    python benchmarks/scale.py [--iterations 10] [--cases crp-normal mixture po]

Results: see ``benchmarks/README.md`` (section "Scale").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings

from machine import describe_machine

SIZES = {"crp-normal": (25_000, 100_000), "mixture": (25_000, 100_000), "po": (2_500, 10_000)}
MAX_CLUSTERS = 10


def _mixture_data(n, rng):
    import numpy as np

    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    return centres[rng.integers(0, 3, size=n)] + rng.normal(size=(n, 2))


def build(case, n, rng):
    """The model of ``case`` at size ``n``."""
    import pymc as pm

    import pymc_crp as pmc

    if case == "po":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from po_clustering import simulate

        lists = simulate(n, rng)
        return pmc.models.clustered_partial_orders(lists, 10, n_dims=2, max_clusters=MAX_CLUSTERS)
    y = _mixture_data(n, rng)
    if case == "mixture":
        return pmc.models.measurement_error_mixture(y, None, max_clusters=MAX_CLUSTERS)
    with pm.Model() as model:
        theta = pm.Gamma("theta", 1.0, 1.0)
        z = pmc.CRP("z", concentration=theta, max_clusters=MAX_CLUSTERS, n=n)
        mu = pm.Normal("mu", 0.0, 10.0, shape=(MAX_CLUSTERS, 2))
        pm.Normal("y", mu[z], 1.0, observed=y)
    return model


def run_case(case, n, iterations, warmup=3, traced=2):
    """Measure one case in this process; returns a dict."""
    import numpy as np
    import pymc as pm

    rng = np.random.default_rng(0)
    start = time.perf_counter()
    model = build(case, n, rng)
    with model:
        provided, selected = pm.sampling.mcmc.assign_step_methods(model, None)
        step = pm.sampling.mcmc.instantiate_steppers(model, provided, selected)
        if isinstance(step, list):
            step = pm.CompoundStep(step)
        point = model.initial_point(random_seed=0)
        step.set_rng(np.random.default_rng(1))
        for _ in range(warmup):
            point, _ = step.step(point)
        setup = time.perf_counter() - start
        t0 = time.perf_counter()
        for _ in range(iterations):
            point, _ = step.step(point)
        per_iter = (time.perf_counter() - t0) / iterations
        tracemalloc.start()
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(traced):
            point, _ = step.step(point)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    labels = point["cluster" if case != "crp-normal" else "z"]
    out = {
        "case": case,
        "n": n,
        "ms_per_iter": 1e3 * per_iter,
        "setup_s": setup,
        "traced_mb": (peak - base) / 2**20,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "n_clusters": int(np.unique(labels).size),
    }
    if case == "po":
        from pymc_crp.core.lists import list_likelihood_cache

        cache = list_likelihood_cache()
        out.update(
            cache_mb=cache.entry_bytes / 2**20,
            cache_entries=len(cache),
            cache_bound_mb=cache.max_bytes / 2**20,
        )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--cases", nargs="+", default=list(SIZES))
    parser.add_argument("--one", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.one:  # the parent only: a child's output is read for its RESULT line
        print(describe_machine())
    if args.one:  # child process
        warnings.filterwarnings("ignore")
        result = run_case(args.one[0], int(args.one[1]), args.iterations)
        print("RESULT " + json.dumps(result))
        return
    print(f"load average at start: {os.getloadavg()}")
    print(
        f"{'case':>10} {'n':>8} {'ms/iter':>9} {'traced MB':>10} {'maxrss MB':>10} "
        f"{'clusters':>8} {'cache MB (entries) / bound':>28}"
    )
    for case in args.cases:
        for n in SIZES[case]:
            cmd = [sys.executable, __file__, "--one", case, str(n)]
            cmd += ["--iterations", str(args.iterations)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if not lines:
                print(f"{case:>10} {n:>8} failed:\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(lines[-1][7:])
            cache = ""
            if "cache_mb" in r:
                cache = f"{r['cache_mb']:.1f} ({r['cache_entries']}) / {r['cache_bound_mb']:.0f}"
            print(
                f"{case:>10} {n:>8} {r['ms_per_iter']:>9.1f} {r['traced_mb']:>10.1f} "
                f"{r['maxrss_mb']:>10.0f} {r['n_clusters']:>8} {cache:>28}",
                flush=True,
            )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
