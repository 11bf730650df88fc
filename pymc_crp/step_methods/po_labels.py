r"""Label step for clustered partial orders whose cost follows the occupied clusters.

:class:`PartialOrderLabelGibbs` updates the CRP labels of lists with a
:class:`~pymc_crp.PartialOrderLists` likelihood over slot utilities ``U`` ``(L, M, K)`` by
Neal's (2000) Algorithm 8 with ``m`` auxiliary utility matrices drawn from the slot prior
``U_new ~ N(τ U0, (1-τ²) Σ_ρ)`` and reused between visits and between the rounds of a step
(Favaro and Teh 2013; the numeric core and the argument for exactness are in
:mod:`pymc_crp.core.aux_label_sweep`):

.. math::

    P(c_i = j) \propto (n_j - d)\, p(Y_i \mid h(U^{(j)}), p), \qquad
    P(c_i = \text{new}_t) \propto \frac{θ + dK}{m}\, p(Y_i \mid h(ψ_t), p).

Only the ``K`` occupied slots and the ``m`` auxiliaries are scored, so a sweep costs
``O(N (K + m))`` list likelihoods whatever ``max_clusters`` is, and ``max_clusters`` can be
large enough that the truncation of the CRP never bites. A new cluster takes a uniformly
chosen free slot and its auxiliary's utilities; after the sweep the empty slots' utilities
are redrawn from their prior (an exact Gibbs draw: no list attaches to them).

Before the sweep, ``merge_split`` merge--split proposals
(:mod:`pymc_crp.step_methods.po_prior_split_merge`: a random pair of lists, sequential
allocation with the slot utilities held fixed, a split's new utilities drawn from the slot
prior) let groups of lists spread over several clusters merge in one move, which the
one-list-at-a-time sweep can only do against the prior's pull towards the larger cluster;
merges reuse the cached likelihood columns and cost no list likelihoods. A step makes
``sweeps`` rounds of both, in ``utility_moves + 1`` groups with a step of a private
:class:`~pymc_crp.UtilityMetropolis` on the slot utilities between groups: each group and
each utility step leaves the posterior invariant, so their composition does too (the rounds
are in :mod:`pymc_crp.step_methods.po_label_rounds`).
``annealed_split_merge`` adds, now and then, split--merge proposals along annealed paths
between the split and the merged state (:mod:`pymc_crp.step_methods.po_annealed_split_merge`),
which merge a group split by an incomparable pair of items; ``informed_split_merge`` adds
split--merge proposals whose new cluster's utilities are fitted to its lists by a restricted
Gibbs scan (:mod:`pymc_crp.step_methods.po_split_merge`; off by default, measured not to pay);
``marginal_utility_moves`` adds, after the rounds, proposals of the anchored slots' utilities
with the labels of the other lists summed out, then those labels drawn
(:mod:`pymc_crp.step_methods.po_marginal_utilities`), which lets a large cluster's order gain
or lose a relation that some of its lists break while those lists move elsewhere.

Given the CRP's concentration ``θ`` as well (as ``pm.sample`` does in those models when the
discount is fixed), the step integrates ``θ`` out of every label move, weighing a new cluster
beside ``K`` others by ``G(K+1)/G(K)`` instead of ``θ + dK``, and then draws ``θ`` exactly from
``p(θ | K)`` (:mod:`pymc_crp.step_methods.concentration_given_clusters`; a partially collapsed
Gibbs step): ``K`` and ``θ`` are strongly coupled a posteriori, and label moves at a fixed
``θ`` follow their ridge slowly.

Assigned automatically to the labels of models built by
:func:`pymc_crp.models.clustered_partial_orders` (CRP partition); it can be given explicitly
(``pm.sample(step=[PartialOrderLabelGibbs([labels])])``) for any CRP label vector whose only
label-dependent term is a ``PartialOrderLists`` over slot utilities that are a plain random
variable with the same prior for every slot (a ``ValueError`` otherwise: a prior parameter may
have a slot axis only if it is a constant equal along it), or over scores of them that act slot
by slot and do not read the labels (as with item covariates, ``G⁻¹(Φ(U)) + xβ``): new
clusters, auxiliaries and split proposals are then prior draws of the slot utilities whose
orders are read from their scores (``_ListTerm.slot_words`` of
:mod:`pymc_crp.step_methods.list_terms`; ``docs/mathematics.md``), and the moves whose
coordinate draws need the orders of the utilities themselves (annealed and informed
split--merge, tuning-phase merges, ``marginal_coordinates``, noise moves) are off by default
and refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_crp.core.aux_label_sweep import new_cluster_weights
from pymc_crp.core.checks import integer_at_least, nonnegative_number, positive_int
from pymc_crp.distributions.equicorrelated_normal import EquicorrelatedNormalRV
from pymc_crp.distributions.partial_order_lists import PartialOrderListsRV
from pymc_crp.distributions.partitions import CRPParams
from pymc_crp.roles import LabelsRole, get_role
from pymc_crp.step_methods.concentration_given_clusters import (
    IntegratedConcentrationTerm,
    claims_concentration,
    concentration_alone_step,
    labels_and_concentration,
)
from pymc_crp.step_methods.crp_gibbs import truncation_warning
from pymc_crp.step_methods.list_terms import _ListTerm, refuse_for_scores, slot_variable
from pymc_crp.step_methods.metropolis import ScaleTuner
from pymc_crp.step_methods.model_graph import (
    check_same_slot_prior,
    compile_point_function,
    dependent_terms,
    prior_draw_function,
    term_logps,
)
from pymc_crp.step_methods.noise_labels import NoiseLabelMoves
from pymc_crp.step_methods.po_annealed_split_merge import (
    ANNEALED_FROM,
    TUNE_MERGES_EVERY,
    AnnealedSplitMerge,
    anneal_factor,
    default_anneal,
)
from pymc_crp.step_methods.po_label_rounds import (
    POOL_DRAWS,
    LabelRounds,
    reuse_auxiliaries_option,
)
from pymc_crp.step_methods.po_marginal_utilities import MarginalUtilityMoves
from pymc_crp.step_methods.po_prior_split_merge import PriorSplitMerge
from pymc_crp.step_methods.po_split_merge import InformedSplitMerge
from pymc_crp.step_methods.utility_metropolis import UtilityMetropolis

__all__ = ["PartialOrderLabelGibbs"]

# The default weight moves per round, the number of lists from which they are made, and the
# mean cluster size from which a round makes them (0: every round).
WEIGHT_MOVES = 5
WEIGHT_MOVES_FROM = 500
WEIGHT_MOVES_MEAN_SIZE = 0.0
# The default proposals per anchored slot of the utility moves with the labels summed out
# (with an equicorrelated normal slot prior; none otherwise).
MARGINAL_UTILITY_MOVES = 3


@dataclass_state
class PartialOrderLabelState(StepMethodState):
    """Sampling state of :class:`PartialOrderLabelGibbs`: the tuning flag and the annealing
    counter, so that PyMC's reset between sequential chains restores the whole chain."""

    tune: bool
    _iteration: int
    noise_scale: float
    _noise_pool: int
    _noise_tuner: ScaleTuner
    _noise_utilities: Any  # the path's UtilityMetropolis (its own state) or None
    _between_utilities: Any  # the UtilityMetropolis between groups of rounds, or None
    marginal_scale: float
    _marginal_tuner: ScaleTuner


