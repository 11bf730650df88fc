"""The parameters of the package's random variables: by name, and their constant values.

A step method that reads a variable's parameters asks for a record instead of unpacking the
node's inputs by position (``rng, size, *params``)::

    params = PartialOrderListsParams.from_rv(lists)
    params.utilities, params.labels, params.noise

Each record names the parameters of one ``RandomVariable`` op in the order of its signature.
The distributions check parameters that are known when the model is built
(:func:`constant_value`) and leave symbolic ones to the log-density.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.variable import TensorConstant

__all__ = ["RVParams", "constant_value"]


def constant_value(x: Any, dtype=None, *, fold: bool = False) -> np.ndarray | None:
    """The value of the parameter ``x`` if it is known when the model is built, else ``None``.

    NumPy and Python values are returned as arrays (of ``dtype``), PyTensor constants as their
    data. Other PyTensor variables give ``None``; with ``fold=True`` a graph that depends on no
    input (no random variable, shared variable or free input) is evaluated instead.
    """
    if isinstance(x, TensorConstant):
        return np.asarray(x.data, dtype=dtype)
    if isinstance(x, Variable) or hasattr(x, "owner") or hasattr(x, "eval"):
        if not fold or any(v.owner is None and not isinstance(v, Constant) for v in ancestors([x])):
            return None
        return np.asarray(x.eval(), dtype=dtype)
    return np.asarray(x, dtype=dtype)


@dataclass(frozen=True)
class RVParams:
    """Base of the records: ``from_rv`` checks the op and reads its distribution parameters."""

    op_type: ClassVar[type]

    @classmethod
    def from_rv(cls, rv: Any):
        """The named parameters of the random variable ``rv`` (``TypeError`` for another op)."""
        op = getattr(getattr(rv, "owner", None), "op", None)
        if not isinstance(op, cls.op_type):
            raise TypeError(f"{rv} is not a {cls.op_type.__name__} variable")
        return cls(*op.dist_params(rv.owner))
