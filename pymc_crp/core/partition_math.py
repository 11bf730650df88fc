r"""Numeric core of the partition priors: probabilities, conditional weights and exact samplers.

Pure functions over NumPy arrays (numba-compiled where they sit on a hot path); nothing here
imports PyMC. The PyMC distributions in :mod:`pymc_crp.distributions.partitions` and the
label step in :mod:`pymc_crp.step_methods.crp_gibbs` wrap these.

A partition of ``N`` observations is stored as integer labels ``c`` in ``0..L-1`` where ``L`` is
the number of parameter slots. With ``K`` occupied slots of sizes ``n_1..n_K``:

Pitman--Yor Chinese restaurant process (discount ``0 <= d < 1``, concentration ``θ > -d``)

.. math::

    \log p(c) = \log \mathrm{EPPF}(n; θ, d) - \log \frac{L!}{(L-K)!}
        - \log P(K_N \le L \mid θ, d),\qquad
    \mathrm{EPPF}(n; θ, d) = \Big[\prod_{k=1}^{K-1} (θ + k d)\Big]
        \frac{Γ(θ + 1)}{Γ(θ + N)} \prod_{k=1}^{K} \frac{Γ(n_k - d)}{Γ(1 - d)}.

The last term (zero when ``L >= N``) renormalises the prior truncated at ``K <= L`` slots, so
that it is one distribution for every ``θ`` and ``d`` (see :func:`log_prob_at_most_blocks`).

Finite Dirichlet--multinomial prior (``A`` groups, total mass ``γ``, weights integrated out)

.. math::

    \log p(c \mid γ) = \log Γ(γ) - A \log Γ(γ/A) + \sum_{a=1}^{A} \log Γ(N_a + γ/A)
        - \log Γ(N + γ).
"""

from __future__ import annotations

import functools
import math
from enum import IntEnum

import numpy as np
from numba import njit
from scipy.special import gammaln

from pymc_crp.core.checks import positive_int

__all__ = [
    "CRP_PRIOR",
    "DIRICHLET_MULTINOMIAL_PRIOR",
    "PartitionPrior",
    "check_crp_parameters",
    "check_dirichlet_multinomial_parameters",
    "conditional_slot_weights",
    "crp_conditional_weights",
    "crp_label_log_prob",
    "dirichlet_multinomial_conditional_weights",
    "dirichlet_multinomial_label_log_prob",
    "draw_log_weighted",
    "draw_weighted",
    "log_block_count_weights",
    "log_eppf",
    "log_prob_at_most_blocks",
    "first_appearance",
    "relabel_by_appearance",
    "sample_crp_labels",
    "sample_dirichlet_multinomial_labels",
    "slot_counts",
    "truncated_crp_log_survival",
    "validate_labels",
]


class PartitionPrior(IntEnum):
    """The partition priors the label kernels know, with the integer code they switch on.

    The kernels take the prior as ``(prior_code, concentration, discount)`` plain scalars
    (numba): ``CRP`` with ``concentration = θ`` and ``discount = d``;
    ``DIRICHLET_MULTINOMIAL`` with ``concentration = γ`` and ``discount = 0``.
    """

    CRP = 0
    DIRICHLET_MULTINOMIAL = 1


