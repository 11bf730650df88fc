r"""The inverse-Wishart distribution for PyMC, with a transform that lets NUTS sample it.

:class:`InverseWishart` is a :class:`pymc.Continuous` distribution over symmetric positive
definite ``D x D`` matrices (batched over leading axes):

.. math::

    \log p(Σ \mid ν, Ω) = \frac{ν}{2}\log|Ω| - \frac{νD}{2}\log 2 - \log Γ_D\!\Big(\frac{ν}{2}\Big)
        - \frac{ν + D + 1}{2}\log|Σ| - \frac12 \operatorname{tr}(Ω Σ^{-1}),

with ``ν > D - 1`` degrees of freedom and scale ``Ω`` (mean ``Ω / (ν - D - 1)`` for
``ν > D + 1``); ``Σ ~ IW(ν, Ω)`` iff ``Σ⁻¹ ~ Wishart(ν, Ω⁻¹)``. This is the parameterisation of
:data:`scipy.stats.invwishart` (``df=ν``, ``scale=Ω``).

Its default transform :class:`CholeskyLogDiagTransform` maps ``Σ = L Lᵀ`` to the packed lower
triangle of ``L`` with the diagonal on the log scale (``D(D+1)/2`` unconstrained numbers), so
:func:`pymc.sample` can use NUTS. Draws are exact (Bartlett decomposition,
:func:`sample_inverse_wishart`).

The module also holds small batched linear-algebra helpers written with elementwise PyTensor
operations (an unrolled Cholesky factorisation for a static, small dimension): a batch of
thousands of distinct ``2 x 2`` covariance matrices then costs a few fused elementwise loops
instead of thousands of LAPACK calls.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Continuous
from pymc.distributions.shape_utils import rv_size_is_none
from pymc.distributions.transforms import _default_transform
from pymc.logprob.transforms import Transform
from pytensor.tensor.basic import Alloc
from pytensor.tensor.random.op import RandomVariable

from pymc_crp.distributions.params import constant_value

__all__ = [
    "CholeskyLogDiagTransform",
    "InverseWishart",
    "InverseWishartRV",
    "UNROLL_MAX_DIM",
    "mvnormal_logpdf",
    "sample_inverse_wishart",
    "static_dim",
]

#: Largest dimension for which the elementwise (unrolled) Cholesky graph is used; above it
#: the batched LAPACK ops of PyTensor are used.
UNROLL_MAX_DIM = 6

_LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------------------------
# Batched small-matrix algebra in PyTensor (matrices in the last two axes)
# --------------------------------------------------------------------------------------------
def static_dim(x, name: str = "the matrix") -> int:
    """The static length of the last axis of ``x`` (raise if it is not known)."""
    d = pt.as_tensor_variable(x).type.shape[-1]
    if d is None:
        raise ValueError(f"the dimension of {name} (its last axis) must be known statically")
    return int(d)


def _unrolled_cholesky(cov, d: int):
    """Lower Cholesky factor of a batch of ``d x d`` matrices as nested lists of batch tensors.

    Uses the lower triangle of ``cov`` only. Returns ``(L, ok)`` where ``L[i][j]`` (``j <= i``)
    are tensors of the batch shape and ``ok`` is true where every pivot is positive. Pivots
    that are not positive are replaced by 1 so that the graph (and its gradient) stays finite;
    callers mask the result with ``ok``.
    """
    chol = [[None] * d for _ in range(d)]
    ok = None
    for j in range(d):
        pivot = cov[..., j, j]
        for k in range(j):
            pivot = pivot - chol[j][k] ** 2
        positive = pt.gt(pivot, 0.0)
        ok = positive if ok is None else pt.and_(ok, positive)
        chol[j][j] = pt.sqrt(pt.switch(positive, pivot, 1.0))
        for i in range(j + 1, d):
            entry = cov[..., i, j]
            for k in range(j):
                entry = entry - chol[i][k] * chol[j][k]
            chol[i][j] = entry / chol[j][j]
    return chol, ok


def _unrolled_forward_solve(chol, rhs: list, d: int) -> list:
    """Solve ``L z = b`` by forward substitution (``rhs`` a list of ``d`` batch tensors)."""
    z = []
    for i in range(d):
        acc = rhs[i]
        for k in range(i):
            acc = acc - chol[i][k] * z[k]
        z.append(acc / chol[i][i])
    return z


def mvnormal_logpdf(x, mean, cov):
    """Elementwise multivariate normal log-density over the batch axes (last axis: ``D``).

    ``x``, ``mean``: ``(..., D)``; ``cov``: ``(..., D, D)``, all broadcast. Returns ``(...)``,
    ``-inf`` where ``cov`` is not positive definite. For ``D <= UNROLL_MAX_DIM`` the Cholesky
    factorisation is unrolled into elementwise operations (fast for large batches of distinct
    matrices, differentiable); otherwise PyTensor's batched ``cholesky``/``solve_triangular``.
    """
    x, mean, cov = (pt.as_tensor_variable(v) for v in (x, mean, cov))
    d = static_dim(cov, "cov")
    diff = x - mean
    if d <= UNROLL_MAX_DIM:
        chol, ok = _unrolled_cholesky(cov, d)
        z = _unrolled_forward_solve(chol, [diff[..., i] for i in range(d)], d)
        quad = sum(zi**2 for zi in z)
        half_logdet = sum(pt.log(chol[j][j]) for j in range(d))
    else:
        cov, diff = pt.broadcast_arrays(cov, diff[..., None])
        diff = diff[..., 0]
        chol_full = pt.linalg.cholesky(cov, lower=True, on_error="nan")
        z = pt.linalg.solve_triangular(chol_full, diff[..., None], lower=True)[..., 0]
        quad = pt.sum(z**2, axis=-1)
        diag = pt.diagonal(chol_full, axis1=-2, axis2=-1)
        ok = pt.all(pt.gt(diag, 0.0), axis=-1)
        half_logdet = pt.sum(pt.log(pt.switch(pt.gt(diag, 0.0), diag, 1.0)), axis=-1)
        quad = pt.switch(ok, quad, 0.0)
    res = -0.5 * (d * _LOG_2PI + quad) - half_logdet
    return pt.switch(ok, res, -np.inf)


def _logdet_and_trace_inv(sigma, scale, d: int):
    """``log|Σ|``, ``log|Ω|``, ``tr(Ω Σ⁻¹)`` and a positive-definiteness flag, batched."""
    if d <= UNROLL_MAX_DIM:
        chol_s, ok_s = _unrolled_cholesky(sigma, d)
        logdet_s = 2.0 * sum(pt.log(chol_s[j][j]) for j in range(d))
        scale_value = _known_value(scale)
        if scale_value is not None:  # a constant scale: its terms in NumPy (no constant folding)
            sign, logdet = np.linalg.slogdet(scale_value)
            ok_o = pt.as_tensor(np.all(sign > 0))
            logdet_o = pt.as_tensor(np.where(sign > 0, logdet, 0.0))
            if scale_value.size == d * d:  # drop the length-1 batch axes PyTensor may add
                scale_value = scale_value.reshape(d, d)
            scale = pt.as_tensor(scale_value)
        else:
            chol_o, ok_o = _unrolled_cholesky(scale, d)
            logdet_o = 2.0 * sum(pt.log(chol_o[j][j]) for j in range(d))
        # W = L_Σ⁻¹ (lower triangular, by forward substitution on the identity), then
        # (Σ⁻¹)_ij = Σ_k W_ki W_kj and tr(Ω Σ⁻¹) = Σ_ij Ω_ij (Σ⁻¹)_ij.
        inv_chol = [[None] * d for _ in range(d)]
        for i in range(d):
            inv_chol[i][i] = 1.0 / chol_s[i][i]
            for j in range(i):
                acc = sum(chol_s[i][k] * inv_chol[k][j] for k in range(j, i))
                inv_chol[i][j] = -acc / chol_s[i][i]
        trace = 0.0
        for i in range(d):
            for j in range(d):
                lo = max(i, j)
                prec_ij = sum(inv_chol[k][i] * inv_chol[k][j] for k in range(lo, d))
                trace = trace + scale[..., i, j] * prec_ij
        return logdet_s, logdet_o, trace, pt.and_(ok_s, ok_o)
    sigma, scale = pt.broadcast_arrays(sigma, scale)
    chol_s = pt.linalg.cholesky(sigma, lower=True, on_error="nan")
    chol_o = pt.linalg.cholesky(scale, lower=True, on_error="nan")
    diag_s = pt.diagonal(chol_s, axis1=-2, axis2=-1)
    diag_o = pt.diagonal(chol_o, axis1=-2, axis2=-1)
    ok = pt.and_(pt.all(pt.gt(diag_s, 0.0), axis=-1), pt.all(pt.gt(diag_o, 0.0), axis=-1))
    logdet_s = 2.0 * pt.sum(pt.log(pt.switch(pt.gt(diag_s, 0.0), diag_s, 1.0)), axis=-1)
    logdet_o = 2.0 * pt.sum(pt.log(pt.switch(pt.gt(diag_o, 0.0), diag_o, 1.0)), axis=-1)
    solved = pt.linalg.solve_triangular(chol_s, chol_o, lower=True)
    trace = pt.switch(ok, pt.sum(solved**2, axis=(-2, -1)), 0.0)
    return logdet_s, logdet_o, trace, ok


def _known_value(x) -> np.ndarray | None:
    """The value of ``x`` as a float64 array if it depends on no input, else ``None``."""
    return constant_value(_strip_broadcast(pt.as_tensor_variable(x)), np.float64, fold=True)


def _strip_broadcast(x):
    """``x`` without the outer ``Alloc`` (broadcast to a batch shape) PyMC may wrap it in.

    The log-density formulas broadcast by themselves, so the result is unchanged; indexing
    ``x[..., i, j]`` of an ``Alloc`` sends PyTensor's pre-gradient rewrites (``rewrite_pregrad``
    in :meth:`pymc.Model.dlogp`) into a very long loop.
    """
    while x.owner is not None and isinstance(x.owner.op, Alloc):
        x = x.owner.inputs[0]
    return x


def _multigammaln(a, d: int):
    """``log Γ_D(a)`` elementwise in ``a`` (PyMC's version does not broadcast over a batch)."""
    out = d * (d - 1) / 4.0 * math.log(math.pi)
    for j in range(d):
        out = out + pt.gammaln(a - j / 2.0)
    return out


# --------------------------------------------------------------------------------------------
# Exact draws and a NumPy log-density
# --------------------------------------------------------------------------------------------
def sample_inverse_wishart(rng: np.random.Generator, nu, scale, size=None) -> np.ndarray:
    r"""Exact draws of ``IW(ν, Ω)`` by the Bartlett decomposition, batched.

    With ``Ω = U Uᵀ`` (Cholesky) and ``A`` lower triangular with ``A_jj² ~ χ²(ν - j)``
    (``j = 0..D-1``) and standard normal entries below the diagonal, ``A Aᵀ ~ W(ν, I)`` and

    .. math:: Σ = U A^{-T} A^{-1} U^{T} \sim \mathrm{IW}(ν, Ω).

    ``nu``: ``(...)``; ``scale``: ``(..., D, D)``; ``size`` (optional) the batch shape of the
    output. Requires ``ν > D - 1``.
    """
    nu = np.asarray(nu, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    d = scale.shape[-1]
    batch = np.broadcast_shapes(nu.shape, scale.shape[:-2])
    if size is not None:
        size = tuple(np.atleast_1d(size).astype(int)) if np.ndim(size) else (int(size),)
        batch = np.broadcast_shapes(batch, size)
    if np.any(nu <= d - 1):
        raise ValueError(f"inverse-Wishart degrees of freedom must exceed D - 1 = {d - 1}")
    nu_b = np.broadcast_to(nu, batch)
    chol = np.linalg.cholesky(np.broadcast_to(scale, (*batch, d, d)))
    bartlett = np.zeros((*batch, d, d))
    dof = nu_b[..., None] - np.arange(d)  # (..., D)
    idx = np.arange(d)
    bartlett[..., idx, idx] = np.sqrt(rng.chisquare(dof))
    rows, cols = np.tril_indices(d, -1)
    if rows.size:
        bartlett[..., rows, cols] = rng.standard_normal((*batch, rows.size))
    # B^T = A^{-1} U^T, Σ = (B^T)^T (B^T).
    b_t = np.linalg.solve(bartlett, np.swapaxes(chol, -1, -2))
    sigma = np.swapaxes(b_t, -1, -2) @ b_t
    return 0.5 * (sigma + np.swapaxes(sigma, -1, -2))


# --------------------------------------------------------------------------------------------
# Transform: Σ = L Lᵀ  <->  packed lower triangle of L with log diagonal
# --------------------------------------------------------------------------------------------
class CholeskyLogDiagTransform(Transform):
    r"""``Σ (D x D, SPD) <-> x ∈ R^{D(D+1)/2}``: the packed lower triangle of ``L = chol(Σ)``.

    The packing order is ``numpy.tril_indices(D)`` (row by row); diagonal entries are stored
    as ``log L_jj``. The log-Jacobian of the backward map ``x -> Σ`` (needed for the density of
    ``x``) is

    .. math:: \log\Big|\frac{∂\,\mathrm{vech}(Σ)}{∂x}\Big| = D \log 2
        + \sum_{j=1}^{D} (D - j + 2)\, x_{(j,j)},

    the factor ``2^D ∏ L_jj^{D-j+1}`` of ``L -> L Lᵀ`` times ``∏ L_jj`` of the exponential.
    """

    name = "cholesky_logdiag"
    ndim_supp = 2

    def __init__(self, d: int):
        d = int(d)
        if d < 1:
            raise ValueError(f"the matrix dimension must be positive, got {d}")
        self.d = d
        rows, cols = np.tril_indices(d)
        self.rows, self.cols = rows, cols
        self.is_diag = rows == cols
        n_packed = rows.size
        # x (packed) @ scatter -> flattened D x D lower-triangular matrix.
        scatter = np.zeros((n_packed, d * d))
        scatter[np.arange(n_packed), rows * d + cols] = 1.0
        self._scatter = scatter
        # log-Jacobian weights: (D - j + 2) on the diagonal entry of row j (1-based).
        weights = np.zeros(n_packed)
        weights[self.is_diag] = d - np.arange(1, d + 1) + 2.0
        self._jac_weights = weights

    # PyTensor ----------------------------------------------------------------------------
    def forward(self, value, *inputs):
        value = pt.as_tensor_variable(value)
        d = self.d
        if d <= UNROLL_MAX_DIM:
            chol, _ = _unrolled_cholesky(value, d)
            pairs = zip(self.rows, self.cols, strict=True)
            entries = [pt.log(chol[i][j]) if i == j else chol[i][j] for i, j in pairs]
            return pt.stack(entries, axis=-1)
        chol = pt.linalg.cholesky(value, lower=True)
        packed = chol[..., self.rows, self.cols]
        diag_pos = np.flatnonzero(self.is_diag)
        return pt.set_subtensor(packed[..., diag_pos], pt.log(packed[..., diag_pos]))

    def _lower(self, value):
        value = pt.as_tensor_variable(value)
        diag_mask = pt.as_tensor(self.is_diag)
        entries = pt.switch(diag_mask, pt.exp(value), value)
        flat = pt.dot(entries, pt.as_tensor(self._scatter))
        shape = pt.concatenate([value.shape[:-1], pt.as_tensor([self.d, self.d])])
        return pt.reshape(flat, shape, ndim=value.ndim + 1)

    def backward(self, value, *inputs):
        value = pt.as_tensor_variable(value)
        d = self.d
        if d <= UNROLL_MAX_DIM:  # elementwise Σ_ij = Σ_k L_ik L_jk: small, fusable graphs
            lower = [[None] * d for _ in range(d)]
            for pos, (i, j) in enumerate(zip(self.rows, self.cols, strict=True)):
                entry = value[..., pos]
                lower[i][j] = pt.exp(entry) if i == j else entry
            rows = []
            for i in range(d):
                row = []
                for j in range(d):
                    a, b = max(i, j), min(i, j)
                    row.append(sum(lower[a][k] * lower[b][k] for k in range(b + 1)))
                rows.append(pt.stack(row, axis=-1))
            return pt.stack(rows, axis=-2)
        lower = self._lower(value)
        return pt.matmul(lower, pt.swapaxes(lower, -1, -2))

    def log_jac_det(self, value, *inputs):
        value = pt.as_tensor_variable(value)
        return self.d * math.log(2.0) + pt.dot(value, pt.as_tensor(self._jac_weights))

    # NumPy (used by the Gibbs steps to write their draws on the sampler's scale) ----------
    def forward_numpy(self, sigma: np.ndarray) -> np.ndarray:
        chol = np.linalg.cholesky(np.asarray(sigma, dtype=np.float64))
        packed = chol[..., self.rows, self.cols]
        packed[..., self.is_diag] = np.log(packed[..., self.is_diag])
        return packed

    def __eq__(self, other):
        return isinstance(other, CholeskyLogDiagTransform) and other.d == self.d

    def __hash__(self):
        return hash((type(self), self.d))


# --------------------------------------------------------------------------------------------
# RandomVariable and Distribution
# --------------------------------------------------------------------------------------------
class InverseWishartRV(RandomVariable):
    """Random variable of the inverse-Wishart distribution (see :class:`InverseWishart`)."""

    name = "inverse_wishart"
    signature = "(),(d,d)->(d,d)"
    dtype = "floatX"
    _print_name = ("InverseWishart", "\\operatorname{InverseWishart}")

    def make_node(self, rng, size, nu, scale):
        nu = pt.as_tensor_variable(nu).astype(pytensor.config.floatX)
        scale = pt.as_tensor_variable(scale).astype(pytensor.config.floatX)
        return super().make_node(rng, size, nu, scale)

    @classmethod
    def rng_fn(cls, rng, nu, scale, size):
        return sample_inverse_wishart(rng, nu, scale, size=size)


inverse_wishart = InverseWishartRV()


class InverseWishart(Continuous):
    r"""Inverse-Wishart distribution over symmetric positive definite matrices.

    .. math::

        f(Σ \mid ν, Ω) = \frac{|Ω|^{ν/2}}{2^{νD/2}\,Γ_D(ν/2)}\,|Σ|^{-(ν+D+1)/2}
            \exp\!\Big(-\frac12 \operatorname{tr}(Ω Σ^{-1})\Big)

    ========  ======================================================
    Support   ``D x D`` symmetric positive definite matrices
    Mean      ``Ω / (ν - D - 1)`` for ``ν > D + 1``
    Mode      ``Ω / (ν + D + 1)``
    ========  ======================================================

    Same parameterisation as :data:`scipy.stats.invwishart` (``df=ν``, ``scale=Ω``). Batches
    over leading axes (e.g. ``shape=(K, D, D)`` for ``K`` cluster covariances). The default
    transform (:class:`CholeskyLogDiagTransform`) makes the variable unconstrained, so NUTS
    can sample it; the conjugate Gibbs steps of :mod:`pymc_crp.step_methods.normal_gibbs`
    draw it exactly in normal mixtures.

    Parameters
    ----------
    nu : tensor_like of float
        Degrees of freedom, ``ν > D - 1``.
    scale : tensor_like of float
        Scale matrix ``Ω`` (``D x D``, symmetric positive definite); ``D`` must be static.
    """

    rv_type = InverseWishartRV
    rv_op = inverse_wishart

    @classmethod
    def dist(cls, nu, scale, **kwargs):
        scale = pt.as_tensor_variable(scale)
        if scale.ndim < 2:
            raise ValueError(f"scale must be a (..., D, D) matrix, got {scale.ndim} dimensions")
        d = static_dim(scale, "scale")
        if scale.type.shape[-2] not in (None, d):
            raise ValueError(f"scale must be a square (..., D, D) matrix, got {scale.type.shape}")
        nu_value, scale_value = _known_value(nu), _known_value(scale)
        if nu_value is not None:
            if not np.all(np.isfinite(nu_value)):
                raise ValueError("nu must be finite")
            if np.any(nu_value <= d - 1):
                raise ValueError(f"nu must exceed D - 1 = {d - 1}, got {nu_value}")
        if scale_value is not None:
            if not np.all(np.isfinite(scale_value)):
                raise ValueError("scale must be finite")
            tol = 1e-8 * (1.0 + np.abs(scale_value).max())
            if np.any(np.abs(scale_value - np.swapaxes(scale_value, -1, -2)) > tol):
                raise ValueError("scale must be a symmetric matrix")
            if np.any(np.linalg.eigvalsh(scale_value).min(axis=-1) <= 0):
                raise ValueError("scale must be positive definite")
        return super().dist([nu, scale], **kwargs)

    def support_point(rv, size, nu, scale):
        """The mode ``Ω / (ν + D + 1)``."""
        d = scale.shape[-1]
        mode = scale / (nu + d + 1.0)[..., None, None]
        if not rv_size_is_none(size):
            mode = pt.broadcast_to(mode, pt.concatenate([size, [d, d]]))
        return mode

    def logp(value, nu, scale):
        d = static_dim(value, "the inverse-Wishart value")
        scale = _strip_broadcast(scale)
        logdet_s, logdet_o, trace, ok = _logdet_and_trace_inv(value, scale, d)
        res = (
            0.5 * nu * logdet_o
            - 0.5 * nu * d * math.log(2.0)
            - _multigammaln(0.5 * nu, d)
            - 0.5 * (nu + d + 1.0) * logdet_s
            - 0.5 * trace
        )
        symmetric = pt.all(
            pt.le(pt.abs(value - pt.swapaxes(value, -1, -2)), 1e-8 * (1.0 + pt.abs(value))),
            axis=(-2, -1),
        )
        res = pt.switch(pt.and_(ok, symmetric), res, -np.inf)
        return check_parameters(res, pt.gt(nu, d - 1.0), msg="nu > D - 1")


@_default_transform.register(InverseWishartRV)
def _inverse_wishart_default_transform(op, rv):
    return CholeskyLogDiagTransform(static_dim(rv, rv.name or "InverseWishart"))
