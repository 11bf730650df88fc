"""pymc_crp: Bayesian clustering with partition priors and partial-order list likelihoods in PyMC.

Importing the package registers its step methods in ``pymc.STEP_METHODS`` so that
``pm.sample`` assigns them automatically.
"""

import pymc as pm

from pymc_crp import datasets, models
from pymc_crp.hpo import EquicorrelatedNormal
from pymc_crp.lists import PartialOrderLists
from pymc_crp.partition_math import relabel_by_appearance
from pymc_crp.partitions import CRP, DirichletMultinomialPartition
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

__all__ = [
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
