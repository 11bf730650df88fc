r"""Joint moves of the list noise ``p`` and the labels (``PartialOrderLabelGibbs``).

With few clusters the lists need more noise, with many less: on real ballots the number of
clusters, ``p`` and the concentration drift together, and moves of ``p`` given the labels
and of the labels given ``p`` follow that ridge only in small steps. :class:`NoisePathMove`
proposes ``v' = v + s ε`` for the unconstrained value ``v`` of ``p`` and lets the labels
follow it along the path ``v_t = v + (t/T)(v' - v)``, ``t = 0..T``, by one restricted Gibbs
sweep of the labels at each intermediate ``p_t`` (the orders of all slots held fixed); the end
point is accepted with the non-equilibrium ratio of :mod:`pymc_crp.core.noise_path` times

.. math::

    \frac{π_0(v')}{π_0(v)}\,\frac{q(A \mid z')}{q(A \mid z)}, \qquad
    q(A \mid z) = \binom{L - K(z)}{|A| - K(z)}^{-1},

``π_0`` the prior density of ``v`` (Jacobian included) and ``A`` the pool of slots the labels
may take: every slot occupied at the start and ``|A| - K`` empty slots chosen uniformly (the
reverse move draws the same pool from ``z'``, whose occupied slots all lie in ``A``). ``|A|``
is fixed once tuning ends (during tuning it follows the largest number of clusters seen).

**With the orders following** (``utilities``: a :class:`~pymc_crp.UtilityMetropolis` of the
slots' utilities) each point ``t = 1..T-1`` of the path is the composition of the label sweep
and :meth:`~pymc_crp.UtilityMetropolis.reversible_update` of the occupied slots' utilities at
``p_t`` (a pCN move and random-walk item sweeps), in that order, or, with probability 1/2 for
the whole path, in the opposite order with each slot's moves reversed. The two compositions
are each other's time reversal for ``π(\cdot, p_t)``, so with the reverse path drawing the
opposite order the acceptance is the same non-equilibrium ratio, now with the
log-likelihoods of ``(z^{(t)}, U^{(t)})``. The pool and its factor are as above; the path
leaves the empty slots' utilities as they are (Gaussian slot priors), so a cluster emptied
along the path keeps its order for the lists that may return to it. Without this the
clusters that the labels join or leave keep their orders, which the lists of a moved ``p``
no longer fit. Measured in ``benchmarks/README.md`` ("The ridge move built"): with every slot
in the pool it raised the effective samples per draw on 60 simulated rankings, and with the
shipped pool it kept the chains of 1,000 rankings in one partition.

It needs ``p`` to be a scalar free variable whose only child is the lists' term.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from pymc.util import get_value_vars_from_user_vars

from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.core.noise_path import noise_path, pool_loglik, pool_sweep
from pymc_crp.distributions.partial_order_lists import PartialOrderListsParams
from pymc_crp.step_methods.metropolis import ScaleTuner, accept
from pymc_crp.step_methods.model_graph import (
    compile_point_function,
    dependent_terms,
    term_logps,
)
from pymc_crp.step_methods.utility_metropolis import UtilityMetropolis

__all__ = ["NoiseLabelMoves", "NoisePathMove", "noise_path_variable"]


def noise_path_variable(model, lists_rv, noise):
    """The value variable of the noise ``noise`` if the joint move applies to it (a scalar
    free variable whose only child is ``lists_rv``), else ``None``."""
    if noise not in model.free_RVs or noise.ndim != 0:
        return None
    (value_var,) = get_value_vars_from_user_vars([noise], model)
    children = dependent_terms(model, value_var, term_logps(model), exclude=(noise,))
    if len(children) != 1 or children[0] is not lists_rv:
        return None
    return value_var


class NoisePathMove:
    """Proposals of ``p`` that the labels follow (module docstring).

    Parameters
    ----------
    model, noise, value_var
        The model, the noise variable and its value variable (:func:`noise_path_variable`).
    term : the label step's list term
    n_slots : int
        ``L``.
    path : int
        ``T``, the points of the path after the start (``T - 1`` label sweeps).
    label_name : str, optional
        The labels' value variable; needed with ``utilities``.
    utilities : UtilityMetropolis, optional
        Moves of the occupied slots' utilities at each point (module docstring); ``None``: the
        orders are fixed along the path.
    """

    def __init__(
        self, model, noise, value_var, term, n_slots, path, compile_kwargs=None,
        label_name=None, utilities=None,
    ):  # fmt: skip
        self.value_name = value_var.name
        self.label_name = label_name
        self.utilities = utilities
        self.term = term
        self.n_slots = int(n_slots)
        self.path = int(path)
        self._prior_fn = compile_point_function(
            model, term_logps(model)[noise].sum(), compile_kwargs
        )
        self._noise_fn = compile_point_function(
            model, model.replace_rvs_by_values([noise])[0], compile_kwargs
        )

    def _at(self, fn, point, value) -> float:
        return float(fn({**point, self.value_name: np.asarray(value, dtype=np.float64)}))

    def move(self, rng, point, labels, utilities, beta, new_weights, discount, scale, pool_size):
        """One proposal with step ``s = scale`` and ``|A| = pool_size``; ``labels``, ``point``
        (and ``utilities``, when the orders follow) are updated in place when it is accepted.
        Returns ``(accepted, label changes along the path)``; no move (not accepted) if the
        pool cannot hold the clusters."""
        counts = np.bincount(labels, minlength=self.n_slots).astype(np.int64)
        occupied = np.flatnonzero(counts)
        pool_size = min(self.n_slots, pool_size)
        if occupied.size > pool_size:
            return False, 0
        value = float(point[self.value_name])
        proposed = value + scale * rng.standard_normal()
        empty = np.flatnonzero(counts == 0)
        extra = rng.choice(empty, pool_size - occupied.size, replace=False)
        pool = np.sort(np.concatenate([occupied, extra])).astype(np.int64)
        values = value + (proposed - value) * np.arange(self.path + 1) / self.path
        p_path = np.array([self._at(self._noise_fn, point, v) for v in values])
        words, ratios = self._pool_ratios(utilities[pool])
        if self.utilities is not None:
            log_w, new_labels, new_utilities, changed = self._path_with_orders(
                rng, point, labels, utilities, pool, words, ratios, values, p_path,
                (float(beta), new_weights, float(discount)),
            )  # fmt: skip
        else:
            new_labels, new_counts, new_utilities = labels.copy(), counts.copy(), utilities
            log_w, changed = noise_path(
                rng, ratios, self._lengths(), new_labels, new_counts, pool, self.n_slots, p_path,
                float(beta), new_weights, float(discount),
            )  # fmt: skip
        n_end = int(np.count_nonzero(np.bincount(new_labels, minlength=self.n_slots)))
        log_w += self._at(self._prior_fn, point, proposed) - self._at(self._prior_fn, point, value)
        log_w += _log_pool_count(self.n_slots, occupied.size, pool_size) - _log_pool_count(
            self.n_slots, n_end, pool_size
        )
        accepted = accept(log_w, rng)
        if accepted:
            labels[:] = new_labels
            utilities[:] = new_utilities
            point[self.value_name] = np.asarray(proposed, dtype=np.float64)
        return accepted, changed

    def _lengths(self) -> np.ndarray:
        """The lists' lengths, one per list."""
        list_set = self.term.list_set
        return list_set.lengths[list_set.inverse]

    def _pool_ratios(self, utilities) -> tuple[np.ndarray, np.ndarray]:
        """Orders ``(A, 4, M)`` and count ratios ``(A, N, m - 1)`` of every list under each of
        the ``A`` slots ``utilities``."""
        cache, list_set = list_likelihood_cache(), self.term.list_set
        rows = np.arange(list_set.inverse.shape[0])
        words = order_words(utilities, self.term.top_down)
        ratios = np.stack([cache.ratios(list_set, w, rows) for w in words])
        return words, np.ascontiguousarray(ratios, dtype=np.float64)

    def _path_with_orders(
        self, rng, point, labels, utilities, pool, words, ratios, values, p_path, params
    ):  # fmt: skip
        """The path with the orders following (module docstring), from the pool's orders
        ``words`` and ``ratios`` (updated in place); ``params`` is ``(β, w, d)`` (``w`` the
        new-cluster weights by the number of other clusters). Returns the
        likelihood part of ``log W``, the end point's labels and utilities, and the label
        changes."""
        cache, list_set = list_likelihood_cache(), self.term.list_set
        lengths = self._lengths()
        rows = np.arange(labels.shape[0])
        beta = params[0]
        reverse = bool(rng.random() < 0.5)
        at = np.full(self.n_slots, -1, np.int64)
        at[pool] = np.arange(pool.size)
        kernel = self.utilities
        kernel.rng, kernel.likelihood_temperature = rng, beta
        new_labels = labels.copy()
        counts = np.bincount(new_labels, minlength=self.n_slots).astype(np.int64)
        moving = {**point, self.term.utility_name: utilities.copy()}
        args = (self.n_slots, *params)
        log_w, changed = 0.0, 0
        for t in range(self.path):
            if t > 0:
                if not reverse:
                    changed += pool_sweep(
                        rng, ratios, lengths, new_labels, counts, pool, p_path[t], *args
                    )
                moving[self.value_name] = np.asarray(values[t], dtype=np.float64)
                moving[self.label_name] = new_labels.copy()
                moving, _ = kernel.reversible_update(moving, reverse)
                new_words = order_words(moving[self.term.utility_name][pool], self.term.top_down)
                for r in np.flatnonzero((new_words != words).any(axis=(1, 2))):
                    words[r] = new_words[r]
                    ratios[r] = cache.ratios(list_set, words[r], rows)
                if reverse:
                    changed += pool_sweep(
                        rng, ratios, lengths, new_labels, counts, pool, p_path[t], *args
                    )
            log_w += beta * (
                pool_loglik(ratios, lengths, new_labels, at, p_path[t + 1])
                - pool_loglik(ratios, lengths, new_labels, at, p_path[t])
            )
        return log_w, new_labels, moving[self.term.utility_name], changed


