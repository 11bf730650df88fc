"""Chains on several Dask workers (``pymc_crp.distributed.sample_chains``).

The Dask tests start a ``LocalCluster`` of two worker processes and are skipped when
``dask.distributed`` is not installed (``pip install "pymc_crp[distributed]"``).
"""

import sys

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_crp as pmc
from pymc_crp.distributed import sample_chains

SEED = 31
TIMING_STATS = {"perf_counter_start", "perf_counter_diff", "process_time_diff"}
Y = np.r_[np.linspace(-3.0, -2.0, 6), np.linspace(2.0, 3.0, 6)]


def crp_fixed_means(y):
    """``alpha ~ Gamma(1, 1)``, ``z ~ CRP(alpha)``, ``y_i ~ N(m[z_i], 1)`` with known ``m``.

    Only exact Gibbs steps (``CRPGibbs``, ``ConcentrationGibbs``): nothing carries over
    between chains and there is little to compile. Defined here, so it reaches the workers
    by value (``cloudpickle.register_pickle_by_value`` in the ``client`` fixture).
    """
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmc.CRP("z", alpha, max_clusters=4, n=len(y))
        pm.Normal("y", pt.as_tensor([-2.5, 0.0, 2.5, 5.0])[z], 1.0, observed=y)
    return model


BUILDER = crp_fixed_means
SAMPLE_KWARGS = {"draws": 8, "tune": 4, "compute_convergence_checks": False}


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers lack tests/
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as dask_client:
        yield dask_client


@pytest.fixture(scope="module")
def local():
    return sample_chains(BUILDER, Y, None, chains=2, seed=SEED, sample_kwargs=SAMPLE_KWARGS)


def assert_same_trace(a, b):
    """Every posterior variable and non-timing sample stat is bitwise equal."""
    assert set(a.posterior.data_vars) == set(b.posterior.data_vars)
    for var in a.posterior.data_vars:
        np.testing.assert_array_equal(a.posterior[var].values, b.posterior[var].values, var)
    stats = set(a.sample_stats.data_vars) - TIMING_STATS
    assert stats and stats == set(b.sample_stats.data_vars) - TIMING_STATS
    for var in stats:
        np.testing.assert_array_equal(a.sample_stats[var].values, b.sample_stats[var].values, var)


def test_dask_chains_equal_the_local_run(client, local):
    merged = sample_chains(BUILDER, Y, client, chains=2, seed=SEED, sample_kwargs=SAMPLE_KWARGS)
    for group in ("posterior", "sample_stats"):
        np.testing.assert_array_equal(merged[group].chain.values, [0, 1])
        assert merged[group].sizes["draw"] == SAMPLE_KWARGS["draws"]
    assert merged.observed_data["y"].shape == Y.shape  # one copy, not one per chain
    assert merged.posterior.attrs["random_seed"] == SEED
    assert_same_trace(merged, local)


def test_tasks_ran_on_the_workers(client):
    """The chains really leave this process (two worker processes with one thread each)."""
    import os

    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids


def test_chains_differ(local):
    alpha = local.posterior["alpha"].values
    assert not np.any(np.isclose(alpha[0], alpha[1]))


def test_chain_i_is_pm_sample_chain_i(local):
    """Chain ``i`` gets the random stream ``pm.sample(chains=n, random_seed=seed)`` gives it."""
    with BUILDER(Y):
        reference = pm.sample(
            chains=2, cores=1, random_seed=SEED, progressbar=False, **SAMPLE_KWARGS
        )
    assert_same_trace(local, reference)


def _not_a_model(data):
    return data


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(builder=None), TypeError, "builder must be callable"),
        (dict(chains=0), ValueError, "chains must be a positive integer"),
        (dict(chains=2.0), ValueError, "chains must be a positive integer"),
        (dict(seed=-1), ValueError, "seed must be a non-negative integer"),
        (dict(seed=1.5), ValueError, "seed must be a non-negative integer"),
        (dict(sample_kwargs=[("draws", 5)]), TypeError, "sample_kwargs must be a mapping"),
        (dict(sample_kwargs={"cores": 2}), ValueError, r"sample_kwargs must not set \['cores'\]"),
        (dict(sample_kwargs={"random_seed": 1}), ValueError, "random_seed"),
        (dict(builder=_not_a_model), TypeError, "builder must return a pymc.Model"),
    ],
)
def test_sample_chains_bad_inputs(kwargs, error, match):
    args = {"builder": BUILDER, "data": Y, "client": None, "chains": 1, "seed": 0, **kwargs}
    with pytest.raises(error, match=match):
        sample_chains(**args)
