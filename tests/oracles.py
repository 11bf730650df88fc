"""Independent oracles shared by the tests: brute-force enumeration and closed forms.

Written from the formulas in docs/mathematics.md with the standard library only, so that they do not
share code with the package.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def set_partitions(n: int):
    """All set partitions of ``range(n)`` as lists of blocks (restricted growth strings)."""

    def rec(i, blocks):
        if i == n:
            yield [list(b) for b in blocks]
            return
        for b in blocks:
            b.append(i)
            yield from rec(i + 1, blocks)
            b.pop()
        blocks.append([i])
        yield from rec(i + 1, blocks)
        blocks.pop()

    yield from rec(0, [])


def partition_labels(blocks, n: int) -> np.ndarray:
    labels = np.empty(n, dtype=np.int64)
    for k, b in enumerate(blocks):
        labels[b] = k
    return labels


def eppf(sizes, theta: float, d: float) -> float:
    """Pitman--Yor EPPF by its product form (no gamma functions)."""
    n_total = sum(sizes)
    k = len(sizes)
    num = 1.0
    for i in range(1, k):
        num *= theta + i * d
    rising = 1.0
    for i in range(1, n_total):  # (theta + 1)_{N-1}
        rising *= theta + i
    blocks = 1.0
    for s in sizes:
        for i in range(1, s):  # (1 - d)_{s-1}
            blocks *= i - d
    return num * blocks / rising


def crp_label_prob(labels, theta: float, d: float, n_slots: int) -> float:
    sizes = [int(c) for c in np.bincount(labels, minlength=n_slots) if c > 0]
    k = len(sizes)
    n_labellings = math.perm(n_slots, k)
    return eppf(sizes, theta, d) / n_labellings


def dirichlet_multinomial_label_prob(labels, gamma: float, n_groups: int) -> float:
    """Pólya-urn product: prod_i (N_a(i) + gamma/A) / (i + gamma)."""
    counts = np.zeros(n_groups)
    prob = 1.0
    alpha = gamma / n_groups
    for i, a in enumerate(labels):
        prob *= (counts[a] + alpha) / (i + gamma)
        counts[a] += 1
    return prob


def all_label_vectors(n: int, n_slots: int) -> np.ndarray:
    return np.array(list(itertools.product(range(n_slots), repeat=n)), dtype=np.int64)


def exact_cluster_count_distribution(n: int, theta: float, d: float) -> dict[int, float]:
    dist: dict[int, float] = {}
    for blocks in set_partitions(n):
        k = len(blocks)
        dist[k] = dist.get(k, 0.0) + eppf([len(b) for b in blocks], theta, d)
    return dist


# --------------------------------------------------------------------------------------------
# Exact posteriors of small clustering models (for the tests of the label step)
# --------------------------------------------------------------------------------------------
def normal_block_log_marginal(y_block, sigma: float, tau: float, prior_mean=0.0) -> float:
    """Log marginal density of the observations of one block in the conjugate normal model.

    ``mu ~ N(prior_mean, tau^2)``, ``y_i | mu ~ N(mu, sigma^2)`` with ``mu`` integrated out:
    ``y_block ~ MVN(prior_mean 1, sigma^2 I + tau^2 1 1^T)``. A 2-D ``y_block`` (rows are
    observations) has independent dimensions, each with its own ``mu``; ``prior_mean`` may
    then be a vector (one mean per dimension).
    """
    from scipy.stats import multivariate_normal

    y_block = np.asarray(y_block, dtype=float)
    if y_block.ndim == 1:
        y_block = y_block[:, None]
    n, n_dims = y_block.shape
    cov = sigma**2 * np.eye(n) + tau**2 * np.ones((n, n))
    means = np.broadcast_to(np.asarray(prior_mean, dtype=float), (n_dims,))
    return float(
        sum(
            multivariate_normal(np.full(n, means[k]), cov).logpdf(y_block[:, k])
            for k in range(n_dims)
        )
    )


def dirichlet_multinomial_partition_prob(blocks, gamma: float, n_groups: int) -> float:
    """Probability of a *partition* under the Dirichlet--multinomial prior.

    ``A!/(A-K)!`` label vectors (all equally likely) represent a partition with ``K`` blocks;
    zero when ``K > A``.
    """
    k = len(blocks)
    if k > n_groups:
        return 0.0
    n = sum(len(b) for b in blocks)
    labels = partition_labels(blocks, n)
    return math.perm(n_groups, k) * dirichlet_multinomial_label_prob(labels, gamma, n_groups)


def exact_partition_posterior(n: int, prior, log_block_marginal, max_blocks=None):
    """Posterior over all set partitions of ``range(n)`` by enumeration.

    ``p(π | y) ∝ prior(blocks) ∏_b exp(log_block_marginal(b))``; partitions with more than
    ``max_blocks`` blocks get probability zero. Returns ``(partitions, probs)``.
    """
    parts, logs = [], []
    for blocks in set_partitions(n):
        if max_blocks is not None and len(blocks) > max_blocks:
            continue
        p = prior(blocks)
        if p <= 0.0:
            continue
        parts.append(blocks)
        logs.append(math.log(p) + sum(log_block_marginal(b) for b in blocks))
    logs = np.array(logs)
    probs = np.exp(logs - logs.max())
    return parts, probs / probs.sum()


def co_clustering_matrix(partitions, probs, n: int) -> np.ndarray:
    """``P[i, j] = P(c_i = c_j)`` under a distribution over partitions."""
    out = np.zeros((n, n))
    for blocks, p in zip(partitions, probs, strict=True):
        for b in blocks:
            out[np.ix_(b, b)] += p
    return out


def cluster_count_probs(partitions, probs, n: int) -> np.ndarray:
    """``P(K = k)`` for ``k = 0..n`` under a distribution over partitions."""
    out = np.zeros(n + 1)
    for blocks, p in zip(partitions, probs, strict=True):
        out[len(blocks)] += p
    return out


def exact_label_posterior(label_vectors, log_prior, loglik) -> np.ndarray:
    """Normalised ``p(c) ∏_i exp(loglik[i, c_i])`` over the given label vectors.

    ``log_prior(c)`` may return ``-inf``. Used where slots are distinguishable (fixed or
    non-exchangeable slot parameters) or for the bare sweep with a fixed likelihood matrix.
    """
    loglik = np.asarray(loglik, dtype=float)
    rows = np.arange(loglik.shape[0])
    logs = np.array([log_prior(c) + loglik[rows, c].sum() for c in label_vectors])
    probs = np.exp(logs - logs[np.isfinite(logs)].max())
    return probs / probs.sum()


def exact_collapsed_label_posterior(label_vectors, log_prior, log_slot_marginal) -> np.ndarray:
    """Normalised posterior over label vectors with the slot parameters integrated out.

    ``p(c | y) ∝ p(c) ∏_{occupied j} exp(log_slot_marginal(j, indices of c == j))``; for
    slots whose parameters have different priors (so that label vectors, not only
    partitions, are identified).
    """
    logs = []
    for c in label_vectors:
        lp = log_prior(c)
        for j in np.unique(c):
            lp += log_slot_marginal(int(j), np.flatnonzero(c == j))
        logs.append(lp)
    logs = np.array(logs)
    probs = np.exp(logs - logs.max())
    return probs / probs.sum()


def mixed_over_parameter(fn, pdf, lower=0.0, upper=math.inf) -> float:
    """``∫ fn(t) pdf(t) dt`` by adaptive quadrature with a relative tolerance only.

    For marginalising a partition prior over its concentration or a block's marginal
    likelihood over a scale parameter; the integrands are tiny (densities of several
    observations), so an absolute tolerance would be meaningless.
    """
    from scipy.integrate import quad

    value, _ = quad(lambda t: fn(t) * pdf(t), lower, upper, epsabs=0.0, epsrel=1e-10, limit=200)
    return value


def compound_symmetry_normal_logpdf(y, sigma: float, tau: float) -> float:
    """Closed form of ``log MVN(y; 0, sigma^2 I + tau^2 1 1^T)`` (Sherman--Morrison).

    ``det = sigma^(2(n-1)) (sigma^2 + n tau^2)``, ``y^T Σ^-1 y = (y·y - tau^2 (Σy)^2 /
    (sigma^2 + n tau^2)) / sigma^2``. A fast integrand for quadrature over ``sigma``; checked
    against :func:`normal_block_log_marginal` in the tests.
    """
    y = np.asarray(y, dtype=float)
    n = y.size
    s2 = sigma**2
    v = s2 + n * tau**2
    logdet = (n - 1) * math.log(s2) + math.log(v)
    quad_form = (float(y @ y) - tau**2 * float(y.sum()) ** 2 / v) / s2
    return -0.5 * (n * math.log(2 * math.pi) + logdet + quad_form)


# --------------------------------------------------------------------------------------------
# Models whose likelihood does not factorise over blocks (label-free parameters, two label
# vectors), robust observations, truncated partition priors
# --------------------------------------------------------------------------------------------
def gaussian_log_density(y, cov) -> float:
    """``log N(y; 0, cov)`` by a Cholesky factorisation."""
    y = np.asarray(y, dtype=float)
    chol = np.linalg.cholesky(np.asarray(cov, dtype=float))
    white = np.linalg.solve(chol, y)
    return float(
        -0.5 * (y.size * math.log(2 * math.pi) + white @ white) - np.log(np.diag(chol)).sum()
    )


def co_clustering_indicator(blocks, n: int) -> np.ndarray:
    """``S[i, j] = 1{i and j share a block}``."""
    out = np.zeros((n, n))
    for b in blocks:
        out[np.ix_(b, b)] = 1.0
    return out


def exact_posterior_over(configurations, log_weight) -> np.ndarray:
    """Normalised ``exp(log_weight(c))`` over any finite list of configurations."""
    logs = np.array([log_weight(c) for c in configurations])
    probs = np.exp(logs - logs[np.isfinite(logs)].max())
    return probs / probs.sum()


def student_t_block_log_marginal(y_block, nu: float, prior_sd: float) -> float:
    """``log ∫ N(mu; 0, prior_sd²) ∏_i t_nu(y_i - mu) dmu`` by adaptive quadrature.

    The likelihood of a Student-t observation written as a normal scale mixture
    (``lam ~ Gamma(nu/2, rate nu/2)``, ``y ~ N(mu, 1/lam)``) with ``lam`` integrated out.
    """
    from scipy.integrate import quad
    from scipy.stats import norm, t

    y_block = np.asarray(y_block, dtype=float)
    center = float(np.median(y_block)) if y_block.size else 0.0

    def integrand(mu):
        return norm.pdf(mu, 0.0, prior_sd) * float(np.prod(t.pdf(y_block - mu, nu)))

    lo, hi = center - 12 * prior_sd, center + 12 * prior_sd
    value, _ = quad(integrand, lo, hi, points=sorted({center, 0.0}), epsabs=0.0, epsrel=1e-10,
                    limit=400)  # fmt: skip
    return math.log(value)


def truncated_crp_partition_prob(sizes, theta: float, d: float, n_slots: int) -> float:
    """Probability of a partition under the Pitman--Yor CRP conditioned on ``K <= n_slots``,
    normalised by brute force over all set partitions of the same size."""
    n = sum(sizes)
    if len(sizes) > n_slots:
        return 0.0
    mass = sum(
        eppf([len(b) for b in blocks], theta, d)
        for blocks in set_partitions(n)
        if len(blocks) <= n_slots
    )
    return eppf(list(sizes), theta, d) / mass


# Closed-form marginal likelihoods of one block for the conjugate pairs (tests of the
# conjugate slot updates). Each integrates the slot parameter out of the block's likelihood.
# --------------------------------------------------------------------------------------------
def gamma_poisson_block_log_marginal(y_block, shape: float, rate: float) -> float:
    """``λ ~ Gamma(a, rate b)``, ``y_i | λ ~ Poisson(λ)``:
    ``b^a / Γ(a) · Γ(a + S) / (b + n)^(a + S) / ∏ y_i!`` with ``S = Σ y_i``."""
    y = [int(v) for v in np.asarray(y_block).ravel()]
    n, s = len(y), sum(y)
    out = shape * math.log(rate) - math.lgamma(shape) + math.lgamma(shape + s)
    out -= (shape + s) * math.log(rate + n)
    return out - sum(math.lgamma(v + 1) for v in y)


def beta_binomial_block_log_marginal(y_block, trials, alpha: float, beta: float) -> float:
    """``p ~ Beta(α, β)``, ``y_i | p ~ Binomial(n_i, p)``:
    ``∏ C(n_i, y_i) · B(α + S, β + F) / B(α, β)``, ``S = Σ y_i``, ``F = Σ (n_i - y_i)``."""
    y = [int(v) for v in np.asarray(y_block).ravel()]
    n = [int(v) for v in np.broadcast_to(np.asarray(trials), (len(y),))]
    s = sum(y)
    f = sum(ni - yi for ni, yi in zip(n, y, strict=True))

    def log_beta(a, b):
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

    out = sum(math.log(math.comb(ni, yi)) for ni, yi in zip(n, y, strict=True))
    return out + log_beta(alpha + s, beta + f) - log_beta(alpha, beta)


def normal_precision_block_log_marginal(y_block, mean: float, shape: float, rate: float) -> float:
    """``τ ~ Gamma(a, rate b)``, ``y_i | τ ~ N(mean, 1/τ)``:
    ``(2π)^(-n/2) b^a Γ(a + n/2) / (Γ(a) (b + SS/2)^(a + n/2))``, ``SS = Σ (y_i - mean)²``."""
    y = np.asarray(y_block, dtype=float).ravel()
    n = y.size
    ss = float(np.sum((y - mean) ** 2))
    out = -0.5 * n * math.log(2 * math.pi) + shape * math.log(rate) - math.lgamma(shape)
    return out + math.lgamma(shape + n / 2) - (shape + n / 2) * math.log(rate + ss / 2)


def mvnormal_block_log_marginal(y_block, sigma, prior_mean, prior_cov) -> float:
    """``μ ~ N(prior_mean, prior_cov)``, rows ``y_i | μ ~ N(μ, sigma)`` (``D``-vectors), ``μ``
    integrated out: the stacked rows are ``N(1 ⊗ m, I ⊗ sigma + 1 1ᵀ ⊗ prior_cov)``."""
    from scipy.stats import multivariate_normal

    y = np.asarray(y_block, dtype=float)
    n = y.shape[0]
    cov = np.kron(np.eye(n), np.asarray(sigma)) + np.kron(np.ones((n, n)), np.asarray(prior_cov))
    mean = np.tile(np.asarray(prior_mean, dtype=float), n)
    return float(multivariate_normal(mean, cov).logpdf(y.ravel()))


def dirichlet_categorical_block_log_marginal(y_block, alpha) -> float:
    """``p ~ Dirichlet(α)``, ``y_i | p ~ Categorical(p)``:
    ``Γ(Σα)/Γ(Σα + n) ∏_c Γ(α_c + n_c)/Γ(α_c)`` with ``n_c`` the count of category ``c``."""
    alpha = [float(a) for a in alpha]
    counts = [0] * len(alpha)
    for v in np.asarray(y_block).ravel():
        counts[int(v)] += 1
    out = math.lgamma(sum(alpha)) - math.lgamma(sum(alpha) + sum(counts))
    return out + sum(
        math.lgamma(a + n) - math.lgamma(a) for a, n in zip(alpha, counts, strict=True)
    )


def total_order_list_lik(perm, y, p: float) -> float:
    """Top-down queue-jumping likelihood of list ``y`` under the total order ``perm`` (best
    first): a total order has one linear extension, so each step is ``p/r + (1-p)·1{y_j is
    the best remaining item of y}`` (``r`` items remaining)."""
    rank = {item: r for r, item in enumerate(perm)}
    lik = 1.0
    for j in range(len(y) - 1):  # the last step has probability 1
        rest = y[j:]
        best = min(rest, key=lambda item: rank[item])
        lik *= p / len(rest) + (1.0 - p) * (y[j] == best)
    return lik


def three_item_order_probs(means) -> np.ndarray:
    """``P(u_{s_0} > u_{s_1} > u_{s_2})`` for independent ``u_i ~ N(means_i, 1)``, one entry per
    ``s`` in ``itertools.permutations(range(3))``: with the middle item's value ``x``,
    ``∫ φ(x - m_{s_1}) (1 - Φ(x - m_{s_0})) Φ(x - m_{s_2}) dx`` (trapezoid rule on a fine grid;
    the integrand is smooth and negligible beyond 12 standard deviations)."""
    means = [float(m) for m in means]
    if len(means) != 3:
        raise ValueError("three_item_order_probs: means must have 3 entries")
    x = np.linspace(min(means) - 12.0, max(means) + 12.0, 40_001)
    cdf = {
        i: np.array([0.5 * math.erfc(-(v - means[i]) / math.sqrt(2.0)) for v in x])
        for i in range(3)
    }
    probs = []
    for s in itertools.permutations(range(3)):
        pdf = np.exp(-0.5 * (x - means[s[1]]) ** 2) / math.sqrt(2.0 * math.pi)
        f = pdf * (1.0 - cdf[s[0]]) * cdf[s[2]]
        probs.append(float(np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(x))))
    return np.array(probs)


def exact_clustered_weighted_total_orders(
    lists, n_items: int, order_probs, p: float, theta: float, d: float = 0.0
):
    """As :func:`exact_clustered_total_orders` with each cluster's total order drawn with
    probabilities ``order_probs`` (over ``itertools.permutations(range(n_items))``), e.g. the
    orders of independent normal utilities with unequal means."""
    perms = list(itertools.permutations(range(n_items)))
    order_probs = np.asarray(order_probs, dtype=float)
    if order_probs.shape != (len(perms),):
        raise ValueError("order_probs must have one entry per total order of the items")
    lik = np.array([[total_order_list_lik(s, y, p) for s in perms] for y in lists])
    return _clustered_exchangeable_orders(lik, theta, d, order_probs)


def _clustered_exchangeable_orders(lik, theta: float, d: float, order_probs=None):
    """Co-clustering matrix and ``P(K = k)`` of lists clustered by a Pitman--Yor CRP, each
    cluster's order drawn from a finite set (uniformly, or with ``order_probs``): ``lik[i, s]``
    is the likelihood of list ``i`` under order ``s``; a block's marginal likelihood is the
    mean (or ``order_probs``-weighted mean) over the orders of the product over its lists."""
    if order_probs is None:
        order_probs = np.full(lik.shape[1], 1.0 / lik.shape[1])
    n = lik.shape[0]
    co = np.zeros((n, n))
    k_dist = np.zeros(n + 1)
    total = 0.0
    for blocks in set_partitions(n):
        weight = eppf([len(b) for b in blocks], theta, d)
        for b in blocks:
            weight *= float(order_probs @ np.prod(lik[b], axis=0))
        total += weight
        k_dist[len(blocks)] += weight
        for b in blocks:
            co[np.ix_(b, b)] += weight
    return co / total, k_dist / total


def exact_clustered_total_orders(
    lists, n_items: int, p: float, theta: float, d: float = 0.0, power: float = 1.0
):
    """Lists clustered by a Pitman--Yor CRP, each cluster a uniformly random total order
    (``n_dims = 1`` with exchangeable items): co-clustering matrix and ``P(K = k)``
    (index ``k``) by enumeration of partitions and orders. ``power``: the target is the prior
    times the likelihood to this power (tempered posterior; 0 gives the prior)."""
    perms = list(itertools.permutations(range(n_items)))
    lik = np.array([[total_order_list_lik(s, y, p) for s in perms] for y in lists]) ** power
    return _clustered_exchangeable_orders(lik, theta, d)


def exact_clustered_total_orders_joint(lists, n_items: int, p: float, theta: float, d: float):
    """The joint posterior of the partition and the blocks' total orders of
    :func:`exact_clustered_total_orders`: a list of ``(blocks, orders)`` (``orders[b]`` the
    index into ``itertools.permutations(range(n_items))`` of block ``b``'s order, best first)
    and their probabilities."""
    perms = list(itertools.permutations(range(n_items)))
    lik = np.array([[total_order_list_lik(s, y, p) for s in perms] for y in lists])
    states, weights = [], []
    for blocks in set_partitions(len(lists)):
        prior = eppf([len(b) for b in blocks], theta, d) / len(perms) ** len(blocks)
        for orders in itertools.product(range(len(perms)), repeat=len(blocks)):
            weight = prior
            for b, s in zip(blocks, orders, strict=True):
                weight *= float(np.prod(lik[b, s]))
            states.append((blocks, orders))
            weights.append(weight)
    weights = np.array(weights)
    return states, weights / weights.sum()


def exact_clustered_total_orders_random_concentration(
    lists, n_items: int, p: float, shape: float, rate: float, d: float, n_slots: int
):
    """As :func:`exact_clustered_total_orders` with the concentration random, ``θ ~ Gamma(shape,
    rate)``, and the CRP truncated at ``K <= n_slots``: the prior of a partition is ``∫ π(θ)
    EPPF(sizes; θ, d) / P(K <= L | θ, d) dθ`` (by quadrature; ``P`` summed over every set
    partition). Returns the co-clustering matrix, ``P(K = k)`` and the posterior mean of
    ``θ``."""
    n = len(lists)
    perms = list(itertools.permutations(range(n_items)))
    lik = np.array([[total_order_list_lik(s, y, p) for s in perms] for y in lists])
    partitions = list(set_partitions(n))

    def at_most(theta):
        return sum(eppf([len(b) for b in bl], theta, d) for bl in partitions if len(bl) <= n_slots)

    def gamma_pdf(theta):
        log = shape * math.log(rate) + (shape - 1) * math.log(theta) - rate * theta
        return math.exp(log - math.lgamma(shape))

    co = np.zeros((n, n))
    k_dist = np.zeros(n + 1)
    total = mean = 0.0
    for blocks in partitions:
        if len(blocks) > n_slots:
            continue
        sizes = [len(b) for b in blocks]
        prior = mixed_over_parameter(lambda t, s=sizes: eppf(s, t, d) / at_most(t), gamma_pdf)
        first = mixed_over_parameter(lambda t, s=sizes: t * eppf(s, t, d) / at_most(t), gamma_pdf)
        weight = prior
        for b in blocks:
            weight *= float(np.mean(np.prod(lik[b], axis=0)))
        total += weight
        mean += weight * first / prior
        k_dist[len(blocks)] += weight
        for b in blocks:
            co[np.ix_(b, b)] += weight
    return co / total, k_dist / total, mean / total


def linear_extension_list_lik(relation, y, p: float) -> float:
    """Top-down queue-jumping likelihood of list ``y`` under the partial order ``relation``
    (``relation[a][b]``: ``a`` above ``b``), by brute force over the orderings of the remaining
    items: each step is ``p/r + (1-p) · #{extensions of the rest with y_j first} / #{extensions
    of the rest}``."""

    def extensions(items):
        return [
            perm
            for perm in itertools.permutations(items)
            if not any(relation[perm[a]][perm[b]] for a in range(len(perm)) for b in range(a))
        ]

    lik = 1.0
    for j in range(len(y) - 1):
        rest = extensions(y[j:])
        lik *= p / len(y[j:]) + (1.0 - p) * sum(e[0] == y[j] for e in rest) / len(rest)
    return lik


def exact_clustered_dominance_orders(
    lists, n_items: int, p: float, theta: float, d: float = 0.0, n_dims: int = 2
):
    """As :func:`exact_clustered_total_orders` with each cluster's order the dominance order
    of ``n_dims`` independent columns of exchangeable utilities (``a`` above ``b`` iff it is
    higher in every column): every tuple of column permutations is equally likely, so the
    prior of the orders is an enumeration over ``(M!)^K`` tuples."""
    perms = list(itertools.permutations(range(n_items)))
    relations = []
    for columns in itertools.product(perms, repeat=n_dims):
        rank = [{item: r for r, item in enumerate(col)} for col in columns]
        relations.append(
            [[all(rk[a] < rk[b] for rk in rank) for b in range(n_items)] for a in range(n_items)]
        )
    lik = np.array([[linear_extension_list_lik(h, y, p) for h in relations] for y in lists])
    return _clustered_exchangeable_orders(lik, theta, d)


def truncated_equicorrelated_mean(mean, rho: float, scale: float, start, n_draws, seed=0):
    """Mean and standard deviation of rows ``x_j ~ N(mean_j, scale² ((1-ρ) I + ρ 1 1ᵀ))``
    (independent rows, ``mean`` ``(M, K)``) conditioned on every column having the rank
    pattern of the matrix ``start``, by rejection from ``n_draws`` prior draws."""
    x = truncated_equicorrelated_draws(mean, rho, scale, start, n_draws, seed)
    return x.mean(axis=0), x.std(axis=0), x.shape[0]


def equicorrelated_prior_draws(mean, rho: float, scale: float, n_draws, seed):
    """``n_draws`` i.i.d. ``(M, K)`` matrices whose rows are ``N(mean_j, scale² Σ_ρ)`` (``seed``: a
    seed or a generator)."""
    rng = np.random.default_rng(seed)
    mean = np.asarray(mean, dtype=float)
    n_items, n_dims = mean.shape
    eps = rng.standard_normal((n_draws, n_items, n_dims))
    common = rng.standard_normal((n_draws, n_items, 1))
    return mean + scale * (math.sqrt(1.0 - rho) * eps + math.sqrt(rho) * common)


def truncated_equicorrelated_draws(mean, rho: float, scale: float, start, n_draws, seed=0):
    """The draws kept by :func:`truncated_equicorrelated_mean`'s rejection: i.i.d. ``(M, K)``
    matrices from the prior conditioned on the columns' rank patterns of ``start``."""
    x = equicorrelated_prior_draws(mean, rho, scale, n_draws, seed)
    n_dims = x.shape[-1]
    pattern = np.argsort(np.asarray(start, dtype=float), axis=0)
    kept = np.ones(n_draws, dtype=bool)
    for k in range(n_dims):
        column = x[:, pattern[:, k], k]
        kept &= np.all(column[:, 1:] > column[:, :-1], axis=1)
    return x[kept]