class PartialOrderLabelGibbs(
    LabelRounds,
    PriorSplitMerge,
    InformedSplitMerge,
    AnnealedSplitMerge,
    NoiseLabelMoves,
    MarginalUtilityMoves,
    BlockedStep,
):
    """Algorithm 8 label sweeps for clustered partial orders (see the module docstring).

    Parameters
    ----------
    vars : the CRP label variable, and optionally its concentration
        With the concentration (a scalar with a log transform and constant prior parameters
        whose only child is the CRP, a constant discount) the concentration is integrated out
        of the label moves and drawn given the number of clusters after them (module
        docstring). Given the concentration alone (``pm.sample`` does so when the labels have
        a step of the user's), the class returns a
        :class:`~pymc_crp.ConcentrationGivenClusters` step instead.
    n_aux : int, default 3
        ``m``, the number of auxiliary utility matrices (exact for any ``m >= 1``).
    reuse_auxiliaries : bool, optional
        Carry the sweeps' auxiliaries (and their spares) from round to round within a step
        instead of drawing them afresh for each sweep; exact either way. Default: reuse where
        the lists hold at least 100 distinct sets of items, where a fresh auxiliary costs a
        count of every list (:func:`~pymc_crp.step_methods.po_label_rounds.
        reuse_auxiliaries_option`).
    merge_split : int, default 20
        Merge--split proposals per step, made before the sweep (0: none).
    informed_split_merge : int, default 0
        Split--merge proposals per step whose new cluster's utilities are fitted to its lists
        by a restricted Gibbs scan (:mod:`pymc_crp.step_methods.po_split_merge`), made after
        the blind ones; needs an equicorrelated normal slot prior (as in
        :func:`~pymc_crp.models.clustered_partial_orders`). Off by default: on 1,000
        simulated rankings one proposal per step cost 2.3x the time per iteration (before its
        scans were compiled) and was accepted once in 8,000 steps once the chains had left
        the annealed start (``benchmarks/po_convergence.py``, variant ``inf1``).
    annealed_split_merge : float, optional
        Split--merge proposals per step along annealed paths between the split and the
        merged state (:mod:`pymc_crp.step_methods.po_annealed_split_merge`; a fraction is the
        probability of one proposal), made before the first round once tuning is over; they
        need an equicorrelated normal slot prior (as in
        :func:`~pymc_crp.models.clustered_partial_orders`). Default: 0.01 with such a prior
        for up to 1,000 lists, ``10 / N`` for ``N`` lists beyond (a proposal's cost grows with
        the clusters' sizes), else 0. They merge two clusters whose orders refine a common
        order in opposite ways (a group split by an incomparable pair of items), which no
        other move does: on 1,000 simulated rankings with a planted group of 351 lists split
        in two (``benchmarks/split_start.py``) both chains merged it within 20 and 118
        iterations with 0.05, none in 300 without, at 1.18 times the time (before the paths'
        scans were compiled: 3x cheaper on heterogeneous rankings, 15x on the demo's lists).
    tune_annealed_split_merge : float, optional
        The same while tuning, from the iteration where the annealed start's factor reaches
        0.75 (the clusters have formed; before that the proposals would cost most and decide
        nothing). Default: 0.05 with an equicorrelated normal slot prior for up to 1,000
        lists, ``50 / N`` beyond, else 0. A chain of the annealed start that settles with a
        group split in two is merged here.
    annealed_levels : int, default 50
        ``T``, the levels of those paths (each proposal costs ``T - 1`` scans of both slots'
        utilities over the two clusters' lists).
    tune_merges : int, optional
        While tuning only, every 100 iterations once the annealed start has reached ``β = 1``
        (iterations 700, 800, 900 of PyMC's default 1,000 with ``anneal=700``; 100 to 900
        without annealing): for this many pairs of clusters
        most likely to merge, the annealed merge path, kept if the merged state's joint
        density is higher (not a reversible move; the draws kept after tuning come from the
        exact moves alone). It takes a group that a chain of the annealed start left in
        several clusters, a state the partition prior outweighs by hundreds of nats but that
        the annealed split--merge does not leave on clusters of over 1,000 lists, into one.
        Default 3 with an equicorrelated normal slot prior, else 0. Measured on 5,000
        rankings (``benchmarks/README.md``): from the state of the chain that did not
        converge, one call merged its three clusters of one planted group (8 s).
    anneal : int, optional
        While tuning, the label moves see the lists' log-likelihoods times
        ``β = 1 - (1 - x)^2``, ``x = min(1, (t + 1)/anneal)``, at tuning iteration ``t``
        (:func:`~pymc_crp.step_methods.po_annealed_split_merge.anneal_factor`; simulated
        annealing of the start: clusters form gradually from the prior's few large ones
        instead of one new cluster per poorly fitted list; 0 turns it off). ``β`` is 1 from
        iteration ``anneal`` on and whenever the step is not tuning, so the draws kept are
        exact whatever ``tune`` is. Leave a few hundred tuning
        iterations at ``β = 1`` (PyMC's default ``tune=1000`` leaves 300); a warning says
        when tuning ends before ``β`` reaches 1. Measured on 1,000 lists
        (``benchmarks/po_convergence.py``): annealing over 700 rather than 300 tuning
        iterations raised the agreement of 4 chains' partitions from ARI 0.73 to 0.97, and
        this schedule, which rises fast and then slowly near 1, against ``β = x``: 11 of 12
        chains in the same partition instead of 6, smallest ARI between chains 0.975–0.987
        instead of 0.77–0.92 over three seeds (on lists from closer orders 6 of 12 instead
        of 1; the others hold refinements of that partition). Default
        (:func:`~pymc_crp.step_methods.po_annealed_split_merge.default_anneal`): 700 where the
        lists rank at least half of the items on average, else 0. Lists that each rank a small
        share of many items do not leave the one cluster the annealed start gathers them in:
        on 1,000 lists of 10 of 100 items, one cluster with ``p`` near 0.6 from iteration 75
        to 375, where without annealing they formed 24 clusters within 75 iterations.
    noise_moves : int, default 0
        Joint moves of the list noise ``p`` and the labels per step, made first
        (:mod:`pymc_crp.step_methods.noise_labels`: a proposal of ``p`` that the labels follow
        by ``noise_path - 1`` restricted Gibbs sweeps along an annealed path). Needs ``p`` to
        be a scalar free variable whose only child is the lists' term; the step of ``p`` is
        still PyMC's or the package's own, this move comes on top. Off by default: on the
        Albury ballots (``examples/albury_ballots.py``) one move per step with
        ``noise_path=10`` was accepted 7.6 % of the time, cost 2.5x the time per iteration and
        raised no ESS per second (``benchmarks/README.md``).
    noise_path : int, default 10
        ``T``, the points of that path after its start.
    noise_scale : float, default 0.3
        Initial standard deviation of the proposal of ``p`` on its unconstrained scale, tuned
        towards acceptance 0.3 while PyMC tunes.
    noise_item_sweeps : int, default 0
        With ``k > 0`` the orders follow the path of ``noise_moves`` too: at each point the
        occupied slots' utilities get a pCN move and ``k`` random-walk item sweeps of a
        private :class:`~pymc_crp.UtilityMetropolis` (tuned towards acceptance 0.3 while PyMC
        tunes), and the empty slots of the path's pool keep their utilities
        (:mod:`pymc_crp.step_methods.noise_labels`). Off by default: on 1,000 simulated
        rankings ``noise_item_sweeps=1`` kept the four chains in one partition on the seed
        where the default's split (entropy R-hat 1.63 against 1.025), at 5.3 times the time
        per iteration, with less ESS per second on the seeds where they agree and no gain on
        the Albury ballots; with ``noise_all_slots=True`` the ballots' ESS per draw rose 2--7
        times at 9.6 times the time (``benchmarks/README.md``).
    noise_all_slots : bool, default False
        The pool of slots that the labels may take along the path holds every slot (births
        with their whole prior mass, at a cost per point that grows with ``max_clusters``)
        instead of the most clusters seen while tuning plus ``n_aux`` (each empty slot of
        the pool has ``1/(L - K)`` of the birth mass).
    sweeps : int, default 8
        Rounds of the label moves (merge--split proposals and the sweep) per step, the
        occupied slots' utilities held within each group of rounds (``utility_moves``). More
        rounds keep the chains of the annealed start in one partition more often (eight held
        one partition on 5 of 6 seeded runs of 1,000 simulated rankings, at 1.6--1.8 times
        the time of three; ``benchmarks/README.md``).
    tune_sweeps : int, optional
        Rounds per step while PyMC tunes (default ``sweeps``). The partition a chain settles
        in is decided during the annealed start (``anneal``); more rounds there cost tuning
        time only, and the draws kept use ``sweeps`` rounds, so they are exact whatever this
        is.
    utility_moves : int, default 1
        Steps of a private :class:`~pymc_crp.UtilityMetropolis` (its defaults) on the slot
        utilities between the rounds of label moves, which are split into ``utility_moves +
        1`` groups (an iteration with PyMC's own utility step then alternates labels and
        utilities twice). The labels and the occupied slots' utilities are strongly coupled:
        one move between two groups of four rounds raised the bulk ESS per second of the label
        summaries and ``τ`` 1.34--1.95 times at 1.2 times the time per iteration
        (``benchmarks/README.md``). 0 makes all rounds at the utilities the step starts from.
    weight_moves : int, optional
        Moves per round, made first, of the split of two occupied clusters' lists through
        their un-collapsed weight (:mod:`pymc_crp.core.pair_weights`: the pair's weight drawn
        given the labels, a slice-sampling update of it with the pair's labels summed out, the
        labels drawn given it), the pairs chosen most often where lists fit both clusters
        best. One move redistributes the lists that fit both clusters about equally, which
        the one-list-at-a-time sweep moves by a random walk against the prior's pull towards
        the larger cluster. Default: 5 for ``WEIGHT_MOVES_FROM`` (500) lists or more, else 0.
        On 5,000 simulated rankings they doubled the bulk ESS of the partition entropy at the
        same time per iteration; on 1,000, ESS per second 0.90--1.16 times with the last
        R-hat above 1.01 brought to 1.007; on the demo's 15 lists they cost a quarter of the
        time per iteration, where the sweep already redraws a share of a few lists at once;
        on 1,000 real ballots in about 36 small clusters they cost 15--17 % of the time per
        iteration without a consistent gain (``benchmarks/README.md``).
    weight_moves_mean_size : float, default 0
        A round makes its weight moves only when its ``K`` occupied clusters hold at least this
        many lists on average (``N >= weight_moves_mean_size K``; the moves keep ``K``, so the
        rule keeps them exact); 0 makes them in every round. They pay where clusters are large
        and only cost where they are small, but 50 (which spares the Albury ballots' and the
        heterogeneous rankings' small clusters 7 and 6 % of the time per iteration) lowered the
        bulk ESS of the entropy and the log-likelihood on two seeds of 1,000 planted rankings
        (``benchmarks/README.md``), so it is not the default.
    marginal_utility_moves : int, optional
        Proposals per anchored slot of the utility moves with the labels of the movable lists
        summed out, made after the rounds
        (:mod:`pymc_crp.step_methods.po_marginal_utilities`); 0 makes none. Default: 3 with
        an equicorrelated normal slot prior (as in
        :func:`~pymc_crp.models.clustered_partial_orders`), else 0. On 1,000 simulated
        rankings where two of three seeded runs of 4 chains held one cluster's order with
        and without one relation (the largest cluster's R-hat 1.21 and 1.36), they brought all
        three to R-hat <= 1.014 at 1.08-1.14 times the time per iteration
        (``benchmarks/README.md``).
    marginal_coordinates : int, default 0
        Exact Gibbs draws per step of one utility of an anchored slot with the movable lists'
        labels summed out, made after those proposals (a mixture of truncated normals over
        the intervals between the other items' values; one likelihood column per distinct
        order it could take); 0 makes none.
    anchor_fraction : float, default 0.3
        The probability that a list is an anchor (its label held) in those moves.
    marginal_scale : float, default 0.2
        The initial scale ``b`` of their proposals (adapted while PyMC tunes).
    sweep : bool, default True
        Make the Algorithm 8 sweep (``False`` leaves only the merge--split moves, which are
        irreducible on their own; for tests).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    The attribute ``likelihood_temperature`` ``λ`` (default 1; set by
    :class:`~pymc_crp.ReplicaExchange`) makes the moves target the prior times the lists'
    likelihood to the power ``λ``: every log-likelihood column (Algorithm 8 weights and the
    merge--split ratios and allocations) is multiplied by ``λ`` (and by the annealing ``β``).

    Stats: ``n_clusters`` (occupied slots after the sweep), ``weight_moved`` (lists that changed
    cluster in the weight moves), ``merges`` and ``splits``
    (accepted merge--split proposals), ``tune_merges`` (tuning-phase merges made),
    ``marginal_accepted`` (the fraction of this step's proposals with the labels summed out
    that were accepted; NaN when none was made), ``marginal_relabelled`` (lists whose label
    those moves changed), ``coordinate_order_changes`` (coordinate draws that changed a
    slot's order) and ``slots_full`` (a new cluster had prior mass at
    some visit, or a split was proposed, but every slot was occupied: the truncation at
    ``max_clusters`` bites; a warning says to increase it).
    """

    name = "po_label_gibbs"
    default_blocked = True  # the labels and their concentration are one block
    _state_class = PartialOrderLabelState
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "merges": (np.int64, []),
        "splits": (np.int64, []),
        "informed_merges": (np.int64, []),
        "informed_splits": (np.int64, []),
        "annealed_merges": (np.int64, []),
        "tune_merges": (np.int64, []),
        "weight_moved": (np.int64, []),
        "annealed_splits": (np.int64, []),
        "slots_full": (bool, []),
        "noise_path_accepted": (np.float64, []),
        "marginal_accepted": (np.float64, []),
        "marginal_relabelled": (np.int64, []),
        "coordinate_order_changes": (np.int64, []),
        "warning": (SamplerWarning, None),
    }
    likelihood_temperature: float = 1.0

    def __new__(cls, *args, **kwargs):
        """The concentration alone (``pm.sample`` assigns it to this class when the labels have
        a step given by the user) gets :class:`~pymc_crp.ConcentrationGivenClusters`, the exact
        draw of ``θ | K``."""
        alone = concentration_alone_step(kwargs.get("vars", args[0] if args else None), kwargs)
        return alone if alone is not None else super().__new__(cls, *args, **kwargs)

    def __init__(
        self,
        vars,
        *,
        n_aux: int = 3,
        reuse_auxiliaries: bool | None = None,
        merge_split: int = 20,
        informed_split_merge: int = 0,
        annealed_split_merge: float | None = None,
        tune_annealed_split_merge: float | None = None,
        annealed_levels: int = 50,
        tune_merges: int | None = None,
        sweep: bool = True,
        sweeps: int = 8,
        tune_sweeps: int | None = None,
        utility_moves: int = 1,
        weight_moves: int | None = None,
        weight_moves_mean_size: float = WEIGHT_MOVES_MEAN_SIZE,
        anneal: int | None = None,
        noise_moves: int = 0,
        noise_path: int = 10,
        noise_scale: float = 0.3,
        noise_item_sweeps: int = 0,
        noise_all_slots: bool = False,
        marginal_utility_moves: int | None = None,
        marginal_coordinates: int = 0,
        anchor_fraction: float = 0.3,
        marginal_scale: float = 0.2,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
    ):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        value_var, with_concentration = labels_and_concentration(model, value_vars)
        label_rv = model.values_to_rvs[value_var]
        self._concentration = None  # or the concentration, integrated out of the label moves
        if with_concentration:
            self._concentration = IntegratedConcentrationTerm(model, label_rv, compile_kwargs)
        self.n_aux = positive_int(n_aux, "n_aux")
        self.merge_split = integer_at_least(merge_split, "merge_split")
        terms = dependent_terms(model, value_var, term_logps(model), exclude=(label_rv,))
        if len(terms) != 1 or not isinstance(terms[0].owner.op, PartialOrderListsRV):
            raise ValueError(
                f"the labels {label_rv.name} must have a single PartialOrderLists term as their "
                f"only label-dependent term, got {[t.name for t in terms]}"
            )
        (lists_rv,) = terms
        utility_rv = slot_variable(model, lists_rv, label_rv, "PartialOrderLabelGibbs")
        if model.rvs_to_transforms.get(utility_rv) is not None:
            raise ValueError(f"{utility_rv.name} must be untransformed")
        check_same_slot_prior(utility_rv, "PartialOrderLabelGibbs")
        utility_value = model.rvs_to_values[utility_rv]
        self.vars = list(value_vars)
        self.rng = get_random_generator(rng)
        self.tune = True
        self._short_anneal = None
        self._iteration = 0
        self._beta = 1.0
        self.sweep = bool(sweep)
        self.sweeps = positive_int(sweeps, "sweeps", type_error=ValueError)
        self.tune_sweeps = positive_int(
            self.sweeps if tune_sweeps is None else tune_sweeps, "tune_sweeps"
        )
        self.utility_moves = integer_at_least(utility_moves, "utility_moves")
        self._between_utilities = None
        if self.utility_moves:
            self._between_utilities = UtilityMetropolis(
                [utility_rv], model=model, compile_kwargs=compile_kwargs
            )
        self._label_name = value_var.name
        self._utility_name = utility_value.name
        self._term = _ListTerm(model, lists_rv, utility_value, compile_kwargs)
        direct = self._term.direct is not None  # or the lists read scores of the slots
        if not direct:
            point = model.initial_point(random_seed=0) if initial_point is None else initial_point
            self._term.enable_slot_scores(model, point, np.random.default_rng(0), compile_kwargs)
        self.reuse_auxiliaries = reuse_auxiliaries_option(reuse_auxiliaries, self._term.lists)
        if anneal is None:
            n_items = utility_rv.type.shape[1] or int(utility_rv.shape[1].eval())
            anneal = default_anneal(self._term.lists, n_items)
        self.anneal = integer_at_least(anneal, "anneal", type_error=ValueError)
        if weight_moves is None:
            many = self._term.lists.shape[0] >= WEIGHT_MOVES_FROM
            weight_moves = WEIGHT_MOVES if many else 0
        self.weight_moves = integer_at_least(weight_moves, "weight_moves")
        self.weight_moves_mean_size = nonnegative_number(
            weight_moves_mean_size, "weight_moves_mean_size"
        )
        crp = CRPParams.from_rv(label_rv)
        self.n_slots = int(pt.get_underlying_scalar_constant_value(crp.max_clusters))
        self._prior_params_fn = compile_point_function(
            model,
            [
                pt.cast(p, "float64")
                for p in model.replace_rvs_by_values([crp.concentration, crp.discount])
            ],
            compile_kwargs,
        )
        self._draw_fn, self._draw_rng = prior_draw_function(
            model, [utility_rv], compile_kwargs, batch=-(-POOL_DRAWS // self.n_slots)
        )
        self._warned = False
        self._annealed_check(
            annealed_split_merge, tune_annealed_split_merge, annealed_levels,
            direct and isinstance(utility_rv.owner.op, EquicorrelatedNormalRV),
            self._term.lists.shape[0], tune_merges,
        )  # fmt: skip
        self._annealed_rate = self.annealed_split_merge  # the rate of the present step
        self._merge_now = False  # tuning-phase merges in the present step
        if marginal_utility_moves is None:
            equicorrelated = isinstance(utility_rv.owner.op, EquicorrelatedNormalRV)
            marginal_utility_moves = MARGINAL_UTILITY_MOVES if equicorrelated else 0
        self._marginal_setup(
            marginal_utility_moves, anchor_fraction, marginal_scale, marginal_coordinates
        )
        self._informed_setup(
            model, utility_rv, compile_kwargs, {"informed_split_merge": informed_split_merge},
            {
                "annealed_split_merge": self.annealed_split_merge,
                "tune_annealed_split_merge": self.tune_annealed_split_merge,
                "tune_merges": self.tune_merges,
                "marginal_utility_moves": self.marginal_utility_moves,
                "marginal_coordinates": self.marginal_coordinates,
            },
        )  # fmt: skip
        if not direct:
            refuse_for_scores(
                lists_rv.name,
                informed_split_merge=self.informed_split_merge,
                annealed_split_merge=self.annealed_split_merge,
                tune_annealed_split_merge=self.tune_annealed_split_merge,
                tune_merges=self.tune_merges,
                marginal_coordinates=self.marginal_coordinates,
                noise_moves=noise_moves,
            )
        self.noise_all_slots = bool(noise_all_slots)
        self._noise_setup(
            model, lists_rv, noise_moves, noise_path, noise_scale, compile_kwargs,
            utility_rv, noise_item_sweeps,
        )  # fmt: skip
        if not (sweep or merge_split or self.informed_split_merge or self.annealed_split_merge
                or self.tune_annealed_split_merge or noise_moves):  # fmt: skip
            raise ValueError(
                "sweep=False needs merge_split, informed_split_merge, annealed_split_merge or "
                "noise_moves > 0 (no label move is left)"
            )

    def step(self, point):
        point = dict(point)
        labels = np.array(point[self._label_name], dtype=np.int64, copy=True)
        utilities = np.array(point[self._utility_name], dtype=np.float64, copy=True)
        theta, discount = (float(v) for v in self._prior_params_fn(point))
        self._term.bind(point)  # e.g. the covariate effects of the lists' scores
        if self._concentration is None:
            new_weights = new_cluster_weights(theta, discount, self.n_slots)
        else:  # θ integrated out: G(K+1)/G(K), and θ drawn given K after the label moves
            new_weights = self._concentration.new_cluster_weights()
        self._beta = float(self.likelihood_temperature)  # tempering, times the annealing
        self._annealed_rate = self.annealed_split_merge
        self._merge_now = False  # the tuning-phase merges of this step
        if self.tune:
            t = self._iteration
            self._merge_now = (
                bool(self.tune_merges) and t >= max(self.anneal, 1) and (t % TUNE_MERGES_EVERY == 0)
            )
            factor = anneal_factor(self._iteration, self.anneal) if self.anneal else 1.0
            self._beta *= factor
            self._iteration += 1
            self._annealed_rate = self.tune_annealed_split_merge * (factor >= ANNEALED_FROM)
        noise_accept = self._noise_moves(point, labels, utilities, new_weights, discount)
        noise = float(self._term.noise_fn(point))
        rounds = self.tune_sweeps if self.tune else self.sweeps
        groups = [g.size for g in np.array_split(np.arange(rounds), self.utility_moves + 1)]
        # merges, splits, refused, informed merges and splits, full, annealed merges and splits,
        # tuning-phase merges, lists moved by the weight moves
        tally = np.zeros(10, dtype=np.int64)
        aux = None  # the sweeps' auxiliaries (reused from round to round if reuse_auxiliaries)
        for group, n_rounds in enumerate(g for g in groups if g):
            if group:  # the utilities' update between groups of rounds (an exact kernel)
                point[self._label_name] = labels
                point[self._utility_name] = utilities
                utilities = self._update_utilities(point)
            sweep, aux = self._label_rounds(
                point, labels, utilities, noise, new_weights, discount, n_rounds, tally,
                group == 0, aux,
            )  # fmt: skip
        marginal = np.zeros(4, dtype=np.int64)
        if self.marginal_utility_moves or self.marginal_coordinates:
            marginal = self._marginal_moves(point, labels, utilities, noise, discount)
        merges, splits, refused, informed_merges, informed_splits, n_full = (
            int(v) for v in tally[:6]
        )
        point[self._label_name] = labels
        point[self._utility_name] = utilities
        n_clusters = int(np.count_nonzero(sweep.counts))
        if self._concentration is not None:
            point[self._concentration.value_name] = self._concentration.draw_value(
                n_clusters, self.rng
            )
        n_full += refused
        stats = {
            "n_clusters": n_clusters,
            "merges": merges,
            "splits": splits,
            "informed_merges": informed_merges,
            "informed_splits": informed_splits,
            "annealed_merges": int(tally[6]),
            "annealed_splits": int(tally[7]),
            "tune_merges": int(tally[8]),
            "weight_moved": int(tally[9]),
            "slots_full": n_full > 0,
            "noise_path_accepted": noise_accept,
            "marginal_accepted": marginal[1] / marginal[0] if marginal[0] else np.nan,
            "marginal_relabelled": int(marginal[2]),
            "coordinate_order_changes": int(marginal[3]),
            "warning": None,
        }
        if self._short_anneal is not None:
            message, self._short_anneal = self._short_anneal, None
            stats["warning"] = SamplerWarning(WarningType.BAD_PARAMS, message, "warning")
        elif n_full > 0 and not self._warned and not self.tune:
            self._warned = True
            stats["warning"] = truncation_warning(
                "PartialOrderLabelGibbs", self.n_slots, self._label_name
            )
        return point, [stats]

    def _update_utilities(self, point) -> np.ndarray:
        """One step of the private :class:`~pymc_crp.UtilityMetropolis` between groups of
        rounds (on the point, with this step's generator and likelihood temperature); the new
        slot utilities (a copy)."""
        kernel = self._between_utilities
        kernel.rng, kernel.likelihood_temperature = self.rng, self.likelihood_temperature
        kernel.tune = self.tune
        point.update(kernel.step(point)[0])
        return np.array(point[self._utility_name], dtype=np.float64, copy=True)

    def reset_tuning(self):
        self._iteration = 0

    def stop_tuning(self):
        """End tuning; the next step warns if it ended before the annealed start reached
        ``β = 1``."""
        if self.tune and 0 < self._iteration < self.anneal:
            self._short_anneal = (
                f"PartialOrderLabelGibbs: tuning ended after {self._iteration} iterations, "
                f"before the annealed start (anneal={self.anneal}) was complete, so the chains "
                "may still be far apart; use tune >= anneal + 300 or a smaller anneal"
            )
        super().stop_tuning()

    @staticmethod
    def competence(var, has_grad=None):
        """IDEAL for the CRP labels of :func:`~pymc_crp.models.clustered_partial_orders`, and
        for their concentration where it can be integrated out of the label moves."""
        if isinstance(get_role(var), LabelsRole):
            return Competence.IDEAL
        return Competence.IDEAL if claims_concentration(var) else Competence.INCOMPATIBLE
