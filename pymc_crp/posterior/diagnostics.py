r"""Label-invariant diagnostics of posterior partitions: summaries and posterior similarity.

Labels switch between slots across draws and chains (docs/mathematics.md, *Which
quantities R-hat is meaningful for*), so per-slot parameters are not comparable between
draws. This module reports quantities that depend on a
label vector ``c`` only through the partition it induces, with block sizes ``n_1..n_K``
(``Σ_k n_k = N``):

- the number of clusters ``K``;
- the size of the largest cluster ``max_k n_k``;
- the partition entropy ``H(c) = -Σ_k (n_k/N) log(n_k/N)`` (nats; ``0`` for one cluster,
  ``log N`` for singletons);
- the posterior similarity (co-clustering) matrix ``P_ij = P(c_i = c_j | Y)``, estimated by
  ``(1/S) Σ_s 1{c^(s)_i = c^(s)_j}``.

See :mod:`pymc_crp.posterior.point_estimate` for point-estimate partitions and
:mod:`pymc_crp.posterior.relabel` for relabelling slot parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import arviz as az
import numpy as np
import xarray as xr
from numba import njit
from scipy.linalg import blas

from pymc_crp.posterior.draws import (
    canonical_draws,
    integer_labels,
    label_draws,
    posterior_variable,
)

__all__ = [
    "DEFAULT_MAX_MEMORY_BYTES",
    "adjusted_rand_index",
    "cluster_summary",
    "partition_stats",
    "posterior_similarity",
]

#: Default memory limit of :func:`posterior_similarity` (1 GiB).
DEFAULT_MAX_MEMORY_BYTES = 2**30

_CONCENTRATION_NAMES = ("concentration", "theta", "alpha", "gamma")


# --------------------------------------------------------------------------------------------
# Label-invariant per-draw summaries
# --------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _summaries(labels, n_values):
    n_rows, n = labels.shape
    n_clusters = np.zeros(n_rows, np.int64)
    largest = np.zeros(n_rows, np.int64)
    entropy = np.zeros(n_rows)
    counts = np.zeros(n_values, np.int64)
    for s in range(n_rows):
        for i in range(n):
            counts[labels[s, i]] += 1
        k = 0
        big = 0
        h = 0.0
        for i in range(n):
            c = counts[labels[s, i]]
            if c > 0:  # first visit of this block
                k += 1
                big = max(big, c)
                p = c / n
                h -= p * np.log(p)
                counts[labels[s, i]] = 0
        n_clusters[s] = k
        largest[s] = big
        entropy[s] = h
    return n_clusters, largest, entropy


def _partition_stat_arrays(z: xr.DataArray, var_name: str) -> dict[str, xr.DataArray]:
    if z.dims[:2] != ("chain", "draw") or z.ndim != 3:
        raise ValueError(
            f"posterior variable {var_name!r} must have dims (chain, draw, N), got {z.dims}"
        )
    arr = label_draws(z, name=var_name)
    k, big, h = _summaries(arr, int(arr.max()) + 1)
    shape = z.shape[:2]
    coords = {d: z.coords[d] for d in ("chain", "draw") if d in z.coords}
    stats = {"n_clusters": k, "largest_cluster": big, "entropy": h}
    return {
        f"{var_name}_{key}": xr.DataArray(val.reshape(shape), dims=("chain", "draw"), coords=coords)
        for key, val in stats.items()
    }


def partition_stats(idata: az.InferenceData, var_name: str, *, inplace: bool = True):
    r"""Add label-invariant per-draw summaries of a partition to ``idata.posterior``.

    For each draw with block sizes ``n_1..n_K``:

    - ``{var_name}_n_clusters``: ``K``;
    - ``{var_name}_largest_cluster``: ``max_k n_k``;
    - ``{var_name}_entropy``: ``-Σ_k (n_k/N) log(n_k/N)`` (nats).

    They have dims ``(chain, draw)``, so ``az.summary``, ``az.rhat``, ``az.ess`` and
    ``az.plot_trace`` apply to them directly (``var_names=[...]``).

    Parameters
    ----------
    idata : arviz.InferenceData
        With ``var_name`` of dims ``(chain, draw, N)`` in its posterior.
    var_name : str
        Name of the label variable.
    inplace : bool, default True
        Modify ``idata`` (and return it); otherwise return a new ``InferenceData`` sharing
        the other groups.
    """
    if not isinstance(idata, az.InferenceData):
        raise TypeError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    z = posterior_variable(idata, var_name, "idata")
    new = _partition_stat_arrays(z, var_name)
    if inplace:
        for key, val in new.items():
            idata.posterior[key] = val
        return idata
    groups = {g: idata[g] for g in idata.groups()}
    groups["posterior"] = idata.posterior.assign(new)
    return az.InferenceData(**groups)


def _find_concentration(posterior: xr.Dataset, concentration) -> str | None:
    if concentration is False:
        return None
    if concentration is not None:
        if not isinstance(concentration, str):
            raise TypeError(f"concentration must be a variable name, got {concentration!r}")
        if concentration not in posterior.data_vars:
            raise ValueError(f"concentration {concentration!r} is not a posterior variable")
        return concentration
    for cand in _CONCENTRATION_NAMES:
        if cand in posterior.data_vars and posterior[cand].dims == ("chain", "draw"):
            return cand
    return None


def cluster_summary(
    idata: az.InferenceData,
    var_name: str,
    *,
    concentration: str | bool | None = None,
    log_likelihood: bool = True,
    var_names: Sequence[str] = (),
    **summary_kwargs,
):
    """ArviZ summary (means, HDIs, R-hat, ESS) of label-invariant quantities.

    Rows: ``{var_name}_n_clusters``, ``{var_name}_largest_cluster``, ``{var_name}_entropy``
    (see :func:`partition_stats`), the concentration parameter, and ``log_likelihood``, the
    total log-likelihood of each draw (sum over every variable and element of
    ``idata.log_likelihood``) when that group exists.

    Parameters
    ----------
    idata : arviz.InferenceData
    var_name : str
        Label variable.
    concentration : str, bool or None
        Name of the concentration variable; ``None`` (default) looks for a scalar posterior
        variable named ``concentration``, ``theta``, ``alpha`` or ``gamma``; ``False`` omits it.
    log_likelihood : bool, default True
        Include the total log-likelihood when ``idata.log_likelihood`` exists.
    var_names : sequence of str, default ()
        Further scalar posterior variables (dims ``(chain, draw)``), e.g. a model's noise and
        hyperparameters; scalars do not depend on the labels, so their R-hat is meaningful.
    **summary_kwargs
        Passed to :func:`arviz.summary` (e.g. ``hdi_prob``, ``kind``, ``round_to``).

    Returns
    -------
    pandas.DataFrame
    """
    if not isinstance(idata, az.InferenceData):
        raise TypeError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    z = posterior_variable(idata, var_name, "idata")
    data = _partition_stat_arrays(z, var_name)
    conc = _find_concentration(idata.posterior, concentration)
    if conc is not None:
        data[conc] = idata.posterior[conc]
    if isinstance(var_names, str):
        raise TypeError(f"var_names must be a sequence of names, got the string {var_names!r}")
    for name in var_names:
        if name not in idata.posterior.data_vars or idata.posterior[name].dims != (
            "chain",
            "draw",
        ):
            raise ValueError(
                f"var_names: {name!r} is not a scalar posterior variable (dims (chain, draw))"
            )
        data[name] = idata.posterior[name]
    if log_likelihood and "log_likelihood" in idata.groups():
        ll = idata.log_likelihood
        total = sum(
            ll[v].sum(dim=[d for d in ll[v].dims if d not in ("chain", "draw")])
            for v in ll.data_vars
        )
        data["log_likelihood"] = total
    return az.summary(xr.Dataset(data), **summary_kwargs)


# --------------------------------------------------------------------------------------------
# Posterior similarity
# --------------------------------------------------------------------------------------------
def _check_rows(rows, n: int) -> np.ndarray | None:
    if rows is None:
        return None
    idx = np.asarray(rows)
    if idx.ndim == 0:
        idx = idx[None]
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise TypeError(f"rows must be a 1-D sequence of integer item indices, got {rows!r}")
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise ValueError(f"rows must index items 0..{n - 1}, got {rows!r}")
    return idx.astype(np.int64) % n if idx.size else idx.astype(np.int64)


@njit(cache=True, nogil=True)
def _sum_squared_sizes(labels, n_blocks):
    """``Σ_s Σ_k n_{sk}^2`` for canonical labels."""
    n_draws, n = labels.shape
    counts = np.zeros(n, np.int64)
    total = 0.0
    for s in range(n_draws):
        for i in range(n):
            counts[labels[s, i]] += 1
        for k in range(n_blocks[s]):
            total += float(counts[k]) * counts[k]
            counts[k] = 0
    return total


@njit(cache=True, nogil=True)
def _group_by_block(labels, n_blocks):
    """Counting sort of each draw: ``members[s, starts[s, c]:starts[s, c + 1]]`` = block ``c``."""
    n_draws, n = labels.shape
    members = np.empty((n_draws, n), np.int32)
    starts = np.zeros((n_draws, n_blocks.max() + 1), np.int64)
    fill = np.zeros(n + 1, np.int64)
    for s in range(n_draws):
        k = n_blocks[s]
        for i in range(n):
            starts[s, labels[s, i] + 1] += 1
        for c in range(k):
            starts[s, c + 1] += starts[s, c]
            fill[c] = starts[s, c]
        for i in range(n):
            c = labels[s, i]
            members[s, fill[c]] = i
            fill[c] += 1
    return members, starts


@njit(cache=True, nogil=True)
def _co_clustering_counts(labels, n_blocks, rows_sel, upper, block_bytes):
    """``counts[r, j] = #{s : labels[s, rows_sel[r]] = labels[s, j]}`` by looping over pairs.

    Output rows are processed in blocks of about ``block_bytes`` so that the increments stay
    in cache. With ``upper`` (``rows_sel`` = all items in order) only ``j >= i`` is filled.
    """
    n_draws, n = labels.shape
    n_rows = rows_sel.shape[0]
    members, starts = _group_by_block(labels, n_blocks)
    out = np.zeros((n_rows, n), np.int32)
    pos = np.full(n, -1, np.int64)
    for r in range(n_rows):
        pos[rows_sel[r]] = r
    step = max(1, block_bytes // (4 * n))
    for lo in range(0, n_rows, step):
        hi = min(lo + step, n_rows)
        for s in range(n_draws):
            mem = members[s]
            for c in range(n_blocks[s]):
                first, last = starts[s, c], starts[s, c + 1]
                a0 = first
                if upper:  # members are sorted: skip to the first one in [lo, hi)
                    a0 = first + np.searchsorted(mem[first:last], lo)
                for a in range(a0, last):
                    r = pos[mem[a]]
                    if r >= hi:
                        if upper:
                            break
                        continue
                    if r < lo:
                        continue
                    row = out[r]
                    for b in range(a if upper else first, last):
                        row[mem[b]] += 1
    return out


def _co_clustering_blas(canon, n_blocks, idx, dtype, budget):
    """Co-clustering counts ``X Xᵀ`` (upper triangle when ``idx`` is None) in chunks of draws."""
    n_draws, n = canon.shape
    n_rows = n if idx is None else idx.size
    item = np.dtype(dtype).itemsize
    max_cols = max(int(n_blocks.max()), budget // (item * (n + n_rows) * 2))
    acc = np.zeros((n_rows, n), dtype=dtype, order="F")
    syrk = blas.ssyrk if dtype == np.float32 else blas.dsyrk
    gemm = blas.sgemm if dtype == np.float32 else blas.dgemm
    ends = np.cumsum(n_blocks)
    start = 0
    item_index = np.arange(n)
    while start < n_draws:
        stop = int(np.searchsorted(ends, ends[start] - n_blocks[start] + max_cols, "right"))
        stop = max(stop, start + 1)
        offsets = np.concatenate([[0], np.cumsum(n_blocks[start:stop])[:-1]])
        x = np.zeros((n, int(n_blocks[start:stop].sum())), dtype=dtype, order="F")
        cols = (canon[start:stop] + offsets[:, None]).ravel()
        x[np.tile(item_index, stop - start), cols] = 1.0
        if idx is None:
            acc = syrk(1.0, x, beta=1.0, c=acc, trans=0, lower=0, overwrite_c=1)
        else:
            acc = gemm(1.0, np.asfortranarray(x[idx]), x, beta=1.0, c=acc, trans_b=1, overwrite_c=1)
        start = stop
    return acc.astype(np.float64)


def posterior_similarity(
    idata_or_labels,
    var_name: str | None = None,
    *,
    rows=None,
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    method: str = "auto",
) -> np.ndarray:
    r"""Posterior similarity (co-clustering) matrix ``P_ij = P(c_i = c_j | Y)``.

    .. math:: \hat P_{ij} = \frac{1}{S}\sum_{s=1}^{S} 1\{c^{(s)}_i = c^{(s)}_j\}
        = \frac{1}{S} (X X^\top)_{ij}

    where ``X`` (``N × Σ_s K_s``) stacks the one-hot block-membership matrices of the draws.
    Two exact ways to count: the product accumulated in chunks of draws with BLAS
    (``syrk``/``gemm`` in single precision, exact for counts below ``2^24``), efficient when
    the draws have few, large clusters; or a compiled loop over the pairs within each block,
    ``O(Σ_s Σ_k n_{sk}^2)``, efficient when they have many small clusters.

    Parameters
    ----------
    idata_or_labels : InferenceData, DataArray or array_like of int
        Label draws ``(S, N)`` or ``(chain, draw, N)``, or an ``InferenceData`` with
        ``var_name``.
    var_name : str, optional
        Label variable (default: the only integer posterior variable).
    rows : array_like of int, optional
        Compute only these rows ``P[rows, :]`` (shape ``(len(rows), N)``).
    max_memory_bytes : int, default 1 GiB
        Refuse (``ValueError`` stating the memory needed) when the result and its
        accumulator, about ``12 · R · N`` bytes for ``R`` rows, would exceed this.
    method : {"auto", "blas", "pairs"}
        Counting method; ``"auto"`` compares the operation counts of the two.

    Returns
    -------
    numpy.ndarray of float64, shape (N, N) or (len(rows), N)
    """
    draws = label_draws(idata_or_labels, var_name, name="idata_or_labels")
    if isinstance(max_memory_bytes, bool) or not isinstance(max_memory_bytes, Integral):
        raise TypeError(f"max_memory_bytes must be an integer, got {max_memory_bytes!r}")
    n_draws, n = draws.shape
    idx = _check_rows(rows, n)
    n_rows = n if idx is None else idx.size
    dtype = np.float32 if n_draws < 2**24 else np.float64
    item = np.dtype(dtype).itemsize
    needed = (8 + item) * n_rows * n
    if needed > max_memory_bytes:
        raise ValueError(
            f"posterior_similarity needs about {needed / 2**20:,.1f} MiB for a {n_rows} x {n} "
            f"matrix, more than max_memory_bytes={max_memory_bytes:,} "
            f"({max_memory_bytes / 2**20:,.1f} MiB); pass rows=... to compute a subset of rows "
            f"or raise max_memory_bytes"
        )
    canon, n_blocks = canonical_draws(draws)
    if method not in ("auto", "blas", "pairs"):
        raise ValueError(f"method must be 'auto', 'blas' or 'pairs', got {method!r}")
    if method == "auto":  # pair loop when clusters are many and small, BLAS otherwise
        pair_ops = _sum_squared_sizes(canon, n_blocks) * n_rows / n
        flops = float(n_rows) * n * n_blocks.sum()
        method = "pairs" if 20.0 * pair_ops < flops else "blas"
    if method == "pairs":
        if idx is None:
            out = _co_clustering_counts(canon, n_blocks, np.arange(n), True, 2**20)
        else:  # distinct rows, then repeated as requested
            uniq, inverse = np.unique(idx, return_inverse=True)
            out = _co_clustering_counts(canon, n_blocks, uniq, False, 2**20)[inverse.ravel()]
        out = out.astype(np.float64)
    else:
        budget = max(max_memory_bytes - needed, 2**24)
        out = _co_clustering_blas(canon, n_blocks, idx, dtype, budget)
    if idx is None:  # only the upper triangle was filled
        block = 512
        for lo in range(0, n, block):
            hi = min(lo + block, n)
            out[lo:hi, :lo] = out[:lo, lo:hi].T
            diag = out[lo:hi, lo:hi]
            out[lo:hi, lo:hi] = np.triu(diag) + np.triu(diag, 1).T
    out /= n_draws
    return out


def adjusted_rand_index(labels_a, labels_b) -> float:
    r"""Adjusted Rand index of two partitions of the same ``N`` items (Hubert and Arabie, 1985).

    With the contingency table ``n_ij`` (items in block ``i`` of ``a`` and ``j`` of ``b``),
    row sums ``a_i`` and column sums ``b_j``:

    .. math::

        \mathrm{ARI} = \frac{\sum_{ij}\binom{n_{ij}}{2} - E}{\tfrac12\big(\sum_i\binom{a_i}{2}
            + \sum_j\binom{b_j}{2}\big) - E},\qquad
        E = \sum_i\binom{a_i}{2}\sum_j\binom{b_j}{2}\Big/\binom{N}{2}.

    1 for identical partitions (whatever the labels), about 0 for independent ones, negative
    below chance. When both partitions are trivial in the same way (one block each, or all
    singletons) the ratio is ``0/0`` and 1 is returned.

    Parameters
    ----------
    labels_a, labels_b : array_like of int, shape (N,)
        Two label vectors (any integer labels, e.g. a point estimate and the truth; only the
        partitions they induce matter).

    Returns
    -------
    float
    """
    a, b = np.asarray(labels_a), np.asarray(labels_b)
    for arr, name in ((a, "labels_a"), (b, "labels_b")):
        if arr.size:  # any integer labels, negative ones included
            integer_labels(arr - arr.min(), name)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError(
            "labels_a and labels_b must be non-empty label vectors of the same length, got "
            f"shapes {a.shape} and {b.shape}"
        )
    a = np.unique(a, return_inverse=True)[1].ravel()
    b = np.unique(b, return_inverse=True)[1].ravel()
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1.0)

    def pairs(counts):
        return float(np.sum(counts * (counts - 1.0)) / 2.0)

    index, rows, cols = pairs(table), pairs(table.sum(1)), pairs(table.sum(0))
    n_pairs = a.size * (a.size - 1) / 2.0
    expected = rows * cols / n_pairs if n_pairs > 0 else 0.0
    maximum = 0.5 * (rows + cols)
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)