def dominance_conditioned_equicorrelated_draws(
    mean, rho: float, scale: float, start, n_draws, seed=0
):
    """I.i.d. ``(M, K)`` matrices from ``N(mean, scale² Σ_ρ)`` (rows independent) conditioned
    on the dominance order of ``start`` (``i ≻ j`` iff row ``i`` exceeds row ``j`` in every
    column), by rejection."""
    x = equicorrelated_prior_draws(mean, rho, scale, n_draws, seed)
    start = np.asarray(start, dtype=float)
    want = np.all(start[:, None, :] > start[None, :, :], axis=2)
    got = np.all(x[:, :, None, :] > x[:, None, :, :], axis=3)
    return x[np.all(got == want[None], axis=(1, 2))]


def exact_clustered_total_orders_random_noise(
    lists, n_items: int, a: float, b: float, theta: float, power: float = 1.0, n_grid: int = 400
):
    """As :func:`exact_clustered_total_orders` (``d = 0``) with ``p ~ Beta(a, b)`` instead of a
    fixed noise, integrated out on a midpoint grid of ``n_grid`` points: co-clustering matrix,
    ``P(K = k)`` and the posterior mean of ``p``."""
    n = len(lists)
    perms = list(itertools.permutations(range(n_items)))
    grid = (np.arange(n_grid) + 0.5) / n_grid
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    prior = np.exp((a - 1) * np.log(grid) + (b - 1) * np.log1p(-grid) - log_beta) / n_grid
    # lik[g, i, s]: list i under order s at noise grid[g], to the power
    lik = (
        np.array([[[total_order_list_lik(s, y, p) for s in perms] for y in lists] for p in grid])
        ** power
    )
    co = np.zeros((n, n))
    k_dist = np.zeros(n + 1)
    total = mean_p = 0.0
    for blocks in set_partitions(n):
        per_p = prior * eppf([len(b) for b in blocks], theta, 0.0)
        for block in blocks:
            per_p = per_p * np.mean(np.prod(lik[:, block, :], axis=1), axis=1)
        weight = float(per_p.sum())
        total += weight
        mean_p += float(np.sum(per_p * grid))
        k_dist[len(blocks)] += weight
        for block in blocks:
            co[np.ix_(block, block)] += weight
    return co / total, k_dist / total, mean_p / total


