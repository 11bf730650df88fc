r"""Ready-made models: partial orders from ranked lists (single and clustered).

Both builders return an ordinary :class:`pymc.Model`; ``pm.sample()`` on it assigns the
package's step methods automatically (``PartialOrderLabelGibbs`` for CRP labels,
``CRPGibbs`` for Dirichlet--multinomial ones, ``UtilityMetropolis`` for the utilities,
``UtilityMeanGibbs`` for ``U0``, ``NonCentredHyperparameterMetropolis`` for ``rho`` and
``tau``, ``HyperparameterMetropolis`` for ``p``, ``ConcentrationGibbs`` for a Gamma
concentration).

The measurement-error normal mixture builder lives in :mod:`pymc_crp.models.normal_mixture` and is
re-exported here (``pmc.models.measurement_error_mixture``).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pymc_crp.core.checks import integer_at_least, positive_int
from pymc_crp.core.lists import EncodedLists
from pymc_crp.distributions.equicorrelated_normal import EquicorrelatedNormal, gumbel_utilities
from pymc_crp.distributions.partial_order_lists import PartialOrderLists
from pymc_crp.distributions.partitions import CRP, DirichletMultinomialPartition
from pymc_crp.roles import (
    CovariateRole,
    HyperparameterRole,
    LabelsRole,
    UtilityMeanRole,
    seal_roles,
    set_role,
)

__all__ = ["clustered_partial_orders", "default_max_clusters", "partial_order"]

PARTITIONS = ("crp", "dirichlet-multinomial")


def _beta_pair(value) -> tuple[float, float] | None:
    """``(a, b)`` if ``value`` is a pair of positive finite Beta parameters, else ``None``."""
    try:
        ab = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    if ab.shape != (2,) or not np.all(np.isfinite(ab) & (ab > 0)):
        return None
    return float(ab[0]), float(ab[1])


def default_max_clusters(n_lists: int) -> int:
    r"""Default number of slots of :func:`clustered_partial_orders` (CRP labels):
    ``min(n, max(50, 4⌈√n⌉))`` for ``n`` lists (128 for 1,000 lists, 284 for 5,000, 400 for
    10,000). The label step's cost follows the occupied clusters, not the slots, but the
    trace stores every slot's utilities, so the default grows slowly. Measured: with 5,000
    simulated survey rankings 50 slots were all taken in 4 % of the draws; with 1,000 real
    ballots over 5 candidates (``examples/albury_ballots.py``) 64 slots in 1.3 % (the draws
    reach 67 clusters); with 1,000 rankings from a Plackett--Luce mixture with individual
    variation (``benchmarks/po_convergence.py --data heterogeneous``) the draws reach 93--96
    clusters, so 96 slots (``3⌈√n⌉``) were all taken in 0.1--0.4 % of the draws and 160 in
    none, at the same time per iteration (156 ms)."""
    positive_int(n_lists, "n_lists", type_error=ValueError)
    return int(min(n_lists, max(50, 4 * math.ceil(math.sqrt(n_lists)))))


def _check_common(lists, n_items, n_dims, covariates, rho_prior=(1.0, 1.0), item_names=None):
    integer_at_least(n_items, "n_items", 2, type_error=ValueError)
    positive_int(n_dims, "n_dims", type_error=ValueError)
    if _beta_pair(rho_prior) is None:
        raise ValueError(
            f"rho_prior must be a pair (a, b) of positive finite Beta parameters, got {rho_prior!r}"
        )
    if item_names is not None:
        if isinstance(item_names, str | bytes) or not np.iterable(item_names):
            raise TypeError(f"item_names must be a sequence of n_items names, got {item_names!r}")
        names = list(item_names)
        if len(names) != n_items:
            raise ValueError(f"item_names must hold n_items={n_items} names, got {len(names)}")
        if len(set(names)) != len(names):
            raise ValueError("item_names must be distinct")
    encoded = EncodedLists.encode(lists, int(n_items), name="lists")
    if covariates is not None:
        covariates = np.asarray(covariates, dtype=float)
        if covariates.ndim != 2 or covariates.shape[0] != n_items:
            raise ValueError(
                f"covariates must have shape (n_items, n_covariates), got {covariates.shape}"
            )
        if not np.all(np.isfinite(covariates)):
            raise ValueError("covariates must be finite")
    return encoded, covariates


def _lists_model(encoded: EncodedLists, n_items, n_dims, item_names, n_slots=None) -> pm.Model:
    """The model with the coordinates ``item``, ``dim`` (``slot``), ``list``, ``position``."""
    n_lists, max_len = encoded.shape
    coords = {
        "item": list(item_names) if item_names is not None else list(range(n_items)),
        "dim": list(range(n_dims)),
        **({} if n_slots is None else {"slot": list(range(n_slots))}),
        "list": list(range(n_lists)),
        "position": list(range(max_len)),
    }
    return pm.Model(coords=coords)


def _observe_lists(encoded: EncodedLists, eta, labels, p, direction) -> None:
    """The observed ``lists`` (encoded once, by the builder's checks)."""
    PartialOrderLists(
        "lists",
        eta,
        labels,
        p,
        direction=direction,
        n_items=encoded.n_items,
        observed=encoded,
        dims=("list", "position"),
    )


def _check_discount(discount, partition):
    """``None`` for a fixed discount in ``[0, 1)``, else the pair ``(a, b)`` of its Beta
    prior; ``ValueError`` naming ``discount`` otherwise."""
    if isinstance(discount, np.ndarray) and discount.shape == (2,):
        discount = tuple(discount.tolist())
    if isinstance(discount, str | bytes):
        raise TypeError(f"discount must be a number in [0, 1) or a pair (a, b), got {discount!r}")
    if isinstance(discount, tuple | list):
        prior = _beta_pair(discount)
        if prior is None:
            raise ValueError(
                f"discount must be a number in [0, 1) or a pair (a, b) of positive Beta "
                f"parameters, got {discount!r}"
            )
    else:
        try:
            value = float(discount)
        except (TypeError, ValueError):
            raise TypeError(
                f"discount must be a number in [0, 1) or a pair (a, b), got {discount!r}"
            ) from None
        if not 0.0 <= value < 1.0:
            raise ValueError(f"discount must lie in [0, 1), got {discount!r}")
        prior = None
        if value == 0.0:
            return None
    if partition != "crp":
        raise ValueError("discount needs partition='crp' (the Pitman--Yor process)")
    return prior


def _hyperpriors(model, n_dims, noise, rho_prior):
    """``rho`` (for K > 1) and the noise ``p``; both get the hyperparameter step."""
    rho = 0.0
    if n_dims > 1:
        rho = pm.Beta("rho", *rho_prior)
        set_role(model, rho, HyperparameterRole())
    if noise is None:
        p = pm.Beta("p", 1.0, 9.0)
        set_role(model, p, HyperparameterRole())
    else:
        try:
            noise_value = float(noise)
        except (TypeError, ValueError):
            noise_value = np.nan
        if not 0.0 <= noise_value <= 1.0:
            raise ValueError(f"noise must be a probability in [0, 1] or None, got {noise!r}")
        p = float(noise)
    return rho, p


def _order_utilities(utilities, covariates, labels=None, mean_utilities=None, tau=None):
    """``(η, shift)``: ``η = U`` (same dominance order) and ``shift = None``, or with item
    covariates ``η = G⁻¹(Φ(U)) + xβ`` and ``shift = xβ`` (``β`` recorded for
    :class:`~pymc_crp.CovariateShiftMetropolis`)."""
    if covariates is None:
        return utilities, None
    beta = pm.Normal("beta", 0.0, 1.0, shape=covariates.shape[1])
    role = CovariateRole(utilities, covariates, labels, mean_utilities, tau)
    set_role(pm.modelcontext(None), beta, role)
    shift = pt.as_tensor(covariates) @ beta
    return gumbel_utilities(utilities) + shift[:, None], shift


def partial_order(
    lists,
    n_items: int,
    *,
    n_dims: int = 2,
    direction: str = "top-down",
    noise: float | None = None,
    rho_prior: tuple[float, float] = (1.0, 1.0 / 6.0),
    covariates=None,
    item_names=None,
) -> pm.Model:
    r"""One latent partial order for all lists.

    ``ρ ~ Beta(1, 1/6)``, ``U_j ~ N(0, Σ_ρ)`` (``M × K``), ``p ~ Beta(1, 9)``, and each list a
    queue-jumping linear extension of the dominance order of ``U`` (or of
    ``η = G⁻¹(Φ(U)) + xβ``, ``β ~ N(0, 1)``, with item covariates ``x``).

    Parameters
    ----------
    lists : list of lists of int
        Ranked lists of 0-based item indices, best first.
    n_items : int
    n_dims : int, default 2
        ``K``, the number of latent dimensions (``K = 1`` gives Plackett--Luce-like lists).
    direction : {"top-down", "bottom-up"}
    noise : float, optional
        Fix ``p``; by default ``p ~ Beta(1, 9)``.
    rho_prior : (a, b)
        Beta prior of ``ρ``.
    covariates : array (n_items, n_covariates), optional
    item_names : list of str, optional
        Coordinates of the ``item`` dimension.
    """
    encoded, covariates = _check_common(lists, n_items, n_dims, covariates, rho_prior, item_names)
    with _lists_model(encoded, n_items, n_dims, item_names) as model:
        rho, p = _hyperpriors(model, n_dims, noise, rho_prior)
        utilities = EquicorrelatedNormal(
            "U", mu=np.zeros((n_items, n_dims)), rho=rho, dims=("item", "dim")
        )
        if n_dims > 1:
            set_role(model, rho, HyperparameterRole("correlation", (utilities,)))
        order_utilities, _ = _order_utilities(utilities, covariates)
        _observe_lists(encoded, order_utilities, None, p, direction)
    seal_roles(model)  # terms added later that read these variables void their roles
    return model


def clustered_partial_orders(
    lists,
    n_items: int,
    *,
    n_dims: int = 2,
    partition: str = "crp",
    max_clusters: int | None = None,
    concentration=None,
    discount: float | tuple[float, float] = 0.0,
    direction: str = "top-down",
    noise: float | None = None,
    rho_prior: tuple[float, float] = (1.0, 1.0 / 6.0),
    covariates=None,
    item_names=None,
) -> pm.Model:
    r"""Lists from several unknown groups, each with its own partial order (HPO model).

    .. math::

        U0_j \sim N(0, Σ_ρ),\quad U^{(a)}_j \sim N(τ U0_j, (1-τ^2) Σ_ρ),\quad
        c \sim \mathrm{CRP}(α) \text{ or } \mathrm{DM}(γ),\quad
        Y_i \sim \mathrm{QJ}(h(U^{(c_i)}), p),

    with ``ρ ~ Beta(1, 1/6)``, ``τ ~ Uniform(0, 1)``, ``p ~ Beta(1, 9)`` and, by default,
    ``α ~ Gamma(1, 1)`` (CRP; with a fixed discount integrated out of the label moves of
    :class:`~pymc_crp.PartialOrderLabelGibbs` and drawn given the number of clusters) or
    ``γ ~ Gamma(1, 1)`` (DM). The
    label variable is named ``cluster``; slot utilities ``U`` have dims
    ``(slot, item, dim)``.

    Parameters
    ----------
    lists, n_items, n_dims, direction, noise, rho_prior, covariates, item_names
        As in :func:`partial_order`.
    partition : {"crp", "dirichlet-multinomial"}
    max_clusters : int, optional
        Number of slots ``L``. Default: for the CRP,
        :func:`default_max_clusters` (``min(n, max(50, 4⌈√n⌉))`` for ``n`` lists: the label
        step scores only the occupied slots and a few auxiliary draws, so unused slots cost
        next to nothing; a warning and the stat ``slots_full`` say when every slot was taken
        while a new cluster had prior mass — then pass a larger ``max_clusters``); otherwise
        10.
    concentration : float, optional
        Fix ``α`` (CRP) or ``γ`` (DM) instead of giving it a Gamma(1, 1) prior.
    discount : float or (a, b), default 0
        Pitman--Yor discount ``d`` of the CRP: a number in ``[0, 1)`` fixes it (0.5 is the
        hierarchical partial-order model's choice for survey data); a pair gives it the prior
        ``d ~ Beta(a, b)``. A random ``d`` and, when ``d`` is not 0, a random ``α`` are
        updated by :class:`~pymc_crp.HyperparameterMetropolis` (random walk on the
        unconstrained scale; their only child is the label prior). The cluster weights are
        ``n_j - d`` and ``α + dK`` (section 2 of ``docs/mathematics.md``).

    Notes
    -----
    The initial values of ``U0`` and ``U`` are a prior draw (``initval="prior"``), which
    ``pm.sample`` seeds per chain from ``random_seed``: the chains start dispersed, as R-hat
    assumes, and reproducibly. (At the prior mean every slot would be the same matrix of
    zeros: no relations, and the moves of ``τ`` and ``ρ`` given such slots head for
    ``τ → 1``.) ``model.initial_point(random_seed=...)`` gives the same start outside
    ``pm.sample``.

    How long to sample: on rankings generated by a few partial orders (1,000 or 5,000 full
    rankings of 10 items from 5 orders) PyMC's default ``tune=1000, draws=1000`` with 4 chains
    reached R-hat ≤ 1.01 for the number of clusters, the largest cluster, the partition
    entropy, the log-likelihood, ``p``, ``τ``, ``ρ`` and ``α``. On rankings that no few
    partial orders generate (1,000 rankings from a Plackett--Luce mixture with individual
    variation, a stand-in for survey data) the posterior holds 20--95 small clusters whose
    orders drift with ``p``, and ``draws=4000`` brought those R-hats to 1.003--1.020 (the
    largest cluster's the last; bulk ESS 240--686, 19 minutes on 2 cores); with
    5,000 such rankings (about 110 clusters) the default left them at 1.02--1.32 after 36
    minutes on 2 cores (``benchmarks/README.md``): check them
    (:func:`~pymc_crp.partition_stats` adds the partition's summaries to the posterior) and
    sample longer when they are above 1.01. Lists that each rank a few of many items (1,000
    lists of 10 of 100 items from 5 orders) had not converged at the default length (two
    chains: R-hat up to 1.58): each chain settles within its first iterations in its own
    basin of clusters that mix the planted groups, 127--259 nats of joint density below the
    planted partition's at the same number of clusters, and stays there; there the label step
    starts without annealing (``PartialOrderLabelGibbs``'s ``anneal``).
    """
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}, got {partition!r}")
    if max_clusters is not None:
        positive_int(max_clusters, "max_clusters", type_error=ValueError)
    if concentration is not None:
        try:
            value = float(concentration)
        except (TypeError, ValueError):
            raise TypeError(
                f"concentration must be a positive number or None, got {concentration!r}"
            ) from None
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"concentration must be a positive finite number, got {value!r}")
    discount_prior = _check_discount(discount, partition)
    encoded, covariates = _check_common(lists, n_items, n_dims, covariates, rho_prior, item_names)
    if max_clusters is None:
        n_lists = encoded.shape[0]
        max_clusters = default_max_clusters(n_lists) if partition == "crp" else 10
    max_clusters = int(max_clusters)
    with _lists_model(encoded, n_items, n_dims, item_names, max_clusters) as model:
        rho, p = _hyperpriors(model, n_dims, noise, rho_prior)
        tau = pm.Uniform("tau", 0.0, 1.0)
        set_role(model, tau, HyperparameterRole())
        # initval="prior": a dispersed, seeded start (see Notes in the docstring).
        mean_utilities = EquicorrelatedNormal(
            "U0", mu=np.zeros((n_items, n_dims)), rho=rho, dims=("item", "dim"), initval="prior"
        )
        utilities = EquicorrelatedNormal(
            "U",
            mu=tau * mean_utilities,
            rho=rho,
            scale=pt.sqrt(1.0 - tau**2),
            dims=("slot", "item", "dim"),
            initval="prior",
        )
        # Interweaved non-centred moves (step_methods/noncentred.py) scale the utilities.
        set_role(model, tau, HyperparameterRole("shrinkage", (utilities,), mean_utilities))
        if n_dims > 1:
            set_role(model, rho, HyperparameterRole("correlation", (mean_utilities, utilities)))
        if concentration is None:
            name = "alpha" if partition == "crp" else "gamma"
            concentration = pm.Gamma(name, 1.0, 1.0)
            # Escobar--West (ConcentrationGibbs) needs a CRP with d = 0.
            if partition != "crp" or discount_prior is not None or discount != 0:
                set_role(model, concentration, HyperparameterRole())
        if discount_prior is not None:
            discount = pm.Beta("discount", *discount_prior)
            set_role(model, discount, HyperparameterRole())
        if partition == "crp":
            labels = CRP(
                "cluster",
                concentration,
                discount=discount,
                max_clusters=max_clusters,
                dims="list",
            )
            set_role(model, labels, LabelsRole())  # Algorithm 8 label sweeps
        else:
            labels = DirichletMultinomialPartition(
                "cluster", concentration, n_groups=max_clusters, dims="list"
            )
        order_utilities, score_shift = _order_utilities(
            utilities, covariates, labels, mean_utilities, tau
        )
        # U0 and the empty slots' utilities are drawn as one block (UtilityMeanGibbs).
        role = UtilityMeanRole(
            utilities, tau, rho, labels, orders_only=covariates is None, score_shift=score_shift
        )
        set_role(model, mean_utilities, role)
        _observe_lists(encoded, order_utilities, labels, p, direction)
    seal_roles(model)
    return model
