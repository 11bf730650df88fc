r"""Exact Hamiltonian trajectories of one slot's utilities: Gaussian prior, piecewise-constant
list likelihood.

The utilities ``U`` ``(M, K)`` of one slot have independent equicorrelated Gaussian rows
``U_j ~ N(μ_j, s_j^2 Σ_{ρ_j})``, ``Σ_ρ = (1-ρ) I + ρ 1 1ᵀ``, and the slot's lists read them only
through the dominance order ``h(U)`` (``a`` above ``b`` iff ``U_{a,k} > U_{b,k}`` in every
column). With ``U = μ + S w`` (``S`` the rows' ``s_j Σ_{ρ_j}^{1/2}``) the target is

.. math::

    π(w) ∝ \exp\big(-\tfrac12 \lVert w \rVert^2 - E(h)\big), \qquad
    E(h) = -λ \sum_{i:\, z_i = a} \log p(Y_i \mid h, p),

and the Hamiltonian ``½‖w‖² + ½‖ẇ‖² + E`` moves, between the walls ``U_{a,k} = U_{b,k}``, on
the ellipse ``w(t) = w(0) \cos t + ẇ(0) \sin t``, i.e. in the utilities

.. math::

    U(t) = μ + (U(0) - μ) \cos t + V(0) \sin t, \qquad V(0) \sim N(0, s_j^2 Σ_{ρ_j})
    \text{ per row}.

Two items ``a`` (above) and ``b`` of a column ``k`` that are neighbours in that column meet
where ``F(t) = c + A \cos t + B \sin t`` (``F = U_{a,k} - U_{b,k}``) falls through zero, at
``t = φ + \arccos(-c/R)`` (mod ``2π``), ``R e^{iφ} = A + iB``. At a wall whose crossing
changes the order (``a`` and ``b`` ordered alike in every other column, so that the relation
``a ≻ b`` is lost or ``b ≻ a`` gained) the energy jumps by ``ΔE``; with ``v_n`` the velocity
along the wall's unit normal ``g/‖g‖`` in ``w`` (``v_n = Ḟ/‖g‖``, ``‖g‖^2 = s_a^2 + s_b^2``)
the particle crosses with ``v_n' = \operatorname{sign}(v_n)\sqrt{v_n^2 - 2ΔE}`` when
``v_n^2 > 2ΔE`` and is reflected, ``v_n' = -v_n``, otherwise (refraction and reflection:
Pakman & Paninski 2013; Mohasel Afshar & Domke 2015). In the utilities the velocity changes by
``(v_n' - v_n)/‖g‖ · (s_a^2 Σ_{ρ_a} e_k, -s_b^2 Σ_{ρ_b} e_k)`` on rows ``a`` and ``b``. Walls
whose crossing leaves the order unchanged are passed freely. The flow keeps the Hamiltonian
and the volume and is reversible under a flip of the velocity, so its end point after a fixed
time ``T``, from a fresh Gaussian velocity, is a move that keeps the target with no
accept/reject step (the same argument as for exact HMC of truncated Gaussians, whose walls
are all reflecting).

Bookkeeping: each column's items are kept in their order (``pos``/``rank``), each
neighbouring pair's next meeting time is cached and recomputed only for the pairs whose rows
changed velocity or whose neighbours changed; a reflection's ``ΔE`` is cached for the current
order. A trajectory that meets more than ``max_events`` walls, or ends with a column out of
its tracked order (floating-point trouble near a grazing wall), is undone (the start is kept).
A start with two equal values in a column (a state of probability zero, such as PyMC's default
start at a zero prior mean, where the order treats them as incomparable) is left as it is for
the other moves to break the tie.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.item_sweep import _move_logliks

__all__ = ["cone_trajectories", "cone_trajectory", "hmc_trajectory_kernel", "next_fall_time"]

_TWO_PI = 2.0 * math.pi


@njit(cache=True, nogil=True)
def next_fall_time(c, a, b, now):  # pragma: no cover - compiled
    """The first ``t > now`` at which ``F(t) = c + a cos t + b sin t`` falls through zero
    (``Ḟ ≤ 0``): ``t = φ + arccos(-c/R) + 2πn``, ``R = hypot(a, b)``, ``φ = atan2(b, a)``;
    ``inf`` if ``F`` never falls through zero (``|c| > R``)."""
    r = math.hypot(a, b)
    if r <= c:
        return math.inf
    x = -c / r
    if x > 1.0:  # F < 0 throughout (only after floating-point trouble; the caller checks)
        return math.inf
    if x < -1.0:
        x = -1.0
    t = math.atan2(b, a) + math.acos(x)
    n = math.floor((now - t) / _TWO_PI) + 1.0
    t += n * _TWO_PI
    while t <= now:
        t += _TWO_PI
    while t - _TWO_PI > now:
        t -= _TWO_PI
    return t


@njit(cache=True, nogil=True)
def _pair_time(mean, dev, vel, pos, k, r, now):  # pragma: no cover - compiled
    lo = pos[k, r]
    hi = pos[k, r + 1]
    c = mean[hi, k] - mean[lo, k]
    return next_fall_time(c, dev[hi, k] - dev[lo, k], vel[hi, k] - vel[lo, k], now)


@njit(cache=True, nogil=True)
def _refresh_row(mean, dev, vel, pos, rank, times, item, now):  # pragma: no cover - compiled
    """Recompute the meeting times of the pairs that ``item`` belongs to, in every column."""
    n_items = pos.shape[1]
    for k in range(pos.shape[0]):
        r = rank[k, item]
        if r > 0:
            times[k, r - 1] = _pair_time(mean, dev, vel, pos, k, r - 1, now)
        if r < n_items - 1:
            times[k, r] = _pair_time(mean, dev, vel, pos, k, r, now)


@njit(cache=True, nogil=True)
def _rebase(dev, vel, item, t):  # pragma: no cover - compiled
    """Row ``item`` holds its position minus the mean ``P`` in ``dev`` and its velocity ``Q``
    at time ``t`` in ``vel``; rewrite them as the coefficients of ``μ + dev cos s + vel sin s``
    (``dev = P cos t - Q sin t``, ``vel = P sin t + Q cos t``)."""
    c, s = math.cos(t), math.sin(t)
    for k in range(dev.shape[1]):
        p, q = dev[item, k], vel[item, k]
        dev[item, k] = p * c - q * s
        vel[item, k] = p * s + q * c


@njit(cache=True, nogil=True)
def _kick(dev, vel, rho, scale2, hi, lo, k_wall, now, jump):  # pragma: no cover - compiled
    """Change the velocity of rows ``hi`` and ``lo`` at time ``now`` by ``jump`` along the
    normal of their wall in column ``k_wall``: ``± jump s^2 Σ_ρ e_k`` per row (module
    docstring), and rebase both rows at ``now``."""
    ct, st = math.cos(now), math.sin(now)
    n_dims = dev.shape[1]
    for side in range(2):
        item = hi if side == 0 else lo
        sign = 1.0 if side == 0 else -1.0
        r = rho[item] if n_dims >= 2 else 0.0
        for k in range(n_dims):
            q = vel[item, k] * ct - dev[item, k] * st
            column = (1.0 - r) * (1.0 if k == k_wall else 0.0) + r
            dev[item, k] = dev[item, k] * ct + vel[item, k] * st
            vel[item, k] = q + sign * jump * scale2[item] * column
        _rebase(dev, vel, item, now)


@njit(cache=True, nogil=True)
def _toggled_order(
    words, hi, lo, lo_over_hi, dual, masks, by_item, starts
):  # pragma: no cover - compiled
    """``(words, counted)`` after ``hi`` falls below ``lo`` in a column where that changes the
    order: the relation ``hi ≻ lo`` is lost (``lo_over_hi`` False) or ``lo ≻ hi`` gained
    (bitsets of :mod:`pymc_crp.core.restricted_orders`: row ``x``'s words ``0, 1`` hold the
    items above ``x`` (below it for ``dual``), words ``2, 3`` those comparable to it); and the
    slot's lists ``counted`` that contain both items, whose restricted order changes."""
    out = words.copy()
    hbit = np.uint64(1) << np.uint64(hi % 64)
    lbit = np.uint64(1) << np.uint64(lo % 64)
    hword = hi // 64
    lword = lo // 64
    out[lword, hi] &= ~lbit
    out[2 + lword, hi] &= ~lbit
    out[hword, lo] &= ~hbit
    out[2 + hword, lo] &= ~hbit
    if lo_over_hi:
        out[2 + lword, hi] |= lbit
        out[2 + hword, lo] |= hbit
        if dual:
            out[hword, lo] |= hbit  # hi below lo
        else:
            out[lword, hi] |= lbit  # lo above hi
    rows = by_item[starts[hi] : starts[hi + 1]] if hi < starts.shape[0] - 1 else by_item[:0]
    counted = np.empty(rows.shape[0], np.int64)
    n = 0
    for t in range(rows.shape[0]):
        u = rows[t]
        if masks[u, lword] & lbit:
            counted[n] = u
            n += 1
    return out, counted[:n]


