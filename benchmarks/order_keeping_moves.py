"""Benchmark: the order-keeping utility moves, compiled against their NumPy versions.

The ``U0`` step (``UtilityMeanGibbs``) makes ten list-free cycles per iteration, each a scan of
draws within the current intervals (:func:`pymc_crp.core.utility_gibbs.cell_draws`), a shift
and scale move of every column (:func:`pymc_crp.core.column_moves.column_moves`) and a swap
of two columns (:func:`~pymc_crp.core.column_moves.column_swaps`) of every occupied slot; the
utility step makes more. Each is now one compiled call; the previous implementations, kept
here as the competitors, were vectorised NumPy/SciPy over the slots (a sort, a gather and
SciPy's ``ndtr``/``ndtri`` per column and parity).

Settings: the demo's model size (4 occupied slots, 16 items, ``K = 3``) and that of the 1,000
heterogeneous rankings (60 slots, 10 items, ``K = 3``); ``ρ = 0.5``, random means, scales
0.8. Both implementations are first checked to give the same utilities from the same
uniforms and normals (to 1e-9). Prints microseconds per call of each and their ratio. Run
with ``python benchmarks/order_keeping_moves.py``.
"""

from __future__ import annotations

import time

import numpy as np
from machine import describe_machine
from scipy.special import ndtr, ndtri

from pymc_crp.core.column_moves import column_moves, column_swaps
from pymc_crp.core.utility_gibbs import cell_draws

SETTINGS = {"demo (4 x 16 x 3)": (4, 16, 3), "heterogeneous (60 x 10 x 3)": (60, 10, 3)}


def _truncated_normal(low, high, mu, sd, uniform):
    """The previous NumPy truncated normal draw (mirrored in the upper tail)."""
    alpha, beta = (low - mu) / sd, (high - mu) / sd
    upper = alpha > 0.0
    lo = ndtr(np.where(upper, -beta, alpha))
    hi = ndtr(np.where(upper, -alpha, beta))
    z = ndtri(lo + uniform * (hi - lo))
    x = mu + sd * np.where(upper, -z, z)
    x = np.where(np.isfinite(x), x, np.where(np.isfinite(low), low, high))
    return np.minimum(np.maximum(x, np.nextafter(low, np.inf)), np.nextafter(high, -np.inf))


def _conditionals(utilities, mean, rho, scale, k):
    """Means and standard deviations of column ``k`` given the others (vectorised)."""
    n_dims = utilities.shape[-1]
    weight = rho / (1.0 + (n_dims - 2) * rho)
    sd = scale * np.sqrt((1.0 - rho) * (1.0 + (n_dims - 1) * rho) / (1.0 + (n_dims - 2) * rho))
    deviation = utilities - mean
    return mean[:, :, k] + weight * (deviation.sum(axis=2) - deviation[:, :, k]), sd


def numpy_cell_draws(utilities, mean, rho, scale, uniforms) -> None:
    """The previous ``cell_draws``: per column and parity, vectorised over the slots."""
    n_slots, n_items, n_dims = utilities.shape
    slots = np.arange(n_slots)[:, None]
    for k in range(n_dims):
        for parity in (0, 1):
            column = utilities[:, :, k]
            order = np.argsort(column, axis=1, kind="stable")
            ranked = np.take_along_axis(column, order, axis=1)
            ranks = np.arange(parity, n_items, 2)
            below = np.full((n_slots, ranks.size), -np.inf)
            above = np.full((n_slots, ranks.size), np.inf)
            inner = ranks > 0
            below[:, inner] = ranked[:, ranks[inner] - 1]
            inner = ranks < n_items - 1
            above[:, inner] = ranked[:, ranks[inner] + 1]
            items = order[:, ranks]
            tied = np.any(ranked[:, 1:] == ranked[:, :-1], axis=1)
            mu, sd = _conditionals(utilities, mean, rho, scale, k)
            draws = _truncated_normal(
                below, above, mu[slots, items], sd[slots, items], uniforms[k, parity][slots, items]
            )
            utilities[slots, items, k] = np.where(tied[:, None], utilities[slots, items, k], draws)


