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
points, accepted with probability ``exp(\log f_K(x) - \text{interpolant}(x) - B)``, ``B`` an
upper bound of the amount by which ``log f_K`` rises above its chords (``h^2/8`` times the
largest curvature, doubled). The proposal covers the grid points within 60 nats of the largest
value; the rest (a relative mass below ``10^{-24}``) is left out.

Nothing here imports PyMC: the prior comes in as a vectorised function of ``θ``.

References
----------
.. [1] van Dyk, D. A. and Park, T. (2008). Partially collapsed Gibbs samplers: theory and
   methods. *J. Amer. Statist. Assoc.* 103(482), 790–796.
.. [2] Trefethen, L. N. and Weideman, J. A. C. (2014). The exponentially convergent
   trapezoidal rule. *SIAM Review* 56(3), 385–458.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import gammaln, logsumexp

from pymc_crp.core.partition_math import log_block_count_weights

__all__ = ["IntegratedConcentration"]

#: Nats below the largest value of ``log f_K`` beyond which the proposal leaves the grid out.
TAIL_NATS = 60.0
#: The grid of ``x = log θ`` is widened until ``log f_K`` at both of its ends is this many
#: nats below its largest value for every ``K``.
END_NATS = 80.0


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
        Spacing of the grid of ``x = log θ`` (default ``min(0.01, 0.2/sqrt(L))``: at least five
        points per standard deviation of ``x | K``, which is about ``1/sqrt(K)``).
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
        self._log_prior = log_prior
        default_step = min(0.01, 0.2 / np.sqrt(self.max_blocks))
        self.step = float(step) if step is not None else default_step
        self._log_w = (
            log_block_count_weights(self.n_items, self.n_slots, self.discount)
            if self.truncated
            else None
        )
        lo, hi = -40.0, np.log(10.0 * self.n_items) + 20.0
        for _ in range(8):
            self._build_grid(lo, hi)
            low_end, high_end = self._end_gaps()
            if low_end >= END_NATS and high_end >= END_NATS:
                break
            lo -= 40.0 * (low_end < END_NATS)
            hi += 40.0 * (high_end < END_NATS)
        else:
            raise ValueError(
                "the prior of the concentration has tails too heavy to integrate it out "
                f"(log density within {END_NATS} nats of its peak at x = log θ = {lo:.0f} or "
                f"{hi:.0f})"
            )
        #: ``log G(K)`` for ``K = 1..L`` (index ``K - 1``), by the trapezoidal rule.
        self.log_marginals = np.array(
            [logsumexp(self._log_integrand_grid(k)) + np.log(self.step) for k in self._ks()]
        )
        self._cache: dict[int, tuple] = {}

    # ---------------------------------------------------------------------------------------
    # the integrand
    # ---------------------------------------------------------------------------------------
    def _ks(self):
        return range(1, self.max_blocks + 1)

    def _log_base(self, x: np.ndarray) -> np.ndarray:
        """``log π(e^x) + x + log Γ(θ+1) - log Γ(θ+N) - log P(K_N <= L | θ, d)``."""
        theta = np.exp(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.asarray(self._log_prior(theta), dtype=np.float64) + x
        out = out + gammaln(theta + 1.0) - gammaln(theta + self.n_items)
        if self.truncated:
            out = out - self._log_truncation(theta)
        return np.where(np.isnan(out), -np.inf, out)

    def _log_truncation(self, theta: np.ndarray) -> np.ndarray:
        r"""``log P(K_N <= L | θ, d)`` for an array of ``θ``:
        ``logsumexp_k [Σ_{i<k} log(θ + i d) + log W(N, k; d)] + log Γ(θ+1) − log Γ(θ+N)``."""
        total = np.full(theta.shape, -np.inf)
        for k in range(1, self.n_slots + 1):
            total = np.logaddexp(total, self._log_rising(theta, k) + self._log_w[k - 1])
        return total + gammaln(theta + 1.0) - gammaln(theta + self.n_items)

    def _log_rising(self, theta: np.ndarray, k: int) -> np.ndarray:
        r"""``Σ_{i=1}^{k-1} log(θ + i d)``: ``(k-1) log θ`` for ``d = 0``, else
        ``(k-1) log d + log Γ(θ/d + k) − log Γ(θ/d + 1)``."""
        if k == 1:
            return np.zeros_like(theta)
        d = self.discount
        if d == 0.0:
            return (k - 1) * np.log(theta)
        return (k - 1) * np.log(d) + gammaln(theta / d + k) - gammaln(theta / d + 1.0)

    def _build_grid(self, lo: float, hi: float) -> None:
        n_points = int(np.ceil((hi - lo) / self.step)) + 1
        self._x = lo + self.step * np.arange(n_points)
        self._base = self._log_base(self._x)

    def _log_integrand_grid(self, k: int) -> np.ndarray:
        return self._base + self._log_rising(np.exp(self._x), k)

    def _end_gaps(self) -> tuple[float, float]:
        """The smallest gaps, over ``K``, between the peak of ``log f_K`` and its values at the
        two ends of the grid."""
        low = high = np.inf
        for k in self._ks():
            values = self._log_integrand_grid(k)
            top = values.max()
            if not np.isfinite(top):
                raise ValueError("the prior of the concentration gives no mass to θ > 0")
            low, high = min(low, top - values[0]), min(high, top - values[-1])
        return low, high

    def log_integrand(self, x, k: int) -> np.ndarray:
        r"""``log f_K(x) = log π(e^x) + x + log h_K(e^x)`` at ``x = log θ``."""
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        return self._log_base(x) + self._log_rising(np.exp(x), k)

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
        :data:`TAIL_NATS` of its peak: ``(x, log f, cumulative interval masses, bound)``."""
        found = self._cache.get(k)
        if found is not None:
            return found
        values = self._log_integrand_grid(k)
        keep = np.flatnonzero(values > values.max() - TAIL_NATS)
        lo, hi = max(keep[0] - 1, 0), min(keep[-1] + 1, values.size - 1)
        x, v = self._x[lo : hi + 1], values[lo : hi + 1]
        v = v - v.max()
        delta = np.diff(v)
        # mass of each interval under exp(linear interpolation): h e^{v_i} (e^Δ - 1)/Δ
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(np.abs(delta) < 1e-12, 1.0, np.expm1(delta) / delta)
        masses = self.step * np.exp(v[:-1]) * factor
        curvature = np.max(-np.diff(v, 2), initial=0.0) / self.step**2
        bound = 2.0 * self.step**2 / 8.0 * max(curvature, 0.0) + 1e-12
        found = (x, v, np.cumsum(masses), bound, values.max())
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[k] = found
        return found

    def draw(self, k: int, rng: np.random.Generator, max_tries: int = 1000) -> float:
        """An exact draw of ``θ`` from ``p(θ | K = k)`` (rejection sampling, module docstring)."""
        k = int(k)
        if not 1 <= k <= self.max_blocks:
            raise ValueError(f"k must lie in 1..{self.max_blocks}, got {k}")
        x, v, cumulative, bound, peak = self._proposal(k)
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
            log_target = float(self.log_integrand(proposal, k)[0]) - peak
            if np.log(u_accept) < log_target - chord - bound:
                return float(np.exp(proposal))
        raise RuntimeError(f"no draw of the concentration accepted in {max_tries} tries")

    def posterior_mean(self, k: int) -> float:
        """``E[θ | K = k]`` by the trapezoidal rule (for checks)."""
        values = self._log_integrand_grid(int(k))
        weights = np.exp(values - values.max())
        return float(np.sum(weights * np.exp(self._x)) / np.sum(weights))
