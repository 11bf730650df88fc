"""pymc_crp: Bayesian clustering with partition priors and partial-order list likelihoods in PyMC.

Importing the package registers its step methods in ``pymc.STEP_METHODS`` so that
``pm.sample`` assigns them automatically.
"""

from pymc_crp.partition_math import relabel_by_appearance
from pymc_crp.partitions import CRP, DirichletMultinomialPartition

__version__ = "0.1.0"

__all__ = [
    "CRP",
    "DirichletMultinomialPartition",
    "relabel_by_appearance",
]
