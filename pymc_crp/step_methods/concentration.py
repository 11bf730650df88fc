r"""Updates of the concentration parameter of a partition prior.

Given labels with ``K`` occupied clusters among ``N`` observations, the concentration ``θ``
of a Dirichlet process (``d = 0``) depends on the labels only through ``K``:

.. math:: p(θ \mid c) \propto θ^K \frac{Γ(θ)}{Γ(θ + N)}\, π(θ).

:class:`ConcentrationGibbs` draws from it exactly for a Gamma prior (Escobar and West, 1995);
:class:`ConcentrationMetropolis` is the random-walk Metropolis update of
:mod:`pymc_crp.step_methods.scalar_metropolis` for any scalar parameter of a partition prior
(concentration, discount or the Dirichlet--multinomial ``γ``) under any prior, targeting the
parameter's prior times the log-densities of all its children.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pymc.pytensorf import compile as compile_pytensor
from pymc.step_methods.compound import Competence
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.random.basic import GammaRV

from pymc_crp.core.partition_math import log_prob_at_most_blocks, validate_labels
from pymc_crp.distributions.partitions import CRPRV, CRPParams
from pymc_crp.roles import find_model
from pymc_crp.step_methods.metropolis import accept
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    term_logps,
)
from pymc_crp.step_methods.scalar_metropolis import ScalarMetropolis, ScalarStep

__all__ = ["ConcentrationGibbs", "ConcentrationMetropolis", "escobar_west_draw"]


def escobar_west_draw(
    concentration: float, n_clusters: int, n_obs: int, shape: float, rate: float, rng
) -> float:
    r"""One exact Gibbs draw of a Dirichlet-process concentration (Escobar and West, 1995).

    With ``θ ~ Gamma(a, rate b)``, ``K`` clusters and ``N`` observations: draw
    ``η ~ Beta(θ + 1, N)``; with odds ``π/(1 - π) = (a + K - 1) / (N (b - log η))`` draw

    .. math::

        θ \sim π\,\mathrm{Gamma}(a + K, b - \log η)
             + (1 - π)\,\mathrm{Gamma}(a + K - 1, b - \log η).

    The pair ``(θ, η)`` has joint density ∝ ``θ^{a+K-2} (θ + N) e^{-bθ} η^θ (1-η)^{N-1}``
    whose ``θ``-margin is the posterior ``θ^K Γ(θ)/Γ(θ+N) π(θ)``.
    """
    eta = rng.beta(concentration + 1.0, n_obs)
    new_rate = rate - math.log(eta)
    odds = (shape + n_clusters - 1.0) / (n_obs * new_rate)
    weight = odds / (1.0 + odds)
    new_shape = shape + n_clusters if rng.random() < weight else shape + n_clusters - 1.0
    return float(rng.gamma(new_shape, 1.0 / new_rate))


def _escobar_west_target(var, model):
    """The CRP child of ``var`` if ``var`` is a Gamma concentration that E&W can update."""
    if model is None or not isinstance(getattr(var.owner, "op", None), GammaRV) or var.ndim:
        return None
    if var not in model.free_RVs:
        return None
    children = dependent_terms(model, model.rvs_to_values[var], term_logps(model), exclude=(var,))
    if len(children) != 1 or not isinstance(children[0].owner.op, CRPRV):
        return None
    crp = children[0]
    params = CRPParams.from_rv(crp)
    try:
        d_value = float(pt.get_underlying_scalar_constant_value(params.discount))
    except NotScalarConstantError:
        return None
    if params.concentration is not var or d_value != 0.0 or crp.ndim != 1:
        return None
    return crp


class ConcentrationGibbs(ScalarStep):
    r"""Escobar--West auxiliary-variable Gibbs update of a Dirichlet-process concentration.

    Applies to ``θ ~ Gamma(a, b)`` (shape ``a``, rate ``b``; may depend on other variables)
    whose only child is a :class:`~pymc_crp.CRP` with ``concentration=θ`` and discount
    ``0``; :func:`pymc.sample` assigns it automatically there and keeps NUTS elsewhere.
    Exact (see :func:`escobar_west_draw`). When the CRP is truncated (``max_clusters < n``)
    its density carries the factor ``1 / P(K_N <= L | θ)``; the Escobar--West draw ``θ*``
    (reversible for the untruncated posterior) is then a Metropolis--Hastings proposal,
    accepted with probability ``min(1, P(K_N <= L | θ) / P(K_N <= L | θ*))``, which keeps the
    truncated posterior invariant. The stat ``escobar_west_accepted`` records it.

    References
    ----------
    .. [1] Escobar, M. D. and West, M. (1995). Bayesian density estimation and inference
       using mixtures. *J. Am. Stat. Assoc.* 90(430), 577–588.
    """

    name = "concentration_gibbs"
    stats_dtypes_shapes = {"escobar_west_accepted": (bool, [])}

    def __init__(
        self,
        vars,
        *,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model, value_var, rv, theta, to_value = self._setup(vars, model, rng)
        crp = _escobar_west_target(rv, model)
        if crp is None:
            raise ValueError(
                f"ConcentrationGibbs needs a scalar Gamma variable whose only child is a CRP with "
                f"concentration={rv.name} and discount=0; use ConcentrationMetropolis or NUTS "
                "for other cases"
            )
        shape, scale = rv.owner.op.dist_params(rv.owner)  # Gamma(shape, scale = 1/rate)
        shape_rate = model.replace_rvs_by_values([pt.cast(shape, "float64"), 1.0 / scale])
        self._prior_fn = compile_point_function(model, shape_rate, compile_kwargs)
        self._to_value = compile_pytensor([theta], to_value)
        self._from_value = compile_pytensor([value_var], model.replace_rvs_by_values([rv])[0])
        crp_params = CRPParams.from_rv(crp)
        self._n_obs = int(pt.get_underlying_scalar_constant_value(crp_params.n))
        self._n_slots = int(pt.get_underlying_scalar_constant_value(crp_params.max_clusters))
        if crp in model.observed_RVs:  # a constant or pm.Data: read it at every step
            self._labels_name = None
            self._observed_labels = compile_pytensor([], model.rvs_to_values[crp])
        else:
            self._labels_name = model.rvs_to_values[crp].name
            self._observed_labels = None

    def _n_clusters(self, point) -> int:
        if self._labels_name is not None:
            return int(np.unique(point[self._labels_name]).size)
        labels = validate_labels(
            np.asarray(self._observed_labels()), self._n_slots, name="observed labels"
        )
        return int(np.unique(labels).size)

    def step(self, point):
        point = dict(point)
        theta = float(self._from_value(point[self._value_name]))
        n_clusters = self._n_clusters(point)
        shape, rate = (float(v) for v in self._prior_fn(point))
        new = escobar_west_draw(theta, n_clusters, self._n_obs, shape, rate, self.rng)
        accepted = True
        if self._n_slots < self._n_obs:  # truncated: correct for 1 / P(K <= L | theta)
            log_ratio = log_prob_at_most_blocks(
                self._n_obs, self._n_slots, theta
            ) - log_prob_at_most_blocks(self._n_obs, self._n_slots, new)
            accepted = accept(log_ratio, self.rng)
        if accepted:
            point[self._value_name] = np.asarray(self._to_value(new), dtype=np.float64)
        return point, [{"escobar_west_accepted": accepted}]

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for a Gamma concentration whose only child is a discount-0 CRP."""
        if _escobar_west_target(var, find_model(var)) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE


