"""The compiled coordinate scan of the split--merge moves against brute force: the scan's
log-density of reaching a target, and the distribution of its first draw, from conditionals
built by Gaussian conditioning of the full prior covariance and list likelihoods summed over
all orderings (``oracles.linear_extension_list_lik``)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from oracles import linear_extension_list_lik
from scipy.special import logsumexp, ndtr
from scipy.stats import kstest, norm

from pymc_crp.core.lists import list_likelihood_cache
from pymc_crp.core.restricted_orders import item_masks
from pymc_crp.step_methods.po_coordinate_scan import coordinate_scan

# Five lists over items 0-3 (item 4 is in no list), one of weight 0 (ignored).
LISTS = np.array([[0, 1, 2, 3], [2, 0, -1, -1], [3, 1, 0, -1], [1, 3, 2, -1], [0, 2, 1, 3]])
WEIGHTS = np.array([1.0, 0.5, 2.0, 1.3, 0.0])
NOISE = 0.2
N_ITEMS, N_DIMS = 5, 2
PRIOR = SimpleNamespace(
    mean=np.array([[0.3, 0.1], [0.0, 0.0], [-0.2, 0.4], [0.1, -0.3], [0.0, 0.2]]),
    rho=np.array([0.3, 0.6, 0.0, 0.8, 0.5]),
    scale=np.array([1.0, 0.7, 1.2, 0.9, 1.0]),
)


def _term(top_down):
    contains = np.zeros((LISTS.shape[0], 4), dtype=bool)
    for i, row in enumerate(LISTS):
        contains[i, row[row >= 0]] = True
    return SimpleNamespace(
        contains=contains, top_down=top_down, item_words=item_masks(LISTS),
        list_set=list_likelihood_cache().list_set(LISTS, top_down),
    )  # fmt: skip


def _log_lik(psi, top_down):
    """``Σ_i w_i log p(Y_i | h(ψ), p)`` by brute force (bottom-up: the reversed list, best
    first as observed, top-down under the dual order)."""
    above = [[bool(np.all(psi[a] > psi[b])) for b in range(N_ITEMS)] for a in range(N_ITEMS)]
    relation = above if top_down else [list(col) for col in zip(*above, strict=True)]
    total = 0.0
    for row, w in zip(LISTS, WEIGHTS, strict=True):
        if w > 0:
            y = list(row[row >= 0]) if top_down else list(row[row >= 0])[::-1]
            total += w * math.log(linear_extension_list_lik(relation, y, NOISE))
    return total


def _conditional(psi, j, k):
    """``(μ, σ)`` of ``ψ_jk`` given the rest of its row, by conditioning the row's covariance
    ``s² ((1 - ρ) I + ρ 1 1ᵀ)``."""
    rho, s = PRIOR.rho[j], PRIOR.scale[j]
    cov = s**2 * ((1 - rho) * np.eye(N_DIMS) + rho * np.ones((N_DIMS, N_DIMS)))
    rest = [q for q in range(N_DIMS) if q != k]
    gain = cov[k, rest] @ np.linalg.inv(cov[np.ix_(rest, rest)])
    mu = PRIOR.mean[j, k] + gain @ (psi[j, rest] - PRIOR.mean[j, rest])
    return mu, math.sqrt(cov[k, k] - gain @ cov[rest, k])


def _mixture(psi, j, k, top_down):
    """Ends, log-weights (likelihood times normal mass) and ``(μ, σ)`` of ``ψ_jk``'s full
    conditional over the intervals between the other items' values."""
    cuts = np.unique(np.delete(psi[:, k], j))
    ends = np.concatenate([[-np.inf], cuts, [np.inf]])
    mu, sd = _conditional(psi, j, k)
    log_w = []
    for low, high in zip(ends[:-1], ends[1:], strict=True):
        at = psi.copy()
        at[j, k] = (
            (low + high) / 2
            if np.isfinite(low + high)
            else (high - 1 if np.isfinite(high) else low + 1)
        )
        if not np.isfinite(low) and not np.isfinite(high):
            at[j, k] = 0.0
        mass = ndtr((high - mu) / sd) - ndtr((low - mu) / sd)
        log_w.append(_log_lik(at, top_down) + math.log(mass))
    return ends, np.array(log_w), mu, sd


