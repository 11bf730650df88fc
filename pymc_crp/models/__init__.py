"""Ready-made PyMC models: partial orders from ranked lists, and normal mixtures.

* :func:`partial_order` and :func:`clustered_partial_orders` (:mod:`.partial_orders`) — lists
  as noisy linear extensions of one latent partial order, or of a mixture of them.
* :func:`measurement_error_mixture` (:mod:`.normal_mixture`) — normal mixtures with known
  measurement error.

The builders record the roles of their variables (:mod:`pymc_crp.roles`), so that
:func:`pymc.sample` assigns the package's step methods to them.
"""

from pymc_crp.models.normal_mixture import default_mixture_prior, measurement_error_mixture
from pymc_crp.models.partial_orders import (
    clustered_partial_orders,
    default_max_clusters,
    partial_order,
)

__all__ = [
    "clustered_partial_orders",
    "default_max_clusters",
    "default_mixture_prior",
    "measurement_error_mixture",
    "partial_order",
]
