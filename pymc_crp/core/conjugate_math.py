r"""Numeric core of the conjugate slot updates: sufficient statistics, posterior draws and the
collapsed label sweep (Neal's Algorithm 3). Pure NumPy/numba; nothing here imports PyMC.

A *slot parameter* ``φ_j`` (``j = 0..L-1``) is read by observation ``i`` as ``φ_{c_i}``. For
the families below its prior and the likelihood are conjugate, so that given the labels each
slot's posterior is in closed form (an empty slot's posterior is its prior), and with ``φ``
integrated out observation ``i`` joins slot ``j`` with the posterior predictive density of
the slot's other members. ``aux[i, j]`` is the likelihood's other parameter for observation
``i`` if it were in slot ``j`` (it may itself be a slot parameter):

=================  ======================  ===============  ==============================
family             prior of ``φ_j``        likelihood       ``aux[i, j]``
=================  ======================  ===============  ==============================
``NORMAL_MEAN``    ``N(m, v)``             ``N(φ_j, s²)``   observation variance ``s²``
``NORMAL_PREC``    ``Gamma(a, rate b)``    ``N(μ, 1/φ_j)``  mean ``μ``
``GAMMA_POISSON``  ``Gamma(a, rate b)``    ``Poisson(φ_j)`` unused
``BETA_BINOMIAL``  ``Beta(α, β)``          ``Bin(n, φ_j)``  trials ``n`` (1: Bernoulli)
=================  ======================  ===============  ==============================

Posterior given the members ``S_j`` of slot ``j`` (statistics ``t_j``):

* ``NORMAL_MEAN``: ``t = (Σ 1/s_i², Σ y_i/s_i²)``, precision ``1/v + t_1``, mean
  ``(m/v + t_2)/(1/v + t_1)``; predictive ``N(mean, 1/precision + s²)``.
* ``NORMAL_PREC``: ``t = (n_j, Σ (y_i - μ_i)²)``, ``Gamma(a + t_1/2, rate b + t_2/2)``;
  predictive Student-t with ``2a'`` degrees of freedom, location ``μ``, scale² ``b'/a'``.
* ``GAMMA_POISSON``: ``t = (Σ y_i, n_j)``, ``Gamma(a + t_1, rate b + t_2)``; predictive
  negative binomial ``Γ(a'+y)/(Γ(a') y!) (b'/(b'+1))^{a'} (b'+1)^{-y}``.
* ``BETA_BINOMIAL``: ``t = (Σ y_i, Σ (n_i - y_i))``, ``Beta(α + t_1, β + t_2)``; predictive
  beta-binomial ``C(n, y) B(α'+y, β'+n-y)/B(α', β')``.

References
----------
Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture models.
*J. Comput. Graph. Stat.* 9(2), 249–265 (Algorithm 3). Bernardo, J. M. and Smith, A. F. M.
(1994). *Bayesian Theory*, Appendix A (the conjugate pairs).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_crp.core.partition_math import CRP_PRIOR, conditional_slot_weights, draw_log_weighted

__all__ = [
    "BETA_BINOMIAL",
    "DIRICHLET_CATEGORICAL",
    "FAMILY_NAMES",
    "GAMMA_POISSON",
    "MVN_MEAN",
    "NORMAL_MEAN",
    "NORMAL_PREC",
    "collapsed_label_sweep",
    "log_predictive",
    "posterior_params",
    "sample_posterior",
    "slot_log_marginal",
    "slot_statistics",
]

NORMAL_MEAN = 0
NORMAL_PREC = 1
GAMMA_POISSON = 2
BETA_BINOMIAL = 3
MVN_MEAN = 4  # multivariate normal mean: see pymc_crp.core.mvnormal_math
DIRICHLET_CATEGORICAL = 5  # see pymc_crp.core.categorical_math
FAMILY_NAMES = {
    NORMAL_MEAN: "normal mean (normal prior, known variance)",
    NORMAL_PREC: "normal precision (gamma prior, known mean)",
    GAMMA_POISSON: "Poisson rate (gamma prior)",
    BETA_BINOMIAL: "Bernoulli/binomial probability (beta prior)",
    MVN_MEAN: "multivariate normal mean (normal prior, known covariance)",
    DIRICHLET_CATEGORICAL: "categorical probabilities (Dirichlet prior)",
}
_LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True, nogil=True)
def _add(family, stats, j, y, aux, sign):  # pragma: no cover
    """Add (``sign = 1``) or remove (``-1``) one observation from slot ``j``'s statistics."""
    if family == 0:
        stats[j, 0] += sign / aux
        stats[j, 1] += sign * y / aux
    elif family == 1:
        stats[j, 0] += sign
        stats[j, 1] += sign * (y - aux) ** 2
    elif family == 2:
        stats[j, 0] += sign * y
        stats[j, 1] += sign
    else:
        stats[j, 0] += sign * y
        stats[j, 1] += sign * (aux - y)


