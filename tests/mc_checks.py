"""Monte Carlo checks of draws against an exact density given on a uniform grid (no package
code: the exact densities come from ``oracles.py`` or from closed forms)."""

import arviz as az
import numpy as np


def cumulative_integral(density):
    """Normalised CDF of ``density`` on a uniform grid, each interval integrated by the
    quadratic through it and a neighbour (``(5f_i + 8f_{i+1} - f_{i+2}) h / 12``; the last
    interval mirrored), an error of order ``h⁴`` per interval against the trapezoid's ``h³``."""
    density = np.asarray(density, dtype=float)
    pieces = np.empty(density.size - 1)
    pieces[:-1] = 5.0 * density[:-2] + 8.0 * density[1:-1] - density[2:]
    pieces[-1] = -density[-3] + 8.0 * density[-2] + 5.0 * density[-1]
    cdf = np.concatenate([[0.0], np.cumsum(pieces)])
    return cdf / cdf[-1]


def quantile_failures(
    draws, grid, density, k=4.0, probs=(0.1, 0.25, 0.5, 0.75, 0.9), check_mean=False
):
    """The checks that the draws fail: ``P(x <= q)`` at the exact quantiles ``q`` of
    ``density`` (on the uniform ``grid``) off by more than ``k`` Monte Carlo SEs + 0.005, and
    with ``check_mean`` the mean off by more than ``k`` SEs. An empty list: the draws pass."""
    draws = np.asarray(draws, dtype=float)
    cdf = cumulative_integral(density)
    failures = []
    if check_mean:
        weights = np.diff(cdf)  # the mass of each grid interval, at its midpoint
        exact_mean = float(np.sum(0.5 * (grid[1:] + grid[:-1]) * weights))
        mcse = float(np.ravel(az.mcse(draws))[0])
        if abs(draws.mean() - exact_mean) > k * mcse:
            failures.append(("mean", round(draws.mean(), 4), round(exact_mean, 4), mcse))
    for prob in probs:
        below = (draws <= np.interp(prob, cdf, grid)).astype(float)
        mcse = float(np.ravel(az.mcse(below))[0])
        if abs(below.mean() - prob) > k * mcse + 0.005:
            failures.append((prob, round(below.mean(), 4), round(mcse, 4)))
    return failures
