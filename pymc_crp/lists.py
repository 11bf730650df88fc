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

import hashlib
import weakref
from collections import OrderedDict

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.replace import _vectorize_node
from pytensor.tensor.random.op import RandomVariable

from pymc_crp import _linext
from pymc_crp._linext_tables import (
    float_binomials,
    loglik_from_ratios,
    utility_relation_words,
)
from pymc_crp.posets import (
    DEFAULT_MAX_STATES,
    _limit_error,
    sample_list,
    validate_rankings,
)
from pymc_crp.registry import register_model

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "ListLikelihoodCache",
    "ListSet",
    "PartialOrderLists",
    "PartialOrderListsLogLikelihood",
    "encode_lists",
    "decode_lists",
    "dominance_orders",
    "list_likelihood_cache",
    "order_words",
]

DIRECTIONS = ("top-down", "bottom-up")
_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def encode_lists(lists, n_items: int, name: str = "lists") -> np.ndarray:
    """Validate lists of item indices and pad them into an int64 array with ``-1``.

    ``lists`` is a sequence of integer sequences (best first) or an already padded integer
    array. Raises ``ValueError`` naming ``name`` for repeated items, items outside
    ``0..n_items-1``, empty lists or non-integer values.
    """
    padded, lengths = validate_rankings(lists, n_items, name=name)
    out = np.full(padded.shape, -1, dtype=np.int64)
    for i, m in enumerate(lengths):
        out[i, :m] = padded[i, :m]
    return out


def decode_lists(padded) -> list[list[int]]:
    """Padded lists back to Python lists (dropping the ``-1`` padding)."""
    return [[int(x) for x in row if x >= 0] for row in np.asarray(padded)]


def dominance_orders(eta: np.ndarray) -> np.ndarray:
    """``closed[a, i, j] = all_k eta[a, i, k] > eta[a, j, k]`` (transitively closed)."""
    eta = np.asarray(eta, dtype=np.float64)
    return np.all(eta[..., :, None, :] > eta[..., None, :, :], axis=-1)


def _item_sets(padded: np.ndarray) -> np.ndarray:
    """The (sorted) item set of each padded list, padded the same way."""
    sets = np.sort(np.where(padded >= 0, padded, np.iinfo(np.int64).max), axis=1)
    return np.where(sets == np.iinfo(np.int64).max, -1, sets)


# --------------------------------------------------------------------------------------------
# Cache of count ratios
# --------------------------------------------------------------------------------------------
DEFAULT_CACHE_BYTES = 64 * 2**20
"""Default bound on the memory of the cached count ratios (64 MiB)."""

_ENTRY_OVERHEAD = 256  # bytes charged per entry for its key, dict slot and array headers


def order_words(utilities, top_down: bool = True) -> np.ndarray:
    """Bitset form ``(L, 4, M)`` of the dominance orders of ``utilities`` ``(L, M, K)``, as
    the list kernels read them (the dual orders for bottom-up lists)."""
    return utility_relation_words(utilities, dual=not top_down)


class ListSet:
    """Lists prepared for :class:`ListLikelihoodCache`: in step order, without repeats.

    Row ``i`` of the padded ``lists`` (``-1`` after its length) is read best first
    (``top_down``) or backwards; ``steps`` holds the distinct rows so read, sorted (lists
    sharing their first steps are neighbours), ``inverse[i]`` the row of list ``i`` and
    ``token`` a digest of the content (lists with equal content share cache entries).
    """

    def __init__(self, lists, top_down: bool = True):
        lists = np.asarray(lists, dtype=np.int64)
        if lists.ndim != 2:
            raise ValueError(f"lists must be a padded 2-D array, got shape {lists.shape}")
        lengths = np.sum(lists >= 0, axis=1)
        cols = np.arange(lists.shape[1])
        valid = cols < lengths[:, None]
        if not top_down:
            lists = np.take_along_axis(lists, np.where(valid, lengths[:, None] - 1 - cols, 0), 1)
        steps = np.where(valid, lists, -1)
        if steps.shape[0]:
            unique, inverse = np.unique(steps, axis=0, return_inverse=True)
        else:
            unique, inverse = steps, np.zeros(0, dtype=np.int64)
        self.top_down = bool(top_down)
        self.n_lists = steps.shape[0]
        self.steps = np.ascontiguousarray(unique, dtype=np.int64)
        self.lengths = np.sum(self.steps >= 0, axis=1).astype(np.int64)
        self.inverse = np.ascontiguousarray(inverse.ravel(), dtype=np.int64)
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.array([self.top_down, *steps.shape], dtype=np.int64).tobytes())
        digest.update(steps.tobytes())
        self.token = digest.digest()
        self.nbytes = self.steps.nbytes + self.lengths.nbytes + self.inverse.nbytes