def pair_counting_ari(a, b) -> float:
    """Adjusted Rand index by counting every pair of items (Hubert and Arabie 1985): the Rand
    index of the pairs put together by ``a`` and by ``b``, corrected for chance."""
    n = len(a)
    pairs = list(itertools.combinations(range(n), 2))
    same_a = np.array([a[i] == a[j] for i, j in pairs])
    same_b = np.array([b[i] == b[j] for i, j in pairs])
    both, in_a, in_b = np.sum(same_a & same_b), np.sum(same_a), np.sum(same_b)
    expected = in_a * in_b / len(pairs)
    top = 0.5 * (in_a + in_b)
    return 1.0 if top == expected else float((both - expected) / (top - expected))


def pooled_co_clustering_split_rhat(labels) -> float:
    """Split R-hat of the indicators ``1{c_i = c_j}`` pooled over the pairs ``i < j``, by
    looping over the pairs: each chain ``(chain, draw, N)`` cut into its first and last
    ``draw // 2`` draws, ``W`` the mean within-half variance (ddof 1), ``B`` the half length
    times the variance (ddof 1) of the halves' means, each summed over the pairs, and
    ``sqrt((n - 1)/n + B / (n W))`` (Gelman et al. 2013, section 11.4)."""
    labels = np.asarray(labels)
    n_draws = labels.shape[1]
    n = n_draws // 2
    halves = [h for c in labels for h in (c[:n], c[n_draws - n :])]
    within = between = 0.0
    for i, j in itertools.combinations(range(labels.shape[2]), 2):
        x = np.array([(h[:, i] == h[:, j]).astype(float) for h in halves])
        within += np.mean(np.var(x, axis=1, ddof=1))
        between += n * np.var(x.mean(axis=1), ddof=1)
    return math.sqrt((n - 1) / n + between / (n * within))


