r"""Utility moves of the label step with the labels of most lists summed out.

The occupied slots' utilities ``U`` and the labels ``c`` are strongly coupled: given the
labels a large cluster's order is pinned by its lists, and given the orders the lists re-sort
at once, so the alternation of the two follows the ridge between them slowly. On data that no
few partial orders generate (many clusters, each list fitting several) a list stays in its
cluster with probability 0.3--0.4 given the orders, so the utilities' conditional with the
labels *summed out* is wider than with the labels held (on 1,000 heterogeneous rankings the
proposals below with ``b = 0.3`` were accepted twice as often).
:class:`MarginalUtilityMoves` gives :class:`~pymc_crp.PartialOrderLabelGibbs` such moves. On
data from a few partial orders they matter for another reason: holding the labels, a cluster of
hundreds of lists cannot gain or lose a relation that a few dozen of its lists break, since
each of those lists pays for it, so chains stay for thousands of iterations with that cluster's
order one way or the other (on 1,000 simulated rankings, two seeded runs of three); with the
labels summed out those lists follow the order to the cluster that fits them, and the same
runs agreed (``benchmarks/README.md``).

**Auxiliary weights.** Under the Pitman--Yor CRP (truncated at ``L`` slots) the label prior
depends on the cluster sizes through ``∏_k Γ(n_k - d)`` and otherwise on ``K`` only. Given the
labels, draw ``G_k ~ Gamma(n_k - d, 1)`` independently for the occupied slots; then

.. math:: p(c)\, p(G \mid c) \propto f(K) \prod_k G_k^{\,n_k - d - 1} e^{-G_k},

so among label vectors with the same occupied slots ``p(c | G) ∝ ∏_i G_{c_i}``: the lists'
labels are independent given ``G`` (and the utilities), as in a finite mixture.

**Anchors.** Each list is an anchor with probability ``a``, independently of the state. A
slot holding an anchor is *anchored*; the *movable* lists are the non-anchors in anchored
slots. Holding the anchors' labels and those of the lists in unanchored slots, and letting
the movable lists take any anchored slot, keeps every occupied slot occupied (each anchored
slot keeps its anchors) and every other label: on this set of label vectors, which the move
never leaves, ``K`` is fixed and

.. math::

    P(c_i = k \mid G, U) = \frac{G_k\, ℓ_{ik}}{S_i}, \qquad
    S_i = \sum_{j \text{ anchored}} G_j\, ℓ_{ij}, \qquad ℓ_{ik} = p(Y_i \mid h(U_k), p)^β

for a movable list ``i``, independently. Summing them out leaves the target of the anchored
slots' utilities

.. math::

    π(U \mid G, \cdot) \propto \prod_{k \text{ anchored}} p(U_k \mid \cdot)
    \prod_{i \text{ anchor}} ℓ_{i c_i} \prod_{i \text{ movable}} S_i .

**The move.** Draw the anchors and ``G``; for each anchored slot in random order make
``marginal_utility_moves`` preconditioned Crank--Nicolson proposals
``U'_k = m + √(1-b²)(U_k - m) + b(D - m)`` (``D`` a draw of the slot prior ``N(m, ·)``,
reversible for it), accepted with the ratio of the two products above (the anchors of ``k``
and every ``S_i``); then draw the movable lists' labels from their conditional. Each proposal
keeps ``π(U | G, ·)`` invariant and the labels are then an exact draw given ``U``, so the move
is a joint update of ``(U, c)`` from their conditional given ``G`` and the held labels, and
``G``, drawn from its exact conditional, is dropped afterwards (data augmentation). ``β`` is
the step's likelihood temperature times its annealing factor; ``b`` adapts towards an
acceptance rate of 0.3 while PyMC tunes. A proposal costs one order's likelihood column over
the lists its ratio reads, the slot's anchors and the movable lists (not the other slots'
anchors: over 100 items, where each list is counted on its own, that cut the lists counted
by a quarter); the sums ``Σ_{j≠k} G_j ℓ_ij`` over the other slots come from the totals
``S_i`` kept up to date (:mod:`pymc_crp.core.leave_one_out`), ``O(N)`` per slot instead of
``O(N K)`` (on 1,000 heterogeneous rankings with about 50 clusters that took 13 ms of the
step's 160 per iteration).

**Coordinate draws.** After the proposals, ``marginal_coordinates`` exact Gibbs draws of one
utility ``x = U_{jq}`` of an anchored slot ``k`` (``k``, ``j`` and ``q`` uniform) from its
conditional under ``π(U | G, ·)``: as in :mod:`pymc_crp.core.utility_gibbs`, a mixture of
truncated normals over the intervals ``I_r`` between the other items' values in column ``q``,

.. math:: P(x \in I_r \mid ·) \propto [Φ(β_r) - Φ(α_r)]
    \prod_{i \text{ anchor in } k} ℓ_{ik}^{(r)} \prod_{i \text{ movable}} S_i^{(r)},

``ℓ^{(r)}`` and ``S^{(r)}`` at the order with ``x ∈ I_r`` (one likelihood column per distinct
order). Holding the labels, a cluster of many lists cannot gain or lose a relation that some
of its lists break, since those lists would pay for it one by one; with their labels summed
out they follow the order to the cluster that fits them (on 1,000 simulated rankings chains
held one cluster's order with or without one relation for thousands of iterations).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from pymc_crp.core.checks import integer_at_least
from pymc_crp.core.leave_one_out import logsumexp_without, row_logsumexp
from pymc_crp.core.utility_gibbs import (
    equicorrelated_conditional,
    interval_points,
    sample_interval_mixture,
)
from pymc_crp.step_methods.metropolis import ScaleTuner, accept

__all__ = ["MarginalUtilityMoves"]

#: Acceptance rate the proposals' scale ``b`` adapts towards while PyMC tunes.
TARGET_ACCEPTANCE = 0.3


class MarginalUtilityMoves:
    """Mixin of :class:`~pymc_crp.PartialOrderLabelGibbs`: the move of the module docstring.
    Reads the step's ``rng``, ``tune``, ``n_slots``, ``_column``, ``_slot_prior`` and
    ``_prior_draws``."""

    def _marginal_setup(self, moves, anchor_fraction, scale, coordinates=0) -> None:
        """Check and store the options (``scale``: the initial ``b``; ``coordinates``: the
        coordinate draws per step)."""
        integer_at_least(moves, "marginal_utility_moves", type_error=ValueError)
        integer_at_least(coordinates, "marginal_coordinates", type_error=ValueError)
        self.marginal_coordinates = int(coordinates)
        for name, value in (("anchor_fraction", anchor_fraction), ("marginal_scale", scale)):
            if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < 1:
                raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
        self.marginal_utility_moves = int(moves)
        self.anchor_fraction = float(anchor_fraction)
        self.marginal_scale = float(scale)
        self._marginal_tuner = ScaleTuner(TARGET_ACCEPTANCE, upper=0.999)
        # proposed, accepted, relabelled, coordinate draws that changed the order
        self.marginal_counts = np.zeros(4, dtype=np.int64)

    def _marginal_moves(self, point, labels, utilities, noise, discount) -> np.ndarray:
        """The move (labels and utilities in place); returns this step's counts (proposed,
        accepted, relabelled, coordinate draws that changed the order) and adds them to
        ``marginal_counts``."""
        rng, n_slots = self.rng, self.n_slots
        anchors = rng.random(labels.shape[0]) < self.anchor_fraction
        is_anchored = np.bincount(labels[anchors], minlength=n_slots) > 0
        anchored = np.flatnonzero(is_anchored)
        rows = np.flatnonzero(is_anchored[labels])  # the lists of the anchored slots
        movable = ~anchors[rows]
        if anchored.size < 2 or not movable.any():
            return np.zeros(4, dtype=np.int64)
        counts = np.bincount(labels, minlength=n_slots)[anchored]
        log_g = np.log(rng.gamma(counts - discount))
        ll = np.stack([self._column(utilities[k], rows, noise) for k in anchored], axis=1)
        weighted = ll[movable] + log_g  # log G_j ℓ_ij of the movable lists
        prior = self._slot_prior(point)
        draws, used = (self._prior_draws(point) if self.marginal_utility_moves else None), 0
        b = self.marginal_scale
        shrink = math.sqrt(1.0 - b * b)
        tried = accepted = 0
        log_s = row_logsumexp(weighted)  # log S_i, kept up to date as the columns change
        for j in rng.permutation(anchored.size):
            slot = anchored[j]
            own = ~movable & (labels[rows] == slot)  # the slot's anchors
            read = own | movable  # the lists its ratio reads (not the other slots' anchors)
            read_rows, read_own, read_movable = rows[read], own[read], movable[read]
            others = logsumexp_without(weighted, log_s, j)
            log_s = np.logaddexp(others, weighted[:, j])
            for _ in range(self.marginal_utility_moves):
                if used == draws.shape[0]:
                    draws, used = self._prior_draws(point), 0
                draw, used = draws[used], used + 1
                proposal = (
                    prior.mean + shrink * (utilities[slot] - prior.mean) + b * (draw - prior.mean)
                )
                column = self._column(proposal, read_rows, noise)
                new_s = np.logaddexp(others, column[read_movable] + log_g[j])
                log_ratio = np.sum(column[read_own] - ll[own, j]) + np.sum(new_s - log_s)
                tried += 1
                if accept(float(log_ratio), rng):
                    accepted += 1
                    utilities[slot] = proposal
                    ll[read, j] = column  # (its other rows are never read)
                    weighted[:, j] = column[read_movable] + log_g[j]
                    log_s = new_s
        changed = 0
        for _ in range(self.marginal_coordinates):
            j = int(rng.integers(anchored.size))
            own = ~movable & (labels[rows] == anchored[j])
            read = own | movable
            others = logsumexp_without(weighted, log_s, j)
            column, order_changed = self._coordinate_draw(
                utilities[anchored[j]], prior, rows[read], own[read], movable[read], others,
                log_g[j], noise,
            )  # fmt: skip
            changed += order_changed
            ll[read, j] = column
            weighted[:, j] = column[movable[read]] + log_g[j]
            log_s = np.logaddexp(others, weighted[:, j])
        # the movable lists' labels from their conditional given G and the utilities
        probs = np.exp(weighted - log_s[:, None])
        picks = np.minimum(
            (rng.random(probs.shape[0])[:, None] > np.cumsum(probs, axis=1)).sum(axis=1),
            anchored.size - 1,
        )
        new_labels = anchored[picks]
        moved_rows = rows[movable]
        step_counts = np.array(
            [tried, accepted, np.count_nonzero(new_labels != labels[moved_rows]), changed],
            dtype=np.int64,
        )
        self.marginal_counts += step_counts
        labels[moved_rows] = new_labels
        if self.tune and tried:
            self.marginal_scale = self._marginal_tuner.record(b, accepted, tried)
        return step_counts

    def _coordinate_draw(self, slot_utilities, prior, rows, own, movable, others, log_g, noise):
        """One coordinate draw of the module docstring in ``slot_utilities`` ``(M, K)`` (in
        place), with ``own`` the slot's anchors among ``rows``, ``others`` ``log Σ_{j≠k} G_j
        ℓ_ij`` of the movable lists and ``log_g`` ``log G_k``. Returns the slot's new
        likelihood column over ``rows`` and whether the order changed."""
        rng = self.rng
        n_items, n_dims = slot_utilities.shape
        item, dim = int(rng.integers(n_items)), int(rng.integers(n_dims))
        mu, sd = equicorrelated_conditional(
            slot_utilities[item], prior.mean[item], float(prior.rho[item]),
            float(prior.scale[item]), dim,
        )  # fmt: skip
        low, high, inside = interval_points(np.delete(slot_utilities[:, dim], item))
        present = slot_utilities[item, dim]
        columns, log_lik, keys = {}, np.empty(inside.shape[0]), []
        for r, value in enumerate(inside):
            slot_utilities[item, dim] = value
            words = self._term.slot_words(slot_utilities[None])
            key = words.tobytes()
            if key not in columns:
                column = self._beta * self._term.slot_logliks(words, rows, noise)
                columns[key] = column
                log_lik[r] = np.sum(column[own]) + np.sum(
                    np.logaddexp(others, column[movable] + log_g)
                )
            else:
                log_lik[r] = log_lik[keys.index(key)]
            keys.append(key)
        start = int(np.searchsorted(high, present))
        value, r = sample_interval_mixture(log_lik, low, high, mu, sd, rng.random(), rng.random())
        slot_utilities[item, dim] = value
        return columns[keys[r]], keys[r] != keys[start]
