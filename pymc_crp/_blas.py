"""Give PyTensor's C backend a BLAS when pip installed none: the ``scipy-openblas32`` wheel.

PyTensor looks for a system BLAS the first time it compiles a BLAS operation
(``config.blas__ldflags``); in a plain ``pip`` environment it finds none, warns "PyTensor could
not link to a BLAS installation" and runs dot products through slower fallbacks. The
``scipy-openblas32`` wheel (a dependency on Linux) ships OpenBLAS with 32-bit integers, the
interface PyTensor calls, but with every symbol prefixed ``scipy_``; PyTensor's C code calls the
Fortran names (``dgemm_``), so the flags built here map each name PyTensor declares to the
prefixed one with ``-D`` macros, plus ``-L``/``-l``/rpath for the library.

Only the *default* of ``blas__ldflags`` is replaced, and it still runs PyTensor's own search
first: a value the user set (``PYTENSOR_FLAGS``, ``.pytensorrc`` or in code, even empty) and
a BLAS PyTensor finds itself (conda, system OpenBLAS/MKL) win. The wheel is used only when that
search finds nothing and a test program linked with these flags computes a dot product
correctly; otherwise PyTensor's warning is shown as before.
"""

from __future__ import annotations

import ctypes
import inspect
import re
import shlex
import sys
import warnings

_FORTRAN_NAME = re.compile(r"\b([a-z][a-z0-9]*_)\s*\(")


def scipy_openblas_ldflags() -> list[str]:
    """Compiler flags linking PyTensor's BLAS calls to ``scipy-openblas32``; [] if unusable."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        import scipy_openblas32
        from pytensor.tensor import blas_headers

        lib_dir = scipy_openblas32.get_lib_dir()
        lib = scipy_openblas32.get_library()
        dll = ctypes.CDLL(f"{lib_dir}/lib{lib}.so")
        names = sorted(set(_FORTRAN_NAME.findall(inspect.getsource(blas_headers))))
    except Exception:  # wheel missing or not loadable, PyTensor internals changed
        return []
    macros = [f"-D{name}=scipy_{name}" for name in names if hasattr(dll, f"scipy_{name}")]
    if "-Ddgemm_=scipy_dgemm_" not in macros:
        return []
    return [f"-L{lib_dir}", f"-l{lib}", f"-Wl,-rpath,{lib_dir}", *macros]


def configure_pytensor_blas() -> None:
    """Make ``scipy-openblas32`` the fallback of PyTensor's default ``blas__ldflags``."""
    try:
        from pytensor import config
        from pytensor.link.c import cmodule

        param = config._config_var_dict["blas__ldflags"]
    except Exception:
        return
    # ``val`` exists once the user has set the flag or PyTensor has already resolved it.
    if hasattr(param, "val") or not callable(getattr(param, "_default", None)):
        return
    pytensor_default = param._default
    if getattr(pytensor_default, "_pymc_crp", False):
        return

    def default_blas_ldflags() -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            flags = pytensor_default()
        if not flags and config.cxx:
            ours = scipy_openblas_ldflags()
            if ours and cmodule.try_blas_flag(ours):
                flags = shlex.join(ours)
                caught = [w for w in caught if "could not link to a BLAS" not in str(w.message)]
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return flags

    default_blas_ldflags._pymc_crp = True
    param._default = default_blas_ldflags  # read-only property ``default``
