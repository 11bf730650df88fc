"""Checks of scalar arguments shared by the package's public functions."""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["positive_int"]


def positive_int(value, name: str, *, type_error: type[Exception] = TypeError) -> int:
    """``value`` as a Python ``int >= 1``, or an error naming the argument ``name``.

    Raises ``type_error`` (``TypeError`` unless a caller documents ``ValueError``) for
    non-integers, booleans included, and ``ValueError`` for integers below 1.
    """
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer):
        raise type_error(f"{name} must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value}")
    return int(value)
