r"""Moves of the split of two clusters' lists through their un-collapsed weight (NumPy core).

Under a Pitman--Yor partition prior with discount ``d`` the labels of the members ``U`` of two
occupied clusters ``a`` and ``b``, every other label held, have the conditional

.. math::

    p(c_U \mid \cdot) \propto Γ(n_a - d)\, Γ(n_b - d)
    \prod_{i \in U} e^{ℓ_{i c_i}}, \qquad n_a, n_b \ge 1,

(``ℓ_{ik}`` the log-likelihood of observation ``i`` under cluster ``k``'s parameters, which
are held). One observation at a time, a Gibbs sweep moves the share of the observations that
fit both clusters about equally by a random walk against the prior's rich-get-richer pull
(Pólya urn dynamics): the number of sweeps it takes to cross the share's posterior grows with
the number of such observations. Un-collapsing the pair's weight makes the move one step.
With ``w | c_U ~ Beta(n_a - d, n_b - d)`` the joint of ``η = logit w`` and ``c_U`` is

.. math::

    p(η, c_U) \propto w^{-d} (1 - w)^{-d}
    \prod_{i \in U} \big(w e^{ℓ_{ia}}\big)^{[c_i = a]} \big((1 - w) e^{ℓ_{ib}}\big)^{[c_i = b]},

so given ``η`` the labels are independent (conditioned on both sides being non-empty), and
with the labels summed out

.. math::

    p(η) \propto w^{-d} (1 - w)^{-d}\Big(\prod_{i \in U} \big(w e^{ℓ_{ia}} + (1 - w) e^{ℓ_{ib}}\big)
    - \prod_{i \in U} w e^{ℓ_{ia}} - \prod_{i \in U} (1 - w) e^{ℓ_{ib}}\Big).

The move (:func:`pair_weight_move`): draw ``η | c_U`` exactly, update ``η`` by a slice sampler
on ``p(η)`` (Neal 2003; stepping out and shrinkage), preceded when ``d > 0`` by an independence
Metropolis--Hastings proposal from a grid over ``p(η)`` (with a discount the Pólya prior gives
``p(η)`` a mode near each side taking the ambiguous members, which the slice sampler does not
cross; with ``d = 0`` the ambiguous members give it a plateau instead, which it crosses), and
draw ``c_U | η`` exactly (independent sides, redrawn while one side is empty). Each part
leaves the joint invariant, so the labels' conditional is left invariant; the clusters'
parameters and the set of occupied clusters do not change, and neither does anything outside
``U``.

References
----------
.. [1] Neal, R. M. (2003). Slice sampling. *Annals of Statistics* 31(3), 705--767.
.. [2] Pitman, J. and Yor, M. (1997). The two-parameter Poisson--Dirichlet distribution derived
   from a stable subordinator. *Annals of Probability* 25(2), 855--900.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["log_pair_weight_density", "pair_weight_move", "pick_pairs"]

# Slice sampler of η: initial interval width (logit units) and stepping-out limit per side.
SLICE_WIDTH = 2.0
SLICE_STEPS_OUT = 20
# Independence proposal of η: cells, and the margin beyond the switch points (plus log |U|).
GRID = 32
GRID_MARGIN = 6.0
# Rejection draws of the sides before the member-by-member draw.
REJECTIONS = 20


@njit(cache=True, nogil=True)
def _softplus_sums(etas, switch):  # pragma: no cover
    """For each ``η``: ``Σ_i softplus(r_i)`` and ``Σ_i softplus(-r_i)``, ``r_i = η - s_i`` over the
    members' switch points ``s_i = ℓ_{ib} - ℓ_{ia}`` (``softplus(r) = log(1 + e^r)``; each sum
    accurate by itself, so that neither is a difference of large numbers)."""
    out = np.empty((etas.size, 2))
    for g in range(etas.size):
        up = 0.0
        down = 0.0
        for i in range(switch.size):
            r = etas[g] - switch[i]
            shared = math.log1p(math.exp(-abs(r)))
            up += max(r, 0.0) + shared
            down += max(-r, 0.0) + shared
        out[g, 0] = up
        out[g, 1] = down
    return out


def log_pair_weight_density(eta, ll_a: np.ndarray, ll_b: np.ndarray, discount: float):
    r"""``log p(η)`` up to a constant (module docstring): the log-odds ``η`` of the pair's
    weight with the labels of its ``|U| ≥ 2`` members summed out (both sides non-empty);
    ``ll_a``, ``ll_b`` the members' log-likelihoods under the two clusters; ``η`` a scalar or
    an array (evaluated elementwise). With ``r_i = η + ℓ_{ia} - ℓ_{ib}`` it is

    .. math::

        -d \log w - d \log(1 - w) + \sum_i \big(\log(1 - w) + ℓ_{ib} + \mathrm{sp}(r_i)\big)
        + \log\Big(1 - e^{\sum_i (r_i - \mathrm{sp}(r_i))} - e^{-\sum_i \mathrm{sp}(r_i)}\Big),

    ``sp(r) = log(1 + e^r)``; the two exponentials are the probabilities that every member
    takes side ``a`` and side ``b`` given ``η``."""
    switch = np.ascontiguousarray(ll_b - ll_a, dtype=np.float64)
    return _log_weight_density(eta, switch, float(np.sum(ll_b)), discount)


def _log_weight_density(eta, switch, sum_b, discount):
    """:func:`log_pair_weight_density` at ``eta`` (a scalar or an array) from the members'
    switch points ``ℓ_b - ℓ_a`` (contiguous float64) and ``Σ ℓ_b``, which a move computes
    once."""
    eta_array = np.asarray(eta, dtype=float)
    etas = eta_array.reshape(-1)
    sums = _softplus_sums(etas, switch)
    all_b = -sums[:, 0]
    all_a = -sums[:, 1]
    log_w = -np.logaddexp(0.0, -etas)
    log_1mw = -np.logaddexp(0.0, etas)
    total = switch.size * log_1mw + sum_b + sums[:, 0]
    # log(1 - e^A - e^B) with A, B <= 0, the larger one through expm1
    rest = -np.expm1(np.maximum(all_a, all_b))
    small = np.exp(np.minimum(all_a, all_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        two_sided = np.where(
            (rest > 0.0) & (small < rest), np.log(rest) + np.log1p(-small / rest), -np.inf
        )
    out = -discount * (log_w + log_1mw) + total + two_sided
    return float(out[0]) if eta_array.ndim == 0 else out.reshape(eta_array.shape)


def _grid_proposal(eta, here, log_density, switch, rng) -> tuple[float, float]:
    r"""An independence Metropolis--Hastings update of ``η`` whose proposal is piecewise
    constant over ``GRID`` cells spanning the members' switch points ``η = ℓ_b - ℓ_a`` widened
    by ``log |U| + GRID_MARGIN`` on each side (cell ``j`` drawn with probability ``∝ p(η_j)`` at
    its centre, then uniform in it). It reads only the members' log-likelihoods, so it can jump
    between the modes of ``p(η)`` that the slice sampler does not cross (with a discount the
    Pólya prior puts one mode near each side taking the ambiguous members). ``here`` is
    ``log p(η)``; returns the new ``η`` and its log density."""
    margin = np.log(switch.size) + GRID_MARGIN
    low, high = float(switch.min()) - margin, float(switch.max()) + margin
    width = (high - low) / GRID
    centres = low + width * (np.arange(GRID) + 0.5)
    log_q = log_density(centres)
    log_q -= np.logaddexp.reduce(log_q)
    cell = int(rng.choice(GRID, p=np.exp(log_q)))
    proposal = centres[cell] + width * (rng.random() - 0.5)
    if not low <= eta < high:
        return eta, here  # outside the grid the reverse proposal has density zero
    there = log_density(proposal)
    now_cell = min(int((eta - low) / width), GRID - 1)
    log_ratio = there - here + log_q[now_cell] - log_q[cell]
    return (proposal, there) if np.log(rng.random()) < log_ratio else (eta, here)


def _slice_step(eta, here, log_density, rng) -> float:
    """One slice-sampling update of ``η`` (stepping out, then shrinkage) from a point of
    positive density, ``here = log p(η)``."""
    level = here + np.log(rng.random())
    left = eta - SLICE_WIDTH * rng.random()
    right = left + SLICE_WIDTH
    for _ in range(SLICE_STEPS_OUT):
        if log_density(left) <= level:
            break
        left -= SLICE_WIDTH
    for _ in range(SLICE_STEPS_OUT):
        if log_density(right) <= level:
            break
        right += SLICE_WIDTH
    while True:
        proposal = left + (right - left) * rng.random()
        if log_density(proposal) > level:
            return proposal
        if proposal < eta:
            left = proposal
        else:
            right = proposal


def _two_sided_sides(log_pa: np.ndarray, log_pb: np.ndarray, rng) -> np.ndarray:
    """Independent sides (``True``: ``a``) with ``log P(a) = log_pa``, conditioned on both
    sides being taken: by rejection, and after ``REJECTIONS`` refusals member by member with
    the probabilities conditioned on what the remaining members can still provide."""
    prob_a = np.exp(log_pa)
    for _ in range(REJECTIONS):
        sides = rng.random(prob_a.size) < prob_a
        if 0 < np.count_nonzero(sides) < sides.size:
            return sides
    # log P(all of members k.. on a) and on b, k = 0..n (empty product at n)
    rest_a = np.append(np.cumsum(log_pa[::-1])[::-1], 0.0)
    rest_b = np.append(np.cumsum(log_pb[::-1])[::-1], 0.0)
    sides = np.zeros(prob_a.size, dtype=bool)
    seen_a = seen_b = False
    for k in range(prob_a.size):
        # log P(side a, and the later members can still take b if none has) and the same for b
        with np.errstate(divide="ignore"):
            log_a = log_pa[k] + (0.0 if seen_b else np.log(-np.expm1(rest_a[k + 1])))
            log_b = log_pb[k] + (0.0 if seen_a else np.log(-np.expm1(rest_b[k + 1])))
        sides[k] = rng.random() < 1.0 / (1.0 + np.exp(log_b - log_a))
        seen_a, seen_b = seen_a or sides[k], seen_b or not sides[k]
    return sides


def pair_weight_move(
    ll_a: np.ndarray, ll_b: np.ndarray, on_a: np.ndarray, discount: float, rng
) -> np.ndarray:
    r"""The move of the module docstring for the members ``U`` of two clusters.

    Parameters
    ----------
    ll_a, ll_b : (|U|,) float arrays
        The members' log-likelihoods under clusters ``a`` and ``b`` (``|U| ≥ 2``).
    on_a : (|U|,) bool array
        The present sides (``True``: in ``a``; both sides non-empty).
    discount : float
        The Pitman--Yor discount ``d`` in ``[0, 1)``.
    rng : numpy.random.Generator

    Returns
    -------
    (|U|,) bool array
        The new sides, both non-empty (the present ones if the weight drawn given them has
        density zero in floating point).
    """
    n_a = int(np.count_nonzero(on_a))
    n_b = on_a.size - n_a
    w = rng.beta(n_a - discount, n_b - discount)
    if not 0.0 < w < 1.0:
        return on_a
    eta = float(np.log(w) - np.log1p(-w))

    switch = np.ascontiguousarray(ll_b - ll_a, dtype=np.float64)
    sum_b = float(np.sum(ll_b))

    def log_density(x):
        return _log_weight_density(x, switch, sum_b, discount)

    here = log_density(eta)
    if not np.isfinite(here):
        return on_a
    if discount > 0.0:  # the prior's two modes (module docstring)
        eta, here = _grid_proposal(eta, here, log_density, switch, rng)
    eta = _slice_step(eta, here, log_density, rng)
    r = eta - switch
    return _two_sided_sides(-np.logaddexp(0.0, -r), -np.logaddexp(0.0, r), rng)


def pick_pairs(ll: np.ndarray, n_pairs: int, rng) -> np.ndarray:
    r"""``n_pairs`` pairs of the ``K ≥ 2`` columns of ``ll`` ``(N, K)``, drawn independently with
    probability proportional to ``m_{ab} + N / (10 P)``, where ``m_{ab}`` counts the rows whose
    two largest entries are in columns ``a`` and ``b`` and ``P = K(K-1)/2`` (every pair is
    possible; the floor is a tenth of the mass). The weights read only ``ll``, which the moves
    leave unchanged, so choosing a move by them keeps each move's invariance. Returns
    ``(n_pairs, 2)`` column indices."""
    n_rows, n_cols = ll.shape
    top = np.argpartition(-ll, 1, axis=1)[:, :2]
    low, high = np.minimum(top[:, 0], top[:, 1]), np.maximum(top[:, 0], top[:, 1])
    counts = np.bincount(low * n_cols + high, minlength=n_cols * n_cols).astype(float)
    a, b = np.triu_indices(n_cols, 1)
    weights = counts[a * n_cols + b] + n_rows / (10.0 * a.size)
    picked = rng.choice(a.size, size=n_pairs, p=weights / weights.sum())
    return np.stack([a[picked], b[picked]], axis=1)
