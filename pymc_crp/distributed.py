"""Run the chains of one model on several machines (Dask) and merge them.

PyMC models do not pickle reliably, so nothing model-shaped travels: each task receives the
data and a *builder* (a picklable function ``builder(data) -> pymc.Model``), builds the model,
runs ``pm.sample(chains=1)`` with its own random stream and returns the ``InferenceData``;
the results are merged with ``arviz.concat(..., dim="chain")``. See ``docs/distributed.md``.

The chain ``i`` of ``sample_chains(..., seed=s)`` receives the random stream that
``pm.sample(chains=n, random_seed=s)`` gives its chain ``i`` (``SeedSequence(s)``'s ``i``-th
child), so the result does not depend on where or in which order the chains run, and for step
methods that keep no state across chains it equals the chains of a local ``pm.sample`` run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Integral
from typing import Any

import arviz as az
import numpy as np
import pymc as pm

from pymc_crp.core.checks import positive_int

__all__ = ["sample_chains"]

_RESERVED = ("chains", "cores", "random_seed", "return_inferencedata", "model")


def _sample_one_chain(builder, data, seed: int, chain: int, sample_kwargs: dict):
    """Build the model from ``data`` and sample chain ``chain`` (runs on a worker)."""
    model = builder(data)
    if not isinstance(model, pm.Model):
        raise TypeError(f"builder must return a pymc.Model, got {type(model).__name__}")
    stream = np.random.SeedSequence(seed, n_children_spawned=chain)  # pm.sample's chain i
    kwargs = {"progressbar": False, **sample_kwargs}
    with model:
        return pm.sample(chains=1, cores=1, random_seed=stream, **kwargs)


def sample_chains(
    builder: Callable[[Any], pm.Model],
    data: Any,
    client=None,
    *,
    chains: int = 4,
    seed: int | None = None,
    sample_kwargs: Mapping[str, Any] | None = None,
) -> az.InferenceData:
    """Sample ``chains`` independent chains, one task each, and merge them.

    Parameters
    ----------
    builder : callable
        ``builder(data)`` returns the :class:`pymc.Model`. It runs on the workers, so it must
        be picklable there: a function of an installed module, a ``functools.partial`` of one
        (e.g. ``partial(pmc.models.clustered_partial_orders, n_items=16)``), or a function
        registered with ``cloudpickle.register_pickle_by_value``.
    data : object
        Picklable data passed to ``builder`` (arrays, lists, ...).
    client : dask.distributed.Client, optional
        Where to run the tasks; ``None`` runs them one after another in this process (the
        same result, bit for bit).
    chains : int, default 4
        Number of chains (tasks).
    seed : int, optional
        Root seed; chain ``i`` uses the ``i``-th child of ``numpy.random.SeedSequence(seed)``,
        as ``pm.sample(chains=chains, random_seed=seed)`` does. ``None`` draws fresh entropy;
        the seed used is stored in ``idata.posterior.attrs["random_seed"]``.
    sample_kwargs : mapping, optional
        Further arguments of :func:`pymc.sample` (``draws``, ``tune``, ``step``, ...), except
        ``chains``, ``cores``, ``random_seed``, ``return_inferencedata`` and ``model``.

    Returns
    -------
    arviz.InferenceData
        The chains concatenated along ``chain``, numbered ``0..chains-1``.

    Raises
    ------
    TypeError
        If ``builder`` is not callable or ``sample_kwargs`` is not a mapping.
    ValueError
        For a non-positive ``chains``, a negative or non-integer ``seed``, or a reserved key
        in ``sample_kwargs``.
    """
    if not callable(builder):
        raise TypeError(f"builder must be callable (data -> pymc.Model), got {builder!r}")
    positive_int(chains, "chains", type_error=ValueError)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)
    elif isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    if sample_kwargs is not None and not isinstance(sample_kwargs, Mapping):
        raise TypeError(f"sample_kwargs must be a mapping, got {type(sample_kwargs).__name__}")
    kwargs = dict(sample_kwargs or {})
    reserved = sorted(set(kwargs) & set(_RESERVED))
    if reserved:
        raise ValueError(f"sample_kwargs must not set {reserved}: sample_chains sets them")
    args = [(builder, data, int(seed), chain, kwargs) for chain in range(int(chains))]
    if client is None:
        results = [_sample_one_chain(*a) for a in args]
    else:
        futures = [client.submit(_sample_one_chain, *a, pure=False) for a in args]
        results = client.gather(futures)
    # az.concat renumbers the chain coordinate (each result has chain 0) and keeps one copy
    # of the groups without a chain dimension (observed_data, constant_data).
    idata = az.concat(results, dim="chain") if len(results) > 1 else results[0]
    idata.posterior.attrs["random_seed"] = int(seed)
    return idata
