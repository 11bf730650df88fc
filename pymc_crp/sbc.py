r"""Simulation-based calibration (SBC) of posterior samplers (Talts et al., 2018).

For ``s = 1..S``: draw parameters ``φ*`` and data ``y`` from the prior predictive, draw
``φ^(1..L)`` from the posterior given ``y`` (MCMC, thinned to ``L`` nearly independent
draws), and record the rank

.. math::

    r_s = \#\{l : φ^{(l)} < φ^*\} + U_s,\qquad
    U_s \sim \mathrm{Uniform}\{0, …, \#\{l : φ^{(l)} = φ^*\}\},

(ties, e.g. of the number of clusters ``K``, broken uniformly at random). If the sampler
draws from the exact posterior, ``r_s`` is uniform on ``0..L`` whatever the model, because
``φ*`` and the ``φ^(l)`` are then exchangeable draws from the joint of ``(φ, y)``. A sampler
that is too narrow piles ranks at both ends, one that is too wide in the middle, a biased
one at one end. Uniformity is checked with Pearson's chi-square test on binned ranks.

Functions: :func:`rank_statistic`, :func:`thin_by_ess`, :func:`uniformity_test`,
:func:`run_sbc` (the loop), and :class:`DefaultStep` (the step methods ``pm.sample`` would
assign, built once so that many fits of one model reuse the compiled functions).

References
----------
.. [1] Talts, S., Betancourt, M., Simpson, D., Vehtari, A. and Gelman, A. (2018).
   Validating Bayesian inference algorithms with simulation-based calibration.
   arXiv:1804.06788.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import arviz as az
import numpy as np
from scipy import stats

__all__ = [
    "DefaultStep",
    "SBCResult",
    "UniformityTest",
    "rank_statistic",
    "run_sbc",
    "thin_by_ess",
    "uniformity_test",
]


def rank_statistic(truth: float, draws, rng: np.random.Generator) -> int:
    r"""Rank of ``truth`` among ``draws``, ties broken uniformly at random.

    ``r = #{draws < truth} + U``, ``U ~ Uniform{0..#{draws == truth}}``; uniform on
    ``0..len(draws)`` when ``truth`` and ``draws`` are exchangeable.
    """
    draws = np.asarray(draws, dtype=np.float64).ravel()
    truth = float(truth)
    if not (math.isfinite(truth) and np.all(np.isfinite(draws))):
        raise ValueError("truth and draws must be finite")
    below = int(np.count_nonzero(draws < truth))
    ties = int(np.count_nonzero(draws == truth))
    return below + int(rng.integers(0, ties + 1))


def _ess(draws: np.ndarray) -> float:
    """``min(bulk, tail)`` ESS of one chain (ArviZ); ``len(draws)`` if it is undefined."""
    if np.ptp(draws) == 0:
        return float(draws.size)
    with np.errstate(all="ignore"):
        ess = min(az.ess(draws[None], method=m) for m in ("bulk", "tail"))
    return float(ess) if np.isfinite(ess) and ess > 0 else 1.0


def thin_by_ess(draws, n_keep: int, ess: float | None = None) -> np.ndarray:
    r"""Keep at most ``n_keep`` nearly independent draws of one chain.

    With ``D`` draws and effective sample size ``ESS`` (default: the smaller of ArviZ's bulk
    and tail ESS), the stride is ``t = ⌈D / ESS⌉`` and the last ``min(n_keep, ⌊D/t⌋)`` draws
    at stride ``t`` are kept (the chain's end is furthest from its starting point).
    """
    draws = np.asarray(draws, dtype=np.float64).ravel()
    if n_keep < 1 or draws.size < 1:
        raise ValueError("need n_keep >= 1 and at least one draw")
    if ess is None:
        ess = _ess(draws)
    stride = max(1, math.ceil(draws.size / max(float(ess), 1.0)))
    return draws[::-1][::stride][:n_keep][::-1].copy()


@dataclass(frozen=True)
class UniformityTest:
    """Pearson chi-square test of uniform ranks: ``X² = Σ_b (O_b - E)² / E`` on ``B - 1`` df."""

    statistic: float
    pvalue: float
    counts: np.ndarray
    expected: float
    n_sims: int
    randomised: bool  # binned randomised PIT values instead of integer ranks


def _n_bins(n_sims: int, n_values: int | None, max_bins: int) -> int:
    """Most bins ``≤ max_bins`` with expected count ``≥ 5`` (dividing ``n_values`` if given)."""
    top = max(1, min(max_bins, n_sims // 5))
    if n_values is None:
        return top
    return max(b for b in range(1, top + 1) if n_values % b == 0)


def uniformity_test(
    ranks,
    n_draws,
    *,
    n_bins: int | None = None,
    max_bins: int = 20,
    rng: np.random.Generator | None = None,
) -> UniformityTest:
    r"""Chi-square test that rank ``r_s`` is uniform on ``0..L_s`` for every simulation ``s``.

    If every ``L_s`` equals one ``L`` and ``B`` divides ``L + 1``, rank ``r`` falls in bin
    ``⌊r B / (L + 1)⌋`` (each bin holds ``(L+1)/B`` ranks). Otherwise the randomised PIT values
    ``u_s = (r_s + V_s) / (L_s + 1)``, ``V_s ~ U(0, 1)``, which are exactly ``U(0, 1)`` under
    uniform ranks, are binned into ``B`` equal intervals. By default ``B`` is the largest
    number ``≤ max_bins`` with expected count ``S / B ≥ 5`` (and dividing ``L + 1``).
    """
    ranks = np.asarray(ranks, dtype=np.int64).ravel()
    n_draws = np.broadcast_to(np.asarray(n_draws, dtype=np.int64), ranks.shape)
    n_sims = ranks.size
    if n_sims < 5:
        raise ValueError(f"need at least 5 simulations for a chi-square test, got {n_sims}")
    if np.any(ranks < 0) or np.any(ranks > n_draws):
        raise ValueError("ranks must lie in 0..n_draws")
    common = int(n_draws[0]) + 1 if np.all(n_draws == n_draws[0]) else None
    if n_bins is None:
        n_bins = _n_bins(n_sims, common, max_bins)
        if n_bins == 1 and common is not None:  # L + 1 prime: use the randomised PIT
            common, n_bins = None, _n_bins(n_sims, None, max_bins)
    elif common is not None and common % n_bins:
        common = None
    if common is not None:
        bins = ranks * n_bins // common
    else:
        rng = np.random.default_rng(0) if rng is None else rng
        pit = (ranks + rng.random(n_sims)) / (n_draws + 1)
        bins = np.minimum((pit * n_bins).astype(np.int64), n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    expected = n_sims / n_bins
    statistic = float(np.sum((counts - expected) ** 2) / expected)
    pvalue = float(stats.chi2.sf(statistic, n_bins - 1)) if n_bins > 1 else 1.0
    return UniformityTest(statistic, pvalue, counts, expected, n_sims, common is None)


@dataclass
class SBCResult:
    """Ranks of one SBC run: ``ranks[name][s]`` in ``0..n_draws[name][s]``."""

    params: list[str]
    ranks: dict[str, list[int]] = field(default_factory=dict)
    n_draws: dict[str, list[int]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    seed: int = 0
    sims: list[int] = field(default_factory=list)

    @property
    def n_sims(self) -> int:
        return len(self.seconds)

    @classmethod
    def combine(cls, parts: Sequence[SBCResult]) -> SBCResult:
        """One result from runs over disjoint simulations of the same problem and seed (the
        shards of :func:`run_sbc`), in the order of their simulation indices."""
        if not parts:
            raise ValueError("parts must hold at least one SBCResult")
        first = parts[0]
        if any(part.seed != first.seed or part.params != first.params for part in parts):
            raise ValueError("parts must share their seed and parameters")
        sims = [s for part in parts for s in part.sims]
        if len(set(sims)) != len(sims):
            raise ValueError("parts must run disjoint simulations")
        order = np.argsort(sims, kind="stable")

        def pooled(get):
            values = [v for part in parts for v in get(part)]
            return [values[i] for i in order]

        return cls(
            params=list(first.params),
            ranks={k: pooled(lambda part, k=k: part.ranks[k]) for k in first.params},
            n_draws={k: pooled(lambda part, k=k: part.n_draws[k]) for k in first.params},
            seconds=pooled(lambda part: part.seconds),
            seed=first.seed,
            sims=[sims[i] for i in order],
        )

    def tests(self, **kwargs) -> dict[str, UniformityTest]:
        """:func:`uniformity_test` per parameter (seeded by the run's seed)."""
        out = {}
        for i, name in enumerate(self.params):
            rng = np.random.default_rng([self.seed, 7919, i])
            out[name] = uniformity_test(self.ranks[name], self.n_draws[name], rng=rng, **kwargs)
        return out

    def summary(self) -> str:
        """One line per parameter: simulations, median ``L``, chi-square p-value, time."""
        lines = []
        per_sim = float(np.mean(self.seconds)) if self.seconds else float("nan")
        for name, test in self.tests().items():
            lines.append(
                f"{name:>12}: S={test.n_sims:4d}  median L={np.median(self.n_draws[name]):5.0f}  "
                f"bins={test.counts.size:2d}  X2={test.statistic:7.2f}  p={test.pvalue:.4f}  "
                f"({per_sim:.2f} s/sim, {sum(self.seconds):.0f} s total)"
            )
        return "\n".join(lines)


Simulator = Callable[[np.random.Generator], tuple[Mapping[str, float], Any]]
Fitter = Callable[[Any, int], Mapping[str, np.ndarray]]


def run_sbc(
    simulate: Simulator,
    fit: Fitter,
    n_sims: int,
    *,
    n_keep: int = 99,
    seed: int = 0,
    time_budget: float | None = None,
    callback: Callable[[int, SBCResult], None] | None = None,
    shard: tuple[int, int] = (0, 1),
) -> SBCResult:
    """Run SBC: ``simulate(rng) -> (truth, data)``, ``fit(data, seed) -> {name: draws}``.

    ``truth`` maps each calibrated quantity to its simulated value; ``fit`` returns one chain
    of posterior draws (after tuning) per quantity, which :func:`thin_by_ess` thins to at most
    ``n_keep`` draws. Simulation ``s`` uses the seeds ``SeedSequence([seed, s])``, so a run is
    reproducible and its first ``k`` simulations do not depend on ``n_sims``. After the first
    simulation, stops early once ``time_budget`` seconds have passed (``result.n_sims`` says
    how many were run). ``shard=(k, n)`` runs only the simulations ``s ≡ k (mod n)`` of the
    ``n_sims``, so that ``n`` processes can share a run; :meth:`SBCResult.combine` joins them
    into the result of the whole run.
    """
    k, n_shards = shard
    if not (
        isinstance(n_shards, int) and n_shards >= 1 and isinstance(k, int) and 0 <= k < n_shards
    ):
        raise ValueError(f"shard must be (k, n) with integers 0 <= k < n, got {shard!r}")
    result: SBCResult | None = None
    start = time.perf_counter()
    for s in range(k, n_sims, n_shards):
        if s > k and time_budget is not None and time.perf_counter() - start > time_budget:
            break
        t0 = time.perf_counter()
        sim_seq, fit_seq, tie_seq = np.random.SeedSequence([seed, s]).spawn(3)
        truth, data = simulate(np.random.default_rng(sim_seq))
        draws = fit(data, int(fit_seq.generate_state(1)[0]))
        if result is None:
            result = SBCResult(params=list(truth), seed=seed)
            for name in result.params:
                result.ranks[name], result.n_draws[name] = [], []
        tie_rng = np.random.default_rng(tie_seq)
        for name in result.params:
            kept = thin_by_ess(draws[name], n_keep)
            result.ranks[name].append(rank_statistic(truth[name], kept, tie_rng))
            result.n_draws[name].append(kept.size)
        result.seconds.append(time.perf_counter() - t0)
        result.sims.append(s)
        if callback is not None:
            callback(s, result)
    if result is None:
        raise ValueError(f"n_sims must be more than the shard's index {k}, got {n_sims}")
    return result


class DefaultStep:
    """The step methods :func:`pymc.sample` assigns to ``model``, built once for many fits.

    Built as ``pm.sample`` builds them (``assign_step_methods`` over ``pm.STEP_METHODS``, then
    ``instantiate_steppers`` at the model's initial point). Reuse needs the data to enter the
    model through ``pm.Data`` (set with ``pm.set_data`` before each fit). Calling the object
    restores the numeric attributes the steps had when built (adapted proposal scales that
    ``reset_tuning`` keeps) and returns the step to pass as ``pm.sample(step=...)``.
    ``pm.sample`` uses ``init_nuts`` (jitter + adaptation) for models that NUTS alone
    samples; those are rejected here.
    """

    def __init__(self, model, *, compile_kwargs: dict | None = None):
        import pymc as pm
        from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
        from pymc.step_methods import NUTS
        from pymc.step_methods.compound import CompoundStep

        with model:
            provided, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
            if len(selected) == 1 and issubclass(next(iter(selected)), NUTS):
                raise ValueError("pm.sample initialises NUTS-only models with init_nuts")
            step = instantiate_steppers(model, provided, selected, compile_kwargs=compile_kwargs)
        self.step = CompoundStep(step) if isinstance(step, list) else step
        self.assignment = {cls.__name__: [v.name for v in vs] for cls, vs in selected.items()}
        methods = self.step.methods if isinstance(self.step, CompoundStep) else [self.step]
        self._state = [
            (m, {k: v for k, v in vars(m).items() if isinstance(v, int | float | np.number)})
            for m in methods
        ]

    def __call__(self):
        for method, state in self._state:
            for key, value in state.items():
                setattr(method, key, value)
        return self.step
