r"""Point-estimate partitions minimising posterior expected VI or Binder loss (SALSO-style search).

Given posterior draws ``C^(1..S)`` of a partition of ``N`` items (label vectors, labels
arbitrary), the point estimate is the partition ``c`` minimising the posterior expected loss,
estimated by the average over the draws, ``E[ℓ(c, C) | Y] ≈ (1/S) Σ_s ℓ(c, C^(s))``.

Both losses are functions of the contingency table ``n_kl = #{i : c_i = k, C_i = l}`` with
margins ``n_k`` (blocks of ``c``) and ``m_l`` (blocks of ``C``), of one common form

.. math::

    ℓ(c, C) = \frac{1}{Z}\Big[\sum_k F(n_k) + \sum_l F(m_l) - 2 \sum_{k,l} F(n_{kl})\Big],

- **VI** (variation of information, Meilă 2007), in nats: ``F(x) = x log x``, ``Z = N``;
  equivalently ``VI(c, C) = H(c) + H(C) - 2 I(c, C)`` with ``H(c) = -Σ_k (n_k/N) log(n_k/N)``
  and ``I(c, C) = Σ_kl (n_kl/N) log(N n_kl / (n_k m_l))``. It lies in ``[0, log N]``.
- **Binder** with equal costs, normalised by the number of pairs: ``F(x) = x(x-1)/2``,
  ``Z = N(N-1)/2``; ``ℓ`` is the fraction of pairs ``i < j`` that are together in one
  partition and apart in the other. Its expectation depends on the draws only through the
  posterior similarity ``P_ij = P(C_i = C_j | Y)``:

  .. math:: E[\text{Binder}(c, C)] = \binom{N}{2}^{-1} \sum_{i<j} |1\{c_i = c_j\} - P_{ij}|.

The expectation is computed exactly over the draws (not the Jensen lower bound of Wade &
Ghahramani 2018 for VI). Identical draws are merged with weights, so the cost depends on the
number of distinct sampled partitions.

**Search** (Dahl, Johnson & Müller 2022, "SALSO"): from each of ``n_runs`` random starts,
allocate the items one at a time in random order, each to the existing cluster or a new one
that minimises the expected loss of the items allocated so far (every other run starts
instead from a uniformly random partition, and one run from a single cluster); then
*sweeten*: sweep the items in random order, moving each to its loss-minimising cluster, until a
sweep changes nothing;
then make *zealous* attempts (destroy a random cluster and reallocate its items sequentially;
keep the result only if the loss decreased, then sweeten again). The best sampled partition is
also sweetened (a local search started from it). Every move is evaluated incrementally from
per-draw contingency tables: moving item ``i`` into cluster ``k`` changes the bracket by
``ΔF(n_k) - 2 Σ_s w_s ΔF(n^s_{k, C^s_i})`` with ``ΔF(x) = F(x+1) - F(x)``, at cost
``O(S K)``. All candidates (search results and every sampled partition) are finally compared
with the same exact evaluation, so the estimate's expected loss is never larger than that of
the best sampled partition with at most ``max_clusters`` clusters.

References
----------
Meilă, M. (2007). Comparing clusterings — an information based distance. *J. Multivariate
Anal.* 98(5), 873–895. Binder, D. A. (1978). Bayesian cluster analysis. *Biometrika* 65(1),
31–38. Wade, S. & Ghahramani, Z. (2018). Bayesian cluster analysis: point estimation and
credible balls. *Bayesian Anal.* 13(2), 559–626. Dahl, D. B., Johnson, D. J. & Müller, P.
(2022). Search algorithms and loss functions for Bayesian clustering. *J. Comput. Graph.
Stat.* 31(4), 1189–1201.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pymc_crp.core.checks import integer_at_least, positive_int
from pymc_crp.posterior.draws import canonical_draws, label_draws

__all__ = ["LOSSES", "expected_loss", "point_estimate_partition"]

#: Supported loss names (case-insensitive).
LOSSES = ("VI", "binder")
_VI, _BINDER = 0, 1
_MAX_SEARCH_BYTES = 2**31
_TOL = 1e-9  # relative size of a score difference that counts as an improvement


# --------------------------------------------------------------------------------------------
# Loss tables and validation
# --------------------------------------------------------------------------------------------
def _check_loss(loss) -> int:
    if not isinstance(loss, str) or loss.lower() not in ("vi", "binder"):
        raise ValueError(f"loss must be 'VI' or 'binder', got {loss!r}")
    return _VI if loss.lower() == "vi" else _BINDER


def _loss_table(kind: int, n: int) -> np.ndarray:
    """``F[x]`` for ``x = 0..n+1``: ``x log x`` (VI) or ``x(x-1)/2`` (Binder)."""
    x = np.arange(n + 2, dtype=np.float64)
    if kind == _VI:
        out = np.zeros_like(x)
        out[1:] = x[1:] * np.log(x[1:])
        return out
    return x * (x - 1.0) / 2.0


def _normaliser(kind: int, n: int) -> float:
    if kind == _VI:
        return float(n)
    return max(n * (n - 1) / 2.0, 1.0)


class _Draws:
    """Distinct canonical draws ``(U, N)`` int32 with weights, block counts and loss terms."""

    def __init__(self, draws: np.ndarray, kind: int):
        canon, _ = canonical_draws(draws)
        uniq, counts = np.unique(canon, axis=0, return_counts=True)
        self.labels = np.ascontiguousarray(uniq, dtype=np.int32)
        self.n_blocks = np.asarray(self.labels.max(axis=1) + 1, dtype=np.int64)
        self.weights = counts / counts.sum()
        self.n_items = int(canon.shape[1])
        self.kind = kind
        self.F = _loss_table(kind, self.n_items)
        self.dF = np.diff(self.F)
        self.Z = _normaliser(kind, self.n_items)
        self.self_terms = _self_terms(self.labels, self.n_blocks, self.F)  # Σ_l F(m^s_l)
        self.draw_term = float(np.dot(self.weights, self.self_terms))

    def expected(self, candidates: np.ndarray) -> np.ndarray:
        """Exact expected loss of canonical candidates ``(T, N)``."""
        cands = np.ascontiguousarray(candidates, dtype=np.int32)
        kc = np.asarray(cands.max(axis=1) + 1, dtype=np.int64)
        own = _self_terms(cands, kc, self.F)
        cross = _cross_terms(cands, kc, self.labels, self.n_blocks, self.weights, self.F)
        return np.maximum(own + self.draw_term - 2.0 * cross, 0.0) / self.Z


# --------------------------------------------------------------------------------------------
# Exact evaluation kernels
# --------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _self_terms(labels, n_blocks, F):
    """``Σ_k F(n_k)`` for each canonical label row (summed in block order)."""
    n_rows, n = labels.shape
    out = np.zeros(n_rows)
    counts = np.zeros(n + 1, np.int64)
    for t in range(n_rows):
        for i in range(n):
            counts[labels[t, i]] += 1
        acc = 0.0
        for k in range(n_blocks[t]):
            acc += F[counts[k]]
            counts[k] = 0
        out[t] = acc
    return out


@njit(cache=True, nogil=True)
def _cross_terms(cands, kc, draws, kd, weights, F):
    """``Σ_s w_s Σ_kl F(n^{ts}_kl)`` for each candidate row ``t``."""
    n_cand, n = cands.shape
    n_draws = draws.shape[0]
    tab = np.zeros(kc.max() * kd.max(), np.int64)
    out = np.zeros(n_cand)
    for t in range(n_cand):
        a = cands[t]
        total = 0.0
        for s in range(n_draws):
            b = draws[s]
            ks = kd[s]
            for i in range(n):
                tab[a[i] * ks + b[i]] += 1
            acc = 0.0
            for m in range(kc[t] * ks):
                acc += F[tab[m]]
                tab[m] = 0
            total += weights[s] * acc
        out[t] = total
    return out


@njit(cache=True, nogil=True)
def _draw_cross_terms(draws, kd, weights, F):
    """``Σ_s w_s Σ_kl F(n^{ts}_kl)`` for every draw ``t``, using the symmetry in ``(t, s)``."""
    n_draws, n = draws.shape
    kmax = kd.max()
    tab = np.zeros(kmax * kmax, np.int64)
    out = np.zeros(n_draws)
    for t in range(n_draws):
        a = draws[t]
        for s in range(t, n_draws):
            b = draws[s]
            ks = kd[s]
            for i in range(n):
                tab[a[i] * ks + b[i]] += 1
            acc = 0.0
            for m in range(kd[t] * ks):
                acc += F[tab[m]]
                tab[m] = 0
            out[t] += weights[s] * acc
            if s != t:
                out[s] += weights[t] * acc
    return out


@njit(cache=True, nogil=True)
def _binder_from_similarity(labels, sim):
    """``Σ_{i<j} |1{c_i = c_j} - P_ij|``."""
    n = labels.shape[0]
    acc = 0.0
    for i in range(n):
        li = labels[i]
        for j in range(i + 1, n):
            if labels[j] == li:
                acc += 1.0 - sim[i, j]
            else:
                acc += sim[i, j]
    return acc


# --------------------------------------------------------------------------------------------
# Search kernels
# --------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _next_random(state):
    """splitmix64 step on ``state[0]``; returns a uniform 64-bit integer."""
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _shuffle(order, state):
    for j in range(order.shape[0] - 1, 0, -1):
        r = np.int64(_next_random(state) % np.uint64(j + 1))
        order[j], order[r] = order[r], order[j]


# The search kernels take the draws transposed, ``dt[i, s] = C^(s)_i`` (items by draws), and
# keep the sizes ``n_k``, the tables ``tab[s, l, k] = #{allocated i : c_i = k, C^(s)_i = l}``
# and ``wdf[s, l, k] = w_s ΔF(tab[s, l, k])`` so that a score is a sum of contiguous rows.
@njit(cache=True, nogil=True)
def _scores(i, dt, dF, wdf, sizes, kcap, acc):
    """``acc[k] = ΔF(n_k) - 2 Σ_s w_s ΔF(n^s_{k, C^s_i})`` for ``k < kcap``."""
    for k in range(kcap):
        acc[k] = 0.0
    li = dt[i]
    for s in range(li.shape[0]):
        row = wdf[s, li[s]]
        for k in range(kcap):
            acc[k] += row[k]
    for k in range(kcap):
        acc[k] = dF[sizes[k]] - 2.0 * acc[k]


@njit(cache=True, nogil=True)
def _score_one(i, k, dt, dF, wdf, sizes):
    """The insertion score of item ``i`` into cluster ``k`` (see :func:`_scores`)."""
    acc = 0.0
    li = dt[i]
    for s in range(li.shape[0]):
        acc += wdf[s, li[s], k]
    return dF[sizes[k]] - 2.0 * acc


@njit(cache=True, nogil=True)
def _move(i, k, step, dt, weights, dF, tab, wdf, sizes):
    sizes[k] += step
    li = dt[i]
    for s in range(li.shape[0]):
        c = tab[s, li[s], k] + step
        tab[s, li[s], k] = c
        wdf[s, li[s], k] = weights[s] * dF[c]


@njit(cache=True, nogil=True)
def _first_empty(sizes):
    for k in range(sizes.shape[0]):
        if sizes[k] == 0:
            return k
    return -1


@njit(cache=True, nogil=True)
def _kcap(sizes):
    for k in range(sizes.shape[0] - 1, -1, -1):
        if sizes[k] > 0:
            return k + 1
    return 0


@njit(cache=True, nogil=True)
def _allocate(items, labels, dt, weights, dF, tab, wdf, sizes, acc, tol):
    """Sequentially allocate the unallocated ``items``; returns the change of the objective."""
    change = 0.0
    for i in items:
        kcap = _kcap(sizes)
        _scores(i, dt, dF, wdf, sizes, kcap, acc)
        best_k = -1
        best = np.inf
        for k in range(kcap):
            if sizes[k] > 0 and acc[k] < best:
                best = acc[k]
                best_k = k
        empty = _first_empty(sizes)
        if empty >= 0 and (best_k < 0 or 0.0 < best - tol * (1.0 + abs(best))):
            best_k = empty
            best = 0.0
        labels[i] = best_k
        _move(i, best_k, 1, dt, weights, dF, tab, wdf, sizes)
        change += best
    return change


@njit(cache=True, nogil=True)
def _sweeten(labels, order, state, dt, weights, dF, tab, wdf, sizes, acc, tol, max_sweeps):
    """Sweeps of loss-minimising single-item moves until one changes nothing."""
    for _ in range(max_sweeps):
        changed = False
        _shuffle(order, state)
        for i in order:
            a = labels[i]
            _move(i, a, -1, dt, weights, dF, tab, wdf, sizes)
            kcap = max(_kcap(sizes), a + 1)
            _scores(i, dt, dF, wdf, sizes, kcap, acc)
            current = acc[a] if sizes[a] > 0 else 0.0
            best = current
            best_k = a
            thresh = tol * (1.0 + abs(current))
            for k in range(kcap):
                if k != a and sizes[k] > 0 and acc[k] < best - thresh:
                    best = acc[k]
                    best_k = k
            if sizes[a] > 0:
                empty = _first_empty(sizes)
                if empty >= 0 and 0.0 < best - thresh:
                    best_k = empty
            changed |= best_k != a
            labels[i] = best_k
            _move(i, best_k, 1, dt, weights, dF, tab, wdf, sizes)
        if not changed:
            return


@njit(cache=True, nogil=True)
def _zealous(labels, state, dt, weights, dF, tab, wdf, sizes, acc, tol):
    """Destroy a random cluster and reallocate its items; undo unless the loss decreased."""
    occupied = np.flatnonzero(sizes > 0)
    if occupied.shape[0] < 2:
        return False
    k = occupied[np.int64(_next_random(state) % np.uint64(occupied.shape[0]))]
    members = np.flatnonzero(labels == k)
    _shuffle(members, state)
    change = 0.0
    scale = 1.0
    for i in members:  # removing i lowers the objective by its insertion score into k
        _move(i, k, -1, dt, weights, dF, tab, wdf, sizes)
        score = _score_one(i, k, dt, dF, wdf, sizes)
        change -= score
        scale += abs(score)
        labels[i] = -1
    change += _allocate(members, labels, dt, weights, dF, tab, wdf, sizes, acc, tol)
    if change < -tol * scale:  # a real decrease, not rounding
        return True
    for i in members:
        _move(i, labels[i], -1, dt, weights, dF, tab, wdf, sizes)
        _move(i, k, 1, dt, weights, dF, tab, wdf, sizes)
        labels[i] = k
    return False


@njit(cache=True, nogil=True)
def _search_run(dt, n_labels, weights, dF, kmax, init, seed, max_sweeps, max_zealous, tol):
    """One SALSO-style run; returns labels in ``0..kmax-1`` (not canonical)."""
    n, n_draws = dt.shape
    tab = np.zeros((n_draws, n_labels, kmax), np.int32)
    wdf = np.zeros((n_draws, n_labels, kmax))  # ΔF(0) = 0
    sizes = np.zeros(kmax, np.int64)
    acc = np.zeros(kmax)
    labels = np.full(n, -1, np.int64)
    state = np.array([np.uint64(seed)], dtype=np.uint64)
    order = np.arange(n)
    if init[0] >= 0:
        labels[:] = init
        for i in range(n):
            _move(i, labels[i], 1, dt, weights, dF, tab, wdf, sizes)
    else:
        _shuffle(order, state)
        _allocate(order, labels, dt, weights, dF, tab, wdf, sizes, acc, tol)
    _sweeten(labels, order, state, dt, weights, dF, tab, wdf, sizes, acc, tol, max_sweeps)
    for _ in range(max_zealous):
        if _zealous(labels, state, dt, weights, dF, tab, wdf, sizes, acc, tol):
            _sweeten(labels, order, state, dt, weights, dF, tab, wdf, sizes, acc, tol, max_sweeps)
    return labels


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------
def _canonical_candidate(labels, n_items: int, name: str = "labels") -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D label vector, got shape {arr.shape}")
    if arr.shape[0] != n_items:
        raise ValueError(f"{name} has {arr.shape[0]} labels but the draws have {n_items} items")
    canon, _ = canonical_draws(arr[None, :], name=name)
    return canon[0]


def expected_loss(labels, draws_or_similarity, loss: str = "VI", *, var_name=None) -> float:
    r"""Posterior expected loss of a candidate partition.

    .. math::

        E[ℓ(c, C) \mid Y] ≈ \sum_s w_s\, ℓ(c, C^{(s)}), \qquad
        ℓ(c, C) = \frac{1}{Z}\Big[\sum_k F(n_k) + \sum_l F(m_l) - 2\sum_{kl} F(n_{kl})\Big]

    with ``F(x) = x log x``, ``Z = N`` for VI (nats; ``VI = H(c) + H(C) - 2 I(c, C)``) and
    ``F(x) = x(x-1)/2``, ``Z = N(N-1)/2`` for Binder (fraction of discordant pairs, i.e.
    ``Σ_{i<j} |1{c_i = c_j} - P_ij| / binom(N, 2)``). ``w_s = 1/S`` for the ``S`` draws.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
        The candidate partition (any integer labels).
    draws_or_similarity : InferenceData, DataArray or array_like
        Posterior draws: an integer array ``(S, N)`` or ``(chain, draw, N)`` (or an
        ``InferenceData`` with ``var_name``); or, for ``loss="binder"`` only, a floating
        ``(N, N)`` posterior similarity matrix (integer arrays are draws, floating arrays
        are similarity matrices). VI needs the draws.
    loss : {"VI", "binder"}
    var_name : str, optional
        Label variable when ``draws_or_similarity`` is an ``InferenceData``.

    Returns
    -------
    float
        The expected loss (VI in ``[0, log N]``; Binder in ``[0, 1]``).
    """
    kind = _check_loss(loss)
    arr = draws_or_similarity
    if isinstance(arr, np.ndarray | list | tuple) and np.asarray(arr).dtype.kind == "f":
        sim = np.asarray(arr, dtype=np.float64)
        if kind == _VI:
            raise ValueError(
                "loss='VI' needs the posterior draws, not a similarity matrix: pass the integer "
                "label draws as draws_or_similarity"
            )
        if sim.ndim != 2 or sim.shape[0] != sim.shape[1]:
            raise ValueError(
                f"draws_or_similarity as a similarity matrix must be square (N, N), "
                f"got shape {sim.shape}"
            )
        if not np.all(np.isfinite(sim)) or sim.min() < 0 or sim.max() > 1:
            raise ValueError("draws_or_similarity as a similarity matrix must lie in [0, 1]")
        cand = _canonical_candidate(labels, sim.shape[0])
        return float(_binder_from_similarity(cand, sim) / _normaliser(_BINDER, sim.shape[0]))
    draws = _Draws(label_draws(arr, var_name, name="draws_or_similarity"), kind)
    cand = _canonical_candidate(labels, draws.n_items)
    return float(draws.expected(cand[None, :])[0])


def point_estimate_partition(
    idata_or_draws,
    var_name: str | None = None,
    loss: str = "VI",
    *,
    n_runs: int = 16,
    seed: int | None = 0,
    max_clusters: int | None = None,
    max_sweeps: int = 100,
    max_zealous: int = 10,
    return_loss: bool = False,
):
    """Partition minimising the posterior expected VI or Binder loss (SALSO-style search).

    See the module docstring for the losses and the search. Candidates are the results of
    ``n_runs`` random-start runs, of runs started from one cluster and from the best sampled
    partition, and every sampled partition; the one with the least exact expected loss is
    returned, so its loss is never larger than that of the best sampled partition with at most
    ``max_clusters`` clusters.

    Parameters
    ----------
    idata_or_draws : InferenceData, DataArray or array_like of int
        Label draws ``(S, N)`` or ``(chain, draw, N)``, or an ``InferenceData`` whose posterior
        holds ``var_name``.
    var_name : str, optional
        Label variable name (default: the only integer posterior variable).
    loss : {"VI", "binder"}
    n_runs : int, default 16
        Number of random starts, alternately by sequential allocation and from a uniformly
        random partition into at most ``K ~ U{1..max_clusters}`` clusters (``0``: only the
        sampled partitions and the two deterministic starts).
    seed : int or None, default 0
        Seed of the random item orders (``None``: fresh entropy).
    max_clusters : int, optional
        Largest number of clusters considered; default the largest number of clusters among
        the draws (as SALSO). Memory is ``12 · U · L · max_clusters`` bytes for ``U`` distinct
        draws with at most ``L`` clusters.
    max_sweeps, max_zealous : int
        Limits on the sweeps of one sweetening phase and on the zealous attempts of a run
        (each accepted attempt is followed by sweetening).
    return_loss : bool, default False
        Also return the expected loss of the estimate.

    Returns
    -------
    labels : numpy.ndarray of int64, shape (N,)
        Canonical labels ``0..K-1`` numbered in order of first appearance.
    loss : float
        Only when ``return_loss``; as :func:`expected_loss`.
    """
    kind = _check_loss(loss)
    if seed is not None:
        seed = integer_at_least(seed, "seed")
    n_runs = integer_at_least(n_runs, "n_runs")
    max_sweeps = positive_int(max_sweeps, "max_sweeps")
    max_zealous = integer_at_least(max_zealous, "max_zealous")
    draws = _Draws(label_draws(idata_or_draws, var_name, name="idata_or_draws"), kind)
    kmax = int(draws.n_blocks.max())
    if max_clusters is not None:
        kmax = positive_int(max_clusters, "max_clusters")
    kmax = min(kmax, draws.n_items)
    need = 12 * draws.labels.shape[0] * int(draws.n_blocks.max()) * kmax
    if need > _MAX_SEARCH_BYTES:
        raise ValueError(
            f"the search needs about {need / 2**20:,.0f} MiB of contingency tables for "
            f"max_clusters={kmax}; lower max_clusters"
        )
    rng = np.random.default_rng(seed)
    by_item = np.ascontiguousarray(draws.labels.T)
    n_labels = int(draws.n_blocks.max())

    def run(init):
        return _search_run(
            by_item,
            n_labels,
            draws.weights,
            draws.dF,
            kmax,
            init,
            int(rng.integers(2**63)),
            max_sweeps,
            max_zealous,
            _TOL,
        )

    # every sampled partition: exact pairwise table, near-ties re-evaluated below
    cross = _draw_cross_terms(draws.labels, draws.n_blocks, draws.weights, draws.F)
    approx = np.maximum(draws.self_terms + draws.draw_term - 2.0 * cross, 0.0) / draws.Z
    approx[draws.n_blocks > kmax] = np.inf
    candidates = []
    if np.isfinite(approx).any():
        near = np.flatnonzero(approx <= approx.min() * (1 + 1e-9) + 1e-12)
        candidates.extend(draws.labels[near].astype(np.int64))
        init = draws.labels[near[0]].astype(np.int64)
        candidates.append(run(init))
    no_init = np.full(draws.n_items, -1, dtype=np.int64)
    candidates.append(run(np.zeros(draws.n_items, dtype=np.int64)))  # from one cluster
    for r in range(n_runs):
        if r % 2 == 0:  # sequential allocation
            candidates.append(run(no_init))
        else:  # a uniformly random partition into at most K ~ U{1..max_clusters} clusters
            n_start = int(rng.integers(1, kmax + 1))
            candidates.append(run(rng.integers(0, n_start, draws.n_items)))
    cands, _ = canonical_draws(np.stack(candidates))
    cands = np.unique(cands, axis=0)
    losses = draws.expected(cands)
    best = int(np.argmin(losses))
    labels = cands[best].astype(np.int64)
    if return_loss:
        return labels, float(losses[best])
    return labels
