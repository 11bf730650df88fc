"""Access to posterior label draws: from ``InferenceData`` to integer arrays.

Every function of :mod:`pymc_crp.posterior` reads its label draws through
:func:`label_draws` (validated ``int64`` arrays ``(S, N)`` or ``(chain, draw, N)``) and
compares partitions through :func:`canonical_draws`, which relabels each draw in order of first
appearance, so that draws with equal partitions become equal rows.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import xarray as xr

from pymc_crp.core.partition_math import first_appearance

__all__ = ["canonical_draws", "integer_labels", "label_draws", "posterior_variable"]


def integer_labels(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` as ``int64`` labels; ``TypeError``/``ValueError`` naming ``name`` unless it holds
    non-negative integers (integral floats are accepted)."""
    if arr.dtype == object or arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise TypeError(f"{name} must hold integer labels, got non-integer values")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative labels, found {arr.min()}")
    return arr.astype(np.int64, copy=False)


def posterior_variable(data, var_name: str | None, name: str) -> xr.DataArray:
    """The posterior variable ``var_name`` of an ``InferenceData`` or ``Dataset`` ``data``
    (default: its only integer variable); ``ValueError`` naming ``name`` otherwise."""
    if isinstance(data, az.InferenceData):
        if "posterior" not in data.groups():
            raise ValueError(f"{name} has no posterior group")
        ds = data.posterior
    else:
        ds = data
    if var_name is None:
        ints = [v for v in ds.data_vars if ds[v].dtype.kind in "iu"]
        if len(ints) != 1:
            raise ValueError(
                f"var_name is required: {name} has {len(ints)} integer posterior variables "
                f"({', '.join(map(str, ints)) or 'none'})"
            )
        var_name = ints[0]
    if not isinstance(var_name, str):
        raise TypeError(f"var_name must be a string, got {var_name!r}")
    if var_name not in ds.data_vars:
        raise ValueError(f"var_name {var_name!r} is not a posterior variable of {name}")
    return ds[var_name]


def label_draws(data, var_name: str | None = None, *, name: str = "data", flatten: bool = True):
    """Posterior label draws as an ``int64`` array.

    Parameters
    ----------
    data : InferenceData, Dataset, DataArray or array_like of int
        An ``InferenceData`` (or posterior ``Dataset``) holding ``var_name`` with dims
        ``(chain, draw, N)``; or an array ``(S, N)`` or ``(chain, draw, N)``.
    var_name : str, optional
        Default: the only integer variable of the posterior.
    name : str
        Argument name used in error messages.
    flatten : bool, default True
        Return ``(S, N)`` with ``S = chain · draw`` (chain-major); otherwise keep the
        ``(chain, draw, N)`` shape of 3-D input.
    """
    if isinstance(data, az.InferenceData | xr.Dataset):
        data = posterior_variable(data, var_name, name)
    arr = np.asarray(data.values if isinstance(data, xr.DataArray) else data)
    if arr.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be label draws of shape (S, N) or (chain, draw, N), got shape {arr.shape}"
        )
    if arr.shape[-1] == 0 or arr.size == 0:
        raise ValueError(f"{name} must contain at least one draw of at least one label")
    arr = integer_labels(arr, name)
    if flatten and arr.ndim == 3:
        arr = arr.reshape(-1, arr.shape[-1])
    return arr


def canonical_draws(draws, name: str = "draws") -> tuple[np.ndarray, np.ndarray]:
    """Relabel each row ``0..K_s-1`` in order of first appearance.

    Returns ``(labels, n_blocks)``: ``int32`` labels of the same shape ``(S, N)`` and the
    number of blocks ``K_s`` of each row. Rows with equal partitions become equal.
    """
    arr = integer_labels(np.asarray(draws), name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (S, N), got shape {arr.shape}")
    return first_appearance(arr)
