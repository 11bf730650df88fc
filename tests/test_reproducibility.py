"""Reproducibility of ``pm.sample`` with the package's step methods.

* The same ``random_seed`` gives identical traces (every posterior variable and every
  deterministic sample stat) with ``cores=1`` and ``cores=2``, and with the ``fork`` and
  ``spawn`` start methods, on a CRP normal mixture and a clustered partial-order model.
* Different chains differ (also with the HPO model's steps in :class:`~pymc_crp.ReplicaExchange`).
* Every step method of the package survives ``cloudpickle`` (what PyMC uses to ship steps to
  worker processes) and the copy continues the chain exactly as the original does; restoring
  ``step.sampling_state`` (what PyMC does between sequential chains) restarts it exactly.

The sampling runs use tiny draws: the point is bitwise equality, not inference.
"""

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods.compound import CompoundStep

import pymc_crp as pmc

SEED = 20240607
# Wall-clock stats differ between any two runs; everything else must be bitwise equal.
TIMING_STATS = {"perf_counter_start", "perf_counter_diff", "process_time_diff"}
LISTS = [[0, 1, 2, 3], [0, 1, 3, 2], [3, 2, 1, 0], [3, 2, 0], [1, 0, 2], [2, 3, 1]]
Y = np.r_[np.linspace(-3.0, -2.0, 6), np.linspace(2.0, 3.0, 6)]
SAMPLE_KWARGS = dict(
    draws=6,
    tune=6,
    chains=2,
    random_seed=SEED,
    progressbar=False,
    compute_convergence_checks=False,
)


def crp_normal_mixture():
    """``theta ~ Gamma``, ``z ~ CRP`` over 5 slots, ``mu[z]`` normal likelihood."""
    with pm.Model() as model:
        theta = pm.Gamma("theta", 1.0, 1.0)
        z = pmc.CRP("z", theta, max_clusters=5, n=Y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=5)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    return model


def clustered_lists():
    """A tiny HPO model: CRPGibbs, UtilityMetropolis, UtilityMeanGibbs, ... assigned."""
    return pmc.models.clustered_partial_orders(LISTS, 4, max_clusters=3)


def replica_exchange():
    """The HPO model's steps in three tempered replicas (the step given to ``pm.sample``)."""
    return pmc.ReplicaExchange(betas=[1.0, 0.5, 0.2])


def ridge_move():
    """The label step with the joint path of ``p``, the labels and the orders (its private
    utility kernel's tuned scales are part of the label step's sampling state)."""
    labels = pm.modelcontext(None)["cluster"]
    return [pmc.PartialOrderLabelGibbs([labels], noise_moves=1, noise_item_sweeps=1)]


BUILDERS = {
    "crp": crp_normal_mixture,
    "hpo": clustered_lists,
    "hpo-replicas": clustered_lists,
    "hpo-ridge": clustered_lists,
}
GIVEN_STEPS = {"hpo-replicas": replica_exchange, "hpo-ridge": ridge_move}


def sample(name, **kwargs):
    with BUILDERS[name]():
        step = GIVEN_STEPS[name]() if name in GIVEN_STEPS else None
        return pm.sample(**{**SAMPLE_KWARGS, "step": step, **kwargs})


@pytest.fixture(scope="module")
def runs():
    """Lazily computed ``(model, setting) -> InferenceData``, shared by the tests."""
    cache = {}

    def get(name, setting):
        if (name, setting) not in cache:
            kwargs = {
                "serial": dict(cores=1),
                "fork": dict(cores=2, mp_ctx="fork"),
                "spawn": dict(cores=2, mp_ctx="spawn"),
            }[setting]
            cache[name, setting] = sample(name, **kwargs)
        return cache[name, setting]

    return get


def assert_same_trace(a, b):
    """Every posterior variable and every non-timing sample stat is bitwise equal."""
    assert set(a.posterior.data_vars) == set(b.posterior.data_vars)
    for var in a.posterior.data_vars:
        np.testing.assert_array_equal(a.posterior[var].values, b.posterior[var].values, var)
    stats = set(a.sample_stats.data_vars) - TIMING_STATS
    assert stats == set(b.sample_stats.data_vars) - TIMING_STATS
    assert stats, "no sample stats recorded"
    for var in stats:
        np.testing.assert_array_equal(a.sample_stats[var].values, b.sample_stats[var].values, var)


