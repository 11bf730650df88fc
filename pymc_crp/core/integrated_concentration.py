r"""The concentration of a Pitman--Yor partition prior integrated out (numeric core).

A label vector ``c`` of ``N`` items with ``K`` occupied slots of sizes ``n_1..n_K`` under the
Pitman--Yor CRP truncated at ``K <= L`` slots (section 2 of ``docs/mathematics.md``), with a
fixed discount ``0 <= d < 1`` and a random concentration ``θ > 0`` of prior density ``π``,
depends on ``θ`` only through ``K``:

.. math::

    p(c \mid θ) = h_K(θ)\, \prod_{k=1}^{K} \frac{Γ(n_k - d)}{Γ(1 - d)}\,\frac{(L-K)!}{L!},
    \qquad h_K(θ) = \frac{\prod_{k=1}^{K-1} (θ + k d)\; Γ(θ + 1)/Γ(θ + N)}
        {P(K_N \le L \mid θ, d)}

(the denominator is 1 when ``L >= N``). Integrating ``θ`` out leaves the same form with
``h_K(θ)`` replaced by

.. math:: G(K) = \int_0^\infty π(θ)\, h_K(θ)\, dθ,

so a label move that integrates ``θ`` out weighs a new cluster, when the other items hold
``K`` clusters, by ``w(K) = G(K+1)/G(K)`` instead of ``θ + K d`` (since ``h_{K+1}(θ) = h_K(θ)
(θ + K d)``, ``w(K)`` is the mean of ``θ + K d`` under the density ``∝ π(θ) h_K(θ)``), and a
split against a merge likewise. Given the labels, ``θ`` has the density

.. math:: p(θ \mid c) = π(θ)\, h_K(θ) / G(K).

:class:`IntegratedConcentration` tabulates ``log G(K)`` for ``K = 1..L`` and draws ``θ``
from ``p(θ | K)`` exactly. Both work on ``x = log θ``, where the integrand
``f_K(x) = π(e^x) e^x h_K(e^x)`` is smooth and bell-shaped with tails that fall at least
exponentially: on a uniform grid the trapezoidal rule converges geometrically in the number of
points per standard deviation of ``x`` (``log G`` to rounding error here), and the draw is a
rejection sampler whose proposal is the exponential interpolation of ``f_K`` between grid
points, accepted with probability ``exp(\log f_K(x) - \text{interpolant}(x) - B)``, ``B`` a
bound of the amount by which ``log f_K`` rises above its chords: twice the larger of the
largest rise measured at the intervals' midpoints and ``h^2/8`` times the largest curvature
between grid points (a bound for every ``f_K`` whose curvature changes little over one
interval, which the grid spacing ensures for a smooth prior; a draw that finds the rise above
``B`` raises ``B`` for the later draws and warns). The proposal covers the grid points within
60 nats of the largest value; the rest (a relative mass below ``10^{-24}`` for tails that fall
at least as fast as ``e^{-|x|/20}``) is left out.

The grid. A coarse scan of ``x`` over ``[-700, 700]`` (``θ`` from about ``10^{-304}`` to
``10^{304}``) finds where some ``f_K`` lies within 80 nats of its peak; the uniform grid covers
that range with a spacing of at most a tenth of the smallest standard deviation of ``x | K``
(and at most ``min(0.01, 0.2/\sqrt L)``), halved until the trapezoidal sums with spacings
``h`` and ``2h`` agree to rounding error. A prior is refused with a ``ValueError`` when the mass
of some ``f_K`` beyond ``θ = e^{\pm 700}``, estimated from its slope there, is not below
``e^{-30}`` times its peak density (an improper or nearly improper prior), and when its density
vanishes inside the grid (a bounded support). Modes of the prior narrower than the coarse
scan's spacing (0.05 in ``log θ``) can be missed. Sums such as ``log Γ(θ+N) − log Γ(θ+1) =
Σ_{i<N} \log(θ + i)`` are computed as series in ``i/θ`` where ``θ > 100 N``, where the
difference of ``log Γ`` would cancel (relative error below ``10^{-12}``).

Nothing here imports PyMC: the prior comes in as a vectorised function of ``θ``.

References
----------
.. [1] van Dyk, D. A. and Park, T. (2008). Partially collapsed Gibbs samplers: theory and
   methods. *J. Amer. Statist. Assoc.* 103(482), 790–796.
.. [2] Trefethen, L. N. and Weideman, J. A. C. (2014). The exponentially convergent
   trapezoidal rule. *SIAM Review* 56(3), 385–458.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import numpy as np
from scipy.special import gammaln, logsumexp

from pymc_crp.core.partition_math import log_block_count_weights

__all__ = ["IntegratedConcentration", "log_rising_product"]

#: Nats below the largest value of ``log f_K`` beyond which the proposal leaves the grid out.
TAIL_NATS = 60.0
#: A prior is refused when the mass of ``f_K`` beyond ``θ = e^{±X_LIMIT}``, estimated from the
#: slope of ``log f_K`` there, exceeds ``e^{-LOST_NATS}`` times its peak density.
LOST_NATS = 30.0
#: The grid covers every ``x`` where some ``log f_K`` lies within this many nats of its peak.
END_NATS = 80.0
#: The coarse scan covers ``x = log θ`` in ``[-X_LIMIT, X_LIMIT]``.
X_LIMIT = 700.0
COARSE_STEP = 0.05
#: Grid points per standard deviation of ``x | K`` at least.
POINTS_PER_SD = 10.0
MAX_POINTS = 2_000_000
_SERIES_TERMS = 8


@functools.lru_cache(maxsize=4096)
def _power_sums(k: int) -> np.ndarray:
    """``S_p = Σ_{i=1}^{k-1} i^p`` for ``p = 1.._SERIES_TERMS``."""
    i = np.arange(1, k, dtype=np.float64)
    return np.array([np.sum(i**p) for p in range(1, _SERIES_TERMS + 1)])


def log_rising_product(theta: np.ndarray, step: float, k: int) -> np.ndarray:
    r"""``Σ_{i=1}^{k-1} \log(θ + i\,s)`` for an array of ``θ > 0`` and ``s = step >= 0``.

    ``(k-1) \log θ`` for ``s = 0``; otherwise ``(k-1)\log s + \log Γ(θ/s + k) − \log Γ(θ/s + 1)``
    where ``θ/s <= 100 k``, and ``(k-1)\log θ + Σ_{p=1}^{8} (-1)^{p+1} S_p (s/θ)^p / p``
    (``S_p = Σ_{i<k} i^p``; the series of ``Σ_i \log(1 + i s/θ)``, truncation below
    ``10^{-19} k``) beyond, where the difference of ``log Γ`` would cancel.
    """
    theta = np.asarray(theta, dtype=np.float64)
    if k <= 1:
        return np.zeros_like(theta)
    if step == 0.0:
        return (k - 1) * np.log(theta)
    out = np.empty_like(theta)
    series = theta > 100.0 * k * step
    a = theta[~series] / step
    out[~series] = (k - 1) * np.log(step) + gammaln(a + k) - gammaln(a + 1.0)
    if series.any():
        r = step / theta[series]
        sums = _power_sums(int(k))
        total = np.zeros_like(r)
        for p in range(_SERIES_TERMS, 0, -1):  # Horner in r
            total = (total + (-1) ** (p + 1) * sums[p - 1] / p) * r
        out[series] = (k - 1) * np.log(theta[series]) + total
    return out


class IntegratedConcentration:
    """``log G(K)``, the new-cluster weights ``w(K)`` and exact draws of ``θ | K``.

    Parameters
    ----------
    n_items : int
        ``N``, the number of labelled items.
    max_clusters : int
        ``L``, the number of slots (the prior is truncated at ``K <= L`` when ``L < N``).
    discount : float
        The fixed discount ``d`` in ``[0, 1)``.
    log_prior : callable
        ``log π(θ)`` for an array of ``θ > 0`` (the prior density of the concentration on its
        natural scale; ``-inf`` where it vanishes).
    step : float, optional
        Spacing of the grid of ``x = log θ`` (default: the module docstring's rule).
    """

    def __init__(
        self,
        n_items: int,
        max_clusters: int,
        discount: float,
        log_prior: Callable[[np.ndarray], np.ndarray],
        step: float | None = None,
    ):
        self.n_items = int(n_items)
        self.max_blocks = int(min(max_clusters, n_items))  # the largest K
        self.truncated = int(max_clusters) < self.n_items
        self.n_slots = int(max_clusters)
        self.discount = float(discount)
        if self.n_items < 1 or self.max_blocks < 1:
            raise ValueError(
                f"n_items and max_clusters must be positive, got {n_items} and {max_clusters}"
            )
        if not 0.0 <= self.discount < 1.0:
            raise ValueError(f"discount must lie in [0, 1), got {discount}")
        if step is not None and not (np.isfinite(step) and step > 0):
            raise ValueError(f"step must be a positive number, got {step}")
        self._log_prior = log_prior
        self._log_w = (
            log_block_count_weights(self.n_items, self.n_slots, self.discount)
            if self.truncated
            else None
        )
        lo, hi = self._support()
        self.step = min(0.01, 0.2 / np.sqrt(self.max_blocks)) if step is None else float(step)
        while True:
            self._build_grid(lo, hi)
            if not np.all(np.isfinite(self._base)):
                raise ValueError(
                    "the prior density of the concentration must be positive on (0, ∞) to "
                    "integrate it out (it vanishes next to where the posterior has mass)"
                )
            totals, sds, halved = self._marginals_and_sds()
            resolved = self.step <= 1.05 * sds.min() / POINTS_PER_SD
            # step h against 2h, to rounding error (log G is of the order of N log N)
            converged = np.all(np.abs(totals - halved) < 1e-10 + 1e-14 * np.abs(totals))
            if step is not None or (resolved and converged):
                break
            target = 0.9 * sds.min() / POINTS_PER_SD if not resolved else self.step / 2.0
            self.step = max(target, self.step / 100.0)
            if (hi - lo) / self.step > MAX_POINTS:
                raise ValueError(
                    "the density of the concentration given the number of clusters could not "
                    f"be tabulated to rounding error within {MAX_POINTS:,} grid points "
                    f"(smallest standard deviation of log θ | K: {sds.min():.2g}); fix the "
                    "concentration or give it a wider, smoother prior"
                )
        #: ``log G(K)`` for ``K = 1..L`` (index ``K - 1``), by the trapezoidal rule.
        self.log_marginals = totals
        self._cache: dict[int, tuple] = {}

    # ---------------------------------------------------------------------------------------
    # the integrand
    # ---------------------------------------------------------------------------------------
    def _log_base(self, x: np.ndarray) -> np.ndarray:
        """``log π(e^x) + x + log Γ(θ+1) - log Γ(θ+N) - log P(K_N <= L | θ, d)``."""
        theta = np.exp(x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.asarray(self._log_prior(theta), dtype=np.float64) + x
        out = out - log_rising_product(theta, 1.0, self.n_items)
        if self.truncated:
            out = out - self._log_truncation(theta)
        return np.where(np.isnan(out), -np.inf, out)

    def _log_truncation(self, theta: np.ndarray) -> np.ndarray:
        r"""``log P(K_N <= L | θ, d)`` for an array of ``θ``:
        ``logsumexp_k [Σ_{i<k} log(θ + i d) + log W(N, k; d)] + log Γ(θ+1) − log Γ(θ+N)``."""
        total = np.full(theta.shape, -np.inf)
        rising = np.zeros(theta.shape)
        for k in range(1, self.n_slots + 1):
            if k > 1:
                rising += np.log(theta + (k - 1) * self.discount)
            total = np.logaddexp(total, rising + self._log_w[k - 1])
        return total - log_rising_product(theta, 1.0, self.n_items)

    def _each_k(self, x: np.ndarray, base: np.ndarray):
        """``(K, log f_K(x))`` for ``K = 1..max_blocks``, the rising product accumulated."""
        theta = np.exp(x)
        values = base.copy()
        for k in range(1, self.max_blocks + 1):
            if k > 1:
                values += np.log(theta + (k - 1) * self.discount)
            yield k, values

    def _support(self) -> tuple[float, float]:
        """The range of ``x`` where some ``log f_K`` is within :data:`END_NATS` of its peak, on
        a coarse grid over ``[-X_LIMIT, X_LIMIT]`` (one coarse step added on either side)."""
        x = np.arange(-X_LIMIT, X_LIMIT + COARSE_STEP / 2, COARSE_STEP)
        lo, hi = x.size, -1
        for k, values in self._each_k(x, self._log_base(x)):
            top = values.max()
            if not np.isfinite(top):
                raise ValueError("the prior of the concentration gives no mass to θ > 0")
            near = np.flatnonzero(values > top - END_NATS)
            lo, hi = min(lo, near[0]), max(hi, near[-1])
            for end, inward, name in ((0, 1, "lower (θ → 0)"), (-1, -2, "upper (θ → ∞)")):
                if values[end] <= top - END_NATS:
                    continue
                slope = (values[inward] - values[end]) / COARSE_STEP  # decay towards the end
                lost = values[end] - np.log(slope) if slope > 0 else np.inf
                if lost > top - LOST_NATS:
                    raise ValueError(
                        f"the {name} tail of the concentration's prior is too heavy to "
                        f"integrate it out: given K = {k} clusters the density of log θ is "
                        f"{top - values[end]:.0f} nats below its peak at θ = e^{x[end]:+.0f}, "
                        "decaying too slowly to leave out what lies beyond; use a prior with "
                        "lighter tails"
                    )
        return x[max(lo - 1, 0)], x[min(hi + 1, x.size - 1)]

    def _build_grid(self, lo: float, hi: float) -> None:
        n_points = int(np.ceil((hi - lo) / self.step)) + 1
        self._x = lo + self.step * np.arange(n_points)
        self._base = self._log_base(self._x)

    def _marginals_and_sds(self) -> tuple[np.ndarray, np.ndarray]:
        """``log G(K)`` by the trapezoidal rule, the standard deviation of ``x | K`` and
        ``log G(K)`` from every other grid point (step ``2h``), for every ``K``."""
        totals = np.empty(self.max_blocks)
        halved = np.empty(self.max_blocks)
        sds = np.empty(self.max_blocks)
        for k, values in self._each_k(self._x, self._base):
            totals[k - 1] = logsumexp(values) + np.log(self.step)
            halved[k - 1] = logsumexp(values[::2]) + np.log(2.0 * self.step)
            weights = np.exp(values - values.max())
            weights /= weights.sum()
            mean = np.sum(weights * self._x)
            sds[k - 1] = np.sqrt(max(np.sum(weights * (self._x - mean) ** 2), 0.0))
        return totals, sds, halved

    def _log_integrand_grid(self, k: int) -> np.ndarray:
        return self._base + log_rising_product(np.exp(self._x), self.discount, k)

    def log_integrand(self, x, k: int) -> np.ndarray:
        r"""``log f_K(x) = log π(e^x) + x + log h_K(e^x)`` at ``x = log θ``."""
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        return self._log_base(x) + log_rising_product(np.exp(x), self.discount, k)

    # ---------------------------------------------------------------------------------------
    # what the label moves read
    # ---------------------------------------------------------------------------------------
    def new_cluster_weights(self) -> np.ndarray:
        r"""``w(K) = G(K+1)/G(K)`` for ``K = 0..L`` (length ``L + 1``): the weight of a new
        cluster when the other items hold ``K`` clusters. Where no new cluster can be opened
        the entry is a positive placeholder that no move uses as a weight: ``w(0) = 1`` (a
        single item) and, from ``K = min(L, N)`` on, ``w(K) = w(K - 1)`` (no slot is free,
        and a positive weight lets the label moves count the visits where the truncation
        bites)."""
        out = np.ones(self.n_slots + 1)
        top = self.max_blocks - 1
        out[1 : top + 1] = np.exp(np.diff(self.log_marginals))
        out[top + 1 :] = out[top]
        return out

    # ---------------------------------------------------------------------------------------
    # exact draws of θ | K
    # ---------------------------------------------------------------------------------------
    def _proposal(self, k: int):
        """The exponential interpolation of ``f_K`` over the grid points within
        :data:`TAIL_NATS` of its peak: ``[x, log f, cumulative interval masses, bound, peak]``
        (the bound from the rises at the intervals' midpoints and the curvature)."""
        found = self._cache.get(k)
        if found is not None:
            return found
        values = self._log_integrand_grid(k)
        keep = np.flatnonzero(values > values.max() - TAIL_NATS)
        lo, hi = max(keep[0] - 1, 0), min(keep[-1] + 1, values.size - 1)
        x, v = self._x[lo : hi + 1], values[lo : hi + 1]
        peak = v.max()
        v = v - peak
        delta = np.diff(v)
        # mass of each interval under exp(linear interpolation): h e^{v_i} (e^Δ - 1)/Δ
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(np.abs(delta) < 1e-12, 1.0, np.expm1(delta) / delta)
        masses = self.step * np.exp(v[:-1]) * factor
        midpoints = self.log_integrand(x[:-1] + self.step / 2, k) - peak
        rise = np.max(midpoints - (v[:-1] + v[1:]) / 2, initial=0.0)
        curvature = np.max(-np.diff(v, 2), initial=0.0) / self.step**2
        bound = 2.0 * max(rise, self.step**2 / 8.0 * curvature, 0.0) + 1e-12
        found = [x, v, np.cumsum(masses), bound, peak]
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[k] = found
        return found

    def draw(self, k: int, rng: np.random.Generator, max_tries: int = 10_000) -> float:
        """An exact draw of ``θ`` from ``p(θ | K = k)`` (rejection sampling, module docstring)."""
        k = int(k)
        if not 1 <= k <= self.max_blocks:
            raise ValueError(f"k must lie in 1..{self.max_blocks}, got {k}")
        proposal_k = self._proposal(k)
        x, v, cumulative, bound, peak = proposal_k
        for _ in range(max_tries):
            u_pick, u_in, u_accept = rng.random(3)
            i = min(int(np.searchsorted(cumulative, u_pick * cumulative[-1], side="right")),
                    cumulative.size - 1)  # fmt: skip
            delta = v[i + 1] - v[i]
            if abs(delta) < 1e-12:
                offset = u_in * self.step
            else:
                offset = self.step * np.log1p(u_in * np.expm1(delta)) / delta
            proposal = x[i] + offset
            chord = v[i] + delta * offset / self.step
            excess = float(self.log_integrand(proposal, k)[0]) - peak - chord
            if excess > bound:  # the bound did not hold: raise it for the later draws
                warnings.warn(
                    f"IntegratedConcentration: log f_K rose {excess:.3g} nats above its chord, "
                    f"more than the bound {bound:.3g} (K = {k}); the bound is raised",
                    RuntimeWarning,
                    stacklevel=2,
                )
                bound = proposal_k[3] = 2.0 * excess
            if np.log(u_accept) < excess - bound:
                return float(np.exp(proposal))
        raise RuntimeError(f"no draw of the concentration accepted in {max_tries} tries")

    def posterior_mean(self, k: int) -> float:
        """``E[θ | K = k]`` by the trapezoidal rule (for checks)."""
        values = self._log_integrand_grid(int(k))
        weights = np.exp(values - values.max())
        return float(np.sum(weights * np.exp(self._x)) / np.sum(weights))
