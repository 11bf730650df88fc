"""Simulation-based calibration of the package's samplers (the full suite).

    python benchmarks/sbc.py [--out sbc_output] [--size full] [--budget-minutes 68]
                             [--problems crp pitman_yor measurement_error partial_orders]
                             [--workers 2] [--seed S]

Runs the SBC problems of ``tests/sbc`` (200 simulations each at ``--size full``) one after the
other in this process, prints a chi-square uniformity test per parameter (acceptance:
p > 0.01), and writes one rank histogram per problem (PNG) and the raw ranks (JSON) to the
output folder, named with the seed under ``--seed``. The last problems get what is left of
``--budget-minutes`` and stop early when it runs out (the report says how many simulations
were run). With ``--workers n`` each problem runs in ``n`` processes, the ``k``-th running the
simulations ``s ≡ k (mod n)`` with the seeds a single process would give them, so the joined
result is the same run. ``--seed S`` replaces each problem's fixed seed (``tests/sbc``):
another, independent set of simulated data sets, to tell a failure by chance from a
repeatable one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
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
from machine import describe_machine  # noqa: E402

from pymc_crp.sbc import SBCResult  # noqa: E402

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


def seed_suffix(args) -> str:
    """``_seed<S>`` in the output files' names with ``--seed S`` (the fixed seeds: none)."""
    return "" if args.seed is None else f"_seed{args.seed}"


def run_shards(name, args, budget_minutes, out):
    """Problem ``name`` in ``args.workers`` processes (``run_sbc(shard=(k, n))``), joined."""
    shard_dir = out / "shards"
    shard_dir.mkdir(exist_ok=True)
    procs = []
    for k in range(args.workers):
        command = [
            sys.executable, __file__, "--problems", name, "--size", args.size,
            "--budget-minutes", f"{budget_minutes}", "--shard", str(k), str(args.workers),
            "--out", str(shard_dir),
        ]  # fmt: skip
        if args.n_sims is not None:
            command += ["--n-sims", str(args.n_sims)]
        if args.seed is not None:
            command += ["--seed", str(args.seed)]
        procs.append(subprocess.Popen(command))
    if any(proc.wait() != 0 for proc in procs):
        raise RuntimeError(f"a shard of {name} failed")
    parts = []
    for k in range(args.workers):
        path = shard_dir / f"sbc_{name}{seed_suffix(args)}_{k}of{args.workers}.json"
        record = json.loads(path.read_text())
        fields = {key: record[key] for key in ("ranks", "n_draws", "seconds", "seed", "sims")}
        parts.append(SBCResult(params=list(record["ranks"]), **fields))
    return SBCResult.combine(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="sbc_output", help="output folder")
    parser.add_argument("--size", default="full", choices=["smoke", "full"])
    parser.add_argument("--budget-minutes", type=float, default=68.0)
    parser.add_argument("--n-sims", type=int, default=None)
    parser.add_argument(
        "--seed", type=int, default=None, help="replaces the problems' fixed seeds (tests/sbc)"
    )
    parser.add_argument(
        "--problems",
        nargs="+",
        default=["crp", "pitman_yor", "measurement_error", "partial_orders"],
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes per problem, each running every n-th simulation (same seeds, same "
        "simulations as one process)",
    )
    parser.add_argument("--shard", type=int, nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.shard is None:  # the parent only, not each shard's process
        print(describe_machine())
    if args.workers < 1:
        parser.error(f"--workers must be a positive integer, got {args.workers}")
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    problems = load_problems()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + 60.0 * args.budget_minutes
    failed = []
    if args.shard is None:
        print(f"SBC ({args.size}), output in {out.resolve()}, pid {os.getpid()}", flush=True)
    for name in args.problems:
        t0 = time.perf_counter()
        label = name if args.shard is None else f"{name} (shard {args.shard[0]})"

        def progress(s, result, label=label, t0=t0):
            if result.n_sims % 10 == 0:
                elapsed = time.perf_counter() - t0
                print(f"  {label}: {result.n_sims} simulations, {elapsed:.0f} s", flush=True)

        left = max(deadline - time.perf_counter(), 0.0)
        if args.workers > 1:
            result = run_shards(name, args, left / 60.0, out)
        else:
            result = problems.run_problem(
                name,
                args.size,
                n_sims=args.n_sims,
                time_budget=left,
                callback=progress,
                shard=(0, 1) if args.shard is None else tuple(args.shard),
                seed=args.seed,
            )
        total = time.perf_counter() - t0
        record = {
            "n_sims": result.n_sims,
            "seed": result.seed,
            "total_seconds": total,
            "seconds": result.seconds,
            "sims": result.sims,
            "ranks": result.ranks,
            "n_draws": result.n_draws,
        }
        if args.shard is not None:  # a worker of run_shards: the raw ranks only
            k, n = args.shard
            (out / f"sbc_{name}{seed_suffix(args)}_{k}of{n}.json").write_text(json.dumps(record))
            continue
        tests = result.tests()
        print(f"{name}: {result.n_sims} simulations in {total:.0f} s (incl. compilation)")
        print(result.summary(), flush=True)
        plot_ranks(name, result, tests, out / f"sbc_{name}{seed_suffix(args)}.png")
        record["pvalues"] = {k: t.pvalue for k, t in tests.items()}
        (out / f"sbc_{name}{seed_suffix(args)}.json").write_text(json.dumps(record, indent=1))
        failed += [f"{name}.{k}" for k, t in tests.items() if not t.pvalue > 0.01]
    if args.shard is not None:
        return 0
    print("FAILED (p <= 0.01): " + ", ".join(failed) if failed else "all p > 0.01")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
