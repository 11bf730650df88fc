"""Bad inputs to every public function, distribution, model builder and step method.

Each row of ``CASES`` is ``(callable, kwargs, error, match)``: the call must raise ``error``
with a message matching ``match`` (which names the offending argument). Cases marked
``xfail(strict=True)`` are problems in modules owned by others (the reason names the module
and the behaviour); they turn into failures when fixed, so the owner removes the mark.
Behaviours that are not errors (documented defaults) are checked by the tests after the table.
"""

import logging
import math
import pickle

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytensor
import pytest
from pymc.logprob.utils import ParameterValueError

import pymc_crp as pmc
from pymc_crp import posets
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
BMV = pmc.BatchedMvNormal.dist
PO = pmc.models.partial_order
CPO = pmc.models.clustered_partial_orders
SYM = pytensor.shared  # a symbolic (non-constant) parameter: checked when drawing

# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------
CASES = [
    # ---- CRP ---------------------------------------------------------------------------
    (CRP, dict(concentration=0.0, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=-1.0, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=NAN, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=INF, max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=[1.0, -2.0], max_clusters=3, n=4), ValueError, "concentration"),
    (CRP, dict(concentration=1.0, discount=1.0, max_clusters=3, n=4), ValueError, "discount"),
    (CRP, dict(concentration=1.0, discount=-0.1, max_clusters=3, n=4), ValueError, "discount"),
    (CRP, dict(concentration=1.0, discount=NAN, max_clusters=3, n=4), ValueError, "discount"),
    (
        CRP,
        dict(concentration=-0.5, discount=0.5, max_clusters=3, n=4),
        ValueError,
        "concentration must be greater than -discount",
    ),
    (CRP, dict(concentration=1.0, max_clusters=0, n=4), ValueError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=2.5, n=4), TypeError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=True, n=4), TypeError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=SYM(np.int64(3)), n=4), TypeError, "max_clusters"),
    (CRP, dict(concentration=1.0, max_clusters=3, n=0), ValueError, "n must"),
    (CRP, dict(concentration=1.0, max_clusters=3, n=-2), ValueError, "n must"),
    (CRP, dict(concentration=1.0, max_clusters=3), TypeError, "needs n"),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, 1, 3]),
        ValueError,
        "observed labels of .* must lie in 0..2",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, -1, 1]),
        ValueError,
        "observed labels of .* must lie in 0..2",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, NAN, 1]),
        ValueError,
        "observed labels of .* must be finite",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=[0, 0.5, 1]),
        ValueError,
        "observed labels of .* must be integer",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, observed=["a", "b"]),
        TypeError,
        "observed labels of .* must be an array of integer labels",
    ),
    (
        in_model,
        dict(dist=pmc.CRP, concentration=1.0, max_clusters=3, n=4, observed=[0, 1, 1]),
        ValueError,
        "observed must hold label vectors of length n=4",
    ),
    (
        logp_eval,
        dict(dist=CRP(SYM(-1.0), max_clusters=3, n=3), value=np.array([0, 1, 1])),
        ParameterValueError,
        r"\A0 <= discount < 1, concentration > -discount",
    ),
    # ---- Dirichlet-multinomial partition ---------------------------------------------
    (DMP, dict(gamma=0.0, n_groups=3, n=4), ValueError, "gamma must be positive"),
    (DMP, dict(gamma=-1.0, n_groups=3, n=4), ValueError, "gamma must be positive"),
    (DMP, dict(gamma=NAN, n_groups=3, n=4), ValueError, "gamma must be finite"),
    (DMP, dict(gamma=INF, n_groups=3, n=4), ValueError, "gamma must be finite"),
    (DMP, dict(gamma=1.0, n_groups=0, n=4), ValueError, "n_groups"),
    (DMP, dict(gamma=1.0, n_groups=1.5, n=4), TypeError, "n_groups"),
    (
        in_model,
        dict(dist=pmc.DirichletMultinomialPartition, gamma=1.0, n_groups=2, observed=[0, 2]),
        ValueError,
        "observed labels of .* must lie in 0..1",
    ),
    (
        logp_eval,
        dict(dist=DMP(SYM(-1.0), n_groups=3, n=3), value=np.array([0, 1, 1])),
        ParameterValueError,
        r"\Agamma > 0",
    ),
    # ---- EquicorrelatedNormal ----------------------------------------------------------
    (EQN, dict(mu=np.zeros(3), rho=1.0), ValueError, "rho must lie in"),
    (EQN, dict(mu=np.zeros(3), rho=-0.1), ValueError, "rho must lie in"),
    (EQN, dict(mu=np.zeros(3), rho=NAN), ValueError, "rho must lie in"),
    (EQN, dict(mu=np.zeros(3), rho=0.2, scale=0.0), ValueError, "scale must be positive"),
    (EQN, dict(mu=np.zeros(3), rho=0.2, scale=-1.0), ValueError, "scale must be positive"),
    (EQN, dict(mu=np.array([0.0, NAN]), rho=0.2), ValueError, "mu must be finite"),
    (EQN, dict(mu=0.0, rho=0.2), ValueError, "mu must have at least one dimension"),
    (draw, dict(dist=EQN(np.zeros(3), SYM(1.5))), ValueError, r"\Arho must lie in"),
    (draw, dict(dist=EQN(np.zeros(3), 0.5, SYM(-1.0))), ValueError, r"\Ascale must be positive"),
    (
        logp_eval,
        dict(dist=EQN(np.zeros(3), SYM(1.0)), value=np.zeros(3)),
        ParameterValueError,
        r"\A0 <= rho < 1",
    ),
    # ---- InverseWishart (pymc_crp/inverse_wishart.py) -----------------------------------
    (IW, dict(nu=5.0, scale=np.array([[1.0, NAN], [NAN, 1.0]])), ValueError, "scale must be"),
    (IW, dict(nu=NAN, scale=np.eye(2)), ValueError, "nu must be finite"),
    (IW, dict(nu=5.0, scale=np.ones(3)), ValueError, "scale must be a"),
    pytest.param(
        IW,
        dict(nu=1.0, scale=np.eye(3)),
        ValueError,
        "nu",
    ),
    pytest.param(
        IW,
        dict(nu=5.0, scale=-np.eye(3)),
        ValueError,
        "scale",
    ),
    pytest.param(
        IW,
        dict(nu=5.0, scale=np.array([[1.0, 0.5], [0.0, 1.0]])),
        ValueError,
        "scale",
    ),
    pytest.param(
        IW,
        dict(nu=5.0, scale=np.ones((2, 3))),
        ValueError,
        "scale",
    ),
    # ---- BatchedMvNormal (pymc_crp/distributions/batched_mvnormal.py) -------------------
    (BMV, dict(mean=np.zeros(3), cov=np.ones(3)), ValueError, r"cov must be a \(..., D, D\)"),
    # ---- PartialOrderLists (pymc_crp/lists.py) ------------------------------------------
    (lists_in_model, dict(observed=[[0, 1, 1]]), ValueError, r"observed\[0\] repeats item 1"),
    (lists_in_model, dict(observed=[[0, 9]]), ValueError, "observed.*item 9 outside 0..3"),
    (lists_in_model, dict(observed=[[0, 1], []]), ValueError, r"observed\[1\] is empty"),
    (lists_in_model, dict(observed=[]), ValueError, "observed holds no lists"),
    (lists_in_model, dict(observed=[[0, 1.5]]), ValueError, "observed.*non-integer"),
    (lists_in_model, dict(items=[[0, 0]]), ValueError, "items.*repeats"),
    (lists_in_model, dict(), TypeError, "needs observed lists"),
    (lists_in_model, dict(n_items=5, observed=LISTS), ValueError, "n_items=5"),
    (lists_in_model, dict(direction="up", observed=LISTS), ValueError, "direction"),
    (
        lists_in_model,
        dict(utilities_shape=(2, 4, 2), observed=LISTS),
        ValueError,
        "labels are required",
    ),
    (
        lists_in_model,
        dict(utilities_shape=(2, 4, 2), labels=np.array([0.0, 1.0, 0.0]), observed=LISTS),
        TypeError,
        "labels must be integers",
    ),
    (
        lists_in_model,
        dict(utilities_shape=(1, 1, 4, 2), n_items=4, observed=LISTS),
        ValueError,
        "utilities must have shape",
    ),
    (
        lists_logp,
        dict(utilities=np.zeros((1, 4, 2)), noise=2.0),
        ParameterValueError,
        r"\A0 <= noise <= 1",
    ),
    (
        lists_logp,
        dict(utilities=np.zeros((2, 4, 2)), labels=np.array([0, 1, 5])),
        ValueError,
        r"\Alabels must lie in 0..1",
    ),
    pytest.param(
        lists_logp,
        dict(utilities=np.zeros((2, 4, 2)), labels=np.array([0, 1])),
        ValueError,
        r"\Alabels",
    ),
    pytest.param(
        lists_logp,
        dict(utilities=np.full((1, 4, 2), NAN)),
        ValueError,
        r"\A(utilities|eta)",
    ),
    # ---- posets: counting and likelihood kernels ---------------------------------------
    (
        posets.count_linear_extensions,
        dict(adj=np.array([[0, 1], [1, 0]], bool)),
        ValueError,
        "adj has a cycle",
    ),
    (posets.count_linear_extensions, dict(adj=np.eye(2, dtype=bool)), ValueError, "irreflexive"),
    (posets.count_linear_extensions, dict(adj=np.zeros((2, 3), bool)), ValueError, "square"),
    (posets.count_linear_extensions, dict(adj=np.full((3, 3), NAN)), ValueError, "boolean"),
    (
        posets.count_linear_extensions,
        dict(adj=np.zeros((3, 3), bool), items=[0, 0]),
        ValueError,
        "items repeats item 0",
    ),
    (
        posets.count_linear_extensions,
        dict(adj=np.zeros((3, 3), bool), items=[5]),
        ValueError,
        "items contains item 5",
    ),
    (
        posets.count_linear_extensions,
        dict(adj=np.zeros((3, 3), bool), max_states=0),
        ValueError,
        "max_states",
    ),
    (
        posets.count_linear_extensions,
        dict(adj=posets.random_two_dimensional_order(60, np.random.default_rng(0)), max_states=50),
        posets.LinearExtensionLimitError,
        "max_states=50",
    ),
    (
        posets.partial_order_from_utilities,
        dict(eta=np.array([[NAN, 1.0], [0.0, 0.0]])),
        ValueError,
        "eta must be finite",
    ),
    (
        posets.list_log_likelihood,
        dict(adj=np.zeros((3, 3), bool), ranking=[0, 1, 2], p=2.0),
        ValueError,
        "p must be",
    ),
    (
        posets.list_log_likelihood,
        dict(adj=np.zeros((3, 3), bool), ranking=[0, 1, 1], p=0.1),
        ValueError,
        "ranking repeats item 1",
    ),
    (
        posets.list_log_likelihood,
        dict(adj=np.zeros((3, 3), bool), ranking=[], p=0.1),
        ValueError,
        "ranking is empty",
    ),
    (
        posets.sample_list,
        dict(adj=np.zeros((3, 3), bool), items=[0, 1, 2], p=0.1, rng=1),
        TypeError,
        "rng must be a numpy.random.Generator",
    ),
    # ---- model builders -----------------------------------------------------------------
    (PO, dict(lists=[[0, 1, 1]], n_items=4), ValueError, r"lists\[0\] repeats item 1"),
    (PO, dict(lists=[[0, 1, 9]], n_items=4), ValueError, r"lists\[0\] contains item 9"),
    (PO, dict(lists=[[0, -1]], n_items=4), ValueError, r"lists\[0\] contains item -1"),
    (PO, dict(lists=[[0, 1], []], n_items=4), ValueError, r"lists\[1\] is empty"),
    (PO, dict(lists=[], n_items=4), ValueError, "lists holds no lists"),
    (PO, dict(lists=[[0, NAN]], n_items=4), ValueError, r"lists\[0\] contains non-integer"),
    (PO, dict(lists=[[0]], n_items=1), ValueError, "n_items"),
    (PO, dict(lists=LISTS, n_items=4.0), ValueError, "n_items"),
    (PO, dict(lists=LISTS, n_items=4, n_dims=0), ValueError, "n_dims"),
    (PO, dict(lists=LISTS, n_items=4, direction="up"), ValueError, "direction"),
    (PO, dict(lists=LISTS, n_items=4, noise=1.5), ValueError, "noise"),
    (PO, dict(lists=LISTS, n_items=4, noise=NAN), ValueError, "noise"),
    (PO, dict(lists=LISTS, n_items=4, noise="high"), ValueError, "noise"),
    (PO, dict(lists=LISTS, n_items=4, rho_prior=(-1.0, 1.0)), ValueError, "rho_prior"),
    (PO, dict(lists=LISTS, n_items=4, rho_prior=(NAN, 1.0)), ValueError, "rho_prior"),
    (PO, dict(lists=LISTS, n_items=4, rho_prior=(1.0, 1.0, 1.0)), ValueError, "rho_prior"),
    (PO, dict(lists=LISTS, n_items=4, covariates=np.full((4, 1), NAN)), ValueError, "covariates"),
    (PO, dict(lists=LISTS, n_items=4, covariates=np.ones((3, 1))), ValueError, "covariates"),
    (PO, dict(lists=LISTS, n_items=4, item_names=["a", "b"]), ValueError, "item_names"),
    (PO, dict(lists=LISTS, n_items=4, item_names=list("aabc")), ValueError, "item_names"),
    (CPO, dict(lists=LISTS, n_items=4, partition="dp"), ValueError, "partition"),
    (CPO, dict(lists=LISTS, n_items=4, max_clusters=0), ValueError, "max_clusters"),
    (CPO, dict(lists=LISTS, n_items=4, max_clusters=2.0), ValueError, "max_clusters"),
    (CPO, dict(lists=LISTS, n_items=4, concentration=0.0), ValueError, "concentration"),
    (CPO, dict(lists=LISTS, n_items=4, concentration=NAN), ValueError, "concentration"),
    (CPO, dict(lists=LISTS, n_items=4, concentration="a"), TypeError, "concentration"),
    (
        CPO,
        dict(lists=LISTS, n_items=4, partition="dirichlet-multinomial", concentration=-1.0),
        ValueError,
        "concentration",
    ),
    (CPO, dict(lists=[[0, 0]], n_items=4), ValueError, r"lists\[0\] repeats item 0"),
    (CPO, dict(lists=LISTS, n_items=4, rho_prior=(0.0, 1.0)), ValueError, "rho_prior"),
    (MEM, dict(y=np.r_[Y, NAN]), ValueError, r"y must be finite; rows \[10\]"),
    (MIXPRIOR, dict(y=np.ones((2, 2, 2))), ValueError, "y must have shape"),
    (MEM, dict(y=np.r_[Y, INF]), ValueError, r"y must be finite; rows \[10\]"),
    (MEM, dict(y=np.ones((2, 2, 2))), ValueError, "y must have shape"),
    (MEM, dict(y=np.ones(0)), ValueError, "y must hold at least one"),
    (MEM, dict(y=["a", "b"]), TypeError, "y must be a numeric array"),
    (MEM, dict(y=Y, V=-1.0), ValueError, "V must be positive definite"),
    (MEM, dict(y=Y2, V=np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError, "V must be positive"),
    (MEM, dict(y=Y2, V=np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError, "V must be symmetric"),
    (MEM, dict(y=Y, V=np.r_[np.ones(9), NAN]), ValueError, "V must be finite"),
    (MEM, dict(y=Y, V=np.ones(7)), ValueError, "V must be None/0"),
    (MEM, dict(y=Y, V=np.r_[0.0, np.ones(9)]), ValueError, "V must be positive definite"),
    (MEM, dict(y=Y2, V=2.0), ValueError, "scalar V is only accepted for 1-D data"),
    (MEM, dict(y=Y, partition="xx"), ValueError, "partition must be one of"),
    (MEM, dict(y=Y, partition="finite"), ValueError, "needs n_components"),
    (MEM, dict(y=Y, n_components=3), ValueError, "n_components applies to"),
    (MEM, dict(y=Y, max_clusters=0), ValueError, "max_clusters"),
    (MEM, dict(y=Y, max_clusters=2.0), TypeError, "max_clusters"),
    (MEM, dict(y=Y, concentration=0.0), ValueError, "concentration"),
    (MEM, dict(y=Y, concentration=-1.0), ValueError, "concentration"),
    (
        MEM,
        dict(y=Y, partition="finite", n_components=2, concentration=[1.0, 0.0]),
        ValueError,
        "concentration",
    ),
    (
        MEM,
        dict(y=Y, partition="finite", n_components=2, concentration=[1.0, 1.0, 1.0]),
        ValueError,
        "concentration",
    ),
    (MEM, dict(y=Y, max_clusters=2, labels=[0] * 9 + [2]), ValueError, "labels must lie in"),
    (MEM, dict(y=Y, max_clusters=2, labels=[0] * 9), ValueError, "labels must be an integer"),
    (MEM, dict(y=Y, max_clusters=2, labels=[0.5] * 10), ValueError, "labels must be an integer"),
    (MEM, dict(y=Y, prior={"foo": 1}), ValueError, "prior has unknown keys"),
    (MEM, dict(y=Y, prior=[1]), TypeError, "prior must be a dict"),
    (MEM, dict(y=Y, prior={"nu": -1.0}), ValueError, r"prior\['nu'\]"),
    (MEM, dict(y=Y2, prior={"nu": 0.5}), ValueError, r"prior\['nu'\] must exceed"),
    (MEM, dict(y=Y, prior={"kappa0": 0.0}), ValueError, r"prior\['kappa0'\]"),
    (MEM, dict(y=Y, prior={"Omega": [[-1.0]]}), ValueError, r"prior\['Omega'\] must be positive"),
    (MEM, dict(y=Y2, prior={"Omega": np.eye(3)}), ValueError, r"prior\['Omega'\] must be a"),
    (MEM, dict(y=Y, prior={"m0": [NAN]}), ValueError, r"prior\['m0'\]"),
    (MEM, dict(y=Y, prior={"alpha_shape": 0.0}), ValueError, r"prior\['alpha_shape'\]"),
    # ---- datasets -------------------------------------------------------------------------
    (preflib, dict(tmp_text=HEAD + "1: 1,2,9\n"), ValueError, "item 9 outside .*1..3"),
    (preflib, dict(tmp_text=HEAD + "1: 0,1,2\n"), ValueError, "item 0 outside"),
    (preflib, dict(tmp_text=HEAD + "1: 1,2,2\n"), ValueError, "data line 1 repeats item 2"),
    (preflib, dict(tmp_text=HEAD + "1: 1,x,3\n"), ValueError, "data line 1 has a bad item 'x'"),
    (preflib, dict(tmp_text=HEAD + "1: {1,2},3\n"), ValueError, "data line 1 has a tie"),
    (preflib, dict(tmp_text=HEAD + "-2: 1,2,3\n"), ValueError, "cannot read data line 1"),
    (preflib, dict(tmp_text=HEAD + "0: 1,2,3\n"), ValueError, "holds no rankings"),
    (preflib, dict(tmp_text=HEAD), ValueError, "holds no rankings"),
    (preflib, dict(tmp_text="1: 1,2,3\n"), ValueError, "cannot read the header"),
    (preflib, dict(tmp_text=HEAD + "1: 1,2,3\n", ties="x"), ValueError, "ties must be"),
    # ---- diagnostics ------------------------------------------------------------------------
    (pmc.partition_stats, dict(idata=IDATA, var_name="q"), ValueError, "var_name 'q'"),
    (pmc.partition_stats, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (
        pmc.partition_stats,
        dict(idata=az.from_dict(posterior={"z": Z + 0.5}), var_name="z"),
        TypeError,
        "z must hold integer labels",
    ),
    (
        pmc.partition_stats,
        dict(idata=az.from_dict(posterior={"z": np.where(Z == 0, NAN, Z)}), var_name="z"),
        TypeError,
        "z must hold integer labels",
    ),
    (
        pmc.partition_stats,
        dict(idata=az.from_dict(posterior={"z": Z - 1}), var_name="z"),
        ValueError,
        "z must hold non-negative labels",
    ),
    (
        pmc.cluster_summary,
        dict(idata=IDATA, var_name="z", concentration="alpha"),
        ValueError,
        "concentration 'alpha'",
    ),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS[0]), ValueError, "idata_or_labels"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS - 1), ValueError, "non-negative"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS + 0.5), TypeError, "integer labels"),
    (pmc.posterior_similarity, dict(idata_or_labels=np.zeros((0, 6), int)), ValueError, "draw"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS, rows=[7]), ValueError, "rows"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS, method="x"), ValueError, "method"),
    (
        pmc.posterior_similarity,
        dict(idata_or_labels=DRAWS, max_memory_bytes=-1),
        ValueError,
        "max_memory_bytes",
    ),
    (pmc.adjusted_rand_index, dict(labels_a=[0, 1], labels_b=[0, 1, 1]), ValueError, "same len"),
    (pmc.adjusted_rand_index, dict(labels_a=[0, NAN], labels_b=[0, 1]), TypeError, "labels_a"),
    (pmc.adjusted_rand_index, dict(labels_a=[], labels_b=[]), ValueError, "non-empty"),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, loss="x"), ValueError, "loss"),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, n_runs=-1), ValueError, "n_runs"),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=DRAWS, max_clusters=0),
        ValueError,
        "max_clusters",
    ),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, seed=-1), ValueError, "seed"),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, seed=1.5), TypeError, "seed"),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=DRAWS, max_sweeps=0),
        ValueError,
        "max_sweeps",
    ),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=DRAWS - 1),
        ValueError,
        "idata_or_draws must hold non-negative",
    ),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=np.where(DRAWS == 0, NAN, DRAWS)),
        TypeError,
        "idata_or_draws must hold integer",
    ),
    (pmc.expected_loss, dict(labels=[0, 1], draws_or_similarity=DRAWS), ValueError, "labels has"),
    (pmc.expected_loss, dict(labels=[-1] * 6, draws_or_similarity=DRAWS), ValueError, "labels"),
    (pmc.expected_loss, dict(labels=[0.5] * 6, draws_or_similarity=DRAWS), TypeError, "labels"),
    (
        pmc.expected_loss,
        dict(labels=[0] * 6, draws_or_similarity=np.eye(6), loss="VI"),
        ValueError,
        "loss='VI' needs the posterior draws",
    ),
    (
        pmc.expected_loss,
        dict(labels=[0] * 6, draws_or_similarity=np.full((6, 6), 2.0), loss="binder"),
        ValueError,
        "similarity matrix must lie in",
    ),
    (
        pmc.expected_loss,
        dict(labels=[0] * 6, draws_or_similarity=np.full((6, 6), NAN), loss="binder"),
        ValueError,
        "draws_or_similarity",
    ),
    (pmc.relabel_by_appearance, dict(labels=[0, NAN]), ValueError, "labels must be finite"),
    (pmc.relabel_by_appearance, dict(labels=[0, 1.5]), ValueError, "labels must be integer"),
    (pmc.relabel_by_appearance, dict(labels=["a", "b"]), TypeError, "labels must be an array"),
    (pmc.relabel_by_appearance, dict(labels=3), ValueError, "labels must be a vector"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", method="x"), ValueError, "method"),
    (pmc.relabel, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", params=["nope"]), ValueError, "params"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", params="mu"), TypeError, "params"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", pivot=[0, 1]), ValueError, "pivot"),
    (
        pmc.relabel,
        dict(idata=IDATA, var_name="z", pivot=[0, 1, 2, 3, 4, 9]),
        ValueError,
        "pivot",
    ),
    (pmc.relabel, dict(idata=IDATA, var_name="z", n_slots=2), ValueError, "n_slots=2"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", n_slots=0), ValueError, "n_slots"),
    (
        pmc.relabel,
        dict(idata=IDATA, var_name="z", method="stephens", max_iter=0),
        ValueError,
        "max_iter",
    ),
    (
        pmc.relabel,
        dict(idata=IDATA, var_name="z", params=["mu"], slot_dims={"mu": "nodim"}),
        ValueError,
        "slot_dims",
    ),
    (pmc.membership_probabilities, dict(idata=IDATA, var_name="z", method="x"), ValueError, "me"),
    (
        pmc.membership_probabilities,
        dict(idata=IDATA, var_name="z", n_slots=-1),
        ValueError,
        "n_slots",
    ),
    (pmc.membership_probabilities, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (
        pmc.relation_probabilities,
        dict(utilities=np.where(UTIL_DRAWS > 1, NAN, UTIL_DRAWS)),
        ValueError,
        "finite",
    ),
    (pmc.relation_probabilities, dict(utilities=UTIL_DRAWS[0]), ValueError, "utilities must"),
    (pmc.relation_probabilities, dict(utilities=UTIL_DRAWS, chunk=0), ValueError, "chunk"),
    (pmc.relation_probabilities, dict(utilities=UTIL_DRAWS, transform=3), TypeError, "transform"),
    (
        pmc.relation_probabilities,
        dict(utilities=UTIL_DRAWS, transform=lambda u: u[:, :2]),
        ValueError,
        "transform must return shape",
    ),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 3)), threshold=1.0), ValueError, "thr"),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 3)), threshold=NAN), ValueError, "thr"),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 3)), threshold="a"), TypeError, "thr"),
    (pmc.threshold_order, dict(probabilities=np.full((3, 3), NAN)), ValueError, "probabilities"),
    (pmc.threshold_order, dict(probabilities=np.full((3, 3), 1.5)), ValueError, "probabilities"),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 2))), ValueError, "probabilities"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, threshold=2), ValueError, "threshold"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, utilities="V"), ValueError, "utilities 'V'"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, labels="c"), ValueError, "'c'"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, partition=[0, 1]), ValueError, "partition"),
    (
        pmc.consensus_order,
        dict(idata=IDATA_HPO, partition=[0, -1, 0, 0, 0, 0]),
        ValueError,
        "partition",
    ),
    (
        pmc.consensus_order,
        dict(idata=IDATA_HPO, partition=[0, NAN, 0, 0, 0, 0]),
        TypeError,
        "partition",
    ),
    (pmc.consensus_order, dict(idata=IDATA_HPO, loss="x"), ValueError, "loss"),
    (pmc.consensus_order, dict(idata=UTIL_DRAWS), TypeError, "idata must be"),
    (
        pmc.consensus_order,
        dict(
            idata=az.from_dict(posterior={"U": IDATA_HPO.posterior["U"].values, "cluster": Z + 1})
        ),
        ValueError,
        "use slot 3 but utilities 'U' have 3 slots",
    ),
    # ---- plots ----------------------------------------------------------------------------
    (pmc.plot_partial_order, dict(adj_or_probs=np.zeros((3, 2))), ValueError, "square"),
    (pmc.plot_partial_order, dict(adj_or_probs=np.full((3, 3), NAN)), ValueError, "lie in"),
    (
        pmc.plot_partial_order,
        dict(adj_or_probs=np.zeros((3, 3)), threshold=1.5),
        ValueError,
        "threshold",
    ),
    (pmc.plot_partial_order, dict(adj_or_probs=np.zeros((3, 3)), labels=["a"]), ValueError, "lab"),
    (
        pmc.plot_partial_order,
        dict(adj_or_probs=np.array([[0, 1], [1, 0]], bool)),
        ValueError,
        "adj_or_probs has a cycle",
    ),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.full((3, 3), NAN)),
        ValueError,
        "similarity_or_idata",
    ),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.full((3, 3), 2.0)),
        ValueError,
        "similarity_or_idata",
    ),
    (pmc.plot_similarity, dict(similarity_or_idata=np.zeros((3, 2))), ValueError, "square"),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.eye(3), order_by="x"),
        ValueError,
        "order_by",
    ),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.eye(3), order_by=[0, 1]),
        ValueError,
        "order_by",
    ),
    (pmc.plot_n_clusters, dict(idata=IDATA, var_name="q"), ValueError, "var_name 'q'"),
    (pmc.plot_n_clusters, dict(idata=DRAWS - 1), ValueError, "non-negative"),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), NAN)),
        ValueError,
        "membership_or_idata",
    ),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), -1.0)),
        ValueError,
        "membership_or_idata",
    ),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), 0.9)),
        ValueError,
        "rows must sum to 1",
    ),
    (pmc.plot_membership, dict(membership_or_idata=np.ones(3)), ValueError, r"\(N, K\) matrix"),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), 1 / 3), order_by="x"),
        ValueError,
        "order_by",
    ),
    # ---- step methods ---------------------------------------------------------------------
    (step_on, dict(step_cls=pmc.CRPGibbs, var="mu"), TypeError, "CRPGibbs needs a CRP"),
    (step_on, dict(step_cls=pmc.ConjugateCRPGibbs, var="theta"), ValueError, "conjugate slot"),
    (step_on, dict(step_cls=pmc.SlotSliceSampler, var="theta"), ValueError, "slot parameter"),
    (step_on, dict(step_cls=pmc.ConcentrationGibbs, var="nrm"), ValueError, "scalar Gamma"),
    (step_on, dict(step_cls=pmc.ConcentrationGibbs, var="b"), ValueError, "scalar Gamma"),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationMetropolis, var="theta", proposal="x"),
        ValueError,
        "proposal",
    ),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationMetropolis, var="theta", scale=0.0),
        ValueError,
        "scale",
    ),
    (
        step_on,
        dict(step_cls=pmc.ConcentrationMetropolis, var="theta", scale=NAN),
        ValueError,
        "scale",
    ),
    (step_on, dict(step_cls=pmc.ConcentrationMetropolis, var="mu"), ValueError, "scalar"),
    (
        step_on,
        dict(step_cls=pmc.HyperparameterMetropolis, var="b", scale=-1.0),
        ValueError,
        "scale",
    ),
    (step_on, dict(step_cls=pmc.UtilityMetropolis, var="mu"), ValueError, "UtilityMetropolis"),
    (step_on, dict(step_cls=pmc.UtilityMeanGibbs, var="mu"), ValueError, "mean utilities"),
    (step_on, dict(step_cls=pmc.LatentNormalGibbs, var="mu"), ValueError, "measurement_error"),
    (step_on, dict(step_cls=pmc.NormalInverseWishartGibbs, var="mu"), ValueError, "measurement"),
    (step_on, dict(step_cls=pmc.DirichletWeightsGibbs, var="mu"), ValueError, "measurement"),
    (step_on, dict(step_cls=pmc.MixtureLabelGibbs, var="z"), ValueError, "measurement"),
    (step_on, dict(step_cls=pmc.MixtureCRPGibbs, var="z"), ValueError, "use CRPGibbs"),
    (
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, pcn_step=0.0),
        ValueError,
        "pcn_step",
    ),
    (
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, pcn_step=1.5),
        ValueError,
        "pcn_step",
    ),
    (
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, rw_scale=NAN),
        ValueError,
        "rw_scale",
    ),
    pytest.param(
        step_on,
        dict(step_cls=pmc.UtilityMetropolis, var="U", model_fn=hpo_model, item_sweeps=-1),
        ValueError,
        "item_sweeps",
    ),
    (
        step_on,
        dict(step_cls=pmc.HyperparameterMetropolis, var="tau", model_fn=hpo_model, proposal="x"),
        ValueError,
        "proposal",
    ),
    (
        step_on,
        dict(step_cls=pmc.UtilityMeanGibbs, var="U", model_fn=hpo_model),
        ValueError,
        "mean utilities",
    ),
    (
        step_on,
        dict(step_cls=pmc.PartialOrderLabelGibbs, var="cluster", model_fn=hpo_model, n_aux=0),
        ValueError,
        "n_aux",
    ),
    (
        step_on,
        dict(step_cls=pmc.PartialOrderLabelGibbs, var="cluster", model_fn=hpo_model, n_aux=1.5),
        TypeError,
        "n_aux",
    ),
    (step_on, dict(step_cls=pmc.PartialOrderLabelGibbs, var="z"), ValueError, "PartialOrderLists"),
    (
        step_on,
        dict(step_cls=pmc.NonCentredHyperparameterMetropolis, var="p", model_fn=hpo_model),
        ValueError,
        "rho or tau of a model built",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.NonCentredHyperparameterMetropolis,
            var="rho",
            model_fn=hpo_model,
            noncentred_scale=float("nan"),
        ),
        ValueError,
        "noncentred_scale",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.NonCentredHyperparameterMetropolis,
            var="rho",
            model_fn=hpo_model,
            noncentred_scale="0.5",
        ),
        TypeError,
        "noncentred_scale must be a number",
    ),
    (
        step_on,
        dict(
            step_cls=pmc.NonCentredHyperparameterMetropolis,
            var="tau",
            model_fn=hpo_model,
            scale=0.0,
        ),
        ValueError,
        "scale",
    ),
]


