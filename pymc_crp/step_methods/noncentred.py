r"""Interweaved (centred + non-centred) updates of the utility hyperparameters ``ρ`` and ``τ``.

In the hierarchical partial-order model the lists inform ``ρ`` and ``τ`` only through the
utilities, and the utilities pin them down tightly: a random walk on ``ρ`` with the utilities
held fixed (the *centred* update) barely moves. The *non-centred* move changes the
hyperparameter together with the utilities, holding their whitened values fixed.

Correlation ``ρ``. Write ``Σ_ρ = A_ρ A_ρ^\top`` with ``A_ρ = \sqrt{1-ρ}\,P_\perp +
\sqrt{1+(K-1)ρ}\,P_1`` (``P_1 = \mathbf 1\mathbf 1^\top/K``, ``P_\perp = I - P_1``). Propose
``v' = v + s ε`` on the unconstrained value ``v = \operatorname{logit} ρ`` and map every
``K``-vector of the utilities (``U0`` and all slots of ``U``) by

.. math::

    x' = M x, \qquad M = A_{ρ'} A_ρ^{-1} = r_\perp P_\perp + r_1 P_1, \qquad
    r_\perp = \sqrt{\tfrac{1-ρ'}{1-ρ}}, \quad r_1 = \sqrt{\tfrac{1+(K-1)ρ'}{1+(K-1)ρ}}.

Since ``U^{(a)} - τU0 = A_ρ(\dots)`` as well, the whitened values of both levels are kept.
The map is a deterministic bijection given ``(v, v')`` whose reverse is the map for
``(v', v)``, so the move is a Metropolis--Hastings move on the joint space with acceptance
probability

.. math::

    \min\Big(1, \frac{π(v', U', U0')}{π(v, U, U0)}\,|\det M|^{n}\Big),\qquad
    \log|\det M| = (K-1)\log r_\perp + \log r_1,

``n`` the number of mapped ``K``-vectors and ``π`` the model density on the sampler's scale
(the prior of ``v`` with its Jacobian, the utility priors and every list's likelihood).

Shrinkage ``τ``. Holding ``U0`` and the whitened deviations ``(U^{(a)} - τU0)/\sqrt{1-τ^2}``
fixed, ``U'^{(a)} = τ'U0 + r(U^{(a)} - τU0)`` with ``r = \sqrt{(1-τ'^2)/(1-τ^2)}`` and
``\log|\det| = n_U \log r`` over the ``n_U`` entries of ``U``.

Empty slots cancel. For a slot ``a`` that no list's label names, the map keeps the whitened
value, so the slot prior of the mapped value times the map's Jacobian factor does not depend on
the proposed value: for ``τ``,

.. math::

    N(U'^{(a)}; τ'U0, (1-τ'^2) s^2 Σ_ρ)\, r^{MK} = N(U^{(a)}; τU0, (1-τ^2) s^2 Σ_ρ),

and for ``ρ`` ``N(Mx; Mμ, s^2 Σ_{ρ'})\,|\det M| = N(x; μ, s^2 Σ_ρ)`` with ``μ = τU0`` mapped
alongside. The lists read the occupied slots only, so the density ratio (and the slice density
below, up to a constant factor) needs the slot prior and the Jacobian of the occupied slots
``\mathcal O`` only:

.. math::

    \log f(v') = \log π_{\text{rest}}(v', U0') + \sum_{a \in \mathcal O}
        \log N(U'^{(a)}; μ', s'^2 Σ_{ρ'}) + β \sum_i \log p(Y_i \mid h(U'^{(c_i)}))
        + \log|\det J_{\mathcal O}| + \text{const},

``π_rest`` the other terms that depend on the moved variables (the hyperparameter's prior with
its transform's Jacobian, the prior of ``U0``) and ``J_{\mathcal O}`` the map of ``U0`` (for
``ρ``) and of the occupied slots. Each density evaluation maps the occupied slots only and
evaluates the compiled density of the other terms at the gathered point (the occupied slots in
place of ``U``), and the lists' sum slot by slot, each slot's once per order it takes during
the move (the lists depend on the utilities only through the orders), so the slot prior and
the lists are computed over the occupied slots; every slot is mapped once, for the value drawn
(:mod:`~pymc_crp.step_methods.noncentred_slots`). The step does so when it recognises the
structure (an :class:`~pymc_crp.EquicorrelatedNormal` slot prior shared by all slots, read by
one :class:`~pymc_crp.PartialOrderLists` term through one label vector, the differences
checked against the full density at a random point), else it evaluates the full joint
density. Over 100 items (1,000 lists, the state of ``benchmarks/po_convergence.py
--many-items 100``; medians of 3 alternated runs of 30 iterations) the ``τ`` step went from
7.1 to 4.3 ms per step at 160 slots (5.7 of them occupied) and from 6.9 to 5.1 ms at the
default 96 (8.9 occupied); ``ρ`` from 10.1 to 6.2 and from 10.0 to 7.5 ms. Summing the lists
slot by slot, once per order, took both steps together from 9.0 to 6.3 ms per iteration on
the demo's 15 witness lists and from 12.4 to 8.5 ms on 1,000 heterogeneous rankings (about 50
occupied slots), with the same draws.

Each step makes the centred random-walk update and then the non-centred one; both leave the
posterior invariant, and together they mix whether the data are weak (non-centred wins) or
strong (centred wins) — the interweaving strategy of Yu and Meng (2011). The centred update
holds ``U0`` and the occupied slots' utilities (so no list changes) and, with the structure
above, maps the *empty* slots as the non-centred move does, keeping their whitened values:
for ``τ`` by the map above, for ``ρ`` by ``U'^{(a)} = μ + M(U^{(a)} - μ)`` with ``μ = τU0``
held. Their prior times the Jacobian cancels as above, so the ratio is that of the
hyperparameter's prior (with its transform's Jacobian), ``U0``'s prior and the occupied
slots' prior only. Holding the empty slots instead (the plain centred random walk of
:class:`HyperparameterMetropolis`, which the step makes when it does not recognise the
structure) is exact as well but conditions ``ρ`` and ``τ`` on the empty slots' utilities,
which are fresh prior draws at the present value (the label and ``U0`` steps redraw them):
with ``L - K`` empty slots of ``M K`` values each, the centred move then sees ``L`` slots'
worth of evidence for the value it starts from, and barely moves once ``L`` is large.

By default the non-centred update is not the random walk above but a
univariate slice-sampling draw (stepping out and shrinkage, Neal 2003) of ``v'`` from

.. math:: f(v') \propto π(v', U'(v'), U0'(v'))\,|\det M(v \to v')|^{n}

(the whitened utilities held fixed; the same ratio as above), which adapts to the scale of
``v`` wherever the chain is: under the ``Beta(1, 1/6)`` prior the posterior of
``logit ρ`` has an exponential tail of scale 6 towards ``ρ → 1``, where the lists stop
constraining it, and a random walk tuned in the bulk crosses it slowly
(``noncentred_move="metropolis"`` keeps the random walk). Random-walk scales are tuned
towards acceptance 0.44 while tuning by the Robbins--Monro schedule of
:class:`~pymc_crp.step_methods.metropolis.ScaleTuner` and decide with
:func:`~pymc_crp.step_methods.metropolis.accept`; the slice width becomes the mean distance
moved while tuning (:func:`~pymc_crp.step_methods.slot_slice.slice_slots`).

Proposals with ``ρ`` (``τ``) rounding to 0 or 1 are rejected in both directions, so the
target is the posterior restricted to the representable open interval (for the default
``Beta(1, 1/6)`` prior of ``ρ`` that drops the ``ρ > 1 - 2^{-53}`` tail, about 0.2% of the
prior mass). The utility densities are computed from the eigen-decomposition of ``Σ_ρ``
(:func:`~pymc_crp.core.utility_hierarchy.equicorrelated_quadratic`), accurate up to there.

Sample stats: ``noncentred_accepted`` (the value moved), ``noncentred_scale`` (random-walk
scale or slice width), ``noncentred_evaluations`` (joint densities computed), and the
centred move's ``hyperparameter_accepted``, ``hyperparameter_scale``. PyMC stacks equal names
of several steps along an extra dimension in the order of the compound step: in the
clustered model ``[rho, tau]`` (and ``[rho, tau, p]`` for the centred ones).

References
----------
.. [1] Neal, R. M. (2003). Slice sampling. *Ann. Statist.* 31(3), 705–767.
.. [2] Yu, Y. and Meng, X.-L. (2011). To center or not to center: that is not the question —
   an ancillarity–sufficiency interweaving strategy (ASIS) for boosting MCMC efficiency.
   *J. Comput. Graph. Stat.* 20(3), 531–570.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.step_methods.compound import Competence
from pymc.step_methods.state import dataclass_state

from pymc_crp.core.utility_hierarchy import last_axis_mean
from pymc_crp.distributions.equicorrelated_normal import EquicorrelatedNormalParams
from pymc_crp.roles import NONCENTRED_KINDS, noncentred_role
from pymc_crp.step_methods.hyperparameter import HyperparameterMetropolis
from pymc_crp.step_methods.list_terms import is_list_term
from pymc_crp.step_methods.metropolis import ScaleTuner, accept
from pymc_crp.step_methods.model_graph import (
    CHECK_MODE,
    compile_point_function,
    compiled_once_per_model,
    term_logps,
)
from pymc_crp.step_methods.noncentred_slots import OccupiedSlotTerms, moved_terms
from pymc_crp.step_methods.scalar_metropolis import TARGET_ACCEPT, ScalarMetropolisState
from pymc_crp.step_methods.slot_slice import slice_slots

__all__ = ["NonCentredHyperparameterMetropolis", "correlation_map", "shrinkage_map"]

KINDS = NONCENTRED_KINDS
"""The values of :attr:`~pymc_crp.roles.HyperparameterRole.noncentred` the builders record."""


def correlation_map(values: np.ndarray, rho: float, new_rho: float) -> tuple[np.ndarray, float]:
    r"""Map ``K``-vectors (last axis) from ``N(·, Σ_ρ)`` to ``N(·, Σ_{ρ'})`` coordinates.

    Returns ``(M x, n log|det M|)``: ``M x = r_1 \bar x \mathbf 1 + r_\perp (x - \bar x
    \mathbf 1)`` with ``r_\perp = \sqrt{(1-ρ')/(1-ρ)}``, ``r_1 = \sqrt{(1+(K-1)ρ')/(1+(K-1)ρ)}``
    and ``n`` the number of vectors.
    """
    k = values.shape[-1]
    log_r_perp = 0.5 * (math.log1p(-new_rho) - math.log1p(-rho))
    log_r_one = 0.5 * (math.log1p((k - 1) * new_rho) - math.log1p((k - 1) * rho))
    mean = last_axis_mean(values)
    mapped = math.exp(log_r_one) * mean + math.exp(log_r_perp) * (values - mean)
    n_vectors = values.size // k
    return mapped, n_vectors * ((k - 1) * log_r_perp + log_r_one)


def shrinkage_map(
    slots: np.ndarray, mean: np.ndarray, tau: float, new_tau: float
) -> tuple[np.ndarray, float]:
    r"""``U' = τ'U0 + r (U - τU0)``, ``r = \sqrt{(1-τ'^2)/(1-τ^2)}``; returns
    ``(U', n_U log r)``."""
    log_r = 0.5 * (math.log1p(-(new_tau**2)) - math.log1p(-(tau**2)))
    mapped = new_tau * mean + math.exp(log_r) * (slots - tau * mean)
    return mapped, slots.size * log_r


def _joint_logp_function(model, compile_kwargs, lists: bool = True, checking: bool = False):
    """Compiled sums ``(rest, lists)`` of every term that depends on a non-centred
    hyperparameter of ``model`` or on the utilities it moves (terms that a move leaves
    unchanged cancel in the ratio), the :class:`~pymc_crp.PartialOrderLists` terms apart;
    with ``lists=False`` the sum ``rest`` alone (the centred moves, which hold the utilities
    and so every list's likelihood).

    One function of each kind serves all of the model's non-centred hyperparameters; it is
    compiled once per model (and rebuilt if the model changes). It takes any number of slots
    for slot utilities whose value variable does not fix it (the moves over the occupied
    slots). With ``checking`` the function is compiled in
    :data:`~pymc_crp.step_methods.model_graph.CHECK_MODE` (unless ``compile_kwargs`` names a
    mode): the set-up's structure checks call it a few times, where graph rewriting would cost
    more than the calls."""
    signature, terms = moved_terms(model)
    if checking:
        compile_kwargs = {"mode": CHECK_MODE, **(compile_kwargs or {})}

    def build():
        logps = term_logps(model)
        zero = pt.constant(0.0, dtype="float64")
        parts = [sum((pt.sum(logps[t]) for t in terms if not is_list_term(t)), zero)]
        if lists:  # the list likelihoods apart (tempered by the step)
            parts.append(sum((pt.sum(logps[t]) for t in terms if is_list_term(t)), zero))
        return compile_point_function(model, parts if lists else parts[0], compile_kwargs)

    # One compiled joint log-density per model, shared by rho and tau.
    name = ("noncentred_joint_logp" if lists else "noncentred_rest_logp") + (
        "_check" if checking else ""
    )
    return compiled_once_per_model(model, name, signature, compile_kwargs, build)


def _slot_mean_function(model, utilities, slot_name: str, compile_kwargs):
    """The compiled mean of the prior of the slot utilities among ``utilities`` whose value
    variable is ``slot_name`` (the maps of the empty slots under ``ρ``)."""
    (slot_rv,) = [v for v in utilities if model.rvs_to_values[v].name == slot_name]
    (mean,) = model.replace_rvs_by_values([EquicorrelatedNormalParams.from_rv(slot_rv).mu])
    return compile_point_function(model, pt.cast(mean, "float64"), compile_kwargs)


@dataclass_state
class NonCentredHyperparameterState(ScalarMetropolisState):
    """:class:`~pymc_crp.step_methods.scalar_metropolis.ScalarMetropolisState` plus the tuned
    scale of the non-centred move."""

    noncentred_scale: float
    _noncentred_tuner: ScaleTuner
    _n_tuned: int


class NonCentredHyperparameterMetropolis(HyperparameterMetropolis):
    """Centred then non-centred Metropolis update of ``ρ`` or ``τ`` (see the module docstring).

    Assigned automatically to ``rho`` and ``tau`` of the models built by
    :func:`pymc_crp.models.partial_order` and :func:`pymc_crp.models.clustered_partial_orders`
    (the builders record which utilities each one scales).

    Parameters
    ----------
    vars : the scalar ``ρ`` or ``τ``
    scale : float, default 0.5
        Initial scale of the centred random walk on the unconstrained value.
    noncentred_move : {"slice", "metropolis"}, default "slice"
        The non-centred update: a slice-sampling draw or a random walk.
    noncentred_scale : float, default 0.5
        Initial slice width (``"slice"``) or random-walk scale (``"metropolis"``) on the
        unconstrained value.
    tune : bool, default True
        Adapt both scales while PyMC tunes.
    tune_interval : int, default 1
        Steps between adaptations of the centred scale.
    **kwargs
        Further arguments of :class:`HyperparameterMetropolis` (``model``, ``rng``, ...).
    """

    name = "noncentred_hyperparameter_metropolis"
    _state_class = NonCentredHyperparameterState
    _defer_target = True  # not compiled where the centred moves run over the occupied slots
    stats_dtypes_shapes = {
        **HyperparameterMetropolis.stats_dtypes_shapes,
        "noncentred_accepted": (bool, []),
        "noncentred_scale": (np.float64, []),
        "noncentred_evaluations": (np.int64, []),
    }

    def __init__(
        self,
        vars,
        *,
        noncentred_move: str = "slice",
        noncentred_scale: float = 0.5,
        model=None,
        compile_kwargs=None,
        **kwargs,
    ):
        if isinstance(noncentred_scale, bool) or not isinstance(
            noncentred_scale, int | float | np.integer | np.floating
        ):
            raise TypeError(f"noncentred_scale must be a number, got {noncentred_scale!r}")
        if not (np.isfinite(noncentred_scale) and noncentred_scale > 0):
            raise ValueError(
                f"noncentred_scale must be a positive number, got {noncentred_scale!r}"
            )
        if noncentred_move not in ("slice", "metropolis"):
            raise ValueError(
                f"noncentred_move must be 'slice' or 'metropolis', got {noncentred_move!r}"
            )
        model = modelcontext(model)
        super().__init__(vars, model=model, compile_kwargs=compile_kwargs, **kwargs)
        rv = model.values_to_rvs[self.vars[0]]
        role = noncentred_role(rv, model)
        if role is None:
            raise ValueError(
                f"NonCentredHyperparameterMetropolis needs the rho or tau of a model built by "
                f"pymc_crp.models; {rv.name} is not one"
            )
        self.kind = role.noncentred
        self.noncentred_move = noncentred_move
        self.noncentred_scale = self._initial_noncentred_scale = float(noncentred_scale)
        self._noncentred_tuner = ScaleTuner(TARGET_ACCEPT)
        self._n_tuned = 0
        for var in role.moved:
            if model.rvs_to_transforms.get(var) is not None:
                raise ValueError(f"the utilities {var.name} must be untransformed")
        self._utility_names = [model.rvs_to_values[v].name for v in role.utilities]
        self._mean_name = model.rvs_to_values[role.mean].name if self.kind == "shrinkage" else None
        # The full joint density: the checks' own (compiled without graph rewriting), and the
        # moves' only if they use it (no occupied-slot structure found or recognised).
        self._check_parts = _joint_logp_function(model, compile_kwargs, checking=True)
        self._joint_parts = None
        occupied = OccupiedSlotTerms.find(model, role.utilities, compile_kwargs)
        self._occupied = None  # the full joint density while checking
        self._slot_mean = None
        self._centred_occupied = False
        if occupied is not None:
            self._rest_logp = _joint_logp_function(model, compile_kwargs, lists=False)
            initial_point = kwargs.get("initial_point") or model.initial_point(random_seed=0)
            point = occupied.check_point(initial_point)
            if self._occupied_differences_agree(occupied, point):
                self._occupied = self._slot_terms = occupied
                if self.proposal == "transformed":  # centred moves over the occupied slots
                    self._slot_mean = _slot_mean_function(
                        model, role.utilities, occupied.slot_name, compile_kwargs
                    )
                    self._centred_occupied = self._centred_differences_agree(point)
        if not self._centred_occupied:  # the centred moves are the inherited random walk
            self._compile_target()
        if self._occupied is None:  # the non-centred moves evaluate the full joint density
            self._joint_parts = _joint_logp_function(model, compile_kwargs)

    def _occupied_differences_agree(self, occupied, point) -> bool:
        """Whether differences of the non-centred move's density over the occupied slots
        between proposed values equal those of the full joint density (the empty slots
        cancel), at ``point`` (``OccupiedSlotTerms.check_point``)."""
        if self.kind == "shrinkage" and self._utility_names != [occupied.slot_name]:
            return False
        old = float(self._from_value(np.asarray(point[self._value_name])))
        full = _FullMove(self, point, old, checking=True)
        gathered = _OccupiedMove(self, point, old, occupied)
        return self._differences_agree(point, full.log_density, gathered.log_density)

    def _centred_differences_agree(self, point) -> bool:
        """Whether differences of the centred move's density over the occupied slots equal
        those of the full joint density at the proposals with the empty slots mapped (plus the
        map's log-Jacobian), at ``point`` (``OccupiedSlotTerms.check_point``)."""
        old = float(self._from_value(np.asarray(point[self._value_name])))
        full, gathered = self._centred_density(point, old, True), self._centred_density(point, old)
        return self._differences_agree(point, full, gathered)

    def _differences_agree(self, point, full, gathered) -> bool:
        """Whether ``gathered(v', θ') - gathered(v, θ)`` equals ``full(v', θ') - full(v, θ)``
        (to 1e-9) for two proposed unconstrained values ``v'`` from the value ``v`` of
        ``point``, all densities finite (a graph that needs every slot fails here)."""
        value = float(point[self._value_name])
        densities = []
        for shift in (0.0, 0.7, -1.3):
            new = float(self._from_value(np.asarray(value + shift)))
            if not 0.0 < new < 1.0:
                return False
            try:
                densities.append([f(value + shift, new) for f in (full, gathered)])
            except (AssertionError, IndexError, TypeError, ValueError):
                return False
        densities = np.array(densities)
        differences = densities[1:] - densities[0]
        return bool(
            np.all(np.isfinite(densities))
            and np.allclose(differences[:, 1], differences[:, 0], rtol=1e-9, atol=1e-8)
        )

    def _centred_density(self, point, old: float, full: bool = False):
        """``f(v', θ')``, the log-density of the centred move from ``point`` (hyperparameter
        ``old``) to the unconstrained value ``v'`` (hyperparameter ``θ'``) up to a constant:
        the terms of the hyperparameter, ``U0`` and the occupied slots at the gathered point
        (the lists do not change), or with ``full`` (or when the step evaluates the full
        joint density) the full joint density with the empty slots mapped plus the map's
        log-Jacobian."""
        terms = self._slot_terms
        if not full and self._occupied is not None:
            slots, labels = terms.gather(point)
            gathered = terms.gathered_point(point, point[terms.slot_name][slots], labels)
            return lambda value, new: self._centred_logp(gathered, value)

        def full_density(value, new):
            at = dict(point)
            at[terms.slot_name], log_det = self._empty_slots_mapped(point, old, new)
            at[self._value_name] = np.asarray(value, dtype=np.float64)
            return self._joint_logp(at, checking=full) + log_det

        return full_density

    def _empty_slots_mapped(self, point, old: float, new: float) -> tuple[np.ndarray, float]:
        """The slot utilities of ``point`` with the empty slots (no list's label) mapped to
        the hyperparameter ``new`` keeping their whitened values, the occupied ones and
        ``U0`` held; and the map's log-Jacobian. For ``τ``: ``U' = τ'U0 + r(U - τU0)``;
        for ``ρ``: ``U' = μ + M(U - μ)``, ``μ`` the slot prior's mean (module docstring)."""
        terms = self._slot_terms
        utilities = np.array(point[terms.slot_name], dtype=np.float64, copy=True)
        empty = np.ones(utilities.shape[0], dtype=bool)
        empty[point[terms.labels_name]] = False
        if self.kind == "shrinkage":
            mapped, log_det = shrinkage_map(utilities[empty], point[self._mean_name], old, new)
        else:
            mean = np.asarray(self._slot_mean(point))
            if mean.ndim == utilities.ndim:  # a broadcastable slot axis (the same for every slot)
                mean = mean[0]
            mean = np.broadcast_to(mean, utilities.shape[1:])
            deviations, log_det = correlation_map(utilities[empty] - mean, old, new)
            mapped = mean + deviations
        utilities[empty] = mapped
        return utilities, log_det

    def _centred_logp(self, gathered, value: float) -> float:
        """The density of the centred move over the occupied slots at the unconstrained value
        ``value``: the hyperparameter's prior with its Jacobian, ``U0``'s prior and the
        occupied slots' prior (the lists do not change)."""
        at = dict(gathered)
        at[self._value_name] = np.asarray(value, dtype=np.float64)
        total = float(self._rest_logp(at))
        return -math.inf if math.isnan(total) else total

    def _centred_occupied_move(self, point):
        """One centred random-walk move of the unconstrained value with the occupied slots'
        utilities held and the empty slots mapped (:meth:`_empty_slots_mapped`), accepted
        with the ratio of :meth:`_centred_logp`: the empty slots' prior times the map's
        Jacobian does not depend on the proposed value (module docstring)."""
        value = float(point[self._value_name])
        proposed_value = value + self.scale * self.rng.standard_normal()
        old = float(self._from_value(np.asarray(value)))
        new = float(self._from_value(np.asarray(proposed_value)))
        accepted = False
        if 0.0 < min(old, new) and max(old, new) < 1.0:  # the maps need the open interval
            density = self._centred_density(point, old)
            accepted = accept(density(proposed_value, new) - density(value, old), self.rng)
            if accepted:
                point = dict(point)
                point[self._slot_terms.slot_name], _ = self._empty_slots_mapped(point, old, new)
                point[self._value_name] = np.asarray(proposed_value, dtype=np.float64)
        if self.tune and self.adaptive:
            self.scale = self._tuner.record(self.scale, accepted)
        prefix = self.stats_prefix
        return point, [{f"{prefix}accepted": accepted, f"{prefix}scale": self.scale}]

    def _update(self, point, current: float | None = None):
        """One update: ``repeats`` centred random-walk moves (the utilities held, so no list
        is evaluated; over the occupied slots with the empty ones mapped where the model
        allows it), then the non-centred move (which changes the utilities, so the log
        target after it is not returned)."""
        for _ in range(self.repeats):
            if self._centred_occupied:
                point, (stats,) = self._centred_occupied_move(point)
            else:
                point, (stats,), current = super()._update(point, current)
        if self.noncentred_move == "slice":
            point, accepted, evaluations = self._slice_move(point)
        else:
            point, accepted, evaluations = self._metropolis_move(point)
        stats = {
            **stats,
            "noncentred_accepted": accepted,
            "noncentred_scale": self.noncentred_scale,
            "noncentred_evaluations": evaluations,
        }
        return point, [stats], None

    def _joint_logp(self, point, checking: bool = False) -> float:
        """Joint log-density of the terms a move changes, list likelihoods times ``β``; with
        ``checking`` from the set-up checks' function (:func:`_joint_logp_function`)."""
        parts = self._check_parts if checking else self._joint_parts
        return self._tempered_sum(*parts(point))

    def _move(self, point, old):
        """The density evaluations of one non-centred move from ``point`` (hyperparameter
        ``old``): over the occupied slots if the model allows it, else the full joint."""
        if self._occupied is not None:
            return _OccupiedMove(self, point, old)
        return _FullMove(self, point, old)

    def _metropolis_move(self, point):
        """The non-centred random walk; returns ``(point, accepted, evaluations)``."""
        value = float(point[self._value_name])
        proposed_value = value + self.noncentred_scale * self.rng.standard_normal()
        old = float(self._from_value(np.asarray(value)))
        new = float(self._from_value(np.asarray(proposed_value)))
        accepted, evaluations = False, 0
        if 0.0 < min(old, new) and max(old, new) < 1.0:  # the maps need the open interval
            move = self._move(point, old)
            log_ratio = move.log_density(proposed_value, new) - move.current()
            accepted, evaluations = accept(log_ratio, self.rng), 2
            if accepted:
                point = move.point_at(proposed_value, new)
        if self.tune and self.adaptive:
            self.noncentred_scale = self._noncentred_tuner.record(self.noncentred_scale, accepted)
        return point, accepted, evaluations

    def _slice_move(self, point):
        """The non-centred slice draw of the unconstrained value; returns ``(point, moved,
        evaluations)``."""
        value = float(point[self._value_name])
        old = float(self._from_value(np.asarray(value)))
        move = self._move(point, old)

        def log_density(x):
            new_value = float(x[0])
            new = float(self._from_value(np.asarray(new_value)))
            if not 0.0 < new < 1.0:
                return np.array([-np.inf])
            return np.array([move.log_density(new_value, new)])

        x1, evaluations = slice_slots(
            log_density, np.array([value]), np.array([True]), self.noncentred_scale, self.rng
        )
        new_value = float(x1[0])
        moved = new_value != value
        if moved:
            point = move.point_at(new_value, float(self._from_value(np.asarray(new_value))))
        if self.tune and self.adaptive:
            self._n_tuned += 1
            distance = max(abs(new_value - value), 1e-8)
            self.noncentred_scale += (distance - self.noncentred_scale) / self._n_tuned
        return point, moved, evaluations

    def _joint_proposal(self, point, proposed_value, old, new):
        """The joint proposal (point, log |det|) for hyperparameter ``old -> new``."""
        proposal = dict(point)
        proposal[self._value_name] = np.asarray(proposed_value, dtype=np.float64)
        if self.kind == "correlation":
            log_det = 0.0
            for name in self._utility_names:
                proposal[name], log_det_name = correlation_map(point[name], old, new)
                log_det += log_det_name
        else:
            (name,) = self._utility_names
            proposal[name], log_det = shrinkage_map(point[name], point[self._mean_name], old, new)
        return proposal, log_det

    def reset_tuning(self):
        super().reset_tuning()
        self._noncentred_tuner.reset()
        if self.noncentred_move == "slice":
            self.noncentred_scale = self._initial_noncentred_scale
            self._n_tuned = 0

    @staticmethod
    def competence(var, has_grad=None):
        if noncentred_role(var) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE


class _FullMove:
    """Density evaluations of a non-centred move over the full joint: every slot mapped and
    the compiled joint log-density (the fallback; with ``checking``, the set-up checks')."""

    def __init__(self, step, point, old, checking: bool = False):
        self.step, self.point, self.old, self.checking = step, point, old, checking
        self.proposals = {}

    def current(self) -> float:
        """The log-density at the point itself."""
        return self.step._joint_logp(self.point, self.checking)

    def log_density(self, new_value, new) -> float:
        """``log π(v', U', U0') + log|det|`` of the move to the unconstrained value
        ``new_value`` (hyperparameter ``new``)."""
        proposal, log_det = self.step._joint_proposal(self.point, new_value, self.old, new)
        self.proposals[new_value] = proposal
        return self.step._joint_logp(proposal, self.checking) + log_det

    def point_at(self, new_value, new) -> dict:
        """The point the move to ``new_value`` reaches."""
        if new_value in self.proposals:
            return self.proposals[new_value]
        return self.step._joint_proposal(self.point, new_value, self.old, new)[0]


class _OccupiedMove:
    """Density evaluations of a non-centred move over the occupied slots
    (:mod:`~pymc_crp.step_methods.noncentred_slots`): the occupied slots are gathered once and
    mapped at each evaluation; the compiled density of the terms other than the lists is
    evaluated at the gathered point (the slot prior of the occupied slots) and the lists' by
    :class:`~pymc_crp.step_methods.noncentred_slots.OccupiedListSums` (each slot's sum once
    per order it takes); every slot is mapped once, for the value drawn. Differences of
    :meth:`log_density` equal those of :class:`_FullMove`."""

    def __init__(self, step, point, old, terms=None):
        terms = step._occupied if terms is None else terms
        self.step, self.point, self.old = step, point, old
        self.slots, labels = terms.gather(point)  # the occupied slots, ascending
        self.gathered = terms.gathered_point(point, point[terms.slot_name][self.slots], labels)
        self.slot_name, self.sums = terms.slot_name, terms.list_sums(point, labels)

    def _log_density(self, at) -> float:
        """The terms a move changes at the gathered point ``at``, list likelihoods times ``β``."""
        lists = self.sums.total(at[self.slot_name])
        return self.step._tempered_sum(self.step._rest_logp(at), lists)

    def current(self) -> float:
        """The log-density at the point itself (up to the empty slots' constant)."""
        return self._log_density(self.gathered)

    def log_density(self, new_value, new) -> float:
        """``log π_O(v', U', U0') + log|det J_O|`` of the move to ``new_value``: the map of
        the gathered point (slot by slot, so its Jacobian counts the occupied slots only)."""
        proposal, log_det = self.step._joint_proposal(self.gathered, new_value, self.old, new)
        return self._log_density(proposal) + log_det

    def point_at(self, new_value, new) -> dict:
        """The point the move to ``new_value`` reaches: every slot mapped (the occupied ones
        to the values evaluated, bit for bit)."""
        return self.step._joint_proposal(self.point, new_value, self.old, new)[0]
