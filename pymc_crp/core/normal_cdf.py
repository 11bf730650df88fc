r"""Compiled standard normal CDF, its logarithm and inverse, and truncated normal draws.

The scalar functions that the compiled coordinate scans
(:mod:`pymc_crp.core.coordinate_scan`) need where NumPy code calls ``scipy.special``:

.. math::

    Φ(x) = \tfrac12 \operatorname{erfc}(-x/\sqrt2), \qquad
    \log Φ(x) \approx -\tfrac{x^2}{2} - \log(-x) - \tfrac12\log 2π
        + \log\Big(1 - \frac{1}{x^2} + \frac{3}{x^4} - \frac{15}{x^6} + \frac{105}{x^8}
        - \frac{945}{x^{10}}\Big) \quad (x < -30),

and ``Φ^{-1}`` by Acklam's rational approximation refined by one Halley step on ``Φ`` (two
Newton steps on ``log Φ`` below ``Φ(-37)``): relative errors of about ``1e-13`` or less. The
truncated normal draw is the one every utility move uses (Python callers through
:func:`~pymc_crp.core.utility_gibbs.truncated_normal`); the interval masses are those of
:func:`~pymc_crp.core.utility_gibbs.interval_log_masses`, one value at a time. No PyMC here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "ndtr", "log_ndtr", "ndtri", "normal_log_pdf", "log_interval_mass", "truncated_normal_draw",
]  # fmt: skip

_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
# Acklam's coefficients: central region (a, b), tails (c, d).
_A = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690,
      -30.66479806614716, 2.506628277459239)  # fmt: skip
_B = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
      -13.28068155288572)  # fmt: skip
_C = (-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734,
      4.374664141464968, 2.938163982698783)  # fmt: skip
_D = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
_P_LOW = 0.02425


@njit(cache=True, nogil=True)
def ndtr(x: float) -> float:  # pragma: no cover - compiled
    """``Φ(x)``, the standard normal CDF."""
    return 0.5 * math.erfc(-x * _SQRT_HALF)


@njit(cache=True, nogil=True)
def normal_log_pdf(x: float, mu: float, sd: float) -> float:  # pragma: no cover - compiled
    """``log N(x; μ, σ²) = -z²/2 - log σ - log √(2π)``, ``z = (x - μ)/σ``."""
    z = (x - mu) / sd
    return -0.5 * z * z - math.log(sd) - _LOG_SQRT_2PI


@njit(cache=True, nogil=True)
def log_ndtr(x: float) -> float:  # pragma: no cover - compiled
    """``log Φ(x)``, accurate in both tails (module docstring)."""
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x * _SQRT_HALF))
    if x > -30.0:
        return math.log(0.5 * math.erfc(-x * _SQRT_HALF))
    if x == -math.inf:
        return -math.inf
    s = 1.0 / (x * x)
    series = 1.0 - s * (1.0 - s * (3.0 - s * (15.0 - s * (105.0 - s * 945.0))))
    return -0.5 * x * x - math.log(-x) - _LOG_SQRT_2PI + math.log(series)


@njit(cache=True, nogil=True)
def _tail(t: float) -> float:  # pragma: no cover - compiled
    num = ((((_C[0] * t + _C[1]) * t + _C[2]) * t + _C[3]) * t + _C[4]) * t + _C[5]
    return num / ((((_D[0] * t + _D[1]) * t + _D[2]) * t + _D[3]) * t + 1.0)


@njit(cache=True, nogil=True)
def _ndtri_lower(q: float) -> float:  # pragma: no cover - compiled
    """``Φ^{-1}(q)`` for ``0 < q <= 1/2``."""
    if q < _P_LOW:
        x = _tail(math.sqrt(-2.0 * math.log(q)))
    else:
        r = q - 0.5
        s = r * r
        num = (((((_A[0] * s + _A[1]) * s + _A[2]) * s + _A[3]) * s + _A[4]) * s + _A[5]) * r
        x = num / (((((_B[0] * s + _B[1]) * s + _B[2]) * s + _B[3]) * s + _B[4]) * s + 1.0)
    if x > -37.0:  # one Halley step on Φ(x) = q (exp(x²/2) stays finite)
        e = ndtr(x) - q
        u = e * _SQRT_2PI * math.exp(0.5 * x * x)
        return x - u / (1.0 + 0.5 * x * u)
    log_q = math.log(q)  # the far lower tail: Newton steps on log Φ(x) = log q
    for _ in range(2):
        x -= (log_ndtr(x) - log_q) / math.exp(normal_log_pdf(x, 0.0, 1.0) - log_ndtr(x))
    return x


@njit(cache=True, nogil=True)
def ndtri(q: float) -> float:  # pragma: no cover - compiled
    """``Φ^{-1}(q)`` (``±∞`` at 0 and 1, NaN outside ``[0, 1]``); above 1/2 as
    ``-Φ^{-1}(1 - q)`` (``1 - q`` is exact there)."""
    if not 0.0 <= q <= 1.0:
        return math.nan
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    return _ndtri_lower(q) if q <= 0.5 else -_ndtri_lower(1.0 - q)


@njit(cache=True, nogil=True)
def log_interval_mass(low: float, high: float, mu: float, sd: float) -> float:
    # pragma: no cover - compiled
    """``log P(low < X < high)`` for ``X ~ N(mu, sd²)``: ``log(Φ(β) - Φ(α))`` computed in the
    tail away from the mean (``1 - Φ(t) = Φ(-t)``)."""
    alpha, beta = (low - mu) / sd, (high - mu) / sd
    if alpha > 0.0:
        hi, lo = log_ndtr(-alpha), log_ndtr(-beta)
    else:
        hi, lo = log_ndtr(beta), log_ndtr(alpha)
    if lo == -math.inf:
        return hi
    return hi + math.log1p(-math.exp(lo - hi))


@njit(cache=True, nogil=True)
def truncated_normal_draw(low: float, high: float, mu: float, sd: float, uniform: float) -> float:
    # pragma: no cover - compiled
    r"""``N(mu, sd²)`` restricted to ``(low, high)`` by the inverse CDF from ``uniform``:
    ``x = μ + σ Φ^{-1}(Φ(α) + u (Φ(β) - Φ(α)))``, mirrored when ``α > 0``; strictly inside
    the interval, its nearest end where the mass underflows."""
    alpha, beta = (low - mu) / sd, (high - mu) / sd
    upper = alpha > 0.0
    lo = ndtr(-beta) if upper else ndtr(alpha)
    hi = ndtr(-alpha) if upper else ndtr(beta)
    z = ndtri(lo + uniform * (hi - lo))
    x = mu + sd * (-z if upper else z)
    if not math.isfinite(x):
        x = low if math.isfinite(low) else high
    return min(max(x, np.nextafter(low, math.inf)), np.nextafter(high, -math.inf))