#: Plain-integer codes of :class:`PartitionPrior` for the numba kernels' comparisons.
CRP_PRIOR = PartitionPrior.CRP.value
DIRICHLET_MULTINOMIAL_PRIOR = PartitionPrior.DIRICHLET_MULTINOMIAL.value


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------
def _finite_array(value, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def check_crp_parameters(concentration, discount) -> None:
    """Raise ``ValueError`` unless ``0 <= discount < 1`` and ``concentration > -discount``.

    Works elementwise on array-like parameters.
    """
    theta = _finite_array(concentration, "concentration")
    d = _finite_array(discount, "discount")
    if np.any((d < 0) | (d >= 1)):
        raise ValueError(f"discount must lie in [0, 1), got {discount!r}")
    if np.any(theta <= -d):
        raise ValueError(
            f"concentration must be greater than -discount, got concentration={concentration!r}"
            f" and discount={discount!r}"
        )


def check_dirichlet_multinomial_parameters(gamma) -> None:
    """Raise ``ValueError`` unless ``gamma > 0`` (elementwise)."""
    g = _finite_array(gamma, "gamma")
    if np.any(g <= 0):
        raise ValueError(f"gamma must be positive, got {gamma!r}")


def validate_labels(labels, n_slots: int, name: str = "labels") -> np.ndarray:
    """Check a label array and return it as ``int64``.

    Labels must be integers (an integer dtype, or floats with integral values) in
    ``0..n_slots-1``. Raises ``TypeError``/``ValueError`` naming ``name`` otherwise.
    """
    arr = np.asarray(labels)
    if arr.dtype == object or arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be an array of integer labels, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite integer labels")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must be integer labels, got non-integer values")
    if arr.ndim == 0:
        raise ValueError(f"{name} must be a vector of labels, got a scalar")
    if arr.size and (arr.min() < 0 or arr.max() >= n_slots):
        bad = arr[(arr < 0) | (arr >= n_slots)].ravel()[0]
        raise ValueError(
            f"{name} must lie in 0..{n_slots - 1} (there are {n_slots} slots), found label {bad}"
        )
    return arr.astype(np.int64)


# --------------------------------------------------------------------------------------------
# Probabilities
# --------------------------------------------------------------------------------------------
def slot_counts(labels: np.ndarray, n_slots: int) -> np.ndarray:
    """Number of observations in each slot: ``counts[j] = #{i : labels[i] = j}``."""
    return np.bincount(np.asarray(labels, dtype=np.int64).ravel(), minlength=n_slots)


def log_eppf(block_sizes, concentration: float, discount: float = 0.0) -> float:
    r"""Log exchangeable partition probability function of the Pitman--Yor process.

    .. math::

        \log \mathrm{EPPF} = \sum_{k=1}^{K-1}\log(θ + k d) + \log Γ(θ+1) - \log Γ(θ+N)
            + \sum_{k=1}^{K} [\log Γ(n_k - d) - \log Γ(1 - d)]

    Parameters
    ----------
    block_sizes : array_like of int
        Positive sizes ``n_1..n_K`` of the blocks (zeros are ignored).
    concentration, discount : float
        ``θ > -d`` and ``0 <= d < 1``.
    """
    check_crp_parameters(concentration, discount)
    sizes = np.asarray(block_sizes, dtype=float)
    sizes = sizes[sizes > 0]
    n_blocks = sizes.size
    n_total = sizes.sum()
    theta, d = float(concentration), float(discount)
    k = np.arange(1, n_blocks)
    out = np.sum(np.log(theta + k * d)) + gammaln(theta + 1.0) - gammaln(theta + n_total)
    out += np.sum(gammaln(sizes - d) - gammaln(1.0 - d))
    return float(out)


def log_block_count_weights(n: int, max_blocks: int, discount: float) -> np.ndarray:
    r"""``log W(n, k; d)`` for ``k = 1..max_blocks``: the EPPF's block factors summed over all
    partitions of ``n`` items into ``k`` blocks.

    .. math::

        W(n, k; d) = \sum_{|π| = k} \prod_{b \in π} (1 - d)_{|b| - 1},\qquad
        W(m + 1, k) = W(m, k - 1) + (m - k d)\, W(m, k),

    (the new item opens a block, or joins one of the ``k`` blocks of sizes ``n_b`` with
    weight ``n_b - d``; ``W(1, 1) = 1``). For ``d = 0`` these are the unsigned Stirling numbers
    of the first kind. Computed in log space by a compiled loop, ``O(n · max_blocks)``, and
    remembered for the last few ``(n, max_blocks, d)`` (the table does not depend on ``θ``,
    and a truncated CRP's concentration step asks for it at every step): a read-only array.
    """
    return _block_count_table(int(n), int(max_blocks), float(discount))


@functools.lru_cache(maxsize=16)
def _block_count_table(n: int, max_blocks: int, discount: float) -> np.ndarray:
    out = _block_count_kernel(n, max_blocks, discount)
    out.flags.writeable = False
    return out


