"""The equicorrelated quadratic form and density stay accurate as ``rho -> 1``.

Oracle: the quadratic form in exact rational arithmetic (``fractions``) from ``Σ_ρ⁻¹``
written out as in the textbook, never from the package's formula.
"""

import math
from fractions import Fraction

import numpy as np
import pytensor.tensor as pt
import pytest

from pymc_crp.core.utility_hierarchy import equicorrelated_quadratic
from pymc_crp.distributions.equicorrelated_normal import equicorrelated_logpdf


def exact_quadratic(x, rho):
    """``xᵀ Σ_ρ⁻¹ x`` with ``Σ_ρ⁻¹ = (I - ρ/(1+(K-1)ρ) 1 1ᵀ)/(1-ρ)``, exactly (the floats
    ``x`` and ``ρ`` as rationals), rounded once at the end."""
    k = len(x)
    rho = Fraction(float(rho))
    c = rho / (1 + (k - 1) * rho)
    xs = [Fraction(float(v)) for v in x]
    total = sum(xs)
    return float((sum(v * v for v in xs) - c * total * total) / (1 - rho))


@pytest.mark.parametrize("exponent", [2, 6, 9, 12, 15])
def test_quadratic_is_accurate_near_rho_one(exponent):
    rng = np.random.default_rng(exponent)
    one_minus_rho = 10.0**-exponent
    rho = 1.0 - one_minus_rho
    # Rows as the prior draws them: a common value plus deviations of size sqrt(1 - rho).
    x = rng.normal(size=(6, 3)) * np.sqrt(one_minus_rho) + 3.0 * rng.normal(size=(6, 1))
    got = equicorrelated_quadratic(x, rho)
    # The oracle uses the rho that the float carries (1 - rho is not exactly 10^-e).
    exact = [exact_quadratic(row, rho) for row in x]
    np.testing.assert_allclose(got, exact, rtol=1e-7)


def test_logpdf_numpy_and_pytensor_agree_near_rho_one():
    rng = np.random.default_rng(5)
    rho = 1.0 - 2.0**-50
    x = rng.normal(size=(4, 3)) * 2.0**-25 + rng.normal(size=(4, 1))
    mu = np.full(3, 0.25)
    value = pt.dmatrix("value")
    symbolic = equicorrelated_logpdf(value, mu, rho, 0.7).eval({value: x})
    numeric = equicorrelated_logpdf(x, mu, rho, 0.7)
    np.testing.assert_allclose(symbolic, numeric, rtol=1e-12)
    eps = float(1 - Fraction(rho))  # 2^-50 exactly
    for row, got in zip(x, numeric, strict=True):
        q = exact_quadratic(row - mu, rho) / 0.7**2  # the float differences the package sees
        logdet = 2 * math.log(eps) + math.log(1 + 2 * rho) + 6 * math.log(0.7)
        exact = -(3 * math.log(2 * math.pi) + logdet + q) / 2
        assert abs(got - exact) < 1e-6 * max(1.0, abs(exact))


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 11])
def test_last_axis_mean_has_numpy_bits(k):
    from pymc_crp.core.utility_hierarchy import last_axis_mean

    rng = np.random.default_rng(k)
    for shape in ((5, k), (3, 17, k), (k,)):
        x = rng.normal(size=shape) * np.exp(4 * rng.normal(size=shape))
        expected = x.mean(axis=-1, keepdims=True)
        got = last_axis_mean(x)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    zeros = np.full((2, k), -0.0)
    np.testing.assert_array_equal(
        np.signbit(last_axis_mean(zeros)), np.signbit(zeros.mean(-1, keepdims=True))
    )
