"""PyTensor's BLAS in a pip environment: ``scipy-openblas32`` when PyTensor finds none itself.

* The flags built for the wheel link, and PyTensor's C BLAS Ops (``CGemv``, ``CGer``, ``Gemm``)
  compiled with them agree with NumPy.
* A ``blas__ldflags`` the user set (here: empty) is left alone, without PyTensor's warning.
"""

import os
import subprocess
import sys

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.link.c import cmodule

import pymc_crp  # noqa: F401  (configures the default of blas__ldflags)
from pymc_crp._blas import scipy_openblas_ldflags

needs_wheel = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not pytensor.config.cxx,
    reason="scipy-openblas32 is a dependency on Linux only; PyTensor's C backend needs a compiler",
)


@needs_wheel
def test_scipy_openblas_flags_link_and_blas_ops_agree_with_numpy():
    flags = scipy_openblas_ldflags()
    assert "-Ddgemm_=scipy_dgemm_" in flags
    assert cmodule.try_blas_flag(flags)
    # PyTensor's own BLAS if it found one, else the wheel: never empty here.
    assert pytensor.config.blas__ldflags
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(7, 5)), rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    x, y = rng.normal(size=5), rng.normal(size=7)
    A, B, C = pt.dmatrices("A", "B", "C")
    u, v = pt.dvectors("u", "v")
    gemm = pytensor.function([C, A, B], C + 0.5 * (A @ B))
    gemv = pytensor.function([A, u], A @ u)
    ger = pytensor.function([v, u], pt.outer(v, u))
    ops = {type(node.op).__name__ for f in (gemm, gemv, ger) for node in f.maker.fgraph.toposort()}
    if pytensor.config.mode not in ("NUMBA", "JAX", "PYTORCH"):
        assert {"Gemm", "CGemv", "CGer"} <= ops
    np.testing.assert_allclose(gemm(c, a, b), c + 0.5 * (a @ b))
    np.testing.assert_allclose(gemv(a, x), a @ x)
    np.testing.assert_allclose(ger(y, x), np.outer(y, x))


def test_user_setting_of_blas_ldflags_wins():
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    env = dict(os.environ, PYTENSOR_FLAGS=",".join(filter(None, [flags, "blas__ldflags="])))
    code = "import pymc_crp, pytensor; print(repr(pytensor.config.blas__ldflags))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "''"
    assert "could not link to a BLAS" not in out.stderr
