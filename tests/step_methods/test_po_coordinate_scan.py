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
SMALL = SimpleNamespace(
    lists=np.array([[0, 1, 2, 3], [2, 0, -1, -1], [3, 1, 0, -1], [1, 3, 2, -1], [0, 2, 1, 3]]),
    weights=np.array([1.0, 0.5, 2.0, 1.3, 0.0]),
    prior=SimpleNamespace(
        mean=np.array([[0.3, 0.1], [0.0, 0.0], [-0.2, 0.4], [0.1, -0.3], [0.0, 0.2]]),
        rho=np.array([0.3, 0.6, 0.0, 0.8, 0.5]),
        scale=np.array([1.0, 0.7, 1.2, 0.9, 1.0]),
    ),
)
NOISE = 0.2


def _wide_problem():
    """70 items, 2 dimensions, 12 weighted lists of 3 items among items 0-9 and 60-69 (the
    second bitset word from item 64 on) and two lists over items 5, 62, 63 and 66."""
    rng = np.random.default_rng(11)
    pool = np.r_[0:10, 60:70]
    lists = [rng.choice(pool, size=3, replace=False) for _ in range(12)]
    lists = np.array([*lists, [62, 63, 66], [66, 5, 62]])
    return SimpleNamespace(
        lists=lists,
        weights=rng.uniform(0.5, 2.0, size=lists.shape[0]),
        prior=SimpleNamespace(
            mean=0.3 * rng.normal(size=(70, 2)),
            rho=rng.uniform(0.0, 0.8, size=70),
            scale=rng.uniform(0.7, 1.2, size=70),
        ),
    )


def _term(problem, top_down):
    lists = problem.lists
    contains = np.zeros((lists.shape[0], problem.prior.mean.shape[0]), dtype=bool)
    for i, row in enumerate(lists):
        contains[i, row[row >= 0]] = True
    return SimpleNamespace(
        contains=contains, top_down=top_down, item_words=item_masks(lists),
        list_set=list_likelihood_cache().list_set(lists, top_down),
    )  # fmt: skip


def _log_lik(problem, psi, top_down):
    """``Σ_i w_i log p(Y_i | h(ψ), p)`` by brute force (bottom-up: the reversed list, best
    first as observed, top-down under the dual order)."""
    above = np.all(psi[:, None, :] > psi[None, :, :], axis=2)
    relation = above if top_down else above.T
    total = 0.0
    for row, w in zip(problem.lists, problem.weights, strict=True):
        if w > 0:
            y = list(row[row >= 0]) if top_down else list(row[row >= 0])[::-1]
            total += w * math.log(linear_extension_list_lik(relation, y, NOISE))
    return total


def _conditional(problem, psi, j, k):
    """``(μ, σ)`` of ``ψ_jk`` given the rest of its row, by conditioning the row's covariance
    ``s² ((1 - ρ) I + ρ 1 1ᵀ)``."""
    prior, n_dims = problem.prior, psi.shape[1]
    rho, s = prior.rho[j], prior.scale[j]
    cov = s**2 * ((1 - rho) * np.eye(n_dims) + rho * np.ones((n_dims, n_dims)))
    rest = [q for q in range(n_dims) if q != k]
    gain = cov[k, rest] @ np.linalg.inv(cov[np.ix_(rest, rest)])
    mu = prior.mean[j, k] + gain @ (psi[j, rest] - prior.mean[j, rest])
    return mu, math.sqrt(cov[k, k] - gain @ cov[rest, k])


def _log_mass(low, high, mu, sd):
    """``log(Φ(b) - Φ(a))`` for the standardised ends, from the tail nearer to the interval
    (the far tails of a 70-item column underflow a plain difference)."""
    a, b = (low - mu) / sd, (high - mu) / sd
    if a > 0:  # Φ(b) - Φ(a) = Φ(-a) - Φ(-b)
        a, b = -b, -a
    log_b, log_a = norm.logcdf(b), norm.logcdf(a)
    return log_b + math.log1p(-math.exp(log_a - log_b))


def _mixture(problem, psi, j, k, top_down):
    """Ends, log-weights (likelihood times normal mass) and ``(μ, σ)`` of ``ψ_jk``'s full
    conditional over the intervals between the other items' values."""
    cuts = np.unique(np.delete(psi[:, k], j))
    ends = np.concatenate([[-np.inf], cuts, [np.inf]])
    mu, sd = _conditional(problem, psi, j, k)
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
        log_w.append(_log_lik(problem, at, top_down) + _log_mass(low, high, mu, sd))
    return ends, np.array(log_w), mu, sd


