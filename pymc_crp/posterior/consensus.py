r"""Consensus partial orders: posterior relation probabilities and thresholded orders.

In the HPO model (docs/mathematics.md, *Partial orders*) the utilities ``η`` of a cluster
define the partial
order ``j ≻ j'`` iff ``η_{jk} > η_{j'k}`` for every dimension ``k``. Over posterior draws
``η^(1..S)`` the posterior probability of each relation is estimated by

.. math:: \hat P(j ≻ j' \mid Y) = \frac{1}{S} \sum_s 1\{η^{(s)}_{j·} > η^{(s)}_{j'·}\}.

**Consensus order at a threshold** ``t``: the relation ``R = {(j, j') : P(j ≻ j') > t}``,
transitively closed. What holds for ``t ≥ 1/2``:

- ``R`` is irreflexive (``P(j ≻ j) = 0``) and antisymmetric: each draw is a strict order, so
  ``j ≻ j'`` and ``j' ≻ j`` never hold together and ``P(j ≻ j') + P(j' ≻ j) ≤ 1``; both cannot
  exceed ``1/2``.
- ``R`` need not be transitive (``P(a ≻ b), P(b ≻ c) > t`` only gives
  ``P(a ≻ c) ≥ P(a ≻ b) + P(b ≻ c) - 1 > 2t - 1``), hence the closure.
- ``R`` can still contain longer cycles (a Condorcet cycle: the three linear orders
  ``a>b>c``, ``b>c>a``, ``c>a>b`` with equal weight give each of ``a≻b, b≻c, c≻a``
  probability ``2/3``). A draw, being acyclic, contains at most ``r-1`` of the ``r``
  relations of a cycle, so ``Σ`` of their probabilities is at most ``r-1``; a cycle of length
  ``r`` in ``R`` therefore needs ``t < 1 - 1/r``, and for ``t ≥ 1 - 1/M`` ``R`` is always
  acyclic.

So the result is *enforced* to be a strict partial order: relations are added in decreasing
probability, each unless it would close a cycle with those already added (their transitive
closure); relations dropped this way are reported. When ``R`` is acyclic nothing is dropped
and the result is exactly the transitive closure of ``R``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Real

import arviz as az
import numpy as np

from pymc_crp.core.checks import positive_int
from pymc_crp.core.posets import partial_order_from_utilities
from pymc_crp.posterior.draws import canonical_draws, label_draws
from pymc_crp.posterior.point_estimate import point_estimate_partition

__all__ = ["ConsensusOrder", "consensus_order", "relation_probabilities", "threshold_order"]


@dataclass(frozen=True)
class ConsensusOrder:
    """Result of :func:`consensus_order`.

    Attributes
    ----------
    probabilities : dict of int to ndarray (M, M)
        ``probabilities[g][j, j']`` = posterior probability of ``j ≻ j'`` in cluster ``g``.
    orders : dict of int to ndarray of bool (M, M)
        Consensus strict partial order of each cluster (transitively closed).
    partition : ndarray of int64 or None
        Cluster of each list (canonical labels), ``None`` for the single-order variant.
    dropped : dict of int to list of (int, int, float)
        Relations above the threshold left out to break cycles, with their probabilities.
    threshold : float
    """

    probabilities: dict[int, np.ndarray]
    orders: dict[int, np.ndarray]
    partition: np.ndarray | None
    dropped: dict[int, list[tuple[int, int, float]]] = field(default_factory=dict)
    threshold: float = 0.5


def relation_probabilities(utilities, transform: Callable | None = None, *, chunk: int = 256):
    r"""Posterior relation probabilities ``P[j, j'] = mean_s 1{η^(s)_j > η^(s)_{j'} in every dim}``.

    Parameters
    ----------
    utilities : array_like of float, shape (S, M, K)
        Utility draws (any leading sample shape is flattened).
    transform : callable, optional
        Applied to the ``(S, M, K)`` array first (e.g. the Gumbel transform plus covariates);
        must return the same shape.
    chunk : int
        Draws compared at a time (memory ``chunk · M² · K`` bytes).

    Returns
    -------
    numpy.ndarray of float64, shape (M, M)
    """
    positive_int(chunk, "chunk", type_error=ValueError)
    u = np.asarray(utilities, dtype=np.float64)
    if u.ndim < 3:
        raise ValueError(f"utilities must have shape (S, M, K), got {u.shape}")
    u = u.reshape(-1, *u.shape[-2:])
    if transform is not None:
        if not callable(transform):
            raise TypeError(f"transform must be callable, got {transform!r}")
        shape = u.shape
        u = np.asarray(transform(u), dtype=np.float64)
        if u.shape != shape:
            raise ValueError(f"transform must return shape {shape}, got {u.shape}")
    if u.shape[0] == 0:
        raise ValueError("utilities must contain at least one draw")
    m = u.shape[1]
    total = np.zeros((m, m))
    for lo in range(0, u.shape[0], chunk):
        total += partial_order_from_utilities(u[lo : lo + chunk]).sum(axis=0)
    return total / u.shape[0]


def threshold_order(probabilities, threshold: float = 0.5):
    """Strict partial order from relation probabilities (see the module docstring).

    Relations with probability ``> threshold`` are added in decreasing probability (ties by
    index), each unless it would close a cycle; the result is transitively closed.

    Parameters
    ----------
    probabilities : array_like of float, shape (M, M)
        ``probabilities[j, j']`` = posterior probability of ``j ≻ j'``.
    threshold : float, default 0.5
        In ``[0, 1)``.

    Returns
    -------
    order : numpy.ndarray of bool, shape (M, M)
        ``order[j, j']`` True iff ``j ≻ j'`` in the consensus order.
    dropped : list of (int, int, float)
        Relations above the threshold left out because they would close a cycle.
    """
    probs = np.asarray(probabilities, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[0] != probs.shape[1]:
        raise ValueError(f"probabilities must be a square (M, M) matrix, got shape {probs.shape}")
    if not np.all(np.isfinite(probs)) or probs.min() < 0 or probs.max() > 1:
        raise ValueError("probabilities must lie in [0, 1]")
    if isinstance(threshold, bool) or not isinstance(threshold, Real):
        raise TypeError(f"threshold must be a number, got {threshold!r}")
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must lie in [0, 1), got {threshold}")
    m = probs.shape[0]
    cand = np.argwhere((probs > threshold) & ~np.eye(m, dtype=bool))
    cand = cand[np.argsort(-probs[cand[:, 0], cand[:, 1]], kind="stable")]
    closed = np.zeros((m, m), dtype=bool)
    dropped = []
    for j, k in cand:
        if closed[j, k]:
            continue
        if closed[k, j]:
            dropped.append((int(j), int(k), float(probs[j, k])))
            continue
        above = closed[:, j].copy()
        above[j] = True
        below = closed[k, :].copy()
        below[k] = True
        closed |= above[:, None] & below[None, :]
    return closed, dropped


def _flat_draws(da, name: str, ndim: int) -> np.ndarray:
    if da.dims[:2] != ("chain", "draw") or da.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dims (chain, draw, ...), got dims {da.dims}")
    values = np.asarray(da.values, dtype=np.float64)
    return values.reshape(-1, *values.shape[2:])


def consensus_order(
    idata: az.InferenceData,
    *,
    utilities: str = "U",
    labels: str | None = "cluster",
    threshold: float = 0.5,
    partition=None,
    transform: Callable | None = None,
    loss: str = "VI",
    seed: int | None = 0,
) -> ConsensusOrder:
    """Per-cluster posterior relation probabilities and consensus partial orders.

    With labels (clustered lists): for each cluster ``g`` of the point-estimate partition of
    the lists (or ``partition``), at each draw take the slot ``a_s`` holding most of the
    members of ``g`` (ties: lowest slot), compute the dominance order of that slot's
    utilities ``U^(s)[a_s]`` and average over draws (:func:`relation_probabilities`); then
    threshold (:func:`threshold_order`). Without labels (``labels=None``) the utilities
    ``(chain, draw, M, K)`` give a single order, stored under cluster ``0``.

    Parameters
    ----------
    idata : arviz.InferenceData
    utilities : str, default "U"
        Posterior variable, dims ``(chain, draw, L, M, K)`` (or ``(chain, draw, M, K)``
        without labels).
    labels : str or None, default "cluster"
        Posterior label variable of the lists, ``(chain, draw, n_lists)``.
    threshold : float, default 0.5
    partition : array_like of int, shape (n_lists,), optional
        Clusters of the lists; default the point estimate (``loss``, ``seed``) of ``labels``.
    transform : callable, optional
        Maps the utilities of one cluster over all draws, shape ``(S, M, K)`` with
        ``S = chain · draw`` in chain-major order, to ``η`` (e.g. ``-log(-log Φ(u)) + xβ``
        with ``β`` of the same draws). Monotone transforms applied to each dimension leave
        the order unchanged; covariates do not.
    loss : {"VI", "binder"}
        Loss of the default point estimate.
    seed : int or None
        Seed of the point-estimate search.

    Returns
    -------
    ConsensusOrder
    """
    if not isinstance(idata, az.InferenceData):
        raise TypeError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    if not isinstance(utilities, str) or utilities not in idata.posterior.data_vars:
        raise ValueError(f"utilities {utilities!r} is not a posterior variable")
    u_da = idata.posterior[utilities]
    if labels is None:
        u = _flat_draws(u_da, f"utilities {utilities!r}", 4)
        probs = relation_probabilities(u, transform)
        order, dropped = threshold_order(probs, threshold)
        return ConsensusOrder({0: probs}, {0: order}, None, {0: dropped}, float(threshold))
    u = _flat_draws(u_da, f"utilities {utilities!r}", 5)
    z = label_draws(idata, labels, name="idata")
    n_draws, n_lists = z.shape
    n_slots = u.shape[1]
    if u.shape[0] != n_draws:
        raise ValueError("utilities and labels have different numbers of draws")
    if z.max() >= n_slots:
        raise ValueError(
            f"labels {labels!r} use slot {z.max()} but utilities {utilities!r} have {n_slots} slots"
        )
    if partition is None:
        part = point_estimate_partition(z, loss=loss, seed=seed)
    else:
        part = np.asarray(partition)
        if part.shape != (n_lists,):
            raise ValueError(f"partition must have shape ({n_lists},), got {part.shape}")
        part = canonical_draws(label_draws(part[None, :], name="partition"))[0][0]
    probabilities, orders, dropped_all = {}, {}, {}
    rows = np.arange(n_draws)
    for g in range(int(part.max()) + 1):
        members = np.flatnonzero(part == g)
        flat = (rows[:, None] * n_slots + z[:, members]).ravel()
        counts = np.bincount(flat, minlength=n_draws * n_slots).reshape(n_draws, n_slots)
        slot = counts.argmax(axis=1)
        probs = relation_probabilities(u[rows, slot], transform)
        probabilities[g] = probs
        orders[g], dropped_all[g] = threshold_order(probs, threshold)
    return ConsensusOrder(
        probabilities, orders, part.astype(np.int64), dropped_all, float(threshold)
    )
