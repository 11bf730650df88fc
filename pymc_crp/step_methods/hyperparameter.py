"""Random-walk Metropolis for the scalar hyperparameters of the partial-order models.

:class:`HyperparameterMetropolis` is the :class:`~pymc_crp.step_methods.scalar_metropolis.
ScalarMetropolis` random walk on the unconstrained value of ``ρ``, ``τ`` or ``p``, targeting
the parameter's prior times its children's densities; :func:`pymc.sample` assigns it to the
variables that the builders of :mod:`pymc_crp.models` record as hyperparameters.
"""

from __future__ import annotations

import numpy as np
from pymc.model import modelcontext
from pymc.step_methods.compound import Competence

from pymc_crp.core.checks import positive_int
from pymc_crp.roles import HyperparameterRole, get_role
from pymc_crp.step_methods.list_terms import model_list_entries, repeats_for_entries
from pymc_crp.step_methods.scalar_metropolis import ScalarMetropolis

__all__ = ["HyperparameterMetropolis"]

_MOST_REPEATS = 3  # updates per step on the smallest data sets
NOISE_REPEATS = 5
"""Updates per step of a parameter whose children are observed lists (the noise ``p``)."""


class HyperparameterMetropolis(ScalarMetropolis):
    """Random-walk Metropolis for the scalar hyperparameters of the models built by
    :mod:`pymc_crp.models` (``ρ``, ``τ``, ``p``), assigned automatically.

    Defaults to the random walk on the unconstrained (transformed) scale. Sample stats
    ``hyperparameter_accepted`` and ``hyperparameter_scale`` (of the last update of a step).

    Parameters
    ----------
    vars, proposal, scale
        As for :class:`~pymc_crp.step_methods.scalar_metropolis.ScalarMetropolis`.
    repeats : int, optional
        Updates per step. Default 5 (:data:`NOISE_REPEATS`) for a parameter whose children
        are observed lists (the noise ``p``): an update evaluates the lists once (the
        updates of a step share the evaluation at the present value), a small part of an
        iteration whatever the data size (0.65 ms of 69 ms on 1,000 simulated rankings), and
        on those rankings five updates doubled the bulk ESS of ``p`` (4 chains x (1,000 +
        1,000), four seeds: 918--1,075 against 380--499) for 1.03--1.05 times the time of
        one update in the same runs, before the updates shared that evaluation
        (``benchmarks/README.md``). Otherwise ``min(3, max(1, 2000 // E))`` for ``E``
        entries of the model's observed lists (one without lists, and from 1,001 entries
        on): on small data sets an update is cheap.
        (:class:`NonCentredHyperparameterMetropolis` makes ``repeats`` centred moves in each
        update.)
    **kwargs
        As for :class:`~pymc_crp.step_methods.scalar_metropolis.ScalarMetropolis`.
    """

    name = "hyperparameter_metropolis"
    stats_prefix = "hyperparameter_"
    stats_dtypes_shapes = {
        "hyperparameter_accepted": (bool, []),
        "hyperparameter_scale": (np.float64, []),
    }

    def __init__(
        self,
        vars,
        *,
        proposal: str = "transformed",
        scale: float = 0.5,
        repeats: int | None = None,
        **kwargs,
    ):
        if repeats is not None:
            positive_int(repeats, "repeats")
        super().__init__(vars, proposal=proposal, scale=scale, **kwargs)
        if repeats is None and self.reads_lists:
            repeats = NOISE_REPEATS
        elif repeats is None:
            model = modelcontext(kwargs.get("model"))
            repeats = repeats_for_entries(model_list_entries(model), _MOST_REPEATS)
        self.repeats = int(repeats)

    def step(self, point):
        """``repeats`` updates (:meth:`_update`); the stats of the last."""
        current = None
        for _ in range(self.repeats):
            point, stats, current = self._update(point, current)
        return point, stats

    def _update(self, point, current: float | None = None):
        """One update: the random walk of :class:`ScalarMetropolis` (``current``: the log
        target at the present value, if known; the log target afterwards is returned)."""
        return self._walk(point, current)

    @staticmethod
    def competence(var, has_grad=None):
        role = get_role(var)
        if not isinstance(role, HyperparameterRole):
            return Competence.INCOMPATIBLE
        # rho and tau of the utility prior get NonCentredHyperparameterMetropolis.
        return Competence.COMPATIBLE if role.noncentred is not None else Competence.IDEAL