def bivariate_normal_cdf(h, k, rho: float, one_minus_rho: float | None = None):
    """``P(X <= h, Y <= k)`` of standard normals with correlation ``ρ``, by Owen's T function
    (Owen 1956): ``½Φ(h) + ½Φ(k) - T(h, a_h) - T(k, a_k) - β`` with
    ``a_h = (k - ρh) / (h√(1-ρ²))``, ``a_k = (h - ρk) / (k√(1-ρ²))`` and ``β = ½`` when
    ``h`` and ``k`` have opposite signs, else 0 (a zero counts as positive).
    ``one_minus_rho``: ``1 - ρ`` given exactly (for ``ρ`` near 1)."""
    from scipy import special

    one_minus = 1.0 - rho if one_minus_rho is None else one_minus_rho
    root = math.sqrt(one_minus * (1.0 + rho))
    h = np.where(h == 0.0, 1e-300, h)
    k = np.where(k == 0.0, 1e-300, k)
    beta = np.where((h > 0.0) == (k > 0.0), 0.0, 0.5)  # not h * k > 0, which underflows
    return (
        0.5 * special.ndtr(h)
        + 0.5 * special.ndtr(k)
        - special.owens_t(h, (k - rho * h) / (h * root))
        - special.owens_t(k, (h - rho * k) / (k * root))
        - beta
    )


