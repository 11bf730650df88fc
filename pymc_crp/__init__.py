"""pymc_crp: Bayesian clustering with partition priors and partial-order list likelihoods in PyMC.

Importing the package registers its step methods in ``pymc.STEP_METHODS`` so that
``pm.sample`` assigns them automatically.
"""

import pymc as pm

from pymc_crp.partition_math import relabel_by_appearance
from pymc_crp.partitions import CRP, DirichletMultinomialPartition
from pymc_crp.step_methods import ConcentrationGibbs, ConcentrationMetropolis, CRPGibbs

for _step in (CRPGibbs, ConcentrationGibbs, ConcentrationMetropolis):
    if _step not in pm.STEP_METHODS:
        pm.STEP_METHODS.append(_step)

__version__ = "0.1.0"

__all__ = [
    "CRP",
    "CRPGibbs",
    "ConcentrationGibbs",
    "ConcentrationMetropolis",
    "DirichletMultinomialPartition",
    "relabel_by_appearance",
]
