r"""The Metropolis kernel shared by the package's random-walk steps: one test, one tuner.

Every Metropolis--Hastings move of the package (the scalar random walks of
:mod:`pymc_crp.step_methods.scalar_metropolis`, the non-centred moves of
:mod:`pymc_crp.step_methods.noncentred` and the utility moves of
:mod:`pymc_crp.step_methods.utility_metropolis`) computes the log acceptance ratio

.. math::

    \log r = \log π(x') - \log π(x) + \log q(x \mid x') - \log q(x' \mid x)

of its proposal ``x'`` and decides with :func:`accept`; its proposal scale adapts while PyMC
tunes with a :class:`ScaleTuner`. After tuning the scale is fixed, so each move leaves its
target invariant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ScaleTuner", "accept"]


def accept(log_ratio: float, rng: np.random.Generator) -> bool:
    r"""The Metropolis--Hastings test: ``True`` with probability ``min(1, exp(log_ratio))``.

    A finite ``log_ratio`` draws one uniform ``u`` and accepts iff ``log u < log_ratio``.
    Non-finite ratios are decided without a draw, the same way in every step of the package:

    * NaN (a density that could not be evaluated, or ``-∞`` on both sides) rejects;
    * ``-∞`` (a proposal outside the support: log-density ``-∞``) rejects;
    * ``+∞`` (the current state has density 0 and the proposal does not) accepts, so a chain
      started at an impossible point moves to a possible one.
    """
    if math.isnan(log_ratio):
        return False
    if math.isinf(log_ratio):
        return log_ratio > 0
    return math.log(rng.random()) < log_ratio


@dataclass
class ScaleTuner:
    r"""Robbins--Monro adaptation of a proposal scale ``s`` towards an acceptance rate ``a*``.

    :meth:`record` is called once per step with the step's accepted and proposed moves; every
    ``interval`` steps, with ``â`` the acceptance rate over them and ``n`` the number of
    updates so far (this one included),

    .. math:: \log s \leftarrow \log s + n^{-1/2}\,(\hat a - a^*), \qquad s \leftarrow
        \min(s, s_{\max}).

    The gain ``n^{-1/2}`` decreases, so the scale settles; steps adapt only while PyMC tunes.
    A plain dataclass: it is part of the steps' sampling state (copied and pickled with it).
    """

    target: float
    interval: int = 1
    upper: float = math.inf
    updates: int = 0
    accepted: float = 0.0
    proposed: int = 0
    steps: int = 0

    def record(self, scale: float, accepted: float, proposed: int = 1) -> float:
        """Count one step's ``accepted`` of ``proposed`` moves; return the (new) scale."""
        self.accepted += accepted
        self.proposed += proposed
        self.steps += 1
        if self.steps < self.interval:
            return scale
        rate = self.accepted / self.proposed if self.proposed else None
        self.accepted, self.proposed, self.steps = 0.0, 0, 0
        if rate is None:
            return scale
        self.updates += 1
        gain = 1.0 / math.sqrt(self.updates)
        return min(self.upper, scale * math.exp(gain * (rate - self.target)))

    def reset(self) -> None:
        """Start the schedule again (gain 1, empty interval)."""
        self.updates, self.accepted, self.proposed, self.steps = 0, 0.0, 0, 0
