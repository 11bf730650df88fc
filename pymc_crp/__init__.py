"""pymc_crp: Bayesian clustering with partition priors and partial-order list likelihoods in PyMC.

Importing the package registers its step methods in ``pymc.STEP_METHODS`` so that
``pm.sample`` assigns them automatically.
"""

import pymc as pm

from pymc_crp import datasets, models
from pymc_crp.consensus import (
    ConsensusOrder,
    consensus_order,
    relation_probabilities,
    threshold_order,
)
from pymc_crp.diagnostics import cluster_summary, partition_stats, posterior_similarity
from pymc_crp.hpo import EquicorrelatedNormal
from pymc_crp.lists import PartialOrderLists
from pymc_crp.partition_math import relabel_by_appearance
from pymc_crp.partitions import CRP, DirichletMultinomialPartition
from pymc_crp.point_estimate import expected_loss, point_estimate_partition
from pymc_crp.relabel import membership_probabilities, relabel
from pymc_crp.step_methods import (
    ConcentrationGibbs,
    ConcentrationMetropolis,
    CRPGibbs,
    HyperparameterMetropolis,
    UtilityMeanGibbs,
    UtilityMetropolis,
)

for _step in (
    CRPGibbs,
    ConcentrationGibbs,
    ConcentrationMetropolis,
    UtilityMetropolis,
    UtilityMeanGibbs,
    HyperparameterMetropolis,
):
    if _step not in pm.STEP_METHODS:
        pm.STEP_METHODS.append(_step)

__version__ = "0.1.0"

_PLOTS = ("plot_membership", "plot_n_clusters", "plot_partial_order", "plot_similarity")


def __getattr__(name):
    """Plots are imported on first use, so ``import pymc_crp`` does not import pyplot."""
    if name in _PLOTS or name == "plots":
        import importlib

        plots = importlib.import_module("pymc_crp.plots")
        return plots if name == "plots" else getattr(plots, name)
    raise AttributeError(f"module 'pymc_crp' has no attribute {name!r}")


__all__ = [
    *_PLOTS,
    "ConsensusOrder",
    "cluster_summary",
    "consensus_order",
    "expected_loss",
    "membership_probabilities",
    "partition_stats",
    "point_estimate_partition",
    "posterior_similarity",
    "relabel",
    "relation_probabilities",
    "threshold_order",
    "CRP",
    "EquicorrelatedNormal",
    "HyperparameterMetropolis",
    "PartialOrderLists",
    "UtilityMeanGibbs",
    "UtilityMetropolis",
    "datasets",
    "models",
    "CRPGibbs",
    "ConcentrationGibbs",
    "ConcentrationMetropolis",
    "DirichletMultinomialPartition",
    "relabel_by_appearance",
]