@pytest.mark.parametrize("top_down", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
def test_log_density_of_reaching_a_target_matches_brute_force(top_down, reverse):
    rng = np.random.default_rng(5)
    start = rng.normal(size=(N_ITEMS, N_DIMS))
    target = rng.normal(size=(N_ITEMS, N_DIMS))
    psi = start.copy()
    log_q = coordinate_scan(
        _term(top_down), psi, np.arange(5), WEIGHTS, PRIOR, NOISE, None, reverse=reverse,
        target=target,
    )  # fmt: skip
    assert np.array_equal(psi, target)
    expected, at = 0.0, start.copy()
    visits = [(j, k) for j in range(N_ITEMS) for k in range(N_DIMS)]
    for j, k in reversed(visits) if reverse else visits:
        ends, log_w, mu, sd = _mixture(at, j, k, top_down)
        r = np.searchsorted(ends, target[j, k]) - 1
        x = target[j, k]
        mass = ndtr((ends[r + 1] - mu) / sd) - ndtr((ends[r] - mu) / sd)
        expected += log_w[r] - math.log(mass) + norm.logpdf(x, mu, sd) - logsumexp(log_w)
        at[j, k] = x
    assert log_q == pytest.approx(expected, abs=1e-9)


def test_first_draw_follows_the_exact_conditional():
    """The first coordinate visited, ``ψ_00``, is not visited again: over 10,000 scans from
    one state its draws follow the full conditional there (Kolmogorov-Smirnov against the
    exact mixture CDF; the test has power: a likelihood ignored fails it)."""
    term = _term(True)
    start = np.random.default_rng(8).normal(size=(N_ITEMS, N_DIMS))
    ends, log_w, mu, sd = _mixture(start, 0, 0, True)
    probs = np.exp(log_w - logsumexp(log_w))

    def cdf(x, probs):
        x = np.asarray(x)[:, None]
        low, high = ends[:-1], ends[1:]
        inside = (ndtr((np.clip(x, low, high) - mu) / sd) - ndtr((low - mu) / sd)) / (
            ndtr((high - mu) / sd) - ndtr((low - mu) / sd)
        )
        return inside @ probs

    rng = np.random.default_rng(9)
    draws = np.empty(10_000)
    for t in range(draws.size):
        psi = start.copy()
        coordinate_scan(term, psi, np.arange(5), WEIGHTS, PRIOR, NOISE, rng)
        draws[t] = psi[0, 0]
    assert kstest(draws, lambda x: cdf(x, probs)).pvalue > 1e-3
    prior_only = ndtr((ends[1:] - mu) / sd) - ndtr((ends[:-1] - mu) / sd)
    assert kstest(draws, lambda x: cdf(x, prior_only)).pvalue < 1e-6


def test_no_interval_with_weight_is_an_error():
    """``p = 0`` and two lists that order items 0 and 1 oppositely: every total order
    (``K = 1``) gives one of them probability zero, so no interval can be drawn."""
    lists = np.array([[0, 1], [1, 0]])
    term = SimpleNamespace(
        contains=np.ones((2, 2), dtype=bool), top_down=True, item_words=item_masks(lists),
        list_set=list_likelihood_cache().list_set(lists, True),
    )  # fmt: skip
    prior = SimpleNamespace(mean=np.zeros((2, 1)), rho=np.zeros(2), scale=np.ones(2))
    psi = np.array([[0.5], [-0.5]])
    with pytest.raises(FloatingPointError, match="every interval has zero weight"):
        coordinate_scan(term, psi, np.arange(2), np.ones(2), prior, 0.0, np.random.default_rng(1))
    psi = np.array([[0.5], [-0.5]])  # a positive noise: any order will do
    coordinate_scan(term, psi, np.arange(2), np.ones(2), prior, 0.1, np.random.default_rng(1))
    assert psi[0, 0] != psi[1, 0]
