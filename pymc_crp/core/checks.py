"""Checks of scalar arguments shared by the package's public functions."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

__all__ = ["integer_at_least", "nonnegative_number", "positive_int"]


def integer_at_least(
    value, name: str, minimum: int = 0, *, type_error: type[Exception] = TypeError
) -> int:
    """``value`` as a Python ``int >= minimum``, or an error naming the argument ``name``.

    Raises ``type_error`` (``TypeError`` unless a caller documents ``ValueError``) for
    non-integers, booleans included, and ``ValueError`` for integers below ``minimum``.
    """
    what = {0: "a non-negative integer", 1: "a positive integer"}.get(
        minimum, f"an integer >= {minimum}"
    )
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer):
        raise type_error(f"{name} must be {what}, got {value!r}")
    if int(value) < minimum:
        bound = "" if minimum > 1 else f" (>= {minimum})"  # the others name it in ``what``
        raise ValueError(f"{name} must be {what}{bound}, got {value}")
    return int(value)


def positive_int(value, name: str, *, type_error: type[Exception] = TypeError) -> int:
    """``value`` as a Python ``int >= 1`` (:func:`integer_at_least` with ``minimum=1``)."""
    return integer_at_least(value, name, 1, type_error=type_error)


def nonnegative_number(value, name: str) -> float:
    """``value`` as a finite Python ``float >= 0``, or a ``TypeError`` (not a real number,
    booleans included) or ``ValueError`` naming the argument ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise TypeError(f"{name} must be a finite non-negative number, got {value!r}")
    if not 0.0 <= float(value) < np.inf:
        raise ValueError(f"{name} must be a finite non-negative number, got {value}")
    return float(value)