@njit(cache=True, nogil=True)
def _block_count_kernel(n, max_blocks, d):  # pragma: no cover - compiled
    log_w = np.full(max_blocks + 1, -np.inf)  # index k = 0..max_blocks, for m items
    log_w[1] = 0.0  # m = 1
    for m in range(1, n):
        for k in range(max_blocks, 0, -1):  # from the top: log_w[k - 1] is still W(m, k - 1)
            weight = m - k * d
            join = math.log(weight) + log_w[k] if weight > 0.0 else -np.inf
            a, b = log_w[k - 1], join
            top = max(a, b)
            if top == -np.inf:
                log_w[k] = -np.inf
            else:
                log_w[k] = top + math.log(math.exp(a - top) + math.exp(b - top))
    return log_w[1:].copy()


def log_prob_at_most_blocks(
    n: int, max_clusters: int, concentration: float, discount: float = 0.0
) -> float:
    r"""``log P(K_n <= L | θ, d)`` for the number of blocks ``K_n`` of a Pitman--Yor partition.

    .. math::

        P(K_n = k \mid θ, d) = \Big[\prod_{i=1}^{k-1} (θ + i d)\Big]
            \frac{Γ(θ + 1)}{Γ(θ + n)}\, W(n, k; d)

    (:func:`log_block_count_weights`), summed over ``k = 1..L``; ``0`` when ``L >= n``.
    """
    n, n_slots = int(n), int(max_clusters)
    if n_slots >= n or n == 0:
        return 0.0
    theta, d = float(concentration), float(discount)
    log_w = log_block_count_weights(n, n_slots, d)
    rising = np.concatenate([[0.0], np.cumsum(np.log(theta + d * np.arange(1, n_slots)))])
    terms = rising + log_w
    top = terms.max()
    return float(
        top + np.log(np.sum(np.exp(terms - top))) + gammaln(theta + 1.0) - gammaln(theta + n)
    )


def crp_label_log_prob(labels, concentration: float, discount: float, max_clusters: int) -> float:
    r"""Log prior probability of a label vector under the slot-labelled Pitman--Yor CRP.

    .. math::

        \log p(c) = \log \mathrm{EPPF}(n; θ, d) - \log\big(L! / (L - K)!\big)
            - \log P(K_N \le L \mid θ, d)

    (the last term, zero for ``L >= N``, normalises the truncated prior).
    """
    n_slots = positive_int(max_clusters, "max_clusters")
    labels = validate_labels(labels, n_slots)
    counts = slot_counts(labels, n_slots)
    n_blocks = int(np.count_nonzero(counts))
    truncation = log_prob_at_most_blocks(labels.size, n_slots, concentration, discount)
    return (
        log_eppf(counts, concentration, discount)
        - float(gammaln(n_slots + 1.0) - gammaln(n_slots - n_blocks + 1.0))
        - truncation
    )


def dirichlet_multinomial_label_log_prob(labels, gamma: float, n_groups: int) -> float:
    r"""Log prior probability of a label vector under the finite Dirichlet--multinomial prior.

    .. math::

        \log p(c \mid γ) = \log Γ(γ) - A \log Γ(γ/A) + \sum_a \log Γ(N_a + γ/A) - \log Γ(N + γ)
    """
    n_slots = positive_int(n_groups, "n_groups")
    check_dirichlet_multinomial_parameters(gamma)
    labels = validate_labels(labels, n_slots)
    counts = slot_counts(labels, n_slots).astype(float)
    g = float(gamma)
    alpha = g / n_slots
    out = gammaln(g) - n_slots * gammaln(alpha) + np.sum(gammaln(counts + alpha))
    return float(out - gammaln(counts.sum() + g))