class ConcentrationMetropolis(ScalarMetropolis):
    r"""Random-walk Metropolis update of a scalar parameter of a partition prior.

    :class:`~pymc_crp.step_methods.scalar_metropolis.ScalarMetropolis` under the name of its
    first use: the target is the parameter's prior times the densities of all its children, so
    it works for a CRP concentration or discount, the Dirichlet--multinomial ``γ``, and any
    prior. For a Dirichlet-process concentration it is ``p(θ | c) ∝ θ^K Γ(θ)/Γ(N+θ) π(θ)``.

    Proposals (``proposal=``): ``"symmetric"`` ``θ* ~ N(θ, s²)``; ``"scaled"``
    ``θ* ~ N(θ, (κθ)²)`` with its Hastings factor; ``"transformed"`` a random walk on the
    sampler's unconstrained value with the Jacobian ratio. Proposals outside the support are
    rejected. ``scale`` (``s`` or ``κ``) is tuned towards acceptance 0.44 while PyMC tunes.
    The parameters are those of :class:`~pymc_crp.step_methods.scalar_metropolis.
    ScalarMetropolis`; the sample stats are ``concentration_accepted`` and
    ``concentration_scale``.
    """

    name = "concentration_metropolis"
    stats_prefix = "concentration_"
    stats_dtypes_shapes = {
        "concentration_accepted": (bool, []),
        "concentration_scale": (np.float64, []),
    }
