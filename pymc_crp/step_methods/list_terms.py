"""Observed :class:`~pymc_crp.PartialOrderLists` terms as the utility and label steps read them.

A :class:`_ListTerm` compiles the lists' parameters (utilities, labels, noise ``p``) as point
functions and prepares the lists for the process-wide
:func:`~pymc_crp.core.lists.list_likelihood_cache`: the bitset orders of the slots
(:func:`~pymc_crp.core.lists.order_words`, updated in ``O(M K)`` after a move of one item's
utilities), each list's item set, and the log-likelihoods of lists under one slot's order.
:func:`_carry_entry` keeps the cache entry of an accepted order complete, so that later steps
at the same state count nothing.

:func:`is_list_term` and :func:`tempered` are how the steps that evaluate list likelihoods
take a likelihood temperature ``β`` (their attribute ``likelihood_temperature``, set by
:class:`~pymc_crp.ReplicaExchange`): each such step targets ``π(θ) L(θ)^β`` by multiplying
the list log-likelihoods in its ratios (only there) by ``β``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, explicit_graph_inputs
from pytensor.tensor.elemwise import DimShuffle

from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.core.restricted_orders import item_masks, move_item_changed
from pymc_crp.distributions.partial_order_lists import PartialOrderListsParams, PartialOrderListsRV
from pymc_crp.step_methods.model_graph import compile_point_function, dependent_terms, term_logps


def is_list_term(var) -> bool:
    """Whether the model variable ``var`` is a :class:`~pymc_crp.PartialOrderLists` term."""
    owner = getattr(var, "owner", None)
    return owner is not None and isinstance(owner.op, PartialOrderListsRV)


SMALL_DATA_ENTRIES = 2000
"""List entries below which the steps of the partial-order models repeat their cheap moves."""


def model_list_entries(model) -> int:
    """``E``, the entries (items ranked) of all observed :class:`~pymc_crp.PartialOrderLists`
    of ``model``."""
    total = 0
    for rv in model.observed_RVs:
        if is_list_term(rv):
            total += int(np.sum(np.asarray(model.rvs_to_values[rv].data) >= 0))
    return total


def repeats_for_entries(n_entries: int, most: int) -> int:
    """``min(most, max(1, 2000 // E))`` moves per step for lists of ``E`` entries in all: a
    move's cost follows ``E``, so small data sets get more of them per step at little cost
    (one from 1,001 entries on)."""
    return min(int(most), max(1, SMALL_DATA_ENTRIES // max(int(n_entries), 1)))


def tempered(beta: float, loglik):
    """``β · loglik`` (scalar or array), with ``β = 0`` giving 0 whatever ``loglik`` is (the
    lists ignored, even where their likelihood is 0)."""
    if beta == 1.0:
        return loglik
    if beta == 0.0:
        return np.zeros_like(loglik) if isinstance(loglik, np.ndarray) else 0.0
    return beta * loglik


def _list_children(model, value_var, exclude):
    """The PartialOrderLists terms whose density depends on ``value_var`` (or ``None``)."""
    children = dependent_terms(model, value_var, term_logps(model), exclude=exclude)
    if not children or not all(is_list_term(c) for c in children):
        return None
    if not all(c in model.observed_RVs for c in children):
        return None
    return children


class _ListTerm:
    """One observed PartialOrderLists term: compiled parameters and the lists, prepared for
    the process-wide :func:`~pymc_crp.core.lists.list_likelihood_cache`."""

    def __init__(self, model, rv, utility_value, compile_kwargs):
        params = PartialOrderListsParams.from_rv(rv)
        utilities, labels, noise = model.replace_rvs_by_values(
            [params.utilities, params.labels, params.noise]
        )
        # The order utilities are often the utility variable itself: read it from the point.
        self.direct = None
        owner = utilities.owner
        expanded = (  # (M, K) utilities given to the lists as a stack of one slot
            owner is not None
            and isinstance(owner.op, DimShuffle)
            and owner.inputs[0] is utility_value
            and utility_value.ndim == 2
            and tuple(owner.op.new_order) == ("x", 0, 1)
        )
        if (utilities is utility_value and utilities.ndim == 3) or expanded:
            self.direct = utility_value.name
        else:
            self.eta_fn = compile_point_function(
                model, pt.cast(utilities, "float64"), compile_kwargs
            )
        self._eta_graph, self._utility_value = utilities, utility_value
        self._score_fn = self._score_any = None  # see enable_slot_scores
        self.labels_fn = compile_point_function(model, pt.cast(labels, "int64"), compile_kwargs)
        self.noise_fn = compile_point_function(model, pt.cast(noise, "float64"), compile_kwargs)
        self.top_down = bool(pt.get_underlying_scalar_constant_value(params.top_down))
        self.lists = np.asarray(model.rvs_to_values[rv].data, dtype=np.int64)
        self.list_set = list_likelihood_cache().list_set(self.lists, self.top_down)
        n_items = int(model.rvs_to_values[rv].data.max()) + 1
        self.contains = np.zeros((self.lists.shape[0], max(n_items, 1)), dtype=bool)
        rows = np.repeat(np.arange(self.lists.shape[0]), self.lists.shape[1])
        flat = self.lists.ravel()
        self.contains[rows[flat >= 0], flat[flat >= 0]] = True
        # Each list's items as two uint64 words, to see which lists a move leaves unchanged.
        self.item_words = item_masks(self.lists)
        self.utility_name = utility_value.name

    def words(self, point, slot=None, used=None):
        """Bitset orders ``(L, 4, M)`` of all slots (of slots ``used`` only, the others
        zero), or ``(1, 4, M)`` of ``slot``."""
        eta = point[self.direct] if self.direct is not None else self.eta_fn(point)
        eta = eta if eta.ndim == 3 else eta[None]
        if slot is not None:
            return order_words(eta[slot : slot + 1], self.top_down)
        return order_words(eta, self.top_down, slots=used)

    def enable_slot_scores(self, model, point, rng, compile_kwargs=None) -> None:
        """Let :meth:`slot_words` give the orders of any stack of slot utilities ``ψ``
        ``(n, M, K)`` as the lists read them, ``η(ψ)`` (e.g. ``G⁻¹(Φ(ψ)) + xβ`` with item
        covariates), where the lists do not read the slot utilities directly.

        The lists' utilities are compiled as a function of the ``L`` slots' utilities and of
        the model's other values, and checked at ``point`` with random slot utilities from
        ``rng``: the function must equal the model's own graph, and each slot's scores must
        stay when every other slot's utilities are redrawn (so that ``η`` acts slot by slot
        and an auxiliary slot's order depends on its own utilities only). A ``ValueError``
        otherwise.
        """
        if self.direct is not None:
            return
        slots = self._utility_value.type()
        scored = graph_replace(pt.cast(self._eta_graph, "float64"), {self._utility_value: slots})
        inputs = [v for v in explicit_graph_inputs([scored]) if v is not slots]
        if not set(inputs) <= set(model.value_vars):
            raise self._not_slot_wise("(it depends on inputs that are not model values)")
        names = [v.name for v in inputs]
        kwargs = {"on_unused_input": "ignore", **(compile_kwargs or {})}
        fn = model.compile_fn(scored, inputs=[slots, *inputs], point_fn=False, **kwargs)
        point = dict(point)
        psi = rng.normal(size=np.shape(point[self.utility_name]))
        point[self.utility_name] = psi
        others = [point[name] for name in names]
        whole = np.asarray(fn(psi, *others))
        same = whole.shape == psi.shape and np.allclose(whole, self.eta_fn(point), 1e-12, 1e-12)
        for j in range(psi.shape[0] if same else 0):
            redrawn = rng.normal(size=psi.shape)
            redrawn[j] = psi[j]
            if not np.allclose(np.asarray(fn(redrawn, *others))[j], whole[j], 1e-12, 1e-12):
                same = False
                break
        if not same:
            raise self._not_slot_wise("(a slot's scores depend on other slots)")
        self._score_fn, self._score_inputs, self._bound = fn, names, None
        self._score_buffer = np.zeros(psi.shape)
        # The same graph for stacks of any length where it allows them (the model's builders
        # give the slots no fixed number), so that one slot's order costs one slot's scores.
        free = pt.tensor3("slot_utilities", dtype="float64", shape=(None, *slots.type.shape[1:]))
        try:
            graph = graph_replace(scored, {slots: free}, strict=False)
            any_fn = model.compile_fn(graph, inputs=[free, *inputs], point_fn=False, **kwargs)
            if np.array_equal(any_fn(psi, *others), whole) and np.array_equal(
                any_fn(psi[-1:], *others)[0], whole[-1]
            ):
                self._score_any = any_fn
        except (ValueError, TypeError, AssertionError):  # e.g. a shape check of L slots
            pass

    def _not_slot_wise(self, why: str) -> ValueError:
        return ValueError(
            f"the utilities the lists read must be the slot variable {self.utility_name} or "
            f"a function of it acting slot by slot (e.g. G^-1(Phi(U)) + x @ beta) {why}"
        )

    def bind(self, point) -> None:
        """Hold the values other than the slot utilities (e.g. the covariate effects ``β``) at
        those of ``point`` for :meth:`slot_words`."""
        if self._score_fn is not None:
            self._bound = tuple(point[name] for name in self._score_inputs)

    def slot_words(self, utilities, slots=None) -> np.ndarray:
        """Bitset orders ``(n, 4, M)`` of the slot utilities ``utilities`` ``(n, M, K)`` as the
        lists read them: of ``utilities`` themselves when the lists read them directly, of
        their scores ``η(utilities)`` at the values of :meth:`bind` otherwise (after
        :meth:`enable_slot_scores`; where the graph fixes the number of slots ``L``, the scores
        of ``n ≤ L`` slots are those of a stack of ``L`` whose first ``n`` they are); ``slots``
        as in :func:`~pymc_crp.core.lists.order_words`."""
        if self.direct is None:
            if self._score_fn is None or self._bound is None:
                raise RuntimeError("slot_words needs enable_slot_scores and bind first")
            n = len(utilities)
            if self._score_any is not None:
                utilities = self._score_any(np.asarray(utilities, dtype=np.float64), *self._bound)
            elif n == self._score_buffer.shape[0]:
                utilities = self._score_fn(np.asarray(utilities, dtype=np.float64), *self._bound)
            else:  # (the compiled graph fixes the number of slots)
                self._score_buffer[:n] = utilities
                utilities = self._score_fn(self._score_buffer, *self._bound)[:n]
        return order_words(utilities, self.top_down, slots=slots)

    def moved_words(self, point, slot, old, item, rows):
        """``(new, changed)``: ``new`` ``(1, 4, M)`` is ``words(point, slot)`` when only
        ``item``'s utilities moved from those of the order ``old`` ``(4, M)``, ``changed`` the
        positions (ascending) of the lists ``rows`` (all containing ``item``) whose restricted
        order changed (:meth:`restricted_changed`). Lists that read ``U`` directly recompute
        ``item``'s relations only, in one compiled call
        (:func:`~pymc_crp.core.restricted_orders.move_item_changed`); others recompute the
        order."""
        if self.direct is None:
            new = self.words(point, slot)
            return new, np.flatnonzero(self.restricted_changed(old, new[0], item, rows))
        eta = point[self.direct]
        eta = eta[slot] if eta.ndim == 3 else eta
        new, changed = move_item_changed(old, eta, item, not self.top_down, self.item_words, rows)
        return new[None], changed

    def all_logliks(self, point, labels, noise):
        """``(words, loglik)``: the orders of all slots and every list's log-likelihood."""
        words = self.words(point, used=labels)
        cache = list_likelihood_cache()
        return words, cache.log_likelihoods(self.list_set, words, labels, noise)

    def restricted_changed(self, old, new, item, rows, flips=None) -> np.ndarray:
        """Which lists ``rows`` (all containing ``item``) see a different order when only
        ``item``'s utilities moved from order ``old`` to ``new`` (``(4, M)`` words): a list's
        likelihood depends on the order restricted to its items only, and ``item``'s
        relations are its rows of items above it and items comparable to it (``flips``:
        ``old[:, item] ^ new[:, item]`` when known)."""
        if flips is None:
            flips = old[:, item] ^ new[:, item]  # up_lo, up_hi, cmp_lo, cmp_hi
        words = self.item_words[rows]
        return ((words[:, 0] & (flips[0] | flips[2])) | (words[:, 1] & (flips[1] | flips[3]))) != 0

    def slot_logliks(self, words, rows, noise, hint=False):
        """Log-likelihoods of lists ``rows`` under the single order ``words`` ``(1, 4, M)``;
        ``hint`` a ``(4, M)`` order whose cached entry may lend unchanged lists (see
        :meth:`~pymc_crp.core.lists.ListLikelihoodCache.log_likelihoods`)."""
        return list_likelihood_cache().order_log_likelihoods(
            self.list_set, words, rows, noise, hint=hint
        )


def _proposal_logliks(term: _ListTerm, words, rows, noise, kept: bool):
    """:meth:`_ListTerm.slot_logliks` of a one-item proposal, which creates no cache entry.

    ``kept``: the step keeps the count ratios of its lists itself (see
    :meth:`~pymc_crp.core.lists.ListLikelihoodCache.move_log_likelihoods`); returns
    ``(loglik, ratios)``. Otherwise returns ``(loglik, None)``, and :func:`_carry_entry`
    stores the counts after the move is accepted.
    """
    cache = list_likelihood_cache()
    if kept:
        return cache.move_log_likelihoods(term.list_set, words, rows, noise)
    return cache.proposal_log_likelihoods(term.list_set, words, rows, noise), None


def _rows_by_item(term: _ListTerm, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(by_item, starts)``: the lists ``rows`` (ascending) of ``term`` that contain item
    ``j`` are ``by_item[starts[j]:starts[j + 1]]``, in the order of ``rows``."""
    n_items = term.contains.shape[1]
    items = term.lists[rows]
    present = items >= 0
    flat = items[present]  # row-major: rows ascending within each item after a stable sort
    order = np.argsort(flat, kind="stable")
    by_item = np.repeat(rows, present.sum(axis=1))[order]
    starts = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=n_items), out=starts[1:])
    return by_item, starts


def _rows_with_item(term: _ListTerm, rows: np.ndarray, item: int) -> np.ndarray:
    """The lists ``rows`` of ``term`` that contain ``item``."""
    if item >= term.contains.shape[1]:
        return rows[:0]
    return rows[term.contains[rows, item]]


def _carry_entry(term: _ListTerm, state, slot: int, rows: np.ndarray, old: np.ndarray) -> None:
    """After the order of ``slot`` moved from ``old`` to ``state.words[slot]``, let the cache
    entry of the new order hold all the slot's lists ``rows``, copied from the entry of ``old``
    where their restricted order is unchanged (so later steps at this state count nothing)."""
    new = state.words[slot]
    if state.noise < 1.0 and rows.size and not np.array_equal(new, old):
        list_likelihood_cache().fill(term.list_set, new, rows, old)


@dataclass
class _TermState:
    """One list term during a step: the lists' ``labels`` and ``noise``, their cached
    ``logliks`` and the slots' orders ``words`` (both updated as moves are accepted)."""

    labels: np.ndarray
    noise: float
    logliks: np.ndarray
    words: np.ndarray


def slot_variable(model, lists_rv, label_rv, step_name: str):
    """The free slot utilities ``(L, M, K)`` the lists ``lists_rv`` read, directly or through
    a function of them and of variables other than the labels ``label_rv`` (e.g. scores with
    item covariates); a ``ValueError`` naming ``step_name`` otherwise."""
    utilities = PartialOrderListsParams.from_rv(lists_rv).utilities
    if utilities in model.free_RVs:
        found = [utilities]
    else:
        above = set(ancestors([utilities]))
        found = [] if label_rv in above else [rv for rv in model.free_RVs if rv in above]
        found = [rv for rv in found if rv.ndim == 3]
    if len(found) != 1 or found[0].ndim != 3:
        raise ValueError(
            f"{step_name} needs the lists' utilities to be a free (L, M, K) slot variable, or "
            "a function of one slot variable and of variables other than the labels"
        )
    return found[0]


def refuse_for_scores(lists_name: str, **options) -> None:
    """Refuse the ``options`` (name to count) that are set, for lists ``lists_name`` that read
    scores of the slot utilities: those moves' exact coordinate draws take the intervals
    between one column's utilities as an order's cells, which holds for the utilities' own
    orders only."""
    for option, value in options.items():
        if value:
            raise ValueError(
                f"{option} needs lists that read the slot utilities directly; {lists_name} "
                f"reads a function of them (e.g. scores with item covariates): give {option}=0"
            )
