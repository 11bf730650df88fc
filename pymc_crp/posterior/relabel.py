r"""Relabelling: undo label switching before reading per-slot parameters.

A finite-slot model (``L`` slots, labels ``z^(s) ∈ {0..L-1}^N``, slot parameters ``φ^(s)_a``)
has a posterior invariant under permutations of the slots, so slot ``a`` of one draw need not
describe the same cluster as slot ``a`` of another. Relabelling finds for each draw ``s`` a
permutation ``τ_s`` of ``{0..L-1}`` and replaces

.. math:: z^{(s)}_i \leftarrow τ_s(z^{(s)}_i), \qquad φ^{(s)}_{τ_s(a)} \leftarrow φ^{(s)}_a,

which leaves every label-invariant quantity (the partition, the likelihood) unchanged.

- **ECR** (equivalence-classes representatives; Papastamoulis & Iliopoulos 2010): given a
  pivot partition ``c*`` (default: the VI point estimate, :func:`pymc_crp.
  point_estimate_partition`), ``τ_s`` maximises the agreement
  ``Σ_i 1{τ_s(z^(s)_i) = c*_i}``, an assignment problem on the ``L × L`` table
  ``n_ab = #{i : z^(s)_i = a, c*_i = b}`` (:func:`scipy.optimize.linear_sum_assignment`).
- **Stephens** (2000): with per-draw membership probabilities ``p^(s)_{ia}`` (the
  ``membership_probs`` stat of :class:`pymc_crp.CRPGibbs`, else the one-hot labels), iterate
  ``Q = mean_s p^(s)∘τ_s^{-1}`` and ``τ_s = argmin_τ Σ_i KL(p^(s)_i ∘ τ^{-1} ‖ Q_i)``, i.e. the
  assignment problem with cost ``C_ab = -Σ_i p^(s)_{ia} log Q_{ib}``, until no ``τ_s`` changes
  (started from the ECR solution).

References
----------
Stephens, M. (2000). Dealing with label switching in mixture models. *J. R. Stat. Soc. B*
62(4), 795–809. Papastamoulis, P. & Iliopoulos, G. (2010). An artificial allocations based
solution to the label switching problem in Bayesian analysis of mixtures of distributions.
*J. Comput. Graph. Stat.* 19(2), 313–331.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import arviz as az
import numpy as np
import xarray as xr
from scipy.optimize import linear_sum_assignment

from pymc_crp.core.checks import positive_int
from pymc_crp.posterior.draws import label_draws, posterior_variable
from pymc_crp.posterior.point_estimate import point_estimate_partition

__all__ = [
    "ecr_permutations",
    "membership_probabilities",
    "relabel",
    "stephens_permutations",
]

_METHODS = ("ecr", "stephens")
_LOG_FLOOR = 1e-12


def ecr_permutations(labels, pivot, n_slots: int) -> np.ndarray:
    """ECR slot permutations: ``perm[s, a]`` is the new slot of old slot ``a`` in draw ``s``.

    ``perm[s]`` maximises ``Σ_i 1{perm[s, labels[s, i]] = pivot[i]}``.

    Parameters
    ----------
    labels : array_like of int, shape (S, N)
        Slot labels in ``0..n_slots-1``.
    pivot : array_like of int, shape (N,)
        Pivot partition with labels in ``0..n_slots-1``.
    n_slots : int
    """
    z = label_draws(labels, name="labels")
    piv = _check_pivot(pivot, z.shape[1], n_slots)
    if z.max() >= n_slots:
        raise ValueError(f"labels must lie in 0..{n_slots - 1}, found {z.max()}")
    n_draws = z.shape[0]
    flat = (np.arange(n_draws)[:, None] * n_slots + z) * n_slots + piv[None, :]
    counts = np.bincount(flat.ravel(), minlength=n_draws * n_slots * n_slots)
    counts = counts.reshape(n_draws, n_slots, n_slots)
    perm = np.empty((n_draws, n_slots), dtype=np.int64)
    for s in range(n_draws):
        rows, cols = linear_sum_assignment(counts[s], maximize=True)
        perm[s, rows] = cols
    return perm


def _check_max_iter(max_iter) -> None:
    positive_int(max_iter, "max_iter", type_error=ValueError)


def stephens_permutations(probs, init=None, *, max_iter: int = 100, chunk: int = 256):
    """Stephens' (2000) KL relabelling of per-draw membership probabilities.

    Parameters
    ----------
    probs : array_like of float, shape (S, N, L)
        ``probs[s, i, a]``: probability that item ``i`` is in slot ``a`` at draw ``s``.
    init : array_like of int, shape (S, L), optional
        Starting permutations (default identity).
    max_iter : int, default 100
    chunk : int, default 256
        Draws processed at a time (bounds memory).

    Returns
    -------
    perm : numpy.ndarray of int64, shape (S, L)
        ``perm[s, a]``: the new slot of old slot ``a``.
    n_iter : int
        Iterations until no permutation changed (``max_iter`` if not converged).
    """
    _check_max_iter(max_iter)
    positive_int(chunk, "chunk", type_error=ValueError)
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 3:
        raise ValueError(f"probs must have shape (S, N, L), got {p.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0:
        raise ValueError("probs must be finite and non-negative")
    n_draws, n_items, n_slots = p.shape
    perm = np.tile(np.arange(n_slots), (n_draws, 1)) if init is None else np.array(init)
    if perm.shape != (n_draws, n_slots):
        raise ValueError(f"init must have shape {(n_draws, n_slots)}, got {perm.shape}")
    for it in range(1, max_iter + 1):
        q = np.zeros((n_items, n_slots))
        for lo in range(0, n_draws, chunk):
            inv = np.argsort(perm[lo : lo + chunk], axis=1)
            q += np.take_along_axis(p[lo : lo + chunk], inv[:, None, :], axis=2).sum(axis=0)
        log_q = np.log(np.maximum(q / n_draws, _LOG_FLOOR))
        new = np.empty_like(perm)
        for lo in range(0, n_draws, chunk):
            cost = -np.einsum("sia,ib->sab", p[lo : lo + chunk], log_q)
            for j, c in enumerate(cost):
                rows, cols = linear_sum_assignment(c)
                new[lo + j, rows] = cols
        if np.array_equal(new, perm):
            return perm, it
        perm = new
    return perm, max_iter


def _check_pivot(pivot, n_items: int, n_slots: int) -> np.ndarray:
    piv = np.asarray(pivot)
    if piv.ndim != 1 or piv.shape[0] != n_items:
        raise ValueError(f"pivot must be a label vector of length {n_items}, got shape {piv.shape}")
    piv = label_draws(piv[None, :], name="pivot")[0]
    if piv.max() >= n_slots:
        raise ValueError(
            f"pivot must use at most {n_slots} clusters labelled 0..{n_slots - 1}, "
            f"found label {piv.max()}"
        )
    return piv


def _sample_dims(da: xr.DataArray, name: str):
    if da.dims[:2] != ("chain", "draw"):
        raise ValueError(f"{name} must have dims (chain, draw, ...), got {da.dims}")


def _slot_axis(da: xr.DataArray, name: str, n_slots: int, slot_dims) -> int:
    if slot_dims is not None and name in slot_dims:
        dim = slot_dims[name]
        if dim not in da.dims[2:]:
            raise ValueError(f"slot_dims[{name!r}] = {dim!r} is not a dimension of {da.dims}")
        axis = da.dims.index(dim)
        if da.shape[axis] != n_slots:
            raise ValueError(
                f"slot dimension {dim!r} of {name!r} has length {da.shape[axis]}, not {n_slots}"
            )
        return axis
    for axis in range(2, da.ndim):
        if da.shape[axis] == n_slots:
            return axis
    raise ValueError(
        f"parameter {name!r} with dims {da.dims} and shape {da.shape} has no axis of length "
        f"{n_slots} (the number of slots); pass slot_dims={{{name!r}: dim}} or n_slots"
    )


def _permute_axis(values: np.ndarray, inv: np.ndarray, axis: int) -> np.ndarray:
    """``out[c, d, ..., b, ...] = values[c, d, ..., inv[c, d, b], ...]`` along ``axis``."""
    shape = [1] * values.ndim
    shape[0], shape[1], shape[axis] = inv.shape
    return np.take_along_axis(values, inv.reshape(shape), axis=axis)


def _infer_n_slots(idata, z, params, n_slots, membership_var) -> int:
    if n_slots is not None:
        positive_int(n_slots, "n_slots", type_error=ValueError)
        return int(n_slots)
    member = _membership_stat(idata, membership_var, None, n_items=z.shape[-1])
    if member is not None:
        return int(member.shape[-1])
    if params:
        da = idata.posterior[params[0]]
        _sample_dims(da, params[0])
        if da.ndim > 2 and da.shape[2] > z.max():
            return int(da.shape[2])
    return int(z.max()) + 1


def _prepare(idata, var_name, params, method, pivot, n_slots, membership_var):
    if not isinstance(idata, az.InferenceData):
        raise TypeError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    if not isinstance(method, str) or method.lower() not in _METHODS:
        raise ValueError(f"method must be 'ecr' or 'stephens', got {method!r}")
    if isinstance(params, str) or not isinstance(params, Sequence):
        raise TypeError(f"params must be a list of posterior variable names, got {params!r}")
    for name in params:
        if name not in idata.posterior.data_vars:
            raise ValueError(f"params: {name!r} is not a posterior variable")
    z_da = posterior_variable(idata, var_name, "idata")
    _sample_dims(z_da, var_name)
    z = label_draws(z_da, name=var_name, flatten=False)
    if z.ndim != 3:
        raise ValueError(f"{var_name!r} must have dims (chain, draw, N), got {z_da.dims}")
    n_slots = _infer_n_slots(idata, z, list(params), n_slots, membership_var)
    if z.max() >= n_slots:
        raise ValueError(f"labels of {var_name!r} exceed n_slots={n_slots}")
    flat = z.reshape(-1, z.shape[-1])
    if pivot is None:
        pivot = point_estimate_partition(flat, loss="VI", max_clusters=n_slots)
    pivot = _check_pivot(pivot, flat.shape[1], n_slots)
    return z_da, z, flat, n_slots, pivot


def _membership_stat(idata, membership_var, shape, n_items=None):
    """The membership stat as ``(chain, draw, N, L)``.

    :class:`pymc_crp.CRPGibbs` records it flattened per draw, ``(chain, draw, N·L)``,
    because PyMC's default trace stores array-valued stats only as flat vectors.
    """
    if not membership_var or "sample_stats" not in idata.groups():
        return None
    if membership_var not in idata.sample_stats:
        return None
    da = idata.sample_stats[membership_var]
    n_items = shape[2] if shape is not None else n_items
    if da.ndim == 3 and n_items and da.shape[-1] % n_items == 0:
        n_chains, n_draws, flat = da.shape
        da = xr.DataArray(
            np.asarray(da.values, dtype=float).reshape(n_chains, n_draws, n_items, -1),
            dims=("chain", "draw", f"{membership_var}_obs", f"{membership_var}_slot"),
            coords={"chain": da.chain, "draw": da.draw},
        )
        del flat
    if shape is None:
        return da
    if da.shape != shape:
        raise ValueError(
            f"sample_stats[{membership_var!r}] has shape {da.shape}, expected {shape} "
            "(chain, draw, N, n_slots)"
        )
    return da


def relabel(
    idata: az.InferenceData,
    var_name: str,
    params: Sequence[str] = (),
    *,
    method: str = "ecr",
    pivot=None,
    n_slots: int | None = None,
    slot_dims: Mapping[str, str] | None = None,
    membership_var: str | None = "membership_probs",
    max_iter: int = 100,
) -> az.InferenceData:
    r"""Undo label switching: permute the slots of each draw consistently across draws.

    For each draw ``s`` a slot permutation ``τ_s`` is found (see the module docstring for
    ECR and Stephens) and applied to the labels, ``z_i ← τ_s(z_i)``, to the slot axis of each
    parameter in ``params``, ``φ_{τ_s(a)} ← φ_a``, and to the last axis of the
    ``membership_probs`` stat. After ECR, slot ``k < K`` holds the cluster that best matches
    cluster ``k`` of the pivot.

    **Permuted axis**: for each parameter, the dimension ``slot_dims[name]`` if given, else
    the first dimension after ``(chain, draw)`` whose length is the number of slots ``L``.
    Other variables are copied unchanged (permute them yourself with the stored
    permutations if they are slot-indexed).

    Parameters
    ----------
    idata : arviz.InferenceData
    var_name : str
        Label variable, dims ``(chain, draw, N)``.
    params : list of str
        Slot-indexed posterior variables to permute.
    method : {"ecr", "stephens"}
    pivot : array_like of int, shape (N,), optional
        Pivot partition for ECR (and Stephens' start); default the VI point estimate with at
        most ``L`` clusters.
    n_slots : int, optional
        ``L``; default the last axis of ``membership_probs``, else the first non-sample
        axis of the first parameter, else ``max label + 1``.
    slot_dims : mapping of str to str, optional
        Slot dimension name of each parameter.
    membership_var : str or None, default "membership_probs"
        Sample stat with per-draw membership probabilities ``(chain, draw, N, L)``.
    max_iter : int, default 100
        Iterations of Stephens' algorithm.

    Returns
    -------
    arviz.InferenceData
        A new object (the input is unchanged) with relabelled ``var_name`` and ``params``,
        the relabelled membership stat, and the stat ``{var_name}_permutation``
        ``(chain, draw, slot)``: ``τ_s(a)``, the new slot of old slot ``a``.
    """
    _check_max_iter(max_iter)
    z_da, z, flat, n_slots, pivot = _prepare(
        idata, var_name, params, method, pivot, n_slots, membership_var
    )
    n_chains, n_draws, n_items = z.shape
    perm = ecr_permutations(flat, pivot, n_slots)
    member = _membership_stat(idata, membership_var, (n_chains, n_draws, n_items, n_slots))
    if method.lower() == "stephens":
        if member is not None:
            probs = member.values.reshape(-1, n_items, n_slots)
        else:
            probs = np.zeros((flat.shape[0], n_items, n_slots))
            np.put_along_axis(probs, flat[:, :, None], 1.0, axis=2)
        perm, _ = stephens_permutations(probs, perm, max_iter=max_iter)
    perm = perm.reshape(n_chains, n_draws, n_slots)
    inv = np.argsort(perm, axis=-1)

    posterior = idata.posterior.copy()
    posterior[var_name] = z_da.copy(data=np.take_along_axis(perm, z, axis=-1))
    for name in params:
        da = idata.posterior[name]
        _sample_dims(da, name)
        axis = _slot_axis(da, name, n_slots, slot_dims)
        posterior[name] = da.copy(data=_permute_axis(da.values, inv, axis))
    groups = {g: idata[g] for g in idata.groups()}
    groups["posterior"] = posterior
    stats = idata.sample_stats.copy() if "sample_stats" in idata.groups() else xr.Dataset()
    if member is not None:
        stats[membership_var] = member.copy(data=_permute_axis(member.values, inv, 3))
    stats[f"{var_name}_permutation"] = xr.DataArray(
        perm,
        dims=("chain", "draw", f"{var_name}_slot"),
        coords={d: z_da.coords[d] for d in ("chain", "draw") if d in z_da.coords},
    )
    groups["sample_stats"] = stats
    return az.InferenceData(**groups)


def membership_probabilities(
    idata: az.InferenceData,
    var_name: str,
    *,
    method: str | None = "ecr",
    pivot=None,
    n_slots: int | None = None,
    membership_var: str | None = "membership_probs",
    rao_blackwell: bool = True,
) -> np.ndarray:
    r"""Posterior membership probabilities ``P(τ_s(z_i) = k | Y)`` after relabelling.

    The frequency estimate is ``\hat P_{ik} = (1/S) Σ_s 1{τ_s(z^(s)_i) = k}`` with ``τ_s`` the
    ECR permutation of draw ``s`` (:func:`ecr_permutations`), a function of the whole label
    vector, ``τ_s = τ(z^(s))``. Its Rao--Blackwellised version averages the conditional
    expectation of each indicator given everything but ``z_i``, using the full conditionals
    ``p^(s)_{ij} = P(z_i = j | z_{-i}, φ)`` recorded at the stored state
    (``membership_probs`` of :class:`pymc_crp.CRPGibbs`):

    .. math::

        \hat P_{ik} = \frac{1}{S} \sum_s \sum_j p^{(s)}_{ij}\,
            1\{τ(z^{(s)}_{i \to j})(j) = k\},

    where ``z_{i→j}`` is the draw with label ``i`` set to ``j``: the permutation is recomputed
    for the counterfactual label, because ``τ`` depends on the label being averaged
    (using ``τ(z^(s))`` for every ``j`` is biased towards the pivot). ``τ(z_{i→j})`` depends on
    ``i`` only through ``(z_i, pivot_i)``, so one assignment problem is solved per draw, group
    and candidate slot; candidates whose conditional probability is below ``1e-12`` in the
    whole group keep ``τ(z^(s))`` (a change below ``1e-12`` per draw). Unbiased for the same
    quantity as the frequency estimate, with a smaller variance.

    Parameters
    ----------
    idata : arviz.InferenceData
    var_name : str
        Label variable.
    method : {"ecr", "stephens"} or None, default "ecr"
        Relabelling (see :func:`relabel`); ``None`` if ``idata`` is already relabelled (or
        needs no relabelling). With ``"stephens"`` (a draw's permutation depends on every
        label through the membership probabilities) and with ``None`` after :func:`relabel`
        (the stored permutations were computed from the draws' own labels) the relabelled
        frequencies are returned.
    pivot, n_slots, membership_var
        As in :func:`relabel`.
    rao_blackwell : bool, default True
        Use ``membership_probs`` when present.

    Returns
    -------
    numpy.ndarray of float64, shape (N, K)
        Rows sum to 1. Column ``k < K*`` is cluster ``k`` of the pivot; trailing slots that
        never receive probability are dropped (``K <= L``).
    """
    if method is not None and method.lower() == "ecr":
        _, z, flat, n_slots, pivot = _prepare(
            idata, var_name, (), method, pivot, n_slots, membership_var
        )
        perm = ecr_permutations(flat, pivot, n_slots)
        member = None
        if rao_blackwell:
            stat = _membership_stat(idata, membership_var, None, n_items=flat.shape[1])
            if stat is not None:
                member = np.asarray(stat.values, dtype=np.float64).reshape(
                    -1, *flat.shape[1:], n_slots
                )
        if member is not None:
            probs = _rao_blackwell_ecr(flat, member, pivot, perm) / flat.shape[0]
        else:
            probs = _frequencies(np.take_along_axis(perm, flat, axis=1), n_slots)
        return _drop_unused(probs)
    permuted = False
    if method is not None:  # Stephens
        idata = relabel(
            idata,
            var_name,
            method=method,
            pivot=pivot,
            n_slots=n_slots,
            membership_var=membership_var,
        )
        permuted = True
    elif "sample_stats" in idata.groups():
        permuted = f"{var_name}_permutation" in idata.sample_stats
    z = label_draws(idata, var_name, name="idata")
    n_items = z.shape[1]
    stat = None
    if rao_blackwell and not permuted:
        stat = _membership_stat(idata, membership_var, None, n_items=n_items)
    if stat is not None:
        member = np.asarray(stat.values, dtype=np.float64)
        probs = member.reshape(-1, n_items, member.shape[-1]).mean(axis=0)
        probs /= probs.sum(axis=1, keepdims=True)
    else:
        probs = _frequencies(z, int(z.max()) + 1 if n_slots is None else int(n_slots))
    return _drop_unused(probs)


def _frequencies(labels: np.ndarray, n_cols: int) -> np.ndarray:
    """``(N, n_cols)`` label frequencies of ``(S, N)`` draws."""
    n_draws, n_items = labels.shape
    flat = np.arange(n_items)[None, :] * n_cols + labels
    counts = np.bincount(flat.ravel(), minlength=n_items * n_cols).reshape(n_items, n_cols)
    return counts / n_draws


def _drop_unused(probs: np.ndarray) -> np.ndarray:
    used = np.flatnonzero(probs.sum(axis=0) > 0)
    return probs[:, : used.max() + 1] if used.size else probs


_NEGLIGIBLE = 1e-12


def _rao_blackwell_ecr(labels, member, pivot, perm) -> np.ndarray:
    """``Σ_s Σ_j p^(s)_{ij} 1{τ(z^(s)_{i→j})(j) = k}`` (see :func:`membership_probabilities`)."""
    n_draws, n_items = labels.shape
    n_slots = perm.shape[1]
    out = np.zeros((n_items, n_slots))
    for s in range(n_draws):
        z, p, tau = labels[s], member[s], perm[s]
        out[:, tau] += p  # τ(z) for every candidate slot (τ is a permutation)
        table = np.zeros((n_slots, n_slots), dtype=np.int64)
        np.add.at(table, (z, pivot), 1)
        group_of = z * n_slots + pivot
        for key in np.unique(group_of):
            members = np.flatnonzero(group_of == key)
            old, target = divmod(int(key), n_slots)
            weight = p[members].max(axis=0)
            for j in np.flatnonzero(weight > _NEGLIGIBLE):
                if j == old:
                    continue
                table[old, target] -= 1
                table[j, target] += 1
                _, cols = linear_sum_assignment(table, maximize=True)  # rows 0..L-1
                table[old, target] += 1
                table[j, target] -= 1
                new_k = cols[j]
                if new_k != tau[j]:
                    out[members, tau[j]] -= p[members, j]
                    out[members, new_k] += p[members, j]
    return out