@njit(cache=True, nogil=True)
def _toggle(
    words, hi, lo, lo_over_hi, dual, masks, by_item, starts,
    steps, lengths, inverse, p, binom_f, max_states, memo,
):  # fmt: skip  # pragma: no cover - compiled
    """:func:`_toggled_order` and the new log-likelihoods and count ratios of the lists it
    counts: ``(words, counted, logliks, ratios, ok)``."""
    new_words, counted = _toggled_order(words, hi, lo, lo_over_hi, dual, masks, by_item, starts)
    if counted.shape[0] == 0:
        return new_words, counted, np.empty(0), np.empty((0, 0)), True
    logliks, ratios, ok = _move_logliks(
        new_words, steps, lengths, inverse, counted, p, binom_f, max_states, memo
    )
    return new_words, counted, logliks, ratios, ok


@njit(cache=True, nogil=True)
def _initial_velocity(rng, scale2, rho, n_dims):  # pragma: no cover - compiled
    """Per row ``s Σ_ρ^{1/2} z``, ``z ~ N(0, I)``: ``Σ_ρ^{1/2} z = √(1-ρ) z + (√(1+(K-1)ρ) -
    √(1-ρ)) z̄ 1`` (the symmetric square root, for any ``-1/(K-1) < ρ < 1``)."""
    n_items = scale2.shape[0]
    vel = np.empty((n_items, n_dims))
    for j in range(n_items):
        s = math.sqrt(scale2[j])
        r = rho[j] if n_dims >= 2 else 0.0
        a = math.sqrt(1.0 - r)
        b = math.sqrt(1.0 + (n_dims - 1) * r) - a
        mean_z = 0.0
        for k in range(n_dims):
            vel[j, k] = rng.standard_normal()
            mean_z += vel[j, k]
        mean_z /= n_dims
        for k in range(n_dims):
            vel[j, k] = s * (a * vel[j, k] + b * mean_z)
    return vel