# --------------------------------------------------------------------------------------------
# Conditional weights of one label given the others
# --------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def conditional_slot_weights(counts, prior_code, concentration, discount, out):  # pragma: no cover
    r"""Unnormalised prior weights of one label given all others (numba kernel).

    ``counts[j]`` are the slot sizes *without* the label being updated. With ``K`` the number
    of occupied slots and ``L = len(counts)``:

    * CRP (``prior_code = PartitionPrior.CRP``, ``concentration = θ``,
      ``discount = d``):
      ``w_j = n_j - d`` for an occupied slot and ``w_s = (θ + d K)/(L - K)`` for each empty one
      (``K = 0``, a lone observation, gives equal weights).
    * Dirichlet--multinomial (``prior_code = PartitionPrior.DIRICHLET_MULTINOMIAL``,
      ``concentration = γ``):
      ``w_a = n_a + γ/A`` for every slot.

    Writes into ``out`` and returns the number of occupied slots ``K``.
    """
    n_slots = counts.shape[0]
    n_occupied = 0
    for j in range(n_slots):
        if counts[j] > 0:
            n_occupied += 1
    if prior_code == CRP_PRIOR:
        n_empty = n_slots - n_occupied
        empty_weight = 0.0
        if n_occupied == 0:  # a lone observation: every slot is equally a new cluster
            empty_weight = 1.0
        elif n_empty > 0:
            empty_weight = (concentration + discount * n_occupied) / n_empty
        for j in range(n_slots):
            if counts[j] > 0:
                out[j] = counts[j] - discount
            else:
                out[j] = empty_weight
    else:
        alpha = concentration / n_slots
        for j in range(n_slots):
            out[j] = counts[j] + alpha
    return n_occupied


@njit(cache=True, nogil=True)
def draw_weighted(weights, total, uniform):  # pragma: no cover
    """Index ``j`` drawn with probability ``weights[j] / total`` by inverse CDF.

    ``uniform`` is a draw on ``[0, 1)``; a zero-weight index is never returned (guard against
    round-off at the upper end).
    """
    n = weights.shape[0]
    target = uniform * total
    acc = 0.0
    choice = n - 1
    for j in range(n):
        acc += weights[j]
        if target < acc:
            choice = j
            break
    while choice > 0 and weights[choice] <= 0.0:
        choice -= 1
    return choice


@njit(cache=True, nogil=True)
def draw_log_weighted(log_weights, uniform):  # pragma: no cover
    """Index ``j`` drawn with probability ``∝ exp(log_weights[j])``; ``log_weights`` is
    overwritten with ``exp(log_weights - max)`` (``-inf`` entries become exact zeros)."""
    n = log_weights.shape[0]
    top = -np.inf
    for j in range(n):
        top = max(top, log_weights[j])
    total = 0.0
    for j in range(n):
        log_weights[j] = math.exp(log_weights[j] - top) if log_weights[j] > -np.inf else 0.0
        total += log_weights[j]
    return draw_weighted(log_weights, total, uniform)


def crp_conditional_weights(counts, concentration: float, discount: float = 0.0) -> np.ndarray:
    """Prior weights ``P(c_e = j | c_-e)`` (normalised) for the Pitman--Yor CRP.

    ``counts`` are the slot sizes without observation ``e``. See
    :func:`conditional_slot_weights` for the formula.
    """
    check_crp_parameters(concentration, discount)
    counts = np.asarray(counts, dtype=np.int64)
    out = np.empty(counts.shape[0])
    conditional_slot_weights(counts, CRP_PRIOR, float(concentration), float(discount), out)
    return out / out.sum()


def dirichlet_multinomial_conditional_weights(counts, gamma: float) -> np.ndarray:
    """Prior weights ``P(c_e = a | c_-e) ∝ n_a + γ/A`` (normalised)."""
    check_dirichlet_multinomial_parameters(gamma)
    counts = np.asarray(counts, dtype=np.int64)
    out = np.empty(counts.shape[0])
    conditional_slot_weights(counts, DIRICHLET_MULTINOMIAL_PRIOR, float(gamma), 0.0, out)
    return out / out.sum()