def _case_id(case):
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


@pytest.mark.parametrize("fn, kwargs, error, match", CASES, ids=[_case_id(c) for c in CASES])
def test_bad_input_raises(fn, kwargs, error, match):
    with pytest.raises(error, match=match):
        fn(**kwargs)


# --------------------------------------------------------------------------------------------
# Documented behaviours (valid inputs at the edge, no error, but no silent wrong answer)
# --------------------------------------------------------------------------------------------
def test_relabel_by_appearance_treats_labels_as_names():
    """Any integers are block names; negative labels used to be wrapped around silently."""
    np.testing.assert_array_equal(pmc.relabel_by_appearance([0, -1, 0, 7]), [0, 1, 0, 2])
    np.testing.assert_array_equal(pmc.relabel_by_appearance([2.0, 2.0, 5.0]), [0, 0, 1])
    assert pmc.relabel_by_appearance(np.zeros((2, 0), dtype=int)).shape == (2, 0)


def test_crp_boundary_parameters_are_valid():
    """``θ`` just above ``-d`` is allowed and gives finite log-densities and valid draws."""
    dist = pmc.CRP.dist(-0.4, 0.5, max_clusters=6, n=6)
    draws = pm.draw(dist, draws=20, random_seed=3)
    assert draws.min() >= 0 and draws.max() < 6
    assert np.isfinite(logp_eval(dist, draws[0]))


