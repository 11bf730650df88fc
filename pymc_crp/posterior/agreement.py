r"""Agreement of chains on the partition: each chain's point estimate, compared pairwise.

R-hat of the label-invariant scalars (:func:`~pymc_crp.cluster_summary`) says whether the
chains agree on summaries such as the number of clusters. Two chains can agree on those and
still hold different partitions (the same sizes, other members). :func:`chain_agreement`
compares the partitions themselves: the point estimate of each chain's own draws
(:func:`~pymc_crp.point_estimate_partition`), and the adjusted Rand index (ARI) of every pair,

.. math::

    A_{cc'} = \mathrm{ARI}\big(\hat c^{(c)}, \hat c^{(c')}\big), \qquad
    \hat c^{(c)} = \arg\min_{\hat c} \frac1S \sum_{s=1}^S
        \mathcal L\big(\hat c, c^{(c, s)}\big),

with ``L`` the Variation of Information (or Binder) loss. Chains that sample one posterior
give ``A ≈ 1`` when the posterior is concentrated, and equal estimates up to the estimate's
own Monte Carlo error otherwise; a pair well below 1 means the chains sit in different modes
of the partition (for example one chain splits a cluster the other keeps whole).
"""

from __future__ import annotations

import itertools

import arviz as az
import numpy as np

from pymc_crp.posterior.diagnostics import adjusted_rand_index
from pymc_crp.posterior.draws import posterior_variable
from pymc_crp.posterior.point_estimate import point_estimate_partition

__all__ = ["chain_agreement"]


def chain_agreement(
    idata: az.InferenceData,
    var_name: str,
    *,
    loss: str = "VI",
    n_runs: int = 4,
    seed: int | None = 0,
) -> np.ndarray:
    """Adjusted Rand index between the point-estimate partitions of every pair of chains.

    See the module docstring for the formula.

    Parameters
    ----------
    idata : arviz.InferenceData
        With the label variable ``var_name`` of dims ``(chain, draw, N)`` in its posterior.
    var_name : str
        Name of the label variable.
    loss : {"VI", "binder"}, default "VI"
        Loss of the point estimates.
    n_runs, seed
        Passed to :func:`~pymc_crp.point_estimate_partition` for each chain (``n_runs=4``
        keeps this quick; the estimate's loss is never above that of the chain's best draw).

    Returns
    -------
    numpy.ndarray, shape (chains, chains)
        Symmetric, ones on the diagonal; ``A[np.triu_indices(chains, 1)].min()`` is the
        worst pair.

    Examples
    --------
    >>> ari = pmc.chain_agreement(idata, "cluster")  # doctest: +SKIP
    >>> ari[np.triu_indices(len(ari), 1)].min()  # doctest: +SKIP
    """
    if not isinstance(idata, az.InferenceData):
        raise TypeError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    z = posterior_variable(idata, var_name, "idata")
    if z.ndim != 3 or z.dims[:2] != ("chain", "draw"):
        raise ValueError(
            f"{var_name} must have dims (chain, draw, N) in idata.posterior, got {z.dims}"
        )
    values = z.values
    estimates = [
        point_estimate_partition(values[c], loss=loss, n_runs=n_runs, seed=seed)
        for c in range(values.shape[0])
    ]
    ari = np.eye(len(estimates))
    for a, b in itertools.combinations(range(len(estimates)), 2):
        ari[a, b] = ari[b, a] = adjusted_rand_index(estimates[a], estimates[b])
    return ari
