"""Step methods that ``pm.sample`` assigns to the variables of this package's models."""

from pymc_crp.step_methods.collapsed import ConjugateCRPGibbs
from pymc_crp.step_methods.concentration import ConcentrationGibbs, ConcentrationMetropolis
from pymc_crp.step_methods.concentration_given_clusters import ConcentrationGivenClusters
from pymc_crp.step_methods.covariate_shift import CovariateShiftMetropolis
from pymc_crp.step_methods.crp_gibbs import CRPGibbs
from pymc_crp.step_methods.hyperparameter import HyperparameterMetropolis
from pymc_crp.step_methods.noncentred import NonCentredHyperparameterMetropolis
from pymc_crp.step_methods.normal_gibbs import (
    NORMAL_MIXTURE_STEPS,
    DirichletWeightsGibbs,
    LatentNormalGibbs,
    MixtureCRPGibbs,
    MixtureLabelGibbs,
    NormalInverseWishartGibbs,
)
from pymc_crp.step_methods.po_labels import PartialOrderLabelGibbs
from pymc_crp.step_methods.replica_exchange import ReplicaExchange
from pymc_crp.step_methods.scalar_metropolis import ScalarMetropolis
from pymc_crp.step_methods.slot_slice import SlotSliceSampler
from pymc_crp.step_methods.utility_mean import UtilityMeanGibbs
from pymc_crp.step_methods.utility_metropolis import UtilityMetropolis

__all__ = [
    "NORMAL_MIXTURE_STEPS",
    "CRPGibbs",
    "ConjugateCRPGibbs",
    "CovariateShiftMetropolis",
    "DirichletWeightsGibbs",
    "LatentNormalGibbs",
    "MixtureCRPGibbs",
    "MixtureLabelGibbs",
    "NormalInverseWishartGibbs",
    "ConcentrationGibbs",
    "ConcentrationGivenClusters",
    "ConcentrationMetropolis",
    "HyperparameterMetropolis",
    "NonCentredHyperparameterMetropolis",
    "ScalarMetropolis",
    "SlotSliceSampler",
    "PartialOrderLabelGibbs",
    "ReplicaExchange",
    "UtilityMeanGibbs",
    "UtilityMetropolis",
]
