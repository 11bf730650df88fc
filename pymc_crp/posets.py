"""Partial orders, linear extensions and the queue-jumping list likelihood.

The public face of :mod:`pymc_crp.core.posets` (NumPy and numba only), kept at
``pymc_crp.posets`` for users: every name of its ``__all__`` is importable from here.
"""

from pymc_crp.core.posets import *  # noqa: F403
from pymc_crp.core.posets import __all__  # noqa: F401