@njit(cache=True, nogil=True)
def _start(rng, utilities, mean, rho, scale2):  # pragma: no cover - compiled
    """``(ok, pos, rank, vel, dev, times)`` at the start of a trajectory: each column's items
    in increasing order (``pos``) and their ranks, a fresh velocity, the deviation from the
    mean and every neighbouring pair's next meeting time; ``ok`` False (nothing drawn) if a
    column holds two equal values."""
    n_items, n_dims = utilities.shape
    pos = np.empty((n_dims, n_items), np.int64)
    rank = np.empty((n_dims, n_items), np.int64)
    times = np.full((n_dims, max(n_items - 1, 1)), np.inf)
    for k in range(n_dims):
        pos[k] = np.argsort(utilities[:, k])
        for r in range(n_items):
            rank[k, pos[k, r]] = r
        for r in range(n_items - 1):
            if not utilities[pos[k, r], k] < utilities[pos[k, r + 1], k]:
                empty = np.empty((n_items, n_dims))
                return False, pos, rank, empty, empty, times
    vel = _initial_velocity(rng, scale2, rho, n_dims)
    dev = utilities - mean
    for k in range(n_dims):
        for r in range(n_items - 1):
            times[k, r] = _pair_time(mean, dev, vel, pos, k, r, 0.0)
    return True, pos, rank, vel, dev, times


@njit(cache=True, nogil=True)
def _next_wall(times):  # pragma: no cover - compiled
    """``(time, column, rank)`` of the next meeting of neighbours."""
    best = math.inf
    bk = -1
    br = -1
    for k in range(times.shape[0]):
        for r in range(times.shape[1]):
            if times[k, r] < best:
                best = times[k, r]
                bk = k
                br = r
    return best, bk, br


@njit(cache=True, nogil=True)
def _wall_kind(rank, hi, lo, k_wall):  # pragma: no cover - compiled
    """``(hi_above, lo_above)``: ``hi ≻ lo`` before the meeting in column ``k_wall`` (``hi``
    above ``lo`` in every other column), ``lo ≻ hi`` after it; either means the crossing
    changes the order."""
    hi_above = True
    lo_above = True
    for k in range(rank.shape[0]):
        if k != k_wall:
            if rank[k, hi] > rank[k, lo]:
                lo_above = False
            else:
                hi_above = False
    return hi_above, lo_above