class ListLikelihoodCache:
    r"""Bounded LRU cache of the count ratios of lists under partial orders.

    List ``Y`` (``m`` items) has, under the order ``h``, the ratios
    ``ρ_j = 1\{Y_j \text{ maximal in } h[T_j]\}\, C(h[T_j \setminus Y_j]) / C(h[T_j])``
    (``T_j = \{Y_j, …, Y_m\}``, ``j = 1..m-1``), so that for every ``p``

    .. math:: \log p(Y \mid h, p) = \sum_{j=1}^{m-1} \log\Big(\frac{p}{m-j+1}
        + (1-p)\,ρ_j\Big).

    An entry holds the ratios of the distinct lists of one :class:`ListSet` under one order
    (keyed by the order's bitset form and the lists' digest), filled in as lists are asked
    for. A Metropolis move back to an order seen before, a move of ``p``, and lists whose
    order did not change cost the logarithms only; repeated lists are counted once. The
    values are those of :func:`pymc_crp.posets.list_log_likelihoods_stacked`, bit for bit.
    Entries are evicted least recently used first, so they never take more than
    ``max_bytes``; at most ``max_list_sets`` prepared list sets are remembered (by the
    identity of the array: a remembered array must not be modified in place).
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, max_list_sets: int = 8):
        self.max_bytes = int(max_bytes)
        self.max_list_sets = int(max_list_sets)
        self._entries: OrderedDict = OrderedDict()
        self._sets: OrderedDict = OrderedDict()
        self.entry_bytes = 0
        self.computed = 0  # distinct lists whose ratios were counted
        self.reused = 0  # lists served from an entry

    @property
    def nbytes(self) -> int:
        """Bytes held: the entries plus the remembered list sets."""
        return self.entry_bytes + sum(s.nbytes for _, s in self._sets.values())

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._sets.clear()
        self.entry_bytes = 0

    def list_set(self, lists, top_down: bool = True) -> ListSet:
        """The :class:`ListSet` of ``lists``, remembered by the array's identity."""
        key = (id(lists), bool(top_down))
        found = self._sets.get(key)
        if found is not None and found[0]() is lists:
            self._sets.move_to_end(key)
            return found[1]
        prepared = ListSet(lists, top_down)
        if isinstance(lists, np.ndarray):
            self._sets[key] = (weakref.ref(lists), prepared)
            while len(self._sets) > self.max_list_sets:
                self._sets.popitem(last=False)
        return prepared

    def log_likelihoods(
        self,
        list_set: ListSet,
        words,
        labels,
        p: float,
        *,
        rows=None,
        want_grad: bool = False,
        max_states: int = DEFAULT_MAX_STATES,
    ):
        """``log p(Y_i | h_{labels}, p)`` for lists ``rows`` (default: all).

        ``words`` is :func:`order_words` of the slots' utilities (same direction as
        ``list_set``), ``labels`` the slot of each requested list. Returns the
        log-likelihoods, and ``d/dp`` of them with ``want_grad``.
        """
        words = np.ascontiguousarray(words, dtype=np.uint64)
        index = list_set.inverse if rows is None else list_set.inverse[rows]
        labels = np.asarray(labels, dtype=np.int64).reshape(-1)
        if labels.shape != index.shape or words.ndim != 3 or words.shape[1] != 4:
            raise ValueError(
                f"labels {labels.shape} must match the lists {index.shape} and words be "
                f"(L, 4, M), got {words.shape}"
            )
        ll = np.empty(index.shape[0])
        dp = np.empty(index.shape[0])
        if index.size and (labels.min() < 0 or labels.max() >= words.shape[0]):
            raise ValueError(f"labels must lie in 0..{words.shape[0] - 1}")
        if index.size and labels.min() == labels.max():
            groups = [(int(labels[0]), slice(None))]
        else:
            order = np.argsort(labels, kind="stable")
            bounds = np.searchsorted(labels[order], np.arange(words.shape[0] + 1))
            groups = [
                (a, order[bounds[a] : bounds[a + 1]])
                for a in range(words.shape[0])
                if bounds[a + 1] > bounds[a]
            ]
        zeros = scratch = None
        for slot, sel in groups:
            needed = index[sel]
            if p < 1.0 or want_grad:
                entry = self._entry(list_set, words, slot, needed, max_states)
                ratios, combined = entry.ratios, entry.combined(p, want_grad)
            else:  # every term is 1 / r_j: no counts needed
                if zeros is None:
                    zeros = np.zeros(_Entry.ratio_shape(list_set))
                    n_rows = zeros.shape[0]
                    scratch = (np.empty(n_rows), np.empty(n_rows), np.zeros(n_rows, dtype=bool))
                ratios, combined = zeros, scratch
            ll[sel], dp[sel] = loglik_from_ratios(
                ratios, list_set.lengths, needed, float(p), bool(want_grad), *combined
            )
        return (ll, dp) if want_grad else ll

    def _entry(self, list_set, words, slot, needed, max_states):
        """The entry of order ``words[slot]``, with the ratios of rows ``needed`` filled."""
        key = (list_set.token, words[slot].tobytes())
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(list_set, len(key[1]))
            if entry.nbytes <= self.max_bytes:
                while self._entries and self.entry_bytes + entry.nbytes > self.max_bytes:
                    self.entry_bytes -= self._entries.popitem(last=False)[1].nbytes
                self._entries[key] = entry
                self.entry_bytes += entry.nbytes
        else:
            self._entries.move_to_end(key)
        mask = np.zeros(entry.done.shape[0], dtype=bool)
        mask[needed] = True
        mask &= ~entry.done
        missing = np.flatnonzero(mask)  # sorted: neighbours share their first steps
        if missing.size:
            ok = _linext.ratios_kernel(
                words[slot : slot + 1],
                list_set.steps,
                list_set.lengths,
                missing,
                np.array([0, missing.size], dtype=np.int64),
                True,
                float_binomials(),
                int(max_states),
                entry.ratios,
            )
            if not ok:
                raise _limit_error(words.shape[2], max_states)
            entry.done[missing] = True
        self.computed += missing.size
        self.reused += needed.size - missing.size
        return entry