# --------------------------------------------------------------------------------------------
# Exact samplers
# --------------------------------------------------------------------------------------------
def truncated_crp_log_survival(
    n: int, concentration: float, discount: float, max_clusters: int
) -> np.ndarray:
    r"""``log h[i, k] = log P(K_N <= L | i seated customers, k occupied tables)``.

    The number of tables of the Pitman--Yor seating process is a Markov chain: with ``i``
    customers at ``k`` tables the next one opens a table with probability
    ``(θ + d k)/(θ + i)``. Backward recursion from ``h[N, k] = 1{k <= L}``:

    .. math:: h[i, k] = q\,h[i+1, k+1] + (1 - q)\,h[i+1, k],\qquad q = (θ + d k)/(θ + i).

    Returned with shape ``(N + 1, L + 2)`` (``k`` runs over ``0..L+1``); used to draw exactly
    from the CRP conditioned on at most ``L`` clusters (a Doob h-transform of the seating).
    """
    theta, d = float(concentration), float(discount)
    n_slots = int(max_clusters)
    log_h = np.full((n + 1, n_slots + 2), -np.inf)
    log_h[n, : n_slots + 1] = 0.0
    k = np.arange(n_slots + 1)
    for i in range(n - 1, 0, -1):
        q = np.clip((theta + d * k) / (theta + i), 0.0, 1.0)
        with np.errstate(divide="ignore"):
            new = np.log(q) + log_h[i + 1, 1 : n_slots + 2]
            stay = np.log1p(-q) + log_h[i + 1, : n_slots + 1]
        log_h[i, : n_slots + 1] = np.logaddexp(new, stay)
    log_h[0, 0] = log_h[1, 1]
    return log_h


@njit(cache=True)
def _seat_pitman_yor(uniforms, theta, d, log_h, truncated):  # pragma: no cover
    """Sequential seating; returns block indices in order of appearance."""
    n = uniforms.shape[0]
    blocks = np.empty(n, dtype=np.int64)
    sizes = np.zeros(n, dtype=np.int64)
    n_blocks = 0
    for i in range(n):
        if i == 0:
            blocks[0] = 0
            sizes[0] = 1
            n_blocks = 1
            continue
        denom = theta + i
        w_new = (theta + d * n_blocks) / denom
        w_stay = 1.0
        if truncated:
            base = log_h[i, n_blocks]
            w_new *= math.exp(log_h[i + 1, n_blocks + 1] - base)
            w_stay = math.exp(log_h[i + 1, n_blocks] - base)
        total = w_new + w_stay * (i - d * n_blocks) / denom
        target = uniforms[i] * total
        acc = w_new
        choice = n_blocks
        if target >= acc:
            for b in range(n_blocks):
                acc += w_stay * (sizes[b] - d) / denom
                if target < acc:
                    choice = b
                    break
            else:
                choice = n_blocks - 1
        blocks[i] = choice
        sizes[choice] += 1
        if choice == n_blocks:
            n_blocks += 1
    return blocks


