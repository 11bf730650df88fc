"""PyMC distributions: partition priors, partial-order lists and their building blocks.

* :class:`CRP`, :class:`DirichletMultinomialPartition` — priors over label vectors.
* :class:`PartialOrderLists` — ranked lists as noisy linear extensions of partial orders.
* :class:`EquicorrelatedNormal` — exchangeable normal utilities.
* :class:`InverseWishart`, :class:`BatchedMvNormal` — covariance prior and a batched
  multivariate normal for small dimensions.

Each defines a PyTensor ``RandomVariable`` and its PyMC ``Distribution``; the numerics they
call live in :mod:`pymc_crp.core`.
"""

from pymc_crp.distributions.batched_mvnormal import BatchedMvNormal
from pymc_crp.distributions.equicorrelated_normal import EquicorrelatedNormal
from pymc_crp.distributions.inverse_wishart import InverseWishart
from pymc_crp.distributions.partial_order_lists import PartialOrderLists
from pymc_crp.distributions.partitions import CRP, DirichletMultinomialPartition

__all__ = [
    "CRP",
    "BatchedMvNormal",
    "DirichletMultinomialPartition",
    "EquicorrelatedNormal",
    "InverseWishart",
    "PartialOrderLists",
]
