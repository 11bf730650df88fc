"""The SBC problems: four small models, their prior simulators and their fits.

Each problem draws ``(φ*, y)`` from the model's own prior and fits ``y`` with the step methods
``pm.sample`` assigns by default (one chain). Shared by ``tests/sbc/test_sbc_*.py`` and
``benchmarks/sbc.py``. Sizes: ``"smoke"`` (20 simulations, short chains, ranks among at most
19 draws) and ``"full"`` (200 simulations, ranks among at most 49 draws).

* ``crp``: DP mixture, ``α ~ Gamma(2, 1)``, ``z ~ CRP(α, 0)``, ``μ_j ~ N(0, 3²)``,
  ``y_i ~ N(μ_{z_i}, 1)``, N = 12 (ConcentrationGibbs, CRPGibbs, NUTS on ``μ``).
* ``pitman_yor``: the same with ``α ~ LogNormal(0, 0.5)``, ``d ~ Uniform(0, 0.8)`` (NUTS on
  ``α, d, μ``). Not a Gamma ``α``: with a Gamma concentration and a random discount,
  ``pm.sample`` fails while assigning steps (``ConcentrationGibbs.competence`` raises
  ``AttributeError: module 'pytensor.tensor' has no attribute 'NotScalarConstantError'``).
* ``partial_orders``: ``pmc.models.clustered_partial_orders``, 5 items, 14 lists of 3-4
  items, 2 dimensions, 4 slots, default priors (HyperparameterMetropolis on ``ρ, τ, p``,
  UtilityMetropolis, UtilityMeanGibbs, ConcentrationGibbs, CRPGibbs).
* ``measurement_error``: ``pmc.models.measurement_error_mixture``, N = 10 1-D observations,
  ``V = 0.25``, fixed prior (the conjugate Gibbs steps, MixtureCRPGibbs, ConcentrationGibbs).

* ``truncated_crp``: the ``crp`` problem with ``max_clusters = 3 < N = 12``: the truncated
  prior ``p(c | α) = EPPF(c | α) 1{K ≤ L} / P(K ≤ L | α)`` is one distribution, so ``α`` is
  calibrated with the default steps (ConcentrationGibbs with its truncation correction).

The number of clusters ``K`` counts the occupied slots. With ``max_clusters < N`` the model's
prior is the CRP conditioned on ``K ≤ L`` for every ``α`` (the density is renormalised by
``P(K ≤ L | α)``), which is what ``pm.draw`` samples: the simulators draw from the prior
directly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm
from pymc.pytensorf import compile as compile_pytensor
from pymc.pytensorf import find_rng_nodes, reseed_rngs

import pymc_crp as pmc
from pymc_crp.sbc import DefaultStep, SBCResult, run_sbc

__all__ = ["PROBLEMS", "SIZES", "Problem", "make_problem", "run_problem"]

SIZES = {"smoke": {"n_sims": 20, "n_keep": 19}, "full": {"n_sims": 200, "n_keep": 49}}
N_CRP = 12
N_ME = 10
N_ITEMS, N_LISTS, N_SLOTS_PO = 5, 14, 4
ME_PRIOR = {"m0": 0.0, "kappa0": 0.25, "nu": 5.0, "Omega": 3.0, "alpha_shape": 2.0,
            "alpha_rate": 1.0}  # fmt: skip


@dataclass
class Problem:
    name: str
    params: list[str]
    simulate: Any  # rng -> (truth, data)
    fit: Any  # (data, seed) -> {param: draws}


class _Draw:
    """A compiled joint prior draw of ``outputs`` (``pm.draw`` without recompiling)."""

    def __init__(self, outputs):
        self.fn = compile_pytensor([], outputs)
        self.rngs = find_rng_nodes(outputs)

    def __call__(self, rng: np.random.Generator):
        reseed_rngs(self.rngs, int(rng.integers(2**63)))
        return [np.asarray(v) for v in self.fn()]


def n_clusters(labels) -> np.ndarray:
    """Number of distinct labels in each row of ``labels`` (``(draws, N)``)."""
    labels = np.sort(np.asarray(labels), axis=-1)
    return 1 + np.count_nonzero(np.diff(labels, axis=-1), axis=-1)


def _sample(model, draws: int, tune: int, seed: int, step=None):
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)  # truncation and "few draws" messages
    try:
        with model:
            return pm.sample(
                draws=draws,
                tune=tune,
                chains=1,
                cores=1,
                step=step,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
                return_inferencedata=False,
            )
    finally:
        logger.setLevel(level)


# --------------------------------------------------------------------------------------------
# CRP normal mixtures (DP and Pitman-Yor): one model, data swapped with pm.set_data
# --------------------------------------------------------------------------------------------
def _crp_problem(size: str, pitman_yor: bool, max_clusters: int = N_CRP) -> Problem:
    draws, tune = (250, 150) if size == "smoke" else (400, 200)
    with pm.Model() as model:
        y_obs = pm.Data("y_obs", np.zeros(N_CRP))
        if pitman_yor:  # not Gamma: see the module docstring
            alpha = pm.LogNormal("alpha", 0.0, 0.5)
            d = pm.Uniform("d", 0.0, 0.8)
        else:
            alpha, d = pm.Gamma("alpha", 2.0, 1.0), 0.0
        z = pmc.CRP("z", alpha, d, max_clusters=max_clusters, n=N_CRP)
        mu = pm.Normal("mu", 0.0, 3.0, shape=max_clusters)
        y = pm.Normal("y", mu[z], 1.0, observed=y_obs)
    params = ["alpha", "d", "K"] if pitman_yor else ["alpha", "K"]
    draw = _Draw([alpha, d if pitman_yor else alpha, z, y])
    step = DefaultStep(model)

    def simulate(rng):
        a, dd, labels, data = draw(rng)
        truth = {"alpha": float(a), "d": float(dd), "K": float(n_clusters(labels))}
        return {k: truth[k] for k in params}, data

    def fit(data, seed):
        pm.set_data({"y_obs": data}, model=model)
        trace = _sample(model, draws, tune, seed, step=step())
        out = {"alpha": trace.get_values("alpha"), "K": n_clusters(trace.get_values("z"))}
        if pitman_yor:
            out["d"] = trace.get_values("d")
        return out

    name = "pitman_yor" if pitman_yor else "crp" if max_clusters == N_CRP else "truncated_crp"
    return Problem(name, params, simulate, fit)


# --------------------------------------------------------------------------------------------
# Clustered partial orders: rebuilt for every data set (the lists are constants of the model)
# --------------------------------------------------------------------------------------------
def _partial_order_problem(size: str) -> Problem:
    draws, tune = (100, 100) if size == "smoke" else (1000, 500)
    rng = np.random.default_rng(20240611)
    template = [
        rng.choice(N_ITEMS, size=rng.integers(3, 5), replace=False).tolist() for _ in range(N_LISTS)
    ]
    model = pmc.models.clustered_partial_orders(
        template, N_ITEMS, n_dims=2, max_clusters=N_SLOTS_PO
    )
    names = ["rho", "tau", "p", "alpha"]
    draw = _Draw([model[v] for v in names] + [model["cluster"], model["lists"]])
    params = [*names, "K"]

    def simulate(rng):
        *values, labels, lists = draw(rng)
        truth = dict(zip(names, map(float, values), strict=True))
        truth["K"] = float(n_clusters(labels))
        data = [row[row >= 0].tolist() for row in lists]
        return truth, data

    def fit(data, seed):
        fitted = pmc.models.clustered_partial_orders(
            data, N_ITEMS, n_dims=2, max_clusters=N_SLOTS_PO
        )
        trace = _sample(fitted, draws, tune, seed)
        out = {v: trace.get_values(v) for v in names}
        out["K"] = n_clusters(trace.get_values("cluster"))
        return out

    return Problem("partial_orders", params, simulate, fit)


# --------------------------------------------------------------------------------------------
# Measurement-error normal mixture: rebuilt for every data set (y is a constant of the steps)
# --------------------------------------------------------------------------------------------
def _measurement_error_problem(size: str) -> Problem:
    draws, tune = (150, 100) if size == "smoke" else (400, 150)
    template_y = np.linspace(-1.0, 1.0, N_ME)
    model = pmc.models.measurement_error_mixture(
        template_y, 0.25, max_clusters=N_ME, prior=ME_PRIOR
    )
    draw = _Draw([model[v] for v in ("alpha", "cluster", "Sigma", "mu", "theta", "y")])
    params = ["theta_0", "mu_z0", "Sigma_z0", "alpha", "K"]

    def simulate(rng):
        alpha, labels, sigma, mu, theta, y = draw(rng)
        z0 = labels[0]
        truth = {
            "theta_0": float(theta[0, 0]),
            "mu_z0": float(mu[z0, 0]),
            "Sigma_z0": float(sigma[z0, 0, 0]),
            "alpha": float(alpha),
            "K": float(n_clusters(labels)),
        }
        return truth, y[:, 0]

    def fit(data, seed):
        fitted = pmc.models.measurement_error_mixture(data, 0.25, max_clusters=N_ME, prior=ME_PRIOR)
        trace = _sample(fitted, draws, tune, seed)
        labels = trace.get_values("cluster")
        rows = np.arange(labels.shape[0])
        z0 = labels[:, 0]
        return {
            "theta_0": trace.get_values("theta")[:, 0, 0],
            "mu_z0": trace.get_values("mu")[rows, z0, 0],
            "Sigma_z0": trace.get_values("Sigma")[rows, z0, 0, 0],
            "alpha": trace.get_values("alpha"),
            "K": n_clusters(labels),
        }

    return Problem("measurement_error", params, simulate, fit)


PROBLEMS = {
    "crp": lambda size: _crp_problem(size, pitman_yor=False),
    "pitman_yor": lambda size: _crp_problem(size, pitman_yor=True),
    "truncated_crp": lambda size: _crp_problem(size, pitman_yor=False, max_clusters=3),
    "partial_orders": _partial_order_problem,
    "measurement_error": _measurement_error_problem,
}
SEEDS = {
    "crp": 101,
    "pitman_yor": 202,
    "truncated_crp": 505,
    "partial_orders": 303,
    "measurement_error": 404,
}


def make_problem(name: str, size: str = "smoke") -> Problem:
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    return PROBLEMS[name](size)


def run_problem(
    name: str,
    size: str = "smoke",
    *,
    n_sims: int | None = None,
    time_budget=None,
    callback=None,
    shard=(0, 1),
    seed: int | None = None,
) -> SBCResult:
    """Build problem ``name`` and run its SBC with the fixed seed of the problem (or ``seed``:
    another set of simulations, independent of the fixed one)."""
    problem = make_problem(name, size)
    return run_sbc(
        problem.simulate,
        problem.fit,
        SIZES[size]["n_sims"] if n_sims is None else n_sims,
        n_keep=SIZES[size]["n_keep"],
        seed=SEEDS[name] if seed is None else seed,
        time_budget=time_budget,
        callback=callback,
        shard=shard,
    )
