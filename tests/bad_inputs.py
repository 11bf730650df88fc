"""Shared inputs and builders of the bad-input tables (``tests/*/test_*_inputs.py``).

Each folder of ``tests/`` holds the table of its layer: rows ``(callable, kwargs, error,
match)``, where the call must raise ``error`` with a message matching ``match`` (which names
the offending argument). Cases marked ``xfail(strict=True)`` are problems in modules owned by
others (the reason names the module and the behaviour); they turn into failures when fixed,
so the owner removes the mark. ``tests/test_bad_input_coverage.py`` checks that the tables
together reach every public callable.
"""

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytensor
import pytest

import pymc_crp as pmc
from pymc_crp.core.lists import _item_sets, encode_lists

matplotlib.use("Agg")

NAN, INF = np.nan, np.inf
RNG = np.random.default_rng(20240601)
Y = np.r_[np.linspace(-3.0, -2.0, 5), np.linspace(2.0, 3.0, 5)]
Y2 = np.c_[Y, Y[::-1]]
LISTS = [[0, 1, 2], [2, 1], [1, 0, 2, 3]]
ENCODED = encode_lists(LISTS, 4)
Z = RNG.integers(0, 3, (2, 5, 6))
DRAWS = Z.reshape(10, 6)
IDATA = az.from_dict(posterior={"z": Z, "mu": RNG.normal(size=(2, 5, 3))})
IDATA_HPO = az.from_dict(
    posterior={"U": RNG.normal(size=(2, 5, 3, 4, 2)), "cluster": Z},
)
UTIL_DRAWS = RNG.normal(size=(10, 4, 2))


def xfail(reason):
    """Strict expected failure: a problem in a module this test file's author does not own."""
    return pytest.mark.xfail(strict=True, reason=reason)


# --------------------------------------------------------------------------------------------
# Small builders used by the table (each builds its own model so cases stay independent)
# --------------------------------------------------------------------------------------------
def in_model(dist, name="x", **kwargs):
    """Create ``dist(name, **kwargs)`` inside a fresh model."""
    with pm.Model():
        return dist(name, **kwargs)


def logp_eval(dist, value):
    """Evaluate the log-density of ``dist`` at ``value``."""
    return pm.logp(dist, value).eval()


def draw(dist):
    """One random draw of ``dist``."""
    return pm.draw(dist, random_seed=1)


def crp_model(max_clusters=4, concentration=None):
    """``theta ~ Gamma``, ``z ~ CRP``, ``mu[z]`` normal likelihood; returns the model."""
    with pm.Model() as model:
        theta = pm.Gamma("theta", 1.0, 1.0) if concentration is None else concentration
        pm.Beta("b", 1.0, 1.0)
        pm.Normal("nrm", 0.0, 1.0)
        z = pmc.CRP("z", theta, max_clusters=max_clusters, n=Y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=max_clusters)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    return model


def step_on(step_cls, var, model_fn=crp_model, **kwargs):
    """Build ``step_cls([model[var]], **kwargs)`` on a fresh model."""
    model = model_fn()
    with model:
        return step_cls([model[var]], **kwargs)


def hpo_model():
    """A tiny clustered partial-order model."""
    return pmc.models.clustered_partial_orders(LISTS, 4, max_clusters=3)


def covariate_model():
    """A tiny single-order model with one item covariate (``beta``)."""
    return pmc.models.partial_order(LISTS, 4, n_dims=1, covariates=np.arange(4.0)[:, None])


def lists_in_model(utilities_shape=(4, 2), **kwargs):
    """``PartialOrderLists`` on normal utilities of the given shape."""
    with pm.Model():
        u = pm.Normal("u", 0.0, 1.0, shape=utilities_shape)
        return pmc.PartialOrderLists("lists", u, **kwargs)


def lists_logp(utilities, labels=None, noise=0.1):
    """Log-likelihood of ``LISTS`` under constant utilities."""
    dist = pmc.PartialOrderLists.dist(utilities, labels, noise, item_sets=_item_sets(ENCODED))
    return logp_eval(dist, ENCODED)


def preflib(tmp_text, **kwargs):
    """Write ``tmp_text`` to a temporary ``.soi`` file and read it."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.soi"
        path.write_text(tmp_text)
        return pmc.datasets.read_preflib(path, **kwargs)


HEAD = "# NUMBER ALTERNATIVES: 3\n"
CRP = pmc.CRP.dist
DMP = pmc.DirichletMultinomialPartition.dist
EQN = pmc.EquicorrelatedNormal.dist
IW = pmc.InverseWishart.dist
MEM = pmc.models.measurement_error_mixture
MIXPRIOR = pmc.models.default_mixture_prior
MAXCLUSTERS = pmc.models.default_max_clusters
BMV = pmc.BatchedMvNormal.dist
PO = pmc.models.partial_order
CPO = pmc.models.clustered_partial_orders
SYM = pytensor.shared  # a symbolic (non-constant) parameter: checked when drawing


def case_id(case):
    """A readable test id for one row of a table."""
    values = case.values if hasattr(case, "values") else case
    fn, kwargs = values[0], values[1]
    name = getattr(fn, "__name__", type(fn).__name__)
    owner = getattr(getattr(fn, "__self__", None), "__name__", None)
    if owner is not None:
        name = f"{owner}.{name}"
    if name in ("in_model", "step_on", "logp_eval", "draw"):
        inner = kwargs.get("dist", kwargs.get("step_cls"))
        op = getattr(getattr(inner, "owner", None), "op", None)
        inner_name = type(op).__name__ if op is not None else getattr(inner, "__name__", "?")
        name = f"{name}[{inner_name}]"
    keys = ",".join(k for k in kwargs if k not in ("dist", "step_cls"))
    return f"{name}({keys})"


def check_raises(fn, kwargs, error, match):
    """Call ``fn(**kwargs)`` and require ``error`` with a message matching ``match``."""
    with pytest.raises(error, match=match):
        fn(**kwargs)


HELPER_TARGETS = {
    "preflib": "read_preflib",
    "lists_in_model": "PartialOrderLists",
    "lists_logp": "PartialOrderLists",
}


def targets(case):
    """Names of the public objects exercised by one case of the table."""
    values = case.values if hasattr(case, "values") else case
    fn, kwargs = values[0], values[1]
    names = {
        getattr(fn, "__name__", None),
        getattr(getattr(fn, "__self__", None), "__name__", None),
    }
    names.add(HELPER_TARGETS.get(getattr(fn, "__name__", None)))
    for key in ("dist", "step_cls"):
        obj = kwargs.get(key)
        names.add(getattr(obj, "__name__", None))
        op = getattr(getattr(obj, "owner", None), "op", None)
        if op is not None:
            names.add(type(op).__name__.removesuffix("RV"))
    return names