@njit(cache=True, nogil=True)
def _normal_velocity(dev, vel, hi, lo, k, now):  # pragma: no cover - compiled
    """``Ḟ(now)`` for ``F = U_{hi,k} - U_{lo,k}``."""
    ct, st = math.cos(now), math.sin(now)
    return (vel[hi, k] * ct - dev[hi, k] * st) - (vel[lo, k] * ct - dev[lo, k] * st)


@njit(cache=True, nogil=True)
def _after_wall(
    mean, dev, vel, pos, rank, times, hi, lo, k, r_wall, now, cross, kicked
):  # fmt: skip  # pragma: no cover - compiled
    """Bookkeeping after the meeting of ``hi`` and ``lo`` (ranks ``r_wall + 1``, ``r_wall``
    of column ``k``): swap them if the particle crossed, and recompute the meeting times that
    changed (every pair of both rows if their velocity was ``kicked``)."""
    if cross:
        pos[k, r_wall] = hi
        pos[k, r_wall + 1] = lo
        rank[k, hi] = r_wall
        rank[k, lo] = r_wall + 1
    if kicked:
        _refresh_row(mean, dev, vel, pos, rank, times, hi, now)
        _refresh_row(mean, dev, vel, pos, rank, times, lo, now)
    for r in range(max(r_wall - 1, 0), min(r_wall + 2, pos.shape[1] - 1)):
        times[k, r] = _pair_time(mean, dev, vel, pos, k, r, now)


@njit(cache=True, nogil=True)
def _land(utilities, mean, dev, vel, pos, duration):  # pragma: no cover - compiled
    """Write the position at ``duration`` into ``utilities``; False if a column is out of its
    tracked order there (floating-point trouble near a grazing wall)."""
    ct, st = math.cos(duration), math.sin(duration)
    n_items, n_dims = utilities.shape
    for j in range(n_items):
        for k in range(n_dims):
            utilities[j, k] = mean[j, k] + dev[j, k] * ct + vel[j, k] * st
    for k in range(n_dims):
        for r in range(n_items - 1):
            if not utilities[pos[k, r], k] < utilities[pos[k, r + 1], k]:
                return False
    return True


@njit(cache=True, nogil=True)
def hmc_trajectory_kernel(
    rng, utilities, mean, rho, scale2, duration, temperature, max_events,
    words, dual, masks, by_item, starts, logliks, slot_rows, slot_ratios,
    steps, lengths, inverse, p, binom_f, max_states, memo,
):  # fmt: skip  # pragma: no cover - compiled
    """One exact trajectory of duration ``duration`` of one slot (module docstring).

    ``utilities`` ``(M, K)`` (updated in place), ``mean`` the prior mean, ``rho`` and
    ``scale2`` ``(M,)`` each row's correlation and variance ``s_j^2``; ``temperature`` ``λ``.
    The list arguments are those of :func:`~pymc_crp.core.item_sweep.item_sweep_kernel`
    (``words``, ``logliks`` and ``slot_ratios`` are updated as walls are crossed). Returns
    ``(status, events, crossings, counted)``: status 0 done, 1 undone (``max_events`` walls
    or a column out of order at the end), 2 a count passed ``max_states`` (undone), 3 tied
    values in a column at the start (left as they are, no draw made);
    ``events`` the walls met, ``crossings`` those crossed that changed the order.
    """
    ok, pos, rank, vel, dev, times = _start(rng, utilities, mean, rho, scale2)
    if not ok:
        return 3, 0, 0, 0  # tied values: left as they are
    n_items, n_dims = utilities.shape
    start_u = utilities.copy()
    start_words = words.copy()
    start_logliks = logliks.copy()
    start_ratios = slot_ratios.copy()
    delta_cache = np.full((n_items, n_items), np.nan)  # ΔE of a pair's toggle, this order
    events = 0
    crossings = 0
    n_counted = 0
    status = 0
    while True:
        best, bk, br = _next_wall(times)
        if best >= duration:
            break
        events += 1
        if events > max_events:
            status = 1
            break
        now = best
        lo = pos[bk, br]  # below before the meeting
        hi = pos[bk, br + 1]  # above before the meeting
        hi_above, lo_above = _wall_kind(rank, hi, lo, bk)
        toggles = hi_above or lo_above
        cross = True
        if toggles:
            delta = delta_cache[hi, lo]
            have_new = False
            new_words = words
            counted = np.empty(0, np.int64)
            new_logliks = np.empty(0)
            new_ratios = np.empty((0, 0))
            if math.isnan(delta):
                new_words, counted, new_logliks, new_ratios, ok = _toggle(
                    words, hi, lo, lo_above, dual, masks, by_item, starts,
                    steps, lengths, inverse, p, binom_f, max_states, memo,
                )  # fmt: skip
                have_new = True
                n_counted += counted.shape[0]
                if not ok:
                    status = 2
                    break
                delta = 0.0
                if counted.shape[0] and temperature != 0.0:
                    old_sum = 0.0
                    for u in range(counted.shape[0]):
                        old_sum += logliks[counted[u]]
                    delta = -temperature * (new_logliks.sum() - old_sum)
                delta_cache[hi, lo] = delta
            norm = math.sqrt(scale2[hi] + scale2[lo])
            v_n = _normal_velocity(dev, vel, hi, lo, bk, now) / norm  # <= 0: hi falls
            if v_n * v_n > 2.0 * delta:
                new_v = -math.sqrt(v_n * v_n - 2.0 * delta)
            else:
                new_v = -v_n
                cross = False
            _kick(dev, vel, rho, scale2, hi, lo, bk, now, (new_v - v_n) / norm)
            if cross:
                crossings += 1
                if not have_new:  # ΔE came from the cache
                    new_words, counted, new_logliks, new_ratios, ok = _toggle(
                        words, hi, lo, lo_above, dual, masks, by_item, starts,
                        steps, lengths, inverse, p, binom_f, max_states, memo,
                    )  # fmt: skip
                    n_counted += counted.shape[0]
                    if not ok:
                        status = 2
                        break
                for u in range(counted.shape[0]):
                    logliks[counted[u]] = new_logliks[u]
                    at = np.searchsorted(slot_rows, counted[u])
                    slot_ratios[at, :] = new_ratios[u]
                words[:, :] = new_words
                delta_cache[:, :] = np.nan
        _after_wall(mean, dev, vel, pos, rank, times, hi, lo, bk, br, now, cross, toggles)
    if status == 0 and not _land(utilities, mean, dev, vel, pos, duration):
        status = 1
    if status != 0:
        utilities[:, :] = start_u
        words[:, :] = start_words
        logliks[:] = start_logliks
        slot_ratios[:, :] = start_ratios
    return status, events, crossings, n_counted