def _expected_log_q(problem, start, target, top_down, reverse):
    """The log-density of a scan from ``start`` reaching ``target``, coordinate by coordinate
    from the brute-force full conditionals."""
    expected, at = 0.0, start.copy()
    n_items, n_dims = start.shape
    visits = [(j, k) for j in range(n_items) for k in range(n_dims)]
    for j, k in reversed(visits) if reverse else visits:
        ends, log_w, mu, sd = _mixture(problem, at, j, k, top_down)
        r = np.searchsorted(ends, target[j, k]) - 1
        x = target[j, k]
        log_mass = _log_mass(ends[r], ends[r + 1], mu, sd)
        expected += log_w[r] - log_mass + norm.logpdf(x, mu, sd) - logsumexp(log_w)
        at[j, k] = x
    return expected


@pytest.mark.parametrize("top_down", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
def test_log_density_of_reaching_a_target_matches_brute_force(top_down, reverse):
    rng = np.random.default_rng(5)
    start = rng.normal(size=(5, 2))
    target = rng.normal(size=(5, 2))
    psi = start.copy()
    log_q = coordinate_scan(
        _term(SMALL, top_down), psi, np.arange(5), SMALL.weights, SMALL.prior, NOISE, None,
        reverse=reverse, target=target,
    )  # fmt: skip
    assert np.array_equal(psi, target)
    assert log_q == pytest.approx(
        _expected_log_q(SMALL, start, target, top_down, reverse), abs=1e-9
    )


@pytest.mark.parametrize("top_down", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_over_many_items_with_tied_values_matches_brute_force(top_down, reverse):
    """70 items (relations in the second bitset word), and items 62, 63 and 66, which share
    lists, tied in column 0 at the start: a coordinate passes the three at once, and their
    own coordinates start on a tie (no interval holds the state). The scan steps from interval
    to interval and counts only the lists whose restricted order changes there."""
    problem = _wide_problem()
    rng = np.random.default_rng(12)
    start = rng.normal(size=(70, 2))
    start[[62, 63, 66], 0] = 0.25
    target = rng.normal(size=(70, 2))
    psi = start.copy()
    rows = np.arange(problem.lists.shape[0])
    log_q = coordinate_scan(
        _term(problem, top_down), psi, rows, problem.weights, problem.prior, NOISE, None,
        reverse=reverse, target=target,
    )  # fmt: skip
    assert np.array_equal(psi, target)
    expected = _expected_log_q(problem, start, target, top_down, reverse)
    assert log_q == pytest.approx(expected, abs=1e-9)


def test_adjacent_cuts_whose_midpoint_rounds_onto_one():
    """Items 1 and 2 sit at adjacent doubles in column 0, so the point of the interval between
    them is item 1's value itself (a tie). The relations of item 0 in the intervals above must
    still be those of its value there (item 0 above item 1 in both columns above 1.0)."""
    lists = np.array([[0, 1, -1], [1, 0, -1], [0, 2, 1]])
    problem = SimpleNamespace(
        lists=lists,
        weights=np.array([1.0, 0.7, 1.2]),
        prior=SimpleNamespace(mean=np.zeros((3, 2)), rho=np.zeros(3), scale=np.ones(3)),
    )
    start = np.array([[0.5, 2.0], [1.0, 1.0], [np.nextafter(1.0, 2.0), 1.5]])
    target = np.array([[1.7, 2.2], [0.2, 0.9], [1.1, 1.4]])
    psi = start.copy()
    log_q = coordinate_scan(
        _term(problem, True), psi, np.arange(3), problem.weights, problem.prior, NOISE, None,
        target=target,
    )  # fmt: skip
    assert log_q == pytest.approx(_expected_log_q(problem, start, target, True, False), abs=1e-9)


def test_first_draw_follows_the_exact_conditional():
    """The first coordinate visited, ``ψ_00``, is not visited again: over 10,000 scans from
    one state its draws follow the full conditional there (Kolmogorov-Smirnov against the
    exact mixture CDF; the test has power: a likelihood ignored fails it)."""
    term = _term(SMALL, True)
    start = np.random.default_rng(8).normal(size=(5, 2))
    ends, log_w, mu, sd = _mixture(SMALL, start, 0, 0, True)
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
        coordinate_scan(term, psi, np.arange(5), SMALL.weights, SMALL.prior, NOISE, rng)
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