@pytest.mark.parametrize(
    "name",
    # the replicas and the opt-in ridge move: slow (23 s, 17 s); the default steps stay
    [
        "crp",
        "hpo",
        pytest.param("hpo-replicas", marks=pytest.mark.slow),
        pytest.param("hpo-ridge", marks=pytest.mark.slow),
    ],
)
def test_serial_equals_parallel(runs, name):
    assert_same_trace(runs(name, "serial"), runs(name, "fork"))


def test_first_chain_equal_serial_and_parallel(runs):
    """Chain 0 never inherits state, so it agrees even where later chains do not."""
    serial, fork = runs("hpo", "serial"), runs("hpo", "fork")
    for var in serial.posterior.data_vars:
        np.testing.assert_array_equal(
            serial.posterior[var].sel(chain=0).values, fork.posterior[var].sel(chain=0).values
        )


@pytest.mark.parametrize(
    "name",
    ["crp", pytest.param("hpo", marks=pytest.mark.slow)],  # spawn: ~30 s for hpo
)
def test_fork_equals_spawn(runs, name):
    assert_same_trace(runs(name, "fork"), runs(name, "spawn"))


@pytest.mark.parametrize("name", ["crp", "hpo", "hpo-replicas"])
def test_chains_differ(runs, name):
    idata = runs(name, "fork")
    continuous = "mu" if name == "crp" else "U"
    a, b = (idata.posterior[continuous].sel(chain=c).values for c in (0, 1))
    assert not np.any(np.isclose(a, b)), "chains share draws"
    labels = "z" if name == "crp" else "cluster"
    assert not np.array_equal(*(idata.posterior[labels].sel(chain=c).values for c in (0, 1)))


def test_different_seed_differs(runs):
    other = sample("crp", cores=2, random_seed=SEED + 1)
    assert not np.array_equal(other.posterior["mu"].values, runs("crp", "fork").posterior["mu"])


# --------------------------------------------------------------------------------------------
# Pickling and sampling state of every step method
# --------------------------------------------------------------------------------------------
def mixture_crp():
    return pmc.models.measurement_error_mixture(Y, V=0.1, max_clusters=4)


def mixture_finite():
    return pmc.models.measurement_error_mixture(Y, partition="finite", n_components=3)


def crp_fixed_means():
    """CRP labels with known slot means: only package steps (no NUTS to compile)."""
    with pm.Model() as model:
        theta = pm.Gamma("theta", 1.0, 1.0)
        z = pmc.CRP("z", theta, max_clusters=4, n=Y.size)
        pm.Normal("y", pt.as_tensor([-2.5, 0.0, 2.5, 5.0])[z], 1.0, observed=Y)
    return model


def crp_cluster_scales():
    """Conjugate means with per-cluster scales: ConjugateCRPGibbs on (z, mu, sigma)."""
    with pm.Model() as model:
        theta = pm.Gamma("theta", 1.0, 1.0)
        z = pmc.CRP("z", theta, max_clusters=4, n=Y.size)
        mu = pm.Normal("mu", 0.0, 3.0, shape=4)
        sigma = pm.HalfNormal("sigma", 1.0, shape=4)
        pm.Normal("y", mu[z], sigma[z], observed=Y)
    return model


def crp_laplace_means():
    """Non-conjugate means: CRPGibbs on z, SlotSliceSampler on mu."""
    with pm.Model() as model:
        z = pmc.CRP("z", 1.0, max_clusters=4, n=Y.size)
        mu = pm.Laplace("mu", 0.0, 3.0, shape=4)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    return model


def with_concentration_metropolis():
    model = crp_fixed_means()
    with model:
        step = pmc.ConcentrationMetropolis([model["theta"]], proposal="scaled", tune_interval=2)
        return model, [step]


def with_replica_exchange():
    model = clustered_lists()
    with model:
        return model, [replica_exchange()]


