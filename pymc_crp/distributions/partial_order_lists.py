r"""Ranked lists as noisy linear extensions of latent partial orders, as a PyMC distribution.

Each observation is a list ``Y = (Y_1, …, Y_m)`` (best first) over its own subset ``S`` of
items ``0..M-1``. Slot ``a`` owns utilities ``η^{(a)}`` (``M × K``) and the partial order
``j ≻ j'`` iff ``η^{(a)}_{j,k} > η^{(a)}_{j',k}`` for every ``k``; list ``i`` follows the order
of slot ``labels[i]``. Top-down queue-jumping with error probability ``p``:

.. math::

    p(Y \mid h, p) = \prod_{j=1}^{m} \Big[\frac{p}{m-j+1} + (1-p)\,
        1\{Y_j \text{ maximal in } h[Y_{j:m}]\}\,
        \frac{C(h[Y_{j+1:m}])}{C(h[Y_{j:m}])}\Big]

(bottom-up is the mirror image), with ``C`` the number of linear extensions. The likelihood
is piecewise constant in the utilities: its gradient with respect to them is left undefined,
so PyMC never assigns NUTS to them; the gradient with respect to ``p`` is provided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.op import Op
from pytensor.graph.replace import _vectorize_node
from pytensor.tensor.random.op import RandomVariable

from pymc_crp.core.lists import (
    _item_sets,
    encode_lists,
    list_likelihood_cache,
    order_words,
)
from pymc_crp.core.posets import DEFAULT_MAX_STATES, partial_order_from_utilities, sample_list
from pymc_crp.distributions.params import RVParams
from pymc_crp.roles import register_model

__all__ = [
    "PartialOrderLists",
    "PartialOrderListsLogLikelihood",
    "PartialOrderListsParams",
    "PartialOrderListsRV",
]

DIRECTIONS = ("top-down", "bottom-up")
_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


# --------------------------------------------------------------------------------------------
# Log-likelihood Op
# --------------------------------------------------------------------------------------------
class PartialOrderListsLogLikelihood(Op):
    """Per-list log-likelihood ``log p(Y_i | h^{(labels[i])}, p)``.

    Inputs: utilities ``(L, M, K)``, labels (int, any shape ``(..., n)``: batches of label
    vectors give batches of log-likelihoods), ``p`` (scalar), padded lists ``(n, s)``.
    Output: float64 with the shape of ``labels``. With ``output="dp"`` the op returns
    ``d log p(Y_i) / dp`` instead (used for the gradient). Values come through the
    process-wide :class:`ListLikelihoodCache` (exact: the same bits as without it).
    """

    __props__ = ("top_down", "output", "max_states")

    def __init__(self, top_down: bool = True, output: str = "loglik", max_states=None):
        self.top_down = bool(top_down)
        self.output = output
        self.max_states = int(DEFAULT_MAX_STATES if max_states is None else max_states)

    def make_node(self, utilities, labels, p, lists):
        utilities = pt.as_tensor_variable(utilities, dtype="float64")
        labels = pt.as_tensor_variable(labels)
        if labels.dtype not in _INTEGER_DTYPES:
            labels = pt.cast(labels, "int64")
        p = pt.as_tensor_variable(p, dtype="float64")
        lists = pt.as_tensor_variable(lists, dtype="int64")
        if utilities.ndim != 3 or p.ndim != 0 or lists.ndim != 2 or labels.ndim < 1:
            raise TypeError("expected utilities (L, M, K), labels (..., n), p scalar, lists (n, s)")
        out = pt.tensor(dtype="float64", shape=labels.type.shape)
        return Apply(self, [utilities, labels, p, lists], [out])

    def perform(self, node, inputs, output_storage):
        utilities, labels, p, lists = inputs
        batch_shape = labels.shape
        if not 0.0 <= p <= 1.0:
            output_storage[0][0] = np.full(batch_shape, -np.inf if self.output == "loglik" else 0.0)
            return
        if not np.all(np.isfinite(utilities)):
            raise ValueError(
                "utilities must be finite (the partial order of NaN or infinite utilities is "
                "undefined)"
            )
        if labels.ndim == 0 or labels.shape[-1] != lists.shape[0]:
            raise ValueError(
                f"labels must give one slot per list: {lists.shape[0]} lists, got labels of "
                f"shape {labels.shape}"
            )
        cache = list_likelihood_cache()
        list_set = cache.list_set(lists, self.top_down)
        flat_labels = labels.reshape(-1, lists.shape[0])
        if flat_labels.size and (flat_labels.min() < 0 or flat_labels.max() >= len(utilities)):
            raise ValueError(f"labels must lie in 0..{len(utilities) - 1}")
        words = order_words(utilities, self.top_down, slots=flat_labels)  # the used slots only
        out = np.empty(flat_labels.shape)
        for b, row in enumerate(flat_labels):  # batches of label vectors: one per slot
            res = cache.log_likelihoods(
                list_set,
                words,
                row,
                float(p),
                want_grad=self.output == "dp",
                max_states=self.max_states,
            )
            out[b] = res[1] if self.output == "dp" else res
        output_storage[0][0] = out.reshape(batch_shape)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[1]]

    def connection_pattern(self, node):
        return [[True], [False], [True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        utilities, labels, p, lists = inputs
        (g_out,) = output_grads
        if self.output != "loglik":
            raise NotImplementedError("second derivatives in p are not implemented")
        dp_op = PartialOrderListsLogLikelihood(self.top_down, "dp", self.max_states)
        g_p = pt.sum(g_out * dp_op(utilities, labels, p, lists))
        return [
            grad_undefined(
                self,
                0,
                utilities,
                "the list likelihood is piecewise constant in the utilities (use Metropolis)",
            ),
            DisconnectedType()(),
            g_p,
            DisconnectedType()(),
        ]


@_vectorize_node.register(PartialOrderListsLogLikelihood)
def _vectorize_list_loglik(op, node, utilities, labels, p, lists):
    """Batches of label vectors are native; other batched inputs are not supported."""
    old_u, _, old_p, old_lists = node.inputs
    if utilities.ndim != old_u.ndim or p.ndim != 0 or lists.ndim != old_lists.ndim:
        raise NotImplementedError("only the labels of a list likelihood can be batched")
    return op.make_node(utilities, labels, p, lists)


# --------------------------------------------------------------------------------------------
# Random variable and distribution
# --------------------------------------------------------------------------------------------
class PartialOrderListsRV(RandomVariable):
    """Random lists over given item sets from the queue-jumping model."""

    name = "partial_order_lists"
    signature = "(l,m,k),(n),(),(n,s),()->(n,s)"
    dtype = "int64"
    _print_name = ("PartialOrderLists", "\\operatorname{PartialOrderLists}")

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return tuple(dist_params[3].shape)

    def rng_fn(self, rng, utilities, labels, p, item_sets, top_down, size):
        if size is not None and tuple(size) not in ((), tuple(item_sets.shape)):
            raise NotImplementedError("PartialOrderLists does not support batched draws")
        closed = partial_order_from_utilities(utilities)
        direction = "top-down" if top_down else "bottom-up"
        out = np.full(item_sets.shape, -1, dtype=np.int64)
        for i, row in enumerate(item_sets):
            items = row[row >= 0]
            out[i, : items.size] = sample_list(closed[labels[i]], items, p, rng, direction)
        return out


@dataclass(frozen=True)
class PartialOrderListsParams(RVParams):
    """The parameters of a :class:`PartialOrderLists` variable: slot ``utilities`` ``(L, M,
    K)``, the ``labels`` of the lists, the error probability ``noise`` (``p``), the padded
    ``item_sets`` and the direction flag ``top_down``."""

    op_type: ClassVar[type] = PartialOrderListsRV

    utilities: Any
    labels: Any
    noise: Any
    item_sets: Any
    top_down: Any


class PartialOrderLists(Discrete):
    r"""Ranked lists as noisy random linear extensions of latent partial orders.

    List ``i`` is a queue-jumping draw (docs/mathematics.md, *Partial orders*) from the
    partial order of slot
    ``labels[i]``: ``j ≻ j'`` iff ``utilities[a, j, k] > utilities[a, j', k]`` for every
    latent dimension ``k``. Pass ``U`` directly (the dominance order is invariant under the
    increasing Gumbel transform) or ``η = G⁻¹(Φ(U)) + xβ`` when there are item covariates.

    ========  ==============================================================
    Support   lists of distinct items in ``0..M-1`` over the observed subsets
    Value     int64 array ``(n_lists, max_len)``, padded with ``-1``
    ========  ==============================================================

    Parameters
    ----------
    utilities : tensor_like, shape (M, K) or (L, M, K)
        One order's utilities, or a stack of slots selected per list by ``labels``.
    labels : tensor_like of int, shape (n_lists,), optional
        Slot of each list (required with a stack of more than one slot).
    noise : tensor_like of float
        Queue-jumping probability ``p`` in ``[0, 1]``. Differentiable.
    direction : {"top-down", "bottom-up"}
    observed : list of lists or padded int array
        The lists (best first); each list's item set is taken as given. Not a ``pm.Data``
        container: the steps prepare the lists once, so other lists need a new model.
    items : list of lists, optional
        Item sets of the lists when there is no ``observed`` (for prior simulation).
    n_items : int, optional
        ``M``; default from the utilities' shape when static.

    References
    ----------
    .. [1] Nicholls, G. K., Lee, J. E., Karn, N., Johnson, D., Huang, R. and Muir-Watt, A.
       (2025). Bayesian inference for partial orders from random linear extensions: power
       relations from 12th century Royal Acta. *Ann. Appl. Stat.* 19(2).
    """

    rv_type = PartialOrderListsRV
    rv_op = PartialOrderListsRV()

    def __new__(
        cls,
        name,
        utilities,
        labels=None,
        noise=0.0,
        *,
        direction: str = "top-down",
        items=None,
        n_items: int | None = None,
        **kwargs,
    ):
        observed = kwargs.get("observed")
        utilities = pt.as_tensor_variable(utilities)
        n_items = _n_items(utilities, n_items)
        if isinstance(observed, Variable):
            raise TypeError(
                "observed must hold the lists themselves (a list of integer sequences or a "
                "padded array), not a PyTensor variable or pm.Data container (got "
                f"{type(observed).__name__}): the list-likelihood steps prepare the lists once, "
                "when pm.sample builds them; to fit other lists, build the model again"
            )
        if observed is not None:
            kwargs["observed"] = encode_lists(observed, n_items, name="observed")
            item_sets = _item_sets(kwargs["observed"])
        elif items is not None:
            item_sets = _item_sets(encode_lists(items, n_items, name="items"))
        else:
            raise TypeError("PartialOrderLists needs observed lists or their item sets (items=)")
        register_model(pm.modelcontext(None))
        return super().__new__(
            cls, name, utilities, labels, noise, item_sets=item_sets, direction=direction, **kwargs
        )

    @classmethod
    def dist(cls, utilities, labels=None, noise=0.0, *, item_sets, direction="top-down", **kw):
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        utilities = pt.as_tensor_variable(utilities)
        if utilities.ndim == 2:
            utilities = utilities[None]
        if utilities.ndim != 3:
            raise ValueError(
                f"utilities must have shape (M, K) or (L, M, K), got {utilities.ndim} dims"
            )
        item_sets = np.asarray(item_sets, dtype=np.int64)
        if labels is None:
            if utilities.type.shape[0] not in (1, None):
                raise ValueError("labels are required with a stack of several slots")
            labels = np.zeros(item_sets.shape[0], dtype=np.int64)
        labels = pt.as_tensor_variable(labels)
        if labels.dtype not in _INTEGER_DTYPES:
            raise TypeError(f"labels must be integers, got dtype {labels.dtype}")
        noise = pt.cast(pt.as_tensor_variable(noise), "float64")
        top_down = np.int64(direction == "top-down")
        return super().dist([utilities, labels, noise, item_sets, top_down], **kw)

    def support_point(rv, size, utilities, labels, noise, item_sets, top_down):
        return item_sets

    def logp(value, utilities, labels, noise, item_sets, top_down):
        top_down = bool(pt.get_underlying_scalar_constant_value(top_down))
        loglik = PartialOrderListsLogLikelihood(top_down=top_down)(
            pt.cast(utilities, "float64"), labels, noise, value
        )
        return check_parameters(loglik, pt.ge(noise, 0.0), pt.le(noise, 1.0), msg="0 <= noise <= 1")


def _n_items(utilities, n_items):
    static = utilities.type.shape[-2] if utilities.ndim >= 2 else None
    if n_items is None:
        if static is None:
            raise TypeError("PartialOrderLists needs n_items when the utilities' shape is unknown")
        return int(static)
    if static is not None and static != n_items:
        raise ValueError(f"n_items={n_items} does not match the utilities' {static} items")
    return int(n_items)
