"""Analysis of posterior draws (ArviZ and xarray; no step methods).

Label draws (:mod:`.draws`), label-invariant diagnostics (:mod:`.diagnostics`), the agreement
of chains' partitions (:mod:`.agreement`), point estimates of the partition
(:mod:`.point_estimate`), relabelling of slot parameters (:mod:`.relabel`), consensus partial
orders (:mod:`.consensus`) and plots (:mod:`.plots`, imported on first use: it imports
matplotlib).
"""

from pymc_crp.posterior.agreement import chain_agreement, similarity_rhat
from pymc_crp.posterior.consensus import (
    ConsensusOrder,
    consensus_order,
    relation_probabilities,
    threshold_order,
)
from pymc_crp.posterior.diagnostics import (
    adjusted_rand_index,
    cluster_summary,
    partition_stats,
    posterior_similarity,
)
from pymc_crp.posterior.draws import canonical_draws, label_draws
from pymc_crp.posterior.point_estimate import expected_loss, point_estimate_partition
from pymc_crp.posterior.relabel import membership_probabilities, relabel

__all__ = [
    "ConsensusOrder",
    "adjusted_rand_index",
    "canonical_draws",
    "chain_agreement",
    "cluster_summary",
    "consensus_order",
    "expected_loss",
    "label_draws",
    "membership_probabilities",
    "partition_stats",
    "point_estimate_partition",
    "posterior_similarity",
    "relabel",
    "relation_probabilities",
    "similarity_rhat",
    "threshold_order",
]
