r"""Agreement of chains on the partition: each chain's point estimate, compared pairwise.

R-hat of the label-invariant scalars (:func:`~pymc_crp.cluster_summary`) says whether the
chains agree on summaries such as the number of clusters. Two chains can agree on those and
still hold different partitions (the same sizes, other members). :func:`chain_agreement`
compares the partitions themselves: the point estimate of each chain's own draws
(:func:`~pymc_crp.point_estimate_partition`), and the adjusted Rand index (ARI) of every pair,

.. math::

    A_{cc'} = \mathrm{ARI}\big(\hat c^{(c)}, \hat c^{(c')}\big), \qquad
    \hat c^{(c)} = \arg\min_{\hat c} \frac1S \sum_{s=1}^S
        \mathcal L\big(\hat c, c^{(c, s)}\big),

with ``L`` the Variation of Information (or Binder) loss. Chains that sample one posterior
give ``A ≈ 1`` when the posterior is concentrated, and equal estimates up to the estimate's
own Monte Carlo error otherwise; a pair well below 1 means the chains sit in different modes
of the partition (for example one chain splits a cluster the other keeps whole).

When the posterior is diffuse (many small clusters that change from draw to draw), each
chain's point estimate can fall on either side of a near tie, for example one cluster or
``N - 1`` plus one, and the ARI between chains flips between 0 and 1 by chance.
:func:`similarity_rhat` compares the chains' draws instead of their estimates: the split R-hat
(Gelman et al. 2013, as in :func:`arviz.rhat` with ``method="split"``) of the co-clustering
indicators ``x_{ij} = 1\{c_i = c_j\}``, pooled over the pairs of items. With ``M`` half-chains
of ``n`` draws, ``S^{(m)}_{ij}`` the fraction of the draws of half-chain ``m`` that put ``i``
and ``j`` together and ``\bar S_{ij}`` their mean,

.. math::

    W_{ij} = \frac1M \sum_m \frac{n}{n-1} S^{(m)}_{ij}\big(1 - S^{(m)}_{ij}\big), \qquad
    B_{ij} = \frac{n}{M-1} \sum_m \big(S^{(m)}_{ij} - \bar S_{ij}\big)^2, \qquad
    \hat R = \sqrt{\frac{n - 1}{n} + \frac1n \frac{\sum_{i<j} B_{ij}}{\sum_{i<j} W_{ij}}}

(``W`` the within-chain variance of a Bernoulli indicator, ``B`` ``n`` times the variance of
the half-chains' means; pairs that every draw puts together, or apart, add nothing). It is 1
when the half-chains estimate one posterior similarity matrix up to Monte Carlo error, and
above 1 when they sit in different regions of the partition space, however diffuse.

References
----------
.. [1] Gelman, A., Carlin, J. B., Stern, H. S., Dunson, D. B., Vehtari, A. and Rubin, D. B.
   (2013). *Bayesian Data Analysis*, 3rd ed., section 11.4. Chapman & Hall/CRC.
"""

from __future__ import annotations

import itertools
import warnings
from numbers import Integral

import arviz as az
import numpy as np

from pymc_crp.posterior.diagnostics import (
    DEFAULT_MAX_MEMORY_BYTES,
    adjusted_rand_index,
    posterior_similarity,
)
from pymc_crp.posterior.draws import label_draws, posterior_variable
from pymc_crp.posterior.point_estimate import point_estimate_partition

__all__ = ["chain_agreement", "similarity_rhat"]


def chain_agreement(
    idata: az.InferenceData,
    var_name: str,
    *,
    loss: str = "VI",
    n_runs: int = 4,
    seed: int | None = 0,
) -> np.ndarray:
    """Adjusted Rand index between the point-estimate partitions of every pair of chains.

    See the module docstring for the formula.

    Parameters
    ----------
    idata : arviz.InferenceData
        With the label variable ``var_name`` of dims ``(chain, draw, N)`` in its posterior.
    var_name : str
        Name of the label variable.
    loss : {"VI", "binder"}, default "VI"
        Loss of the point estimates.
    n_runs, seed
        Passed to :func:`~pymc_crp.point_estimate_partition` for each chain (``n_runs=4``
        keeps this quick; the estimate's loss is never above that of the chain's best draw).

    Returns
    -------
    numpy.ndarray, shape (chains, chains)
        Symmetric, ones on the diagonal; ``A[np.triu_indices(chains, 1)].min()`` is the
        worst pair.

    Warns
    -----
    UserWarning
        When every chain's estimate is all singletons or puts all items but at most one in
        one cluster: on such diffuse posteriors the ARI flips between 0 and 1 by chance (see
        the module docstring), and :func:`similarity_rhat` is the check to read.

    Examples
    --------
    >>> ari = pmc.chain_agreement(idata, "cluster")  # doctest: +SKIP
    >>> ari[np.triu_indices(len(ari), 1)].min()  # doctest: +SKIP
    """
    if not isinstance(idata, az.InferenceData):
        raise TypeError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    z = posterior_variable(idata, var_name, "idata")
    if z.ndim != 3 or z.dims[:2] != ("chain", "draw"):
        raise ValueError(
            f"{var_name} must have dims (chain, draw, N) in idata.posterior, got {z.dims}"
        )
    values = z.values
    estimates = [
        point_estimate_partition(values[c], loss=loss, n_runs=n_runs, seed=seed)
        for c in range(values.shape[0])
    ]
    ari = np.eye(len(estimates))
    for a, b in itertools.combinations(range(len(estimates)), 2):
        ari[a, b] = ari[b, a] = adjusted_rand_index(estimates[a], estimates[b])
    if len(estimates) > 1 and all(_nearly_trivial(e) for e in estimates):
        sizes = ", ".join(str(len(np.unique(e))) for e in estimates)
        warnings.warn(
            f"every chain's point estimate of {var_name} is (nearly) one cluster or all "
            f"singletons (clusters per chain: {sizes}): the posterior is too diffuse for a "
            f"point estimate, and their ARI says nothing about whether the chains agree; "
            f"use pmc.similarity_rhat(idata, {var_name!r}) instead",
            UserWarning,
            stacklevel=2,
        )
    return ari