def _log_pool_count(n_slots: int, n_occupied: int, pool_size: int) -> float:
    """``log C(L - K, |A| - K)``, the number of pools that hold ``K`` given occupied slots."""
    n, k = n_slots - n_occupied, pool_size - n_occupied
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


class NoiseLabelMoves:
    """Mixin of :class:`~pymc_crp.PartialOrderLabelGibbs`: its options ``noise_*`` and the
    joint moves of ``p`` and the labels (:class:`NoisePathMove`) made at the start of a step.
    Reads the step's ``rng``, ``tune``, ``n_slots``, ``n_aux``, ``_beta``, ``_term`` and
    ``noise_all_slots``."""

    def _noise_setup(
        self, model, lists_rv, noise_moves, noise_path, noise_scale, compile_kwargs, utility_rv,
        item_sweeps,
    ):  # fmt: skip
        for option, value, least in (
            ("noise_moves", noise_moves, 0),
            ("noise_path", noise_path, 1),
            ("noise_item_sweeps", item_sweeps, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, Integral) or value < least:
                raise ValueError(f"{option} must be an integer >= {least}, got {value!r}")
        if not (np.isfinite(noise_scale) and noise_scale > 0):
            raise ValueError(f"noise_scale must be a positive number, got {noise_scale!r}")
        self.noise_moves = int(noise_moves)
        self.noise_scale = float(noise_scale)
        self._noise_pool = 0  # the pool of slots of the joint move: set while tuning
        self._noise_tuner = ScaleTuner(0.3)
        self._noise_move = None
        self._noise_utilities = None
        for option, value in (
            ("noise_item_sweeps", item_sweeps),
            ("noise_all_slots", self.noise_all_slots),
        ):
            if value and not self.noise_moves:
                raise ValueError(f"{option} needs noise_moves > 0 (the path it acts on)")
        if not self.noise_moves:
            return
        noise = PartialOrderListsParams.from_rv(lists_rv).noise
        value_var = noise_path_variable(model, lists_rv, noise)
        if value_var is None:
            raise ValueError(
                f"noise_moves needs the lists' noise to be a scalar free variable whose only "
                f"child is {lists_rv.name}; got {getattr(noise, 'name', None) or noise}"
            )
        if item_sweeps:
            self._noise_utilities = UtilityMetropolis(
                [utility_rv], item_sweeps=int(item_sweeps), cell_sweeps=0, column_moves=0,
                hmc_trajectories=0, model=model, compile_kwargs=compile_kwargs,
            )  # fmt: skip
        self._noise_move = NoisePathMove(
            model, noise, value_var, self._term, self.n_slots, noise_path, compile_kwargs,
            self._label_name, self._noise_utilities,
        )  # fmt: skip

    def _noise_moves(self, point, labels, utilities, new_weights, discount) -> float:
        """The joint moves of ``p`` and the labels (in place); their acceptance rate."""
        if self._noise_move is None:
            return np.nan
        if self.tune:  # the pool: the most clusters seen while tuning, plus n_aux empty slots
            k = int(np.count_nonzero(np.bincount(labels, minlength=self.n_slots)))
            self._noise_pool = max(self._noise_pool, k + self.n_aux)
        if self._noise_utilities is not None:
            self._noise_utilities.tune = self.tune
        pool_size = self.n_slots if self.noise_all_slots else self._noise_pool
        accepted = 0
        for _ in range(self.noise_moves):
            accepted += self._noise_move.move(
                self.rng, point, labels, utilities, self._beta, new_weights, discount,
                self.noise_scale, pool_size,
            )[0]  # fmt: skip
        if self.tune:
            self.noise_scale = self._noise_tuner.record(
                self.noise_scale, accepted, self.noise_moves
            )
        return accepted / self.noise_moves