@njit(cache=True, nogil=True)
def _log_pred(family, h0, h1, t0, t1, y, aux):  # pragma: no cover
    """Log posterior predictive density of ``y`` in a slot with prior ``(h0, h1)`` and
    statistics ``(t0, t1)`` (formulas in the module docstring)."""
    if family == 0:
        prec = 1.0 / h1 + t0
        mean = (h0 / h1 + t1) / prec
        var = 1.0 / prec + aux
        return -0.5 * (_LOG_2PI + math.log(var) + (y - mean) ** 2 / var)
    if family == 1:
        a = h0 + 0.5 * t0
        b = h1 + 0.5 * t1
        return (
            math.lgamma(a + 0.5)
            - math.lgamma(a)
            - 0.5 * math.log(2.0 * math.pi * b)
            - (a + 0.5) * math.log1p((y - aux) ** 2 / (2.0 * b))
        )
    if family == 2:
        a = h0 + t0
        b = h1 + t1
        return (
            math.lgamma(a + y)
            - math.lgamma(a)
            - math.lgamma(y + 1.0)
            + a * math.log(b)
            - (a + y) * math.log(b + 1.0)
        )
    a = h0 + t0
    b = h1 + t1
    n = aux
    return (
        math.lgamma(n + 1.0)
        - math.lgamma(y + 1.0)
        - math.lgamma(n - y + 1.0)
        + math.lgamma(a + y)
        + math.lgamma(b + n - y)
        - math.lgamma(a + b + n)
        - math.lgamma(a)
        - math.lgamma(b)
        + math.lgamma(a + b)
    )


@njit(cache=True, nogil=True)
def _statistics_kernel(family, y, aux, labels, stats):  # pragma: no cover
    for i in range(y.shape[0]):
        _add(family, stats, labels[i], y[i], aux[i, labels[i]], 1.0)


