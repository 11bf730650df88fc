r"""A multivariate normal that is fast for large batches of distinct small covariances.

:class:`BatchedMvNormal` has the density of :class:`pymc.MvNormal`,

.. math:: \log p(x \mid μ, Σ) = -\tfrac12 \big(D \log 2π + \log|Σ|
    + (x-μ)^\top Σ^{-1} (x-μ)\big),

with the Cholesky factor of ``Σ`` unrolled into elementwise operations
(:func:`pymc_crp.distributions.inverse_wishart.mvnormal_logpdf`).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.op import RandomVariable

from pymc_crp.distributions.inverse_wishart import mvnormal_logpdf, static_dim

__all__ = ["BatchedMvNormal", "BatchedMvNormalRV", "batched_mvnormal"]


class BatchedMvNormalRV(RandomVariable):
    """Random variable of :class:`BatchedMvNormal`."""

    name = "batched_mvnormal"
    signature = "(d),(d,d)->(d)"
    dtype = "floatX"
    _print_name = ("BatchedMvNormal", "\\operatorname{BatchedMvNormal}")

    def make_node(self, rng, size, mean, cov):
        mean = pt.as_tensor_variable(mean).astype(pytensor.config.floatX)
        cov = pt.as_tensor_variable(cov).astype(pytensor.config.floatX)
        return super().make_node(rng, size, mean, cov)

    @classmethod
    def rng_fn(cls, rng, mean, cov, size):
        mean = np.asarray(mean, dtype=np.float64)
        cov = np.asarray(cov, dtype=np.float64)
        batch = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
        if size is not None:
            batch = tuple(size)
        d = cov.shape[-1]
        chol = np.linalg.cholesky(np.broadcast_to(cov, (*batch, d, d)))
        eps = rng.standard_normal((*batch, d))
        return np.broadcast_to(mean, (*batch, d)) + np.einsum("...ab,...b->...a", chol, eps)


batched_mvnormal = BatchedMvNormalRV()


class BatchedMvNormal(Continuous):
    r"""Multivariate normal ``N(mean, cov)`` batched over leading axes, for small static ``D``.

    The same density as :class:`pymc.MvNormal`, but the Cholesky factorisation of ``cov`` is
    unrolled into elementwise PyTensor operations (for ``D <= 6``), so a batch of many distinct
    covariance matrices (e.g. ``Sigma[cluster]`` for thousands of observations, or the
    ``L x N`` batch that :class:`pymc_crp.CRPGibbs` evaluates) costs a few fused loops instead
    of one LAPACK call per matrix. Differentiable, so NUTS can use it.

    Parameters
    ----------
    mean : tensor_like of float, shape ``(..., D)``
    cov : tensor_like of float, shape ``(..., D, D)``, symmetric positive definite
        (only its lower triangle is read); ``D`` must be static.
    """

    rv_type = BatchedMvNormalRV
    rv_op = batched_mvnormal

    @classmethod
    def dist(cls, mean, cov, **kwargs):
        cov = pt.as_tensor_variable(cov)
        if cov.ndim < 2:
            raise ValueError("cov must be a (..., D, D) matrix")
        static_dim(cov, "cov")
        return super().dist([mean, cov], **kwargs)

    def support_point(rv, size, mean, cov):
        point = pt.broadcast_to(mean, pt.broadcast_shape(mean, cov[..., 0]))
        if not rv_size_is_none(size):
            point = pt.broadcast_to(point, pt.concatenate([size, [mean.shape[-1]]]))
        return point

    def logp(value, mean, cov):
        return mvnormal_logpdf(value, mean, cov)