STEP_MODELS = {
    "crp": lambda: (crp_fixed_means(), None),
    "crp-metropolis": with_concentration_metropolis,
    "hpo": lambda: (clustered_lists(), None),
    "hpo-replicas": with_replica_exchange,
    "mixture-crp": lambda: (mixture_crp(), None),
    "mixture-finite": lambda: (mixture_finite(), None),
    "crp-conjugate": lambda: (crp_cluster_scales(), None),
    "crp-slice": lambda: (crp_laplace_means(), None),
}
PACKAGE_STEPS = {
    pmc.CRPGibbs,
    pmc.ConcentrationGibbs,
    pmc.ConcentrationMetropolis,
    pmc.UtilityMetropolis,
    pmc.UtilityMeanGibbs,
    pmc.HyperparameterMetropolis,
    pmc.LatentNormalGibbs,
    pmc.NormalInverseWishartGibbs,
    pmc.MixtureCRPGibbs,
    pmc.DirichletWeightsGibbs,
    pmc.MixtureLabelGibbs,
    pmc.ConjugateCRPGibbs,
    pmc.SlotSliceSampler,
    pmc.ReplicaExchange,
}


@pytest.fixture(scope="module")
def assigned_steps():
    """``name -> (compound step, initial point)`` as ``pm.sample`` assigns them."""
    out = {}
    for name, build in STEP_MODELS.items():
        model, given = build()
        with model:
            provided, selected = assign_step_methods(model, given, methods=pm.STEP_METHODS)
            point = model.initial_point(random_seed=SEED)
            step = instantiate_steppers(model, provided, selected, initial_point=point)
        step = CompoundStep(step) if isinstance(step, list) else step
        out[name] = step, point
    return out


def advance(step, point, n):
    """``n`` steps from ``point``; returns the last point and the visited points."""
    visited = []
    for _ in range(n):
        point, _ = step.step(point)
        visited.append({k: np.copy(v) for k, v in point.items()})
    return point, visited


def assert_same_path(a, b):
    assert len(a) == len(b)
    for pa, pb in zip(a, b, strict=True):
        assert pa.keys() == pb.keys()
        for key in pa:
            np.testing.assert_array_equal(pa[key], pb[key], key)


def leaf_steps(step):
    """The elementary steps of a (nested) compound step."""
    if isinstance(step, CompoundStep):
        return [leaf for method in step.methods for leaf in leaf_steps(method)]
    return [step]


def test_every_package_step_is_assigned(assigned_steps):
    found = {type(m) for step, _ in assigned_steps.values() for m in leaf_steps(step)}
    missing = PACKAGE_STEPS - found
    assert not missing, f"not exercised: {sorted(c.__name__ for c in missing)}"


@pytest.mark.parametrize("name", list(STEP_MODELS))
def test_cloudpickled_step_continues_the_chain(assigned_steps, name):
    step, point = assigned_steps[name]
    step.set_rng(np.random.default_rng(SEED))
    point, _ = advance(step, point, 3)  # tuning has moved the adaptive scales
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    assert [type(m) for m in leaf_steps(clone)] == [type(m) for m in leaf_steps(step)]
    _, original = advance(step, dict(point), 4)
    _, copied = advance(clone, dict(point), 4)
    assert_same_path(original, copied)
    moved = [k for k in point if not np.array_equal(original[-1][k], point[k])]
    assert moved, "the chain did not move: the comparison would be vacuous"


@pytest.mark.parametrize(
    "name",
    [
        "crp",
        "crp-metropolis",
        "hpo",
        "hpo-replicas",
        "mixture-crp",
        "mixture-finite",
    ],
)
def test_sampling_state_restarts_the_chain(assigned_steps, name):
    """``step.sampling_state = saved`` (PyMC's reset between sequential chains) is complete."""
    step, point = assigned_steps[name]
    step.set_rng(np.random.default_rng(SEED + 1))
    saved = step.sampling_state
    _, first = advance(step, dict(point), 8)
    step.sampling_state = saved
    _, second = advance(step, dict(point), 8)
    assert_same_path(first, second)
