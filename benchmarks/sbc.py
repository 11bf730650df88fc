"""Simulation-based calibration of the package's samplers (the full suite).

    python benchmarks/sbc.py [--out sbc_output] [--size full] [--budget-minutes 68]
                             [--problems crp pitman_yor measurement_error partial_orders]

Runs the SBC problems of ``tests/sbc`` (200 simulations each at ``--size full``) one after the
other in this process, prints a chi-square uniformity test per parameter (acceptance:
p > 0.01), and writes one rank histogram per problem (PNG) and the raw ranks (JSON) to the
output folder. The last problems get what is left of ``--budget-minutes`` and stop early
when it runs out (the report says how many simulations were run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def load_problems():
    """``tests/sbc/__init__.py`` as the module ``sbc_problems`` (this file is also sbc.py)."""
    path = ROOT / "tests" / "sbc" / "__init__.py"
    spec = importlib.util.spec_from_file_location("sbc_problems", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sbc_problems"] = module
    spec.loader.exec_module(module)
    return module


def plot_ranks(name, result, tests, path):
    params = result.params
    fig, axes = plt.subplots(1, len(params), figsize=(3.2 * len(params), 3.0), squeeze=False)
    for ax, param in zip(axes[0], params, strict=True):
        test = tests[param]
        n_bins = test.counts.size
        ax.bar(np.arange(n_bins), test.counts, width=0.9, color="tab:blue")
        lo, hi = (
            test.expected - 2.576 * np.sqrt(test.expected * (1 - 1 / n_bins)),
            test.expected + 2.576 * np.sqrt(test.expected * (1 - 1 / n_bins)),
        )
        ax.axhspan(lo, hi, color="0.85", zorder=0)
        ax.axhline(test.expected, color="0.4", lw=1)
        label = "PIT bin" if test.randomised else f"rank bin (L={result.n_draws[param][0]})"
        ax.set_xlabel(label)
        ax.set_title(f"{param}: p = {test.pvalue:.3f}", fontsize=10)
    axes[0, 0].set_ylabel("simulations")
    fig.suptitle(f"SBC {name}: {result.n_sims} simulations (band: 99% per bin)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="sbc_output", help="output folder")
    parser.add_argument("--size", default="full", choices=["smoke", "full"])
    parser.add_argument("--budget-minutes", type=float, default=68.0)
    parser.add_argument("--n-sims", type=int, default=None)
    parser.add_argument(
        "--problems",
        nargs="+",
        default=["crp", "pitman_yor", "measurement_error", "partial_orders"],
    )
    args = parser.parse_args(argv)
    problems = load_problems()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + 60.0 * args.budget_minutes
    failed = []
    print(f"SBC ({args.size}), output in {out.resolve()}, pid {os.getpid()}", flush=True)
    for name in args.problems:
        t0 = time.perf_counter()

        def progress(s, result, name=name, t0=t0):
            if (s + 1) % 10 == 0:
                elapsed = time.perf_counter() - t0
                print(f"  {name}: {s + 1} simulations, {elapsed:.0f} s", flush=True)

        result = problems.run_problem(
            name,
            args.size,
            n_sims=args.n_sims,
            time_budget=max(deadline - time.perf_counter(), 0.0),
            callback=progress,
        )
        total = time.perf_counter() - t0
        tests = result.tests()
        print(f"{name}: {result.n_sims} simulations in {total:.0f} s (incl. compilation)")
        print(result.summary(), flush=True)
        plot_ranks(name, result, tests, out / f"sbc_{name}.png")
        record = {
            "n_sims": result.n_sims,
            "seed": result.seed,
            "total_seconds": total,
            "seconds": result.seconds,
            "ranks": result.ranks,
            "n_draws": result.n_draws,
            "pvalues": {k: t.pvalue for k, t in tests.items()},
        }
        (out / f"sbc_{name}.json").write_text(json.dumps(record, indent=1))
        failed += [f"{name}.{k}" for k, t in tests.items() if not t.pvalue > 0.01]
    print("FAILED (p <= 0.01): " + ", ".join(failed) if failed else "all p > 0.01")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