@njit(cache=True, nogil=True)
def cone_trajectory(
    rng, utilities, mean, rho, scale2, duration, max_events
):  # pragma: no cover - compiled
    """One exact trajectory of duration ``duration`` of one slot for its Gaussian prior
    restricted to the slot's current order: every wall whose crossing changes the order
    reflects (``ΔE = ∞``), the others are passed; no list is read. ``utilities`` ``(M, K)``
    is updated in place (arguments as in :func:`hmc_trajectory_kernel`). Returns the status
    of :func:`hmc_trajectory_kernel` (0 done, 1 undone, 3 tied values, left as they are)."""
    ok, pos, rank, vel, dev, times = _start(rng, utilities, mean, rho, scale2)
    if not ok:
        return 3
    start_u = utilities.copy()
    events = 0
    while True:
        now, bk, br = _next_wall(times)
        if now >= duration:
            break
        events += 1
        if events > max_events:
            utilities[:, :] = start_u
            return 1
        lo = pos[bk, br]
        hi = pos[bk, br + 1]
        hi_above, lo_above = _wall_kind(rank, hi, lo, bk)
        reflect = hi_above or lo_above
        if reflect:
            norm = math.sqrt(scale2[hi] + scale2[lo])
            v_n = _normal_velocity(dev, vel, hi, lo, bk, now) / norm
            _kick(dev, vel, rho, scale2, hi, lo, bk, now, -2.0 * v_n / norm)
        _after_wall(mean, dev, vel, pos, rank, times, hi, lo, bk, br, now, not reflect, reflect)
    if not _land(utilities, mean, dev, vel, pos, duration):
        utilities[:, :] = start_u
        return 1
    return 0


@njit(cache=True, nogil=True)
def cone_trajectories(
    rng, block, means, rho, scale2, duration, max_events
):  # pragma: no cover - compiled
    """:func:`cone_trajectory` of every slot of ``block`` ``(n, M, K)`` in turn (prior means
    ``means`` ``(n, M, K)``, ``rho`` and ``scale2`` ``(M,)`` shared by the slots); returns
    how many were undone."""
    undone = 0
    for a in range(block.shape[0]):
        if cone_trajectory(rng, block[a], means[a], rho, scale2, duration, max_events) == 1:
            undone += 1
    return undone