def test_crp_logp_of_out_of_range_labels_is_minus_inf():
    """Unobserved values outside ``0..L-1`` have zero prior probability (not an error)."""
    dist = pmc.CRP.dist(1.0, max_clusters=3, n=3)
    assert logp_eval(dist, np.array([0, 1, 5])) == -np.inf
    assert logp_eval(dist, np.array([0, -1, 1])) == -np.inf


def test_equicorrelated_normal_boundary_draws_are_finite():
    """``rho = 1`` and ``scale = 0`` reached symbolically give degenerate, finite draws."""
    x = pm.draw(pmc.EquicorrelatedNormal.dist(np.zeros(3), SYM(1.0), SYM(0.5)), random_seed=2)
    assert np.all(np.isfinite(x)) and np.ptp(x) == 0.0
    x = pm.draw(pmc.EquicorrelatedNormal.dist(np.ones(3), 0.3, SYM(0.0)), random_seed=2)
    np.testing.assert_array_equal(x, np.ones(3))


def test_measurement_error_zero_V_means_no_error():
    """``V=0`` (or all-zero variances) is documented as no measurement error: no ``theta``."""
    for v in (0, np.zeros(Y.size)):
        model = pmc.models.measurement_error_mixture(Y, V=v)
        assert "theta" not in model.named_vars