def exact_two_item_clustered_hyperposterior(
    lists,
    p,
    rho_prior=(1.0, 1.0 / 6.0),
    alpha_prior=(1.0, 1.0),
    rho_logit_grid=None,
    tau_logit_grid=None,
    n_nodes: int = 24,
    n_noise_nodes: int = 16,
):
    """Posterior of ``ρ``, ``τ``, ``α``, ``K`` (and a random ``p``) of the clustered
    partial-order model on two items in two dimensions, by enumeration of the set partitions
    and quadrature.

    Model: ``U0_j ~ N(0, Σ_ρ)`` for items ``j = 0, 1``, ``U^{(a)}_j ~ N(τU0_j, (1-τ²)Σ_ρ)``,
    ``Σ_ρ = (1-ρ)I + ρ11ᵀ``, ``ρ ~ Beta(rho_prior)``, ``τ ~ U(0, 1)``, ``α ~ Gamma(shape,
    rate)``, the lists clustered by a CRP(``α``) with no truncation, each cluster's order the
    dominance order of its slot (``0 > 1``, ``1 > 0`` or none), the lists queue-jumping with
    noise ``p`` (a number, or ``(a, b)`` for ``p ~ Beta(a, b)``, integrated by Gauss--Legendre
    quadrature with ``n_noise_nodes`` nodes). With ``D0 = U0_0 - U0_1 ~ N(0, 2Σ_ρ)`` and
    ``m = τ D0 / √(2(1-τ²))``, a slot's order is ``0 > 1`` with probability ``Φ₂(m₁, m₂; ρ)``
    and ``1 > 0`` with ``Φ₂(-m₁, -m₂; ρ)`` given ``D0`` (:func:`bivariate_normal_cdf`), the
    slots independent given ``D0``; ``D0 = √(1+ρ) s (1, 1) + √(1-ρ) t (1, -1)`` with ``s, t``
    standard normal is integrated by Gauss--Hermite quadrature (``n_nodes²`` nodes).

    Returns ``{"rho": (logit ρ, density), "tau": (logit τ, density), "alpha": (log α,
    density), "K": P(K = k) at index k}`` (and ``"p"`` for a random ``p``), each
    density on its grid's scale, normalised to sum 1 over the grid; ``"p"`` holds the
    quadrature nodes of ``p`` and their posterior weights (for means, not a density).
    """
    from scipy import special

    n = len(lists)
    relations = (
        [[False, True], [False, False]],  # 0 > 1
        [[False, False], [True, False]],  # 1 > 0
        [[False, False], [False, False]],  # no relation
    )
    if isinstance(p, tuple):
        x, w = np.polynomial.legendre.leggauss(n_noise_nodes)
        noise = (x + 1.0) / 2.0
        noise_w = w * noise ** (p[0] - 1.0) * (1.0 - noise) ** (p[1] - 1.0)
    else:
        noise, noise_w = np.array([float(p)]), np.ones(1)
    v = np.linspace(-10.0, 50.0, 121) if rho_logit_grid is None else np.asarray(rho_logit_grid)
    u = np.linspace(-10.0, 10.0, 81) if tau_logit_grid is None else np.asarray(tau_logit_grid)
    nodes, gh = np.polynomial.hermite_e.hermegauss(n_nodes)
    s, t = (x.ravel() for x in np.meshgrid(nodes, nodes, indexing="ij"))
    node_w = np.outer(gh, gh).ravel() / gh.sum() ** 2
    # Partitions grouped by the lists in their blocks: Σ Π (n_j - 1)! per number of blocks.
    groups: dict[tuple, list] = {}
    for blocks in set_partitions(n):
        key = tuple(sorted(tuple(sorted(tuple(lists[i]) for i in b)) for b in blocks))
        weight = math.prod(math.factorial(len(b) - 1) for b in blocks)
        groups.setdefault(key, [0.0] * (n + 1))[len(blocks)] += weight
    keys = list(groups)
    # Block likelihoods under the three orders at each noise node: (noise, 3) per block.
    block_lik = {}
    for key in keys:
        for block in key:
            if block not in block_lik:
                lik = [
                    [
                        math.prod(linear_extension_list_lik(r, y, q) for y in block)
                        for r in relations
                    ]
                    for q in noise
                ]
                block_lik[block] = np.array(lik)
    # alpha on a log grid: EPPF(c | α) = α^{K-1} / (α+1)_{N-1} · Π (n_j - 1)!.
    log_alpha = np.linspace(-12.0, 6.0, 1801)
    alpha = np.exp(log_alpha)
    shape, rate = alpha_prior
    rising = np.ones_like(alpha)
    for i in range(1, n):
        rising *= alpha + i
    prior_alpha = alpha**shape * np.exp(-rate * alpha)  # Gamma density times the Jacobian α
    per_k = np.array([prior_alpha * alpha ** (k - 1) / rising for k in range(n + 1)])
    per_k[0] = 0.0
    # lam[noise, key, v, u] = Σ_orders P(orders | τ, ρ) Π_blocks p(block | order).
    lam = np.zeros((noise.size, len(keys), v.size, u.size))
    tau = special.expit(u)
    scale = (tau / np.sqrt(2.0 * special.expit(-u) * (1.0 + tau)))[:, None]
    for i_rho, vv in enumerate(v):
        rho, one_minus = special.expit(vv), special.expit(-vv)
        d1 = math.sqrt(1.0 + rho) * s + math.sqrt(one_minus) * t
        d2 = math.sqrt(1.0 + rho) * s - math.sqrt(one_minus) * t
        up = bivariate_normal_cdf(scale * d1, scale * d2, rho, one_minus)  # (u, nodes)
        down = bivariate_normal_cdf(-scale * d1, -scale * d2, rho, one_minus)
        probs = np.stack([up, down, np.clip(1.0 - up - down, 0.0, 1.0)])
        for i_noise in range(noise.size):
            mixed = {b: np.tensordot(lik[i_noise], probs, axes=1) for b, lik in block_lik.items()}
            for i_key, key in enumerate(keys):
                integrand = math.prod((mixed[b] for b in key), start=np.ones_like(up))
                lam[i_noise, i_key, i_rho] = integrand @ node_w
    priors = (
        noise_w[:, None, None, None]
        * (special.expit(v) ** rho_prior[0] * special.expit(-v) ** rho_prior[1])[:, None]
        * (tau * special.expit(-u))[None, :]  # uniform tau on the logit scale
    )
    joint = lam * priors
    by_key_k = np.array([groups[key] for key in keys])  # (keys, K)
    weights = joint * (by_key_k @ per_k.sum(axis=1))[None, :, None, None]
    key_mass = joint.sum(axis=(0, 2, 3))
    alpha_density = (by_key_k.T @ key_mass) @ per_k
    k_dist = by_key_k.T @ key_mass * per_k.sum(axis=1)
    total = weights.sum()
    out = {
        "rho": (v, weights.sum(axis=(0, 1, 3)) / total),
        "tau": (u, weights.sum(axis=(0, 1, 2)) / total),
        "alpha": (log_alpha, alpha_density / alpha_density.sum()),
        "K": k_dist / k_dist.sum(),
    }
    if isinstance(p, tuple):
        out["p"] = (noise, weights.sum(axis=(1, 2, 3)) / total)
    return out


