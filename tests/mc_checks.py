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
    ``density`` (on the uniform ``grid``) off by more than ``k`` standard errors of
    :func:`standard_errors` (the indicator's MCSE, at least ``sqrt(q (1 - q) / ESS)``; no
    fixed slack), and with ``check_mean`` the mean off by more than ``k`` MCSEs. ``draws`` is
    ``(chain, draw)``. An empty list: the draws pass."""
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
        error = float(standard_errors(below, prob))
        if abs(below.mean() - prob) > k * error:
            failures.append((prob, round(below.mean(), 4), round(error, 4)))
    return failures


def standard_errors(draws, exact=None):
    """Monte Carlo standard error of the mean of each quantity in ``draws`` (``(chain, draw)``
    or ``(chain, draw, q)``): ArviZ's batch-means MCSE.

    With ``exact`` (the quantities are indicators of events of exact probability ``q``) the
    error is bounded below by ``sqrt(q (1 - q) / n_eff)``. The MCSE and effective sample size
    of an event that is rarely visited, in clumps, are themselves poorly estimated (a chain
    that saw it in 3 short visits instead of 6 reports a small MCSE about a low mean), so such
    an event (``q`` outside [0.05, 0.95]) takes for ``n_eff`` the smallest bulk ESS of the
    well-visited quantities passed with it (all draws if there are none); a well-visited one
    takes its own ESS, so its bound is about its MCSE. No fixed floor is added (a floor of
    0.01 is the size of a bias once found in a label step)."""
    draws = np.asarray(draws, dtype=float)
    dataset = az.convert_to_dataset({"q": draws})
    mcse = np.nan_to_num(az.mcse(dataset)["q"].values, nan=0.0)
    if exact is None:
        return mcse
    exact = np.broadcast_to(np.asarray(exact, dtype=float), mcse.shape)
    n_draws = draws.shape[0] * draws.shape[1]
    ess = np.minimum(np.nan_to_num(az.ess(dataset)["q"].values, nan=n_draws), n_draws)
    rare = (exact < 0.05) | (exact > 0.95)
    n_eff = np.where(rare, ess[~rare].min() if (~rare).any() else n_draws, ess)
    return np.maximum(mcse, np.sqrt(exact * (1.0 - exact) / np.maximum(n_eff, 1.0)))


def z_scores(draws, exact, indicators=True):
    """``(mean over chains and draws - exact) / standard error`` of each quantity in ``draws``
    (the standard errors of :func:`standard_errors`, bounded below for ``indicators``); 0 where
    the mean equals ``exact`` with a zero error, ``inf`` where it differs with one."""
    draws = np.asarray(draws, dtype=float)
    diff = draws.mean(axis=(0, 1)) - np.asarray(exact, dtype=float)
    error = standard_errors(draws, exact if indicators else None)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(error > 0, diff / np.where(error > 0, error, 1.0), np.inf * np.abs(diff))
    return np.nan_to_num(z, nan=0.0)
