"""pymc_crp: Bayesian clustering with partition priors and partial-order list likelihoods in PyMC.

Importing the package registers its step methods in ``pymc.STEP_METHODS`` so that
``pm.sample`` assigns them automatically.
"""

import pymc as pm

from pymc_crp import datasets, distributed, models, posets, sbc
from pymc_crp._blas import configure_pytensor_blas
from pymc_crp.core.partition_math import relabel_by_appearance
from pymc_crp.distributions import (
    CRP,
    BatchedMvNormal,
    DirichletMultinomialPartition,
    EquicorrelatedNormal,
    InverseWishart,
    PartialOrderLists,
)
from pymc_crp.posterior import (
    ConsensusOrder,
    adjusted_rand_index,
    chain_agreement,
    cluster_summary,
    consensus_order,
    expected_loss,
    membership_probabilities,
    partition_stats,
    point_estimate_partition,
    posterior_similarity,
    relabel,
    relation_probabilities,
    similarity_rhat,
    threshold_order,
)
from pymc_crp.step_methods import (
    NORMAL_MIXTURE_STEPS,
    ConcentrationGibbs,
    ConcentrationGivenClusters,
    ConcentrationMetropolis,
    ConjugateCRPGibbs,
    CovariateShiftMetropolis,
    CRPGibbs,
    DirichletWeightsGibbs,
    HyperparameterMetropolis,
    LatentNormalGibbs,
    MixtureCRPGibbs,
    MixtureLabelGibbs,
    NonCentredHyperparameterMetropolis,
    NormalInverseWishartGibbs,
    PartialOrderLabelGibbs,
    ReplicaExchange,
    SlotSliceSampler,
    UtilityMeanGibbs,
    UtilityMetropolis,
)

# Before anything compiles: without a BLAS of its own, PyTensor links to scipy-openblas32.
configure_pytensor_blas()
for _step in (
    CRPGibbs,
    ConcentrationGibbs,
    ConcentrationMetropolis,
    UtilityMetropolis,
    UtilityMeanGibbs,
    HyperparameterMetropolis,
    NonCentredHyperparameterMetropolis,
    CovariateShiftMetropolis,
):
    if _step not in pm.STEP_METHODS:
        pm.STEP_METHODS.append(_step)
# The conjugate steps of the normal mixture go first: they are IDEAL only for the variables of
# models built by ``models.measurement_error_mixture`` and must win the ties with NUTS and
# CategoricalGibbsMetropolis (``pm.sample`` keeps the first of equally competent methods).
for _step in reversed(NORMAL_MIXTURE_STEPS):
    if _step not in pm.STEP_METHODS:
        pm.STEP_METHODS.insert(0, _step)
# The partial-order label step is IDEAL only for the labels of models built by
# ``models.clustered_partial_orders``; it must win the tie with CRPGibbs.
if PartialOrderLabelGibbs not in pm.STEP_METHODS:
    pm.STEP_METHODS.insert(0, PartialOrderLabelGibbs)

# Exact conjugate slot updates (and collapsed labels) rank before CRPGibbs and NUTS: they are
# IDEAL only where the graph shows a conjugate pair, and ``pm.sample`` keeps the first of
# equally competent methods.
for _step in (SlotSliceSampler, ConjugateCRPGibbs):
    if _step not in pm.STEP_METHODS:
        pm.STEP_METHODS.insert(0, _step)

__version__ = "0.1.0"

_PLOTS = ("plot_membership", "plot_n_clusters", "plot_partial_order", "plot_similarity")


def __getattr__(name):
    """Plots are imported on first use, so ``import pymc_crp`` does not import pyplot."""
    if name in _PLOTS or name == "plots":
        import importlib

        plots = importlib.import_module("pymc_crp.posterior.plots")
        return plots if name == "plots" else getattr(plots, name)
    raise AttributeError(f"module 'pymc_crp' has no attribute {name!r}")


__all__ = [
    *_PLOTS,
    "ConsensusOrder",
    "adjusted_rand_index",
    "chain_agreement",
    "cluster_summary",
    "consensus_order",
    "expected_loss",
    "membership_probabilities",
    "partition_stats",
    "point_estimate_partition",
    "posterior_similarity",
    "relabel",
    "relation_probabilities",
    "similarity_rhat",
    "threshold_order",
    "CRP",
    "BatchedMvNormal",
    "EquicorrelatedNormal",
    "HyperparameterMetropolis",
    "NonCentredHyperparameterMetropolis",
    "PartialOrderLabelGibbs",
    "PartialOrderLists",
    "ReplicaExchange",
    "SlotSliceSampler",
    "UtilityMeanGibbs",
    "UtilityMetropolis",
    "datasets",
    "distributed",
    "sbc",
    "models",
    "posets",
    "CRPGibbs",
    "CovariateShiftMetropolis",
    "ConjugateCRPGibbs",
    "ConcentrationGibbs",
    "ConcentrationGivenClusters",
    "ConcentrationMetropolis",
    "DirichletMultinomialPartition",
    "DirichletWeightsGibbs",
    "InverseWishart",
    "LatentNormalGibbs",
    "MixtureCRPGibbs",
    "MixtureLabelGibbs",
    "NormalInverseWishartGibbs",
    "relabel_by_appearance",
]