def two_cluster_split_posterior(ll_a, ll_b, d: float):
    """Every labelling of ``n`` observations over two clusters with both non-empty, and its
    probability ``∝ Γ(n_a - d) Γ(n_b - d) Π e^{ℓ}`` (the Pitman--Yor EPPF with every other
    block held; ``ll_a``, ``ll_b`` the observations' log-likelihoods under the two clusters).
    Returns ``(sides, probs)``, ``sides`` an ``(S, n)`` boolean array (``True``: cluster a)."""
    n = len(ll_a)
    sides, logs = [], []
    for bits in itertools.product([True, False], repeat=n):
        n_a = sum(bits)
        if n_a in (0, n):
            continue
        log_p = math.lgamma(n_a - d) + math.lgamma(n - n_a - d)
        log_p += sum(ll_a[i] if bits[i] else ll_b[i] for i in range(n))
        sides.append(bits)
        logs.append(log_p)
    top = max(logs)
    probs = np.array([math.exp(v - top) for v in logs])
    return np.array(sides, dtype=bool), probs / probs.sum()


def two_cluster_weight_log_density(eta: float, ll_a, ll_b, d: float) -> float:
    """``log p(η)`` up to a constant for the log-odds ``η`` of two clusters' weight with their
    labels summed out by enumeration: ``w^{-d}(1-w)^{-d} Σ_{two-sided c} Π (w e^{ℓ_a})^{[a]}
    ((1-w) e^{ℓ_b})^{[b]}``, ``w = 1/(1 + e^{-η})``."""
    w, w_b = 1.0 / (1.0 + math.exp(-eta)), 1.0 / (1.0 + math.exp(eta))
    n = len(ll_a)
    total = 0.0
    for bits in itertools.product([True, False], repeat=n):
        if sum(bits) in (0, n):
            continue
        term = 1.0
        for i in range(n):
            term *= w * math.exp(ll_a[i]) if bits[i] else w_b * math.exp(ll_b[i])
        total += term
    return -d * (math.log(w) + math.log(w_b)) + math.log(total)