class _Entry:
    """The count ratios of a list set's distinct lists under one order (rows ``done``), and
    their log-likelihoods at the last ``p`` asked for (rows ``seen``)."""

    def __init__(self, list_set, key_bytes):
        self.ratios = np.empty(self.ratio_shape(list_set))
        n_rows = self.ratios.shape[0]
        self.done = np.zeros(n_rows, dtype=bool)
        self.p = None
        self.row_ll, self.row_dp = np.empty(n_rows), np.empty(n_rows)
        self.seen = np.zeros(n_rows, dtype=bool)
        arrays = (self.ratios, self.done, self.row_ll, self.row_dp, self.seen)
        self.nbytes = sum(a.nbytes for a in arrays) + key_bytes + _ENTRY_OVERHEAD

    @staticmethod
    def ratio_shape(list_set):
        return list_set.steps.shape[0], max(list_set.steps.shape[1] - 1, 0)

    def combined(self, p, want_grad):
        """``(row_ll, row_dp, seen)`` for ``p`` (forgotten when ``p`` or ``want_grad``
        changes)."""
        if self.p != (p, want_grad):
            self.seen[:] = False
            self.p = (p, want_grad)
        return self.row_ll, self.row_dp, self.seen


_CACHE = ListLikelihoodCache()


def list_likelihood_cache() -> ListLikelihoodCache:
    """The process-wide cache used by :class:`PartialOrderListsLogLikelihood` and
    :class:`~pymc_crp.UtilityMetropolis` (set its ``max_bytes`` to change the bound)."""
    return _CACHE


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
        words = order_words(utilities, self.top_down)
        list_set = cache.list_set(lists, self.top_down)
        flat_labels = labels.reshape(-1, lists.shape[0])
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
        closed = dominance_orders(utilities)
        direction = "top-down" if top_down else "bottom-up"
        out = np.full(item_sets.shape, -1, dtype=np.int64)
        for i, row in enumerate(item_sets):
            items = row[row >= 0]
            out[i, : items.size] = sample_list(closed[labels[i]], items, p, rng, direction)
        return out


class PartialOrderLists(Discrete):
    r"""Ranked lists as noisy random linear extensions of latent partial orders.

    List ``i`` is a queue-jumping draw (DESIGN.md section 5) from the partial order of slot
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
        The lists (best first); each list's item set is taken as given.
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


__all__ += ["PartialOrderListsRV"]