def _nearly_trivial(labels: np.ndarray) -> bool:
    """Whether a partition of ``N`` items is all singletons, or has a block of at least
    ``N - 1`` items (one cluster, or one cluster and one singleton)."""
    counts = np.unique(labels, return_counts=True)[1]
    return counts.max() == 1 or counts.max() >= labels.size - 1


def similarity_rhat(
    idata_or_labels,
    var_name: str | None = None,
    *,
    by_item: bool = False,
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
) -> float | np.ndarray:
    """Split R-hat of the co-clustering indicators, pooled over pairs of items.

    See the module docstring for the formula. Values up to about 1.01 say that the chains
    (each split in halves) agree on the posterior similarity matrix; unlike
    :func:`chain_agreement` it stays meaningful when the posterior is diffuse.

    Parameters
    ----------
    idata_or_labels : InferenceData, Dataset, DataArray or array_like of int
        Label draws of shape ``(chain, draw, N)`` (at least 4 draws per chain), or an
        ``InferenceData`` with ``var_name``.
    var_name : str, optional
        Label variable (default: the only integer posterior variable).
    by_item : bool, default False
        Also pool per item: element ``i`` pools the pairs ``(i, j)``, ``j ≠ i`` (which items
        the chains disagree about).
    max_memory_bytes : int, default 1 GiB
        Memory for the similarity rows computed at once (rows are computed in blocks, so
        any ``N`` fits; about ``48 N`` bytes per row).

    With one chain the two halves are compared (where :func:`arviz.rhat` gives ``nan``).

    Returns
    -------
    float, or numpy.ndarray of shape (N,) with ``by_item=True``
        ``1.0`` when no pair of items changes between together and apart in any draw (all
        half-chains constant); ``nan`` for an item whose pairs never change.

    Examples
    --------
    >>> pmc.similarity_rhat(idata, "cluster")  # doctest: +SKIP
    1.004
    """
    draws = label_draws(idata_or_labels, var_name, name="idata_or_labels", flatten=False)
    if draws.ndim != 3:
        raise ValueError(
            f"idata_or_labels must hold label draws of shape (chain, draw, N), got shape "
            f"{draws.shape}"
        )
    if not isinstance(by_item, bool):
        raise TypeError(f"by_item must be a bool, got {by_item!r}")
    if isinstance(max_memory_bytes, bool) or not isinstance(max_memory_bytes, Integral):
        raise TypeError(f"max_memory_bytes must be an integer, got {max_memory_bytes!r}")
    n_chains, n_draws, n = draws.shape
    half = n_draws // 2
    if half < 2:
        raise ValueError(
            f"idata_or_labels must have at least 4 draws per chain to split, got {n_draws}"
        )
    halves = [draws[c, :half] for c in range(n_chains)]  # the middle draw of an odd count
    halves += [draws[c, n_draws - half :] for c in range(n_chains)]  # is left out
    # per element of a block of rows: the two sums (16 bytes) and posterior_similarity's
    # result, accumulator and working copy (about 12 + 8 + 8 bytes)
    n_rows = max(1, int(max_memory_bytes) // (48 * n))
    within = np.zeros(n)
    between = np.zeros(n)
    m = len(halves)
    for lo in range(0, n, n_rows):
        rows = np.arange(lo, min(lo + n_rows, n))
        budget = max(int(max_memory_bytes) - 16 * rows.size * n, 32 * rows.size * n)
        total = np.zeros((rows.size, n))
        total_sq = np.zeros((rows.size, n))
        for h in halves:
            s = posterior_similarity(h, rows=rows, max_memory_bytes=budget)
            total += s
            total_sq += np.multiply(s, s, out=s)
        # W: the mean Bernoulli variance (ddof 1); B: n times the variance of the means
        within[rows] = (half / (half - 1) / m) * (total - total_sq).sum(axis=1)
        np.multiply(total, total, out=total)  # (Σ S)²: Σ (S - mean)² = Σ S² - (Σ S)² / m
        spread = np.maximum(total_sq - total / m, 0.0)
        between[rows] = (half / (m - 1)) * spread.sum(axis=1)
    if by_item:
        return _pooled_rhat(within, between, half, constant=np.nan)
    return float(_pooled_rhat(within.sum(), between.sum(), half, constant=1.0))


def _pooled_rhat(within, between, n: int, constant: float):
    """``sqrt((n - 1 + B/W) / n)``; ``inf`` where the half-chains are constant but differ
    (``W = 0 < B``) and ``constant`` where nothing varies (``B = W = 0``)."""
    within, between = np.asarray(within, float), np.asarray(between, float)
    safe = np.where(within > 0, within, 1.0)
    ratio = np.where(within > 0, between / safe, np.where(between > 0, np.inf, 0.0))
    rhat = np.sqrt((n - 1 + ratio) / n)
    return np.where((within <= 0) & (between <= 0), constant, rhat)
