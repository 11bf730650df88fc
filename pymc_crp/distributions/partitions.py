r"""Partition priors over integer label vectors as PyMC distributions.

Each prior is a :class:`pytensor.tensor.random.op.RandomVariable` subclass (so step methods
recognise it by its op) plus a :class:`pymc.Discrete` subclass with ``logp`` written in
PyTensor (differentiable in the continuous parameters, so NUTS can sample them) and an exact
``rng_fn`` from :mod:`pymc_crp.core.partition_math`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorVariable

from pymc_crp.core.checks import positive_int
from pymc_crp.core.partition_math import (
    PartitionPrior,
    check_crp_parameters,
    check_dirichlet_multinomial_parameters,
    log_block_count_weights,
    sample_crp_labels,
    sample_dirichlet_multinomial_labels,
    validate_labels,
)
from pymc_crp.distributions.params import RVParams, constant_value
from pymc_crp.roles import register_model

__all__ = [
    "CRP",
    "CRPRV",
    "CRPParams",
    "DirichletMultinomialPartition",
    "DirichletMultinomialPartitionParams",
    "DirichletMultinomialPartitionRV",
    "partition_params",
]


def _as_float(x) -> TensorVariable:
    """``x`` as a floatX tensor (PyTensor makes float32 constants of floats like ``1.0``)."""
    if constant_value(x) is not None:
        return pt.as_tensor_variable(np.asarray(constant_value(x), dtype=pytensor.config.floatX))
    x = pt.as_tensor_variable(x)
    return x if x.dtype == pytensor.config.floatX else pt.cast(x, pytensor.config.floatX)


def _static_int(x, name: str) -> int:
    value = constant_value(x)
    if value is None:
        raise TypeError(f"{name} must be a Python integer (the number of slots is structural)")
    if np.ndim(value) != 0:
        raise ValueError(f"{name} must be a scalar integer, got shape {np.shape(value)}")
    return positive_int(value.item() if hasattr(value, "item") else value, name)


def _infer_n(n, kwargs, name_of_prior: str) -> int:
    """Length of the label vector from ``n``, ``observed``, ``dims`` or ``shape``."""
    observed = kwargs.get("observed")
    if n is None:
        if observed is not None:
            n = np.shape(observed)[-1]
        elif kwargs.get("dims") is not None:
            dims = kwargs["dims"]
            last = dims if isinstance(dims, str) else dims[-1]
            n = int(pm.modelcontext(None).dim_lengths[last].eval())
        elif kwargs.get("shape") is not None:
            shape = kwargs["shape"]
            n = shape[-1] if isinstance(shape, tuple | list) else shape
        else:
            raise TypeError(f"{name_of_prior} needs n, the number of labels (observations)")
    n = _static_int(n, "n")
    if observed is not None and constant_value(observed) is not None:
        obs_shape = np.shape(constant_value(observed))
        if len(obs_shape) == 0 or obs_shape[-1] != n:
            raise ValueError(
                f"observed must hold label vectors of length n={n}, got shape {obs_shape}"
            )
    return n


def _scalar_slots(n_slots) -> TensorVariable | int:
    """The number of slots as a Python int when constant (it always is for these priors)."""
    try:
        return int(get_underlying_scalar_constant_value(n_slots))
    except NotScalarConstantError:
        return pt.max(n_slots)


def _slot_counts(value: TensorVariable, n_slots) -> TensorVariable:
    """Counts per slot along the last axis, ``(..., N) -> (..., L)``, by one-hot comparison."""
    return pt.sum(pt.eq(value[..., :, None], pt.arange(n_slots)), axis=-2)


def _labels_in_range(value: TensorVariable, n_slots) -> TensorVariable:
    return pt.all(pt.and_(pt.ge(value, 0), pt.lt(value, n_slots)), axis=-1)


def _validate_observed(kwargs, n_slots: int, name: str) -> None:
    """Observed labels (constants or ``pm.Data``) must be integers in ``0..n_slots-1``.

    A ``pm.Data`` container is checked with its current value (the steps that read observed
    labels check them again at every step, after ``pm.set_data``).
    """
    observed = kwargs.get("observed")
    if observed is None:
        return
    value = constant_value(observed)
    if value is None and isinstance(observed, SharedVariable):
        value = observed.get_value()
    if value is not None:
        validate_labels(value, n_slots, name=f"observed labels of {name}")


def _register_current_model() -> None:
    """Remember the model so that step-method competence checks can find it later."""
    register_model(pm.modelcontext(None))


def _support_shape(size, n, *params) -> list:
    """Shape ``(*batch, n)`` of a label draw from ``size`` or the broadcast parameters."""
    if rv_size_is_none(size):
        batch = list(pt.broadcast_shape(*params))
    else:
        size = pt.as_tensor(size, dtype="int64")
        batch = [size[i] for i in range(pt.get_vector_length(size))]
    return [*batch, n]


def _batch_loop(rng, size, draw_one, *params):
    """Draw label vectors for every element of the broadcast batch of ``params``."""
    params = [np.asarray(p) for p in params]
    batch_shape = np.broadcast_shapes(*(p.shape for p in params))
    if size is not None:
        batch_shape = tuple(size)
    params = [np.broadcast_to(p, batch_shape) for p in params]
    if batch_shape == ():
        return draw_one(*(p.item() for p in params))
    draws = [draw_one(*vals) for vals in zip(*(p.ravel() for p in params), strict=True)]
    return np.stack(draws).reshape(*batch_shape, -1)


#: A finite stand-in for log 0 in the scan below (``-inf`` would give NaN gradients).
_LOG_ZERO = -1e100


def _log_truncation_mass(theta, d, n: int, n_slots: int) -> TensorVariable:
    r"""``log P(K_n <= L | θ, d)`` as a graph differentiable in ``θ`` and ``d``.

    ``logsumexp_{k=1..L} [Σ_{i<k} log(θ + i d) + log W(n, k; d)] + log Γ(θ+1) - log Γ(θ+n)``
    (:func:`pymc_crp.core.partition_math.log_prob_at_most_blocks`). ``W`` is a constant table when
    ``d`` is constant, else the recursion ``W(m+1, k) = W(m, k-1) + (m - k d) W(m, k)`` runs
    as a scan over ``m``.
    """
    d_value = constant_value(d)
    k = np.arange(1, n_slots + 1)
    if d_value is not None and np.ndim(d_value) == 0:
        log_w = pt.as_tensor_variable(log_block_count_weights(n, n_slots, float(d_value)))
    else:
        kf = pt.as_tensor_variable(k.astype("float64"))
        start = pt.as_tensor_variable(np.r_[0.0, np.full(n_slots - 1, _LOG_ZERO)])

        def add_item(m, log_w, d):
            join = pt.log(pt.maximum(m - kf * d, 1e-300)) + log_w
            opened = pt.concatenate([pt.as_tensor_variable([_LOG_ZERO]), log_w[:-1]])
            top = pt.maximum(opened, join)  # a stable log(exp(opened) + exp(join))
            return top + pt.log1p(pt.exp(-pt.abs(opened - join)))

        log_w = pytensor.scan(
            add_item,
            sequences=[pt.arange(1, n, dtype="float64")],
            outputs_info=[start],
            non_sequences=[pt.cast(d, "float64")],
            return_updates=False,
        )[-1]
    steps = pt.log(theta[..., None] + pt.arange(1, n_slots) * d[..., None])
    rising = pt.concatenate([pt.zeros_like(steps[..., :1]), pt.cumsum(steps, axis=-1)], axis=-1)
    return pt.logsumexp(rising + log_w, axis=-1) + pt.gammaln(theta + 1.0) - pt.gammaln(theta + n)


# --------------------------------------------------------------------------------------------
# Pitman--Yor Chinese restaurant process
# --------------------------------------------------------------------------------------------
class CRPRV(RandomVariable):
    """Random variable of the slot-labelled Pitman--Yor CRP (see :class:`CRP`)."""

    name = "crp"
    signature = "(),(),(),()->(n)"
    dtype = "int64"
    _print_name = ("CRP", "\\operatorname{CRP}")

    def make_node(self, rng, size, concentration, discount, max_clusters, n):
        concentration = _as_float(concentration)
        discount = _as_float(discount)
        max_clusters = pt.as_tensor_variable(max_clusters, dtype="int64")
        n = pt.as_tensor_variable(n, dtype="int64")
        return super().make_node(rng, size, concentration, discount, max_clusters, n)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[3].squeeze(),)

    @classmethod
    def rng_fn(cls, rng, concentration, discount, max_clusters, n, size):
        n_labels = int(np.asarray(n).squeeze())
        n_slots = int(np.asarray(max_clusters).squeeze())

        def draw_one(theta, d):
            return sample_crp_labels(n_labels, theta, d, n_slots, rng)

        return _batch_loop(rng, size, draw_one, concentration, discount)


crp = CRPRV()


@dataclass(frozen=True)
class CRPParams(RVParams):
    """The parameters of a :class:`CRP` variable: ``concentration`` ``θ``, ``discount`` ``d``,
    the number of slots ``max_clusters`` ``L`` and of observations ``n``."""

    op_type: ClassVar[type] = CRPRV
    prior: ClassVar[PartitionPrior] = PartitionPrior.CRP

    concentration: Any
    discount: Any
    max_clusters: Any
    n: Any

    @property
    def n_slots(self):
        """The number of slots ``L`` (``max_clusters``)."""
        return self.max_clusters

    @property
    def kernel_params(self) -> tuple:
        """``(concentration, discount)`` of the label kernels of
        :mod:`pymc_crp.core.partition_math`: ``(θ, d)``."""
        return self.concentration, self.discount


class CRP(Discrete):
    r"""Pitman--Yor Chinese restaurant process prior over label vectors.

    The labels ``c = (c_1, …, c_N)`` take values in ``0..L-1`` where ``L = max_clusters`` is
    the number of parameter slots; slot ``j`` owns the ``j``-th row of the cluster
    parameters. With ``K`` occupied slots of sizes ``n_1..n_K``:

    .. math::

        p(c \mid θ, d) = \frac{\prod_{k=1}^{K-1}(θ + k d)\;Γ(θ + 1)}{Γ(θ + N)}
            \prod_{k=1}^{K} \frac{Γ(n_k - d)}{Γ(1 - d)} \cdot \frac{(L - K)!}{L!}

    The last factor spreads the probability of a partition evenly over its ``L!/(L-K)!``
    label vectors. With ``L >= N`` this is exact; with ``L < N`` the prior is the CRP
    conditioned on ``K <= L``: the density above is divided by ``P(K_N <= L | θ, d)`` (the
    distribution of the number of blocks, differentiable in ``θ`` and ``d``), so that density
    and draws are one distribution for every ``θ`` and ``d``; :class:`pymc_crp.CRPGibbs` warns
    when the limit bites.
    Random draws are exact (sequential seating, conditioned on ``K <= L``, blocks placed in
    uniformly random distinct slots).

    ========  ==============================================
    Support   :math:`c \in \{0, …, L-1\}^N`
    Mean      not defined (labels are exchangeable slots)
    ========  ==============================================

    Parameters
    ----------
    concentration : tensor_like of float
        :math:`θ > -d` (``θ > 0`` for the Dirichlet process). Differentiable.
    discount : tensor_like of float, default 0
        :math:`0 <= d < 1`. ``0`` gives the Dirichlet process. Differentiable.
    max_clusters : int
        Number of slots ``L`` (>= 1). Use ``L >= n`` for the exact prior.
    n : int
        Number of labels ``N``; inferred from ``observed`` or ``shape`` when omitted.

    References
    ----------
    .. [1] Pitman, J. (2006). *Combinatorial Stochastic Processes*. Springer, ch. 3.
    .. [2] Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture
       models. *J. Comput. Graph. Stat.* 9(2), 249–265.
    """

    rv_type = CRPRV
    rv_op = crp

    def __new__(cls, name, concentration, discount=0.0, *, max_clusters, n=None, **kwargs):
        n = _infer_n(n, kwargs, "CRP")
        n_slots = _static_int(max_clusters, "max_clusters")
        _validate_observed(kwargs, n_slots, name)
        _register_current_model()
        return super().__new__(
            cls, name, concentration, discount, max_clusters=n_slots, n=n, **kwargs
        )

    @classmethod
    def dist(cls, concentration, discount=0.0, *, max_clusters, n=None, **kwargs):
        n = _infer_n(n, kwargs, "CRP")
        n_slots = _static_int(max_clusters, "max_clusters")
        theta_value, d_value = constant_value(concentration), constant_value(discount)
        if d_value is not None:
            d_arr = np.asarray(d_value, dtype=float)
            if not np.all(np.isfinite(d_arr)) or np.any((d_arr < 0) | (d_arr >= 1)):
                raise ValueError(f"discount must lie in [0, 1), got {d_value!r}")
        if theta_value is not None and d_value is not None:
            check_crp_parameters(theta_value, d_value)
        elif theta_value is not None:  # discount symbolic: only theta > -1 can be checked here
            theta_arr = np.asarray(theta_value, dtype=float)
            if not np.all(np.isfinite(theta_arr)) or np.any(theta_arr <= -1):
                raise ValueError(
                    f"concentration must be finite and greater than -discount > -1, "
                    f"got {theta_value!r}"
                )
        return super().dist([_as_float(concentration), _as_float(discount), n_slots, n], **kwargs)

    def support_point(rv, size, concentration, discount, max_clusters, n):
        """All observations in slot 0 (valid under any truncation)."""
        return pt.zeros(_support_shape(size, n, concentration, discount), dtype="int64")

    def logp(value, concentration, discount, max_clusters, n):
        n_slots = _scalar_slots(max_clusters)
        counts = _slot_counts(value, n_slots)
        occupied = pt.gt(counts, 0)
        n_blocks = pt.sum(occupied, axis=-1)
        n_total = value.shape[-1]
        theta = concentration
        d = discount
        # sum_{k=1}^{K-1} log(theta + k d), with safe arguments in the masked-out terms so that
        # gradients stay finite.
        k = pt.arange(1, n_slots).astype("floatX")
        k_mask = pt.lt(k, n_blocks[..., None])
        rising = pt.log(pt.switch(k_mask, theta[..., None] + k * d[..., None], 1.0))
        log_rising = pt.sum(pt.switch(k_mask, rising, 0.0), axis=-1)
        block_arg = pt.switch(occupied, counts - d[..., None], 1.0)
        log_blocks = pt.sum(
            pt.switch(occupied, pt.gammaln(block_arg) - pt.gammaln(1.0 - d[..., None]), 0.0),
            axis=-1,
        )
        log_eppf = log_rising + pt.gammaln(theta + 1.0) - pt.gammaln(theta + n_total) + log_blocks
        n_slots_float = pt.cast(n_slots, "float64")
        log_labellings = pt.gammaln(n_slots_float + 1.0) - pt.gammaln(
            n_slots_float - n_blocks + 1.0
        )
        log_prob = log_eppf - log_labellings
        n_labels = _scalar_slots(n)
        if isinstance(n_slots, int) and isinstance(n_labels, int) and n_slots < n_labels:
            log_prob = log_prob - _log_truncation_mass(theta, d, n_labels, n_slots)
        res = pt.switch(_labels_in_range(value, n_slots), log_prob, -np.inf)
        return check_parameters(
            res,
            pt.ge(d, 0),
            pt.lt(d, 1),
            pt.gt(theta, -d),
            msg="0 <= discount < 1, concentration > -discount",
        )


# --------------------------------------------------------------------------------------------
# Finite Dirichlet--multinomial partition prior
# --------------------------------------------------------------------------------------------
class DirichletMultinomialPartitionRV(RandomVariable):
    """Random variable of the finite Dirichlet--multinomial partition prior."""

    name = "dirichlet_multinomial_partition"
    signature = "(),(),()->(n)"
    dtype = "int64"
    _print_name = ("DMPartition", "\\operatorname{DMPartition}")

    def make_node(self, rng, size, gamma, n_groups, n):
        gamma = _as_float(gamma)
        n_groups = pt.as_tensor_variable(n_groups, dtype="int64")
        n = pt.as_tensor_variable(n, dtype="int64")
        return super().make_node(rng, size, gamma, n_groups, n)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[2].squeeze(),)

    @classmethod
    def rng_fn(cls, rng, gamma, n_groups, n, size):
        n_labels = int(np.asarray(n).squeeze())
        n_slots = int(np.asarray(n_groups).squeeze())

        def draw_one(g):
            return sample_dirichlet_multinomial_labels(n_labels, g, n_slots, rng)

        return _batch_loop(rng, size, draw_one, gamma)


dirichlet_multinomial_partition = DirichletMultinomialPartitionRV()


@dataclass(frozen=True)
class DirichletMultinomialPartitionParams(RVParams):
    """The parameters of a :class:`DirichletMultinomialPartition` variable: ``gamma`` ``γ``,
    the number of groups ``n_groups`` ``A`` and of observations ``n``."""

    op_type: ClassVar[type] = DirichletMultinomialPartitionRV
    prior: ClassVar[PartitionPrior] = PartitionPrior.DIRICHLET_MULTINOMIAL

    gamma: Any
    n_groups: Any
    n: Any

    @property
    def n_slots(self):
        """The number of slots ``A`` (``n_groups``)."""
        return self.n_groups

    @property
    def kernel_params(self) -> tuple:
        """``(concentration, discount)`` of the label kernels of
        :mod:`pymc_crp.core.partition_math`: ``(γ, 0)``."""
        return self.gamma, pt.constant(0.0)


def partition_params(rv) -> CRPParams | DirichletMultinomialPartitionParams:
    """The named parameters of a partition-prior variable (``TypeError`` for other ones)."""
    op = getattr(getattr(rv, "owner", None), "op", None)
    record = CRPParams if isinstance(op, CRPRV) else DirichletMultinomialPartitionParams
    return record.from_rv(rv)


class DirichletMultinomialPartition(Discrete):
    r"""Finite Dirichlet--multinomial prior over label vectors (weights integrated out).

    With weights :math:`w \sim \mathrm{Dirichlet}(γ/A, …, γ/A)` and
    :math:`c_i \mid w \sim \mathrm{Categorical}(w)` integrated over :math:`w`, and
    :math:`N_a` the number of labels equal to ``a``:

    .. math::

        p(c \mid γ) = \frac{Γ(γ)}{Γ(γ/A)^A} \frac{\prod_{a=1}^{A} Γ(N_a + γ/A)}{Γ(N + γ)}

    Example: ``N = 5, A = 3, γ = 1, c = (0, 0, 1, 2, 1)`` gives ``5.49e-4``. As ``A → ∞`` the
    induced partition tends to the CRP with ``θ = γ``, ``d = 0``.

    ========  ==============================================
    Support   :math:`c \in \{0, …, A-1\}^N`
    ========  ==============================================

    Parameters
    ----------
    gamma : tensor_like of float
        Total Dirichlet mass :math:`γ > 0`. Differentiable.
    n_groups : int
        Number of groups ``A`` (>= 1).
    n : int
        Number of labels ``N``; inferred from ``observed`` or ``shape`` when omitted.

    References
    ----------
    .. [1] Green, P. J. and Richardson, S. (2001). Modelling heterogeneity with and without
       the Dirichlet process. *Scand. J. Stat.* 28(2), 355–375.
    """

    rv_type = DirichletMultinomialPartitionRV
    rv_op = dirichlet_multinomial_partition

    def __new__(cls, name, gamma, *, n_groups, n=None, **kwargs):
        n = _infer_n(n, kwargs, "DirichletMultinomialPartition")
        n_slots = _static_int(n_groups, "n_groups")
        _validate_observed(kwargs, n_slots, name)
        _register_current_model()
        return super().__new__(cls, name, gamma, n_groups=n_slots, n=n, **kwargs)

    @classmethod
    def dist(cls, gamma, *, n_groups, n=None, **kwargs):
        n = _infer_n(n, kwargs, "DirichletMultinomialPartition")
        n_slots = _static_int(n_groups, "n_groups")
        gamma_value = constant_value(gamma)
        if gamma_value is not None:
            check_dirichlet_multinomial_parameters(gamma_value)
        return super().dist([_as_float(gamma), n_slots, n], **kwargs)

    def support_point(rv, size, gamma, n_groups, n):
        """All observations in group 0."""
        return pt.zeros(_support_shape(size, n, gamma), dtype="int64")

    def logp(value, gamma, n_groups, n):
        n_slots = _scalar_slots(n_groups)
        counts = _slot_counts(value, n_slots)
        alpha = (gamma / n_slots)[..., None]
        n_total = value.shape[-1]
        res = (
            pt.gammaln(gamma)
            - n_slots * pt.gammaln(gamma / n_slots)
            + pt.sum(pt.gammaln(counts + alpha), axis=-1)
            - pt.gammaln(n_total + gamma)
        )
        res = pt.switch(_labels_in_range(value, n_slots), res, -np.inf)
        return check_parameters(res, pt.gt(gamma, 0), msg="gamma > 0")