def numpy_column_moves(utilities, mean, rho, scale, normals, uniforms) -> None:
    """The previous ``column_moves`` (``M > 2``): vectorised over the slots."""
    n_items = utilities.shape[1]
    for k in range(utilities.shape[2]):
        column = utilities[:, :, k]
        ranked = np.sort(column, axis=1)
        untied = np.all(ranked[:, 1:] > ranked[:, :-1], axis=1)
        mu, sd = _conditionals(utilities, mean, rho, scale, k)
        w = 1.0 / sd**2
        w_sum = w.sum(axis=1)
        resid = column - (np.sum(w * column, axis=1) / w_sum)[:, None]
        centre = np.sum(w * (mu - resid), axis=1) / w_sum + normals[k, 0] / np.sqrt(w_sum)
        a = np.sum(w * resid**2, axis=1)
        b = np.sum(w * resid * (mu - centre[:, None]), axis=1)
        power = n_items - 2.0
        mode = (b + np.sqrt(b**2 + 4.0 * a * power)) / (2.0 * a)
        kappa = a + power / mode**2
        factor = mode + normals[k, 1] / np.sqrt(kappa)
        c = np.where(factor > 0, factor, 1.0)
        log_ratio = (
            power * np.log(c) - 0.5 * a * (c**2 - 1.0) + b * (c - 1.0)
            + 0.5 * kappa * ((c - mode) ** 2 - (1.0 - mode) ** 2)
        )  # fmt: skip
        ok = untied & (factor > 0) & (np.log(uniforms[k]) < log_ratio)
        scaled = centre[:, None] + np.where(ok, c, 1.0)[:, None] * resid
        utilities[:, :, k] = np.where(untied[:, None], scaled, column)


def numpy_column_swaps(utilities, mean, rho, scale, pairs, uniforms) -> None:
    """The previous ``column_swaps``."""
    n_slots, _, n_dims = utilities.shape
    first, second = np.triu_indices(n_dims, k=1)
    k, l = first[pairs], second[pairs]
    slots = np.arange(n_slots)
    x_k, x_l = utilities[slots, :, k], utilities[slots, :, l]
    m_k, m_l = mean[slots, :, k], mean[slots, :, l]
    log_ratio = np.sum((x_l - x_k) * (m_k - m_l) / (scale**2 * (1.0 - rho)), axis=1)
    accepted = np.log(uniforms) < log_ratio
    swap = slots[accepted]
    utilities[swap, :, k[accepted]], utilities[swap, :, l[accepted]] = x_l[accepted], x_k[accepted]


def _per_call(fn, args, n_calls) -> float:
    """Microseconds per call of ``fn(u.copy(), *args)`` (the copy timed apart)."""
    u = args[0]
    fn(u.copy(), *args[1:])  # compile or warm up
    start = time.perf_counter()
    for _ in range(n_calls):
        fn(u.copy(), *args[1:])
    mid = time.perf_counter()
    for _ in range(n_calls):
        u.copy()
    return 1e6 * ((mid - start) - (time.perf_counter() - mid)) / n_calls


def main() -> None:
    print(describe_machine())
    rng = np.random.default_rng(0)
    print(f"{'setting':30s} {'move':14s} {'NumPy us':>9s} {'compiled us':>12s} {'ratio':>7s}")
    for name, (n_slots, n_items, n_dims) in SETTINGS.items():
        u = rng.normal(size=(n_slots, n_items, n_dims))
        mean = 0.5 * rng.normal(size=u.shape)
        rho, scale = np.full((n_slots, n_items), 0.5), np.full((n_slots, n_items), 0.8)
        moves = {
            "cell_draws": (numpy_cell_draws, cell_draws, rng.random((n_dims, 2, n_slots, n_items))),
            "column_moves": (
                numpy_column_moves,
                column_moves,
                rng.standard_normal((n_dims, 2, n_slots)),
                rng.random((n_dims, n_slots)),
            ),
            "column_swaps": (
                numpy_column_swaps,
                column_swaps,
                rng.integers(n_dims * (n_dims - 1) // 2, size=n_slots),
                rng.random(n_slots),
            ),
        }
        for move, (previous, compiled, *draws) in moves.items():
            args = (u, mean, rho, scale, *draws)
            a, b = u.copy(), u.copy()
            previous(a, *args[1:])
            compiled(b, *args[1:])
            if not np.allclose(a, b, rtol=1e-9, atol=1e-12):
                raise AssertionError(f"{move}: the implementations disagree")
            n_calls = 3000
            before, now = _per_call(previous, args, n_calls), _per_call(compiled, args, n_calls)
            print(f"{name:30s} {move:14s} {before:9.1f} {now:12.1f} {before / now:6.1f}x")


if __name__ == "__main__":
    main()
