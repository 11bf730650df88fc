"""Random-walk Metropolis for the scalar hyperparameters of the partial-order models.

:class:`HyperparameterMetropolis` is the :class:`~pymc_crp.step_methods.scalar_metropolis.
ScalarMetropolis` random walk on the unconstrained value of ``ρ``, ``τ`` or ``p``, targeting
the parameter's prior times its children's densities; :func:`pymc.sample` assigns it to the
variables that the builders of :mod:`pymc_crp.models` record as hyperparameters.
"""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_crp.roles import HyperparameterRole, get_role
from pymc_crp.step_methods.scalar_metropolis import ScalarMetropolis

__all__ = ["HyperparameterMetropolis"]


class HyperparameterMetropolis(ScalarMetropolis):
    """Random-walk Metropolis for the scalar hyperparameters of the models built by
    :mod:`pymc_crp.models` (``ρ``, ``τ``, ``p``), assigned automatically.

    Defaults to the random walk on the unconstrained (transformed) scale. Sample stats
    ``hyperparameter_accepted`` and ``hyperparameter_scale``.
    """

    name = "hyperparameter_metropolis"
    stats_prefix = "hyperparameter_"
    stats_dtypes_shapes = {
        "hyperparameter_accepted": (bool, []),
        "hyperparameter_scale": (np.float64, []),
    }

    def __init__(self, vars, *, proposal: str = "transformed", scale: float = 0.5, **kwargs):
        super().__init__(vars, proposal=proposal, scale=scale, **kwargs)

    @staticmethod
    def competence(var, has_grad=None):
        role = get_role(var)
        if not isinstance(role, HyperparameterRole):
            return Competence.INCOMPATIBLE
        # rho and tau of the utility prior get NonCentredHyperparameterMetropolis.
        return Competence.COMPATIBLE if role.noncentred is not None else Competence.IDEAL