def slot_statistics(family: int, y: np.ndarray, aux: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Sufficient statistics ``t (L, 2)`` of every slot given the labels.

    Parameters
    ----------
    family : int
        One of the family codes of this module.
    y : (N,) float
        Observations (values of the term that reads the slot parameter).
    aux : (N, L) float
        The likelihood's other parameter of observation ``i`` in slot ``j``.
    labels : (N,) int
        Slot of each observation.
    """
    aux = np.ascontiguousarray(aux, dtype=np.float64)
    stats = np.zeros((aux.shape[1], 2))
    _statistics_kernel(
        int(family),
        np.ascontiguousarray(y, dtype=np.float64),
        aux,
        np.ascontiguousarray(labels, dtype=np.int64),
        stats,
    )
    return stats


@njit(cache=True, nogil=True)
def _log_marginal_kernel(family, y, aux, labels, hyper, out):  # pragma: no cover
    stats = np.zeros((hyper.shape[0], 2))
    for i in range(y.shape[0]):
        j = labels[i]
        h0, h1, t0, t1 = hyper[j, 0], hyper[j, 1], stats[j, 0], stats[j, 1]
        out[j] += _log_pred(family, h0, h1, t0, t1, y[i], aux[i])
        _add(family, stats, j, y[i], aux[i], 1.0)


def slot_log_marginal(
    family: int, hyper: np.ndarray, y: np.ndarray, aux: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    r"""Log marginal likelihood ``(L,)`` of each slot's observations, ``φ`` integrated out.

    By the chain rule over the members ``i_1 < i_2 < …`` of slot ``j``:

    .. math:: \log m(y_{S_j}) = \sum_k \log p(y_{i_k} \mid y_{i_1}, …, y_{i_{k-1}}),

    each term the posterior predictive density (module docstring); ``0`` for an empty slot.
    ``aux (N,)`` is the likelihood's other parameter of each observation in its own slot.
    """
    out = np.zeros(np.shape(hyper)[0])
    _log_marginal_kernel(
        int(family),
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(aux, dtype=np.float64),
        np.ascontiguousarray(labels, dtype=np.int64),
        np.ascontiguousarray(hyper, dtype=np.float64),
        out,
    )
    return out


def posterior_params(family: int, hyper: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """Posterior parameters ``(L, 2)`` of every slot from the prior ``hyper (L, 2)``.

    ``NORMAL_MEAN``: (mean, sd); ``NORMAL_PREC``/``GAMMA_POISSON``: (shape, rate);
    ``BETA_BINOMIAL``: (α, β). Formulas in the module docstring; ``stats = 0`` (an empty
    slot) gives the prior.
    """
    h0, h1 = hyper[:, 0], hyper[:, 1]
    t0, t1 = stats[:, 0], stats[:, 1]
    if family == NORMAL_MEAN:
        prec = 1.0 / h1 + t0
        return np.stack([(h0 / h1 + t1) / prec, 1.0 / np.sqrt(prec)], axis=1)
    if family == NORMAL_PREC:
        return np.stack([h0 + 0.5 * t0, h1 + 0.5 * t1], axis=1)
    if family in (GAMMA_POISSON, BETA_BINOMIAL):
        return np.stack([h0 + t0, h1 + t1], axis=1)
    raise ValueError(f"family must be one of {sorted(FAMILY_NAMES)}, got {family!r}")


def sample_posterior(
    family: int, hyper: np.ndarray, stats: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One exact draw ``(L,)`` of every slot parameter from its conjugate posterior."""
    post = posterior_params(family, hyper, stats)
    if family == NORMAL_MEAN:
        return rng.normal(post[:, 0], post[:, 1])
    if family in (NORMAL_PREC, GAMMA_POISSON):
        return rng.gamma(post[:, 0], 1.0 / post[:, 1])
    return rng.beta(post[:, 0], post[:, 1])


def log_predictive(
    family: int, hyper: np.ndarray, stats: np.ndarray, y: float, aux: np.ndarray
) -> np.ndarray:
    """Log posterior predictive density of one observation ``y`` in each slot ``(L,)``."""
    return np.array(
        [
            _log_pred(int(family), h[0], h[1], t[0], t[1], float(y), float(a))
            for h, t, a in zip(hyper, stats, np.broadcast_to(aux, hyper.shape[:1]), strict=True)
        ]
    )


@njit(cache=True, nogil=True)
def collapsed_label_sweep(
    family,
    y,
    aux,
    hyper,
    labels,
    counts,
    stats,
    order,
    uniforms,
    prior_code,
    concentration,
    discount,
):  # pragma: no cover
    r"""One sweep of collapsed Gibbs updates of the labels (Neal's Algorithm 3), in place.

    Observation ``i`` is removed from its slot (counts and statistics) and given slot ``j``
    with probability

    .. math:: P(c_i = j \mid c_{-i}, y) \propto w_j(c_{-i})\,
        p(y_i \mid \{y_k : c_k = j, k \ne i\}),

    ``w_j`` the prior's conditional weights (``n_j - d`` occupied, ``(θ + dK)/(L - K)`` per
    empty slot for the CRP; ``n_a + γ/A`` for the Dirichlet--multinomial) and the second
    factor the slot's posterior predictive density. An exact Gibbs update of the labels with
    the slot parameters integrated out.

    Parameters
    ----------
    family : int
    y : (N,) float64
    aux : (N, L) float64
    hyper : (L, 2) float64
        Prior parameters of each slot.
    labels, counts : (N,) and (L,) int64
        Updated in place.
    stats : (L, 2) float64
        Statistics consistent with ``labels`` (:func:`slot_statistics`), updated in place.
    order : (N,) int64
        Visiting order.
    uniforms : (N,) float64
        One uniform per visit.
    prior_code, concentration, discount
        Partition prior as in :func:`pymc_crp.core.partition_math.conditional_slot_weights`.

    Returns
    -------
    int
        Number of visits at which every slot was occupied (CRP truncation bites).
    """
    n_obs = y.shape[0]
    n_slots = counts.shape[0]
    prior_w = np.empty(n_slots)
    logp = np.empty(n_slots)
    n_full = 0
    for t in range(n_obs):
        i = order[t]
        old = labels[i]
        counts[old] -= 1
        _add(family, stats, old, y[i], aux[i, old], -1.0)
        if counts[old] == 0:  # exact zeros: no round-off left in an empty slot
            stats[old, 0] = 0.0
            stats[old, 1] = 0.0
        n_occupied = conditional_slot_weights(counts, prior_code, concentration, discount, prior_w)
        if prior_code == CRP_PRIOR and n_occupied == n_slots:
            n_full += 1
        for j in range(n_slots):
            if prior_w[j] > 0.0:
                logp[j] = math.log(prior_w[j]) + _log_pred(
                    family, hyper[j, 0], hyper[j, 1], stats[j, 0], stats[j, 1], y[i], aux[i, j]
                )
            else:
                logp[j] = -np.inf
        choice = draw_log_weighted(logp, uniforms[t])
        labels[i] = choice
        counts[choice] += 1
        _add(family, stats, choice, y[i], aux[i, choice], 1.0)
    return n_full