def plackett_luce_order_probs(worths) -> tuple[list, np.ndarray]:
    """Every order of ``len(worths)`` items (best first) and its Plackett--Luce probability
    ``∏_j w_{π_j} / Σ_{k >= j} w_{π_k}``; ``worths`` may carry leading axes (the probabilities
    then have them too, the orders on the last axis)."""
    worths = np.asarray(worths, dtype=float)
    orders = list(itertools.permutations(range(worths.shape[-1])))
    probs = []
    for order in orders:
        prob = np.ones(worths.shape[:-1])
        for j in range(len(order) - 1):
            prob = prob * worths[..., order[j]] / worths[..., list(order[j:])].sum(axis=-1)
        probs.append(prob)
    return orders, np.stack(probs, axis=-1)


def exact_single_order_covariate_posterior(
    lists, covariates, noise_prior=(1.0, 9.0), n_beta: int = 100, beta_limit: float = 10.0
):
    """Posterior of ``partial_order(lists, M, n_dims=1, covariates=x)`` with one covariate.

    Model: ``U_j ~ N(0, 1)`` independently, ``β ~ N(0, 1)``, ``η_j = G⁻¹(Φ(U_j)) + x_j β``
    with ``G`` the standard Gumbel CDF, ``p ~ Beta(a, b)``, each list a top-down
    queue-jumping linear extension of the total order of ``η`` (largest first). The
    ``G⁻¹(Φ(U_j))`` are independent standard Gumbel variables, so given ``β`` the order of
    ``η`` is Plackett--Luce with worths ``exp(x_j β)`` (the ranks of Gumbel-perturbed
    log-worths; Yellott 1977). ``β`` is integrated by Gauss--Legendre quadrature with
    ``n_beta`` nodes on each side of 0 (to ``±beta_limit``; the split makes ``P(β > 0)``
    exact too), ``p`` by Gauss--Jacobi quadrature with enough nodes to integrate the lists'
    likelihood, a polynomial in ``p``, times ``p`` exactly.

    Returns ``{"orders": [...], "order_probs": array, "beta_mean": float,
    "beta_positive": float, "p_mean": float}``.
    """
    from scipy import special

    x = np.asarray(covariates, dtype=float).reshape(-1)
    a, b = noise_prior
    degree = sum(len(y) - 1 for y in lists) + 1
    nodes, weights = special.roots_jacobi(degree // 2 + 2, b - 1.0, a - 1.0)
    noise = (nodes + 1.0) / 2.0
    noise_weights = weights / weights.sum()  # the Beta(a, b) prior on the nodes
    legendre, legendre_weights = np.polynomial.legendre.leggauss(n_beta)
    half = beta_limit * (legendre + 1.0) / 2.0
    beta = np.concatenate([-half, half])
    beta_weights = (
        np.concatenate([legendre_weights, legendre_weights])
        * beta_limit
        / 2.0
        * np.exp(-0.5 * beta**2)
    )
    orders, order_given_beta = plackett_luce_order_probs(np.exp(beta[:, None] * x[None, :]))
    lik = np.ones((len(orders), noise.size))  # lik[order, node]
    for y in lists:
        lik *= np.array([[total_order_list_lik(order, y, p) for p in noise] for order in orders])
    # joint[beta node, order, noise node]
    joint = beta_weights[:, None, None] * order_given_beta[:, :, None] * lik * noise_weights
    joint /= joint.sum()
    return {
        "orders": orders,
        "order_probs": joint.sum(axis=(0, 2)),
        "beta_mean": float(np.sum(joint.sum(axis=(1, 2)) * beta)),
        "beta_positive": float(joint[beta > 0].sum()),
        "p_mean": float(np.sum(joint.sum(axis=(0, 1)) * noise)),
    }


def _three_item_covariate_order_probs(mean_utilities, tau, beta, x, n_hermite: int):
    """``P(η has total order π | U0, τ, β)`` for the 6 orders of 3 items (best first), where
    ``η_j = G⁻¹(Φ(U_j)) + x_j β`` and ``U_j ~ N(τ U0_j, 1 - τ²)`` independently. For the order
    ``(a, m, b)`` it is ``E[P(η_a > η_m) P(η_b < η_m)]`` over ``U_m`` (Gauss--Hermite), each
    factor the normal CDF at the utility whose ``η`` equals ``η_m``. Arrays over points: ``U0``
    ``(n, 3)``, ``τ`` and ``β`` ``(n,)``; returns ``(n, 6)``."""
    from scipy import special

    nodes, weights = special.roots_hermitenorm(n_hermite)
    weights = weights / weights.sum()
    scale = np.sqrt(np.maximum(1.0 - tau**2, 1e-300))[:, None]
    mean = tau[:, None] * mean_utilities
    shift = beta[:, None] * x[None, :]

    def below(item, level):  # P(η_item < level) given the point
        utility = special.ndtri_exp(-np.exp(-(level - shift[:, item, None])))
        return special.ndtr((utility - mean[:, item, None]) / scale)

    orders = list(itertools.permutations(range(3)))
    probs = np.zeros((mean.shape[0], len(orders)))
    for k, (top, middle, bottom) in enumerate(orders):
        utility = mean[:, middle, None] + scale * nodes[None, :]
        level = -np.log(-special.log_ndtr(utility)) + shift[:, middle, None]
        probs[:, k] = ((1.0 - below(top, level)) * below(bottom, level)) @ weights
    return orders, probs


def exact_clustered_covariate_posterior(
    lists,
    covariates,
    theta: float = 1.0,
    noise_prior=(1.0, 9.0),
    log2_points: int = 15,
    replicates: int = 4,
    n_hermite: int = 32,
    seed: int = 0,
):
    """Posterior of ``clustered_partial_orders(lists, 3, n_dims=1, covariates=x,
    concentration=θ)`` (CRP, three items, one covariate).

    Model: partition ~ CRP(θ); ``τ ~ U(0, 1)``, ``U0_j ~ N(0, 1)``, each cluster's
    ``U_j ~ N(τ U0_j, 1 - τ²)``, ``β ~ N(0, 1)``, ``η_j = G⁻¹(Φ(U_j)) + x_j β``,
    ``p ~ Beta(a, b)``; each list a top-down queue-jumping extension of its cluster's total
    order of ``η``. Exact sums over the set partitions and each cluster's 6 orders; ``p`` by
    Gauss--Jacobi quadrature exact for the polynomial likelihood; ``P(order | U0, τ, β)`` by
    :func:`_three_item_covariate_order_probs`; ``(U0, τ, β)`` (5 dimensions) by scrambled
    Sobol points from their prior, ``2**log2_points`` per replicate, averaged over
    ``replicates`` independent replicates (each quantity's spread over them is returned).

    Returns ``{"n_clusters_probs": {k: P(K = k)}, "co_clustering": (N, N) array,
    "beta_mean", "beta_positive", "p_mean", "tau_mean", "first_list_order_probs": (6,) array
    (the order of list 0's cluster), "orders", "replicate_error": max standard error over the
    replicates of these}``.
    """
    from scipy import special, stats

    x = np.asarray(covariates, dtype=float).reshape(-1)
    n = len(lists)
    a, b = noise_prior
    degree = sum(len(y) - 1 for y in lists) + 1
    nodes, weights = special.roots_jacobi(degree // 2 + 2, b - 1.0, a - 1.0)
    noise = (nodes + 1.0) / 2.0
    noise_weights = weights / weights.sum()
    orders = list(itertools.permutations(range(3)))
    # lik[subset mask, order, noise node]: the lists of a subset under one order
    lik = np.ones((1 << n, len(orders), noise.size))
    for mask in range(1, 1 << n):
        for k, order in enumerate(orders):
            for i in range(n):
                if mask >> i & 1:
                    lik[mask, k] *= [total_order_list_lik(order, lists[i], p) for p in noise]
    partitions = list(set_partitions(n))
    prior = np.array([eppf([len(b) for b in blocks], theta, 0.0) for blocks in partitions])
    masks = [[sum(1 << i for i in block) for block in blocks] for blocks in partitions]
    results = []
    for replicate in range(replicates):
        sobol = stats.qmc.Sobol(5, scramble=True, seed=seed + replicate).random_base2(log2_points)
        mean_utilities, tau, beta = (
            special.ndtri(sobol[:, :3]),
            sobol[:, 3],
            special.ndtri(sobol[:, 4]),
        )
        _, order_probs = _three_item_covariate_order_probs(mean_utilities, tau, beta, x, n_hermite)
        cluster = np.einsum("sk,mkq->smq", order_probs, lik)  # (points, subset, noise)
        weight = np.zeros((len(partitions), sobol.shape[0], noise.size))
        first_weight = np.zeros((len(partitions), len(orders)))
        for j, blocks in enumerate(masks):
            (home,) = [m for m in blocks if m & 1]  # the block of list 0
            rest = np.ones((sobol.shape[0], noise.size))
            for m in blocks:
                if m != home:
                    rest = rest * cluster[:, m]
            weight[j] = rest * cluster[:, home]
            first_weight[j] = prior[j] * np.einsum(
                "sk,kq,sq,q->k", order_probs, lik[home], rest, noise_weights
            )
        joint = prior[:, None, None] * weight * noise_weights  # (partition, point, noise)
        total = joint.sum()
        by_partition = joint.sum(axis=(1, 2)) / total
        by_point = joint.sum(axis=(0, 2)) / total
        co = sum(
            p * np.equal.outer(partition_labels(blocks, n), partition_labels(blocks, n))
            for p, blocks in zip(by_partition, partitions, strict=True)
        )
        sizes = np.array([len(blocks) for blocks in partitions])
        results.append(
            [by_partition[sizes == k].sum() for k in range(1, n + 1)]
            + list(co[np.triu_indices(n, 1)])
            + [by_point @ beta, by_point @ (beta > 0), by_point @ tau]
            + [joint.sum(axis=(0, 1)) @ noise / total]
            + list(first_weight.sum(axis=0) / total)
        )
    results = np.array(results)
    mean = results.mean(axis=0)
    error = results.std(axis=0, ddof=1) / np.sqrt(replicates)
    co = np.eye(n)
    co[np.triu_indices(n, 1)] = mean[n : n + n * (n - 1) // 2]
    co = np.maximum(co, co.T)
    tail = mean[n + n * (n - 1) // 2 :]
    return {
        "n_clusters_probs": dict(zip(range(1, n + 1), mean[:n], strict=True)),
        "co_clustering": co,
        "beta_mean": tail[0],
        "beta_positive": tail[1],
        "tau_mean": tail[2],
        "p_mean": tail[3],
        "first_list_order_probs": tail[4:],
        "orders": orders,
        "replicate_error": float(error.max()),
    }