def sample_crp_labels(
    n: int,
    concentration: float,
    discount: float,
    max_clusters: int,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""Exact draw of a label vector from the slot-labelled Pitman--Yor CRP.

    The partition is drawn by sequential seating (customer ``i+1`` joins block ``k`` with
    probability ``(n_k - d)/(θ + i)`` and opens a new block with ``(θ + dK)/(θ + i)``),
    conditioned on ``K <= max_clusters`` by an exact h-transform when
    ``max_clusters < n``. The ``K`` blocks are then placed in ``K`` distinct slots chosen
    uniformly at random, so draws follow ``p(c) = EPPF / (L!/(L-K)!)`` exactly (the density
    of :class:`pymc_crp.CRP`). Use :func:`relabel_by_appearance` for canonical labels.
    """
    check_crp_parameters(concentration, discount)
    n_slots = positive_int(max_clusters, "max_clusters")
    n = int(n)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    theta, d = float(concentration), float(discount)
    truncated = n_slots < n
    if truncated:
        log_h = truncated_crp_log_survival(n, theta, d, n_slots)
    else:
        log_h = np.zeros((1, 1))
    uniforms = rng.random(n)
    blocks = _seat_pitman_yor(uniforms, theta, d, log_h, truncated)
    n_blocks = int(blocks.max()) + 1
    slots = rng.permutation(n_slots)[:n_blocks]
    return slots[blocks].astype(np.int64)


@njit(cache=True)
def _polya_urn(uniforms, n_slots, alpha):  # pragma: no cover
    n = uniforms.shape[0]
    labels = np.empty(n, dtype=np.int64)
    counts = np.zeros(n_slots, dtype=np.int64)
    for i in range(n):
        target = uniforms[i] * (i + n_slots * alpha)
        acc = 0.0
        choice = n_slots - 1
        for a in range(n_slots):
            acc += counts[a] + alpha
            if target < acc:
                choice = a
                break
        labels[i] = choice
        counts[choice] += 1
    return labels


def sample_dirichlet_multinomial_labels(
    n: int, gamma: float, n_groups: int, rng: np.random.Generator
) -> np.ndarray:
    r"""Exact draw of labels from the Dirichlet--multinomial prior by the Pólya urn.

    Observation ``i+1`` takes group ``a`` with probability ``(N_a + γ/A)/(i + γ)``; this is
    ``w ~ Dirichlet(γ/A, …, γ/A)``, ``c_i | w ~ Categorical(w)`` with ``w`` integrated out,
    and avoids the underflow of Dirichlet draws with small ``γ/A``.
    """
    check_dirichlet_multinomial_parameters(gamma)
    n_slots = positive_int(n_groups, "n_groups")
    return _polya_urn(rng.random(int(n)), n_slots, float(gamma) / n_slots)


def relabel_by_appearance(labels) -> np.ndarray:
    """Canonical labels: blocks numbered ``0, 1, …`` in order of first appearance.

    Works on the last axis of an array of label vectors. The input labels are only names of
    blocks: any integers are accepted (negative or large ones included), as are floats with
    integral values.

    Parameters
    ----------
    labels : array_like of int, shape (..., N)

    Returns
    -------
    numpy.ndarray of int64, same shape

    Raises
    ------
    TypeError
        For non-numeric (or boolean) labels.
    ValueError
        For a scalar, NaN, infinite or non-integral labels.
    """
    arr = np.asarray(labels)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(f"labels must be an array of integer labels, got dtype {arr.dtype}")
    if arr.ndim == 0:
        raise ValueError("labels must be a vector of labels, got a scalar")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError("labels must be finite integer labels (found NaN or infinity)")
        if not np.all(arr == np.round(arr)) or np.any(np.abs(arr) >= 2.0**62):
            raise ValueError("labels must be integer labels, got non-integer values")
    elif arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError("labels must fit in int64")
    arr = arr.astype(np.int64)
    if arr.size == 0:
        return arr
    labels, _ = first_appearance(arr.reshape(-1, arr.shape[-1]))
    return labels.astype(np.int64).reshape(arr.shape)


@njit(cache=True, nogil=True)
def _first_appearance_kernel(labels, n_values):  # pragma: no cover - compiled
    n_rows, n = labels.shape
    out = np.empty((n_rows, n), np.int32)
    n_blocks = np.empty(n_rows, np.int64)
    mapping = np.full(n_values, -1, np.int64)
    for s in range(n_rows):
        k = 0
        for i in range(n):
            v = labels[s, i]
            if mapping[v] < 0:
                mapping[v] = k
                k += 1
            out[s, i] = mapping[v]
        n_blocks[s] = k
        for i in range(n):
            mapping[labels[s, i]] = -1
    return out, n_blocks


def first_appearance(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of integer labels renumbered ``0..K_s-1`` in order of first appearance.

    ``labels`` is an integer array ``(S, N)`` (any values: they are only names of blocks).
    Returns ``(canonical, n_blocks)``: ``int32`` labels of the same shape, equal rows for
    equal partitions, and the number of blocks ``K_s`` of each row. No validation: see
    :func:`relabel_by_appearance` and :func:`pymc_crp.posterior.draws.canonical_draws`.
    """
    arr = np.asarray(labels, dtype=np.int64)
    if arr.size == 0:
        return arr.astype(np.int32), np.zeros(arr.shape[0], dtype=np.int64)
    top = int(arr.max())
    if arr.min() < 0 or top > 4 * arr.shape[1] + 64:  # negative or sparse names: compact
        arr = np.unique(arr, return_inverse=True)[1].reshape(arr.shape)
        top = int(arr.max())
    return _first_appearance_kernel(np.ascontiguousarray(arr, dtype=np.int64), top + 1)