@pytest.mark.parametrize(
    "orders, expected",
    [
        (("antichain", 30), math.factorial(30)),
        (("chains", (60, 60)), math.comb(120, 60)),
        (("chains", (50, 50, 50)), math.comb(150, 50) * math.comb(100, 50)),
        (("grid", 40), math.comb(80, 40) // 41),
    ],
    ids=["antichain30", "two-chains-120", "three-chains-150", "grid-2x40"],
)
def test_linear_extension_counts_do_not_wrap_around(orders, expected):
    """Counts far above ``2**64`` are exact Python integers (no int64/uint64 wrap-around)."""
    kind, size = orders
    if kind == "antichain":
        adj = posets.antichain_order(size)
    elif kind == "grid":
        adj = posets.grid_order(2, size)
    else:
        total = sum(size)
        adj = np.zeros((total, total), dtype=bool)
        start = 0
        for length in size:
            block = np.arange(start, start + length)
            adj[np.ix_(block, block)] = block[:, None] < block[None, :]
            start += length
    count = posets.count_linear_extensions(adj)
    assert expected > 2**64
    assert isinstance(count, int) and count == expected
    assert math.isclose(posets.log_count_linear_extensions(adj), math.log(expected), rel_tol=1e-12)


@pytest.mark.parametrize("cores", [1, 2])
def test_crp_gibbs_warns_when_max_clusters_is_too_small(caplog, cores):
    """Three well-separated groups and two slots: the truncation reaches the user."""
    rng = np.random.default_rng(1)
    y = np.r_[rng.normal(-10, 1, 8), rng.normal(0, 1, 8), rng.normal(10, 1, 8)]
    with pm.Model():
        z = pmc.CRP("z", 1.0, max_clusters=2, n=y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=2)
        pm.Normal("y", mu[z], 1.0, observed=y)
        with caplog.at_level(logging.WARNING, logger="pymc"):
            idata = pm.sample(
                draws=20,
                tune=20,
                chains=cores,
                cores=cores,
                random_seed=1,
                progressbar=False,
                compute_convergence_checks=False,
            )
    assert idata.sample_stats["slots_full"].values.all()
    assert np.all(idata.sample_stats["n_clusters"].values == 2)
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("increase max_clusters" in m and "slots_full" in m for m in messages)
    assert not any(np.isnan(idata.posterior["mu"].values).ravel())


def test_crp_gibbs_silent_when_max_clusters_suffices(caplog):
    """No truncation warning (and ``slots_full`` all False) with enough slots."""
    y = np.r_[np.full(6, -10.0), np.full(6, 10.0)]
    with pm.Model():
        z = pmc.CRP("z", 0.1, max_clusters=12, n=y.size)
        mu = pm.Normal("mu", 0.0, 10.0, shape=12)
        pm.Normal("y", mu[z], 1.0, observed=y)
        with caplog.at_level(logging.WARNING, logger="pymc"):
            idata = pm.sample(
                draws=10,
                tune=10,
                chains=1,
                cores=1,
                random_seed=1,
                progressbar=False,
                compute_convergence_checks=False,
            )
    assert not idata.sample_stats["slots_full"].values.any()
    assert not any("increase max_clusters" in r.getMessage() for r in caplog.records)


HELPER_TARGETS = {
    "preflib": "read_preflib",
    "lists_in_model": "PartialOrderLists",
    "lists_logp": "PartialOrderLists",
}


def _targets(case):
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


def test_bad_input_table_covers_every_public_callable():
    """Every public callable of ``pymc_crp``, ``pymc_crp.models`` and the PrefLib reader."""
    covered = set().union(*(_targets(case) for case in CASES))
    expected = {
        name
        for name in pmc.__all__
        if callable(getattr(pmc, name)) and name != "ConsensusOrder"  # a plain result record
    }
    expected |= set(pmc.models.__all__) | {"read_preflib"}
    missing = expected - covered
    assert not missing, f"no bad-input case for {sorted(missing)}"


def test_fixtures_are_valid_inputs():
    """The module-level inputs are valid (so each case fails for its own reason)."""
    assert pmc.posterior_similarity(DRAWS).shape == (6, 6)
    assert pickle.loads(pickle.dumps(IDATA)).posterior["z"].shape == (2, 5, 6)
    assert pmc.models.measurement_error_mixture(Y) is not None
    assert pmc.models.clustered_partial_orders(LISTS, 4, max_clusters=3) is not None
    assert np.isfinite(lists_logp(np.zeros((1, 4, 2))).sum())
