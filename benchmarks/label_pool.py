"""Time of the clustered partial-order label step: a pool of prior draws refilled in blocks of
at least 256 (the default) against one refill per ``L`` draws (the previous implementation).

The split proposals of ``PartialOrderLabelGibbs`` and its auxiliary slots take fresh draws of a
slot's utilities from the slot prior. Each refill of that pool is a compiled PyTensor call
whose fixed cost dominated the merge--split proposals when ``L`` (``max_clusters``) is small.
Both steps below are built on the same model and advanced from the same point; only the pool
size differs (``_POOL_DRAWS``, monkeypatched to 1 for the previous behaviour, which makes the
compiled call draw exactly ``L`` slots). Printed: ms per label step and the ratio.

    python benchmarks/label_pool.py                      # 14 lists over 4 slots, 1,000 lists
"""

from __future__ import annotations

import argparse
import time
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from machine import describe_machine  # noqa: E402
from po_convergence import simulate  # noqa: E402
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers  # noqa: E402

import pymc_crp as pmc  # noqa: E402
import pymc_crp.step_methods.po_labels as po_labels  # noqa: E402


def label_step(model, pool_draws):
    """A default ``PartialOrderLabelGibbs`` on ``model`` with a pool of ``pool_draws``."""
    default = po_labels._POOL_DRAWS
    po_labels._POOL_DRAWS = pool_draws
    try:
        with model:
            return pmc.PartialOrderLabelGibbs([model["cluster"]], rng=np.random.default_rng(1))
    finally:
        po_labels._POOL_DRAWS = default


def time_steps(model, iterations, warmup):
    """ms per step of the two label steps, each timed from the same warmed-up point."""
    with model:
        provided, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        steps = instantiate_steppers(model, provided, selected)
    steps = steps if isinstance(steps, list) else [steps]
    point = model.initial_point(random_seed=2)
    for _ in range(warmup):  # the default steps, tuning (the label step anneals)
        for step in steps:
            point, _ = step.step(point)
    out = {}
    for name, pool in (("previous (L per call)", 1), ("blocks (>= 256 per call)", 256)):
        step = label_step(model, pool)
        step.stop_tuning()
        state = dict(point)
        start = time.perf_counter()
        for _ in range(iterations):
            state, _ = step.step(state)
        out[name] = 1000 * (time.perf_counter() - start) / iterations
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    print(describe_machine())
    settings = (("14 lists, L = 4", 14, 4), ("1,000 lists, default L", 1000, None))
    for label, n_lists, slots in settings:
        lists, _ = simulate(n_lists, np.random.default_rng(0))
        kwargs = {"n_dims": 3} if slots is None else {"n_dims": 3, "max_clusters": slots}
        model = pmc.models.clustered_partial_orders(lists, 10, **kwargs)
        times = time_steps(model, args.iterations, args.warmup)
        (old, t_old), (new, t_new) = times.items()
        print(
            f"{label}: {old} {t_old:.2f} ms, {new} {t_new:.2f} ms per label step; "
            f"ratio previous / blocks {t_old / t_new:.2f}"
        )


if __name__ == "__main__":
    main()
