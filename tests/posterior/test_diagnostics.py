"""Tests of the label-invariant summaries and the posterior similarity matrix."""

from __future__ import annotations

import itertools

import arviz as az
import numpy as np
import pytest

import pymc_crp as pmc
from pymc_crp.posterior.diagnostics import cluster_summary, partition_stats, posterior_similarity
from pymc_crp.posterior.draws import canonical_draws, label_draws


def similarity_loop(draws):
    s, n = draws.shape
    out = np.zeros((n, n))
    for d in draws:
        for i in range(n):
            for j in range(n):
                out[i, j] += d[i] == d[j]
    return out / s


def make_idata(seed=0, chains=3, draws=200, n=15, n_slots=6, log_likelihood=True):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, n_slots, size=(chains, draws, n))
    z[..., :5] = 0  # a common block so that the largest cluster varies less
    groups = {
        "posterior": {"z": z, "alpha": rng.gamma(2.0, 1.0, size=(chains, draws))},
    }
    if log_likelihood:
        groups["log_likelihood"] = {"y": rng.normal(size=(chains, draws, n))}
    return az.from_dict(**groups), z


# --------------------------------------------------------------------------------------------
# posterior_similarity
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["auto", "blas", "pairs"])
def test_similarity_matches_double_loop(method):
    rng = np.random.default_rng(1)
    draws = rng.integers(0, 5, size=(60, 25)) * 1000  # sparse, large label values
    draws[:20, :10] = 7  # some large blocks
    expected = similarity_loop(draws)
    got = posterior_similarity(draws, method=method)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_array_equal(np.diag(got), 1.0)
    rows = [4, 0, 24, 4, -1]
    np.testing.assert_allclose(
        posterior_similarity(draws, rows=rows, method=method), expected[rows], atol=1e-15
    )


def test_similarity_in_chunks_matches_direct():
    rng = np.random.default_rng(2)
    n, s = 700, 1500
    draws = rng.integers(0, 12, size=(s, n))
    # with this limit the one-hot blocks hold ~1,500 of the ~18,000 columns at a time
    limit = 12 * n * n + 2**24
    got = posterior_similarity(draws, max_memory_bytes=limit, method="blas")
    sub = [0, 5, 699]
    direct = np.stack([(draws == draws[:, [i]]).mean(axis=0) for i in sub])
    np.testing.assert_allclose(got[sub], direct, atol=1e-15)
    np.testing.assert_allclose(got[:, sub].T, direct, atol=1e-15)


def test_similarity_from_inference_data():
    idata, z = make_idata()
    expected = similarity_loop(z.reshape(-1, z.shape[-1]))
    np.testing.assert_allclose(posterior_similarity(idata, "z"), expected, atol=1e-15)
    np.testing.assert_allclose(posterior_similarity(idata.posterior["z"]), expected, atol=1e-15)
    np.testing.assert_allclose(posterior_similarity(idata), expected, atol=1e-15)


def test_similarity_memory_guard():
    draws = np.zeros((2, 3000), dtype=np.int64)
    with pytest.raises(ValueError, match=r"103\.0 MiB.*max_memory_bytes.*rows="):
        posterior_similarity(draws, max_memory_bytes=50 * 2**20)
    part = posterior_similarity(draws, rows=[0, 1], max_memory_bytes=50 * 2**20)
    assert part.shape == (2, 3000) and np.all(part == 1.0)
    with pytest.raises(TypeError, match="rows"):
        posterior_similarity(draws, rows=[0.5])
    with pytest.raises(ValueError, match="rows"):
        posterior_similarity(draws, rows=[3000])
    with pytest.raises(TypeError, match="max_memory_bytes"):
        posterior_similarity(draws, max_memory_bytes=1e9)
    with pytest.raises(ValueError, match="method"):
        posterior_similarity(draws[:, :5], method="fast")


# --------------------------------------------------------------------------------------------
# partition_stats and cluster_summary
# --------------------------------------------------------------------------------------------
def direct_stats(z):
    k, big, h = [], [], []
    for d in z.reshape(-1, z.shape[-1]):
        _, counts = np.unique(d, return_counts=True)
        p = counts / counts.sum()
        k.append(len(counts))
        big.append(counts.max())
        h.append(-(p * np.log(p)).sum())
    shape = z.shape[:2]
    return np.reshape(k, shape), np.reshape(big, shape), np.reshape(h, shape)


def test_partition_stats_values_and_rhat():
    idata, z = make_idata()
    out = partition_stats(idata, "z")
    assert out is idata
    k, big, h = direct_stats(z)
    post = idata.posterior
    np.testing.assert_array_equal(post["z_n_clusters"].values, k)
    np.testing.assert_array_equal(post["z_largest_cluster"].values, big)
    np.testing.assert_allclose(post["z_entropy"].values, h, rtol=1e-12)
    assert post["z_entropy"].dims == ("chain", "draw")
    names = ["z_n_clusters", "z_largest_cluster", "z_entropy"]
    rhat = az.rhat(idata, var_names=names)
    ess = az.ess(idata, var_names=names)
    for name in names:
        assert np.isfinite(float(rhat[name])) and abs(float(rhat[name]) - 1) < 0.05
        assert float(ess[name]) > 100


def test_partition_stats_not_inplace():
    idata, _ = make_idata()
    new = partition_stats(idata, "z", inplace=False)
    assert "z_n_clusters" in new.posterior and "z_n_clusters" not in idata.posterior
    assert new.log_likelihood is idata.log_likelihood


def test_cluster_summary():
    idata, z = make_idata()
    table = cluster_summary(idata, "z")
    rows = ["z_n_clusters", "z_largest_cluster", "z_entropy", "alpha", "log_likelihood"]
    assert list(table.index) == rows
    k, big, h = direct_stats(z)
    assert table.loc["z_n_clusters", "mean"] == pytest.approx(k.mean(), abs=1e-3)
    assert table.loc["z_entropy", "mean"] == pytest.approx(h.mean(), abs=1e-3)
    total = idata.log_likelihood["y"].values.sum(axis=-1)
    assert table.loc["log_likelihood", "mean"] == pytest.approx(total.mean(), abs=1e-3)
    assert {"r_hat", "ess_bulk"} <= set(table.columns)
    without = cluster_summary(idata, "z", concentration=False, log_likelihood=False)
    assert list(without.index) == rows[:3]
    no_ll, _ = make_idata(log_likelihood=False)
    assert "log_likelihood" not in cluster_summary(no_ll, "z", kind="stats").index
    with pytest.raises(ValueError, match="concentration"):
        cluster_summary(idata, "z", concentration="theta")


def test_input_validation():
    idata, _ = make_idata()
    with pytest.raises(TypeError, match="idata"):
        partition_stats({"z": 1}, "z")
    with pytest.raises(ValueError, match="var_name"):
        partition_stats(idata, "nope")
    with pytest.raises(ValueError, match=r"\(S, N\)"):
        label_draws(np.zeros(4, dtype=int))
    with pytest.raises(TypeError, match="integer"):
        label_draws(np.full((2, 2), 0.5))
    bad = az.from_dict(posterior={"z": np.zeros((2, 3, 4, 5), dtype=int)})
    with pytest.raises(ValueError, match=r"\(chain, draw, N\)"):
        partition_stats(bad, "z")


def test_canonical_draws():
    labels, k = canonical_draws(np.array([[5, 5, 2, 9], [0, 1, 0, 1], [10**12, 3, 3, 10**12]]))
    np.testing.assert_array_equal(labels, [[0, 0, 1, 2], [0, 1, 0, 1], [0, 1, 1, 0]])
    np.testing.assert_array_equal(k, [3, 2, 2])


# --------------------------------------------------------------------------------------------
# adjusted_rand_index against brute force over pairs and permutations
# --------------------------------------------------------------------------------------------
def _pair_index(a, b) -> int:
    """Number of item pairs together in both partitions (enumerating pairs)."""
    return sum(a[i] == a[j] and b[i] == b[j] for i, j in itertools.combinations(range(len(a)), 2))


def _ari_by_permutations(a, b) -> float:
    """ARI from its definition: the expected index is the mean over all permutations of b."""
    index = _pair_index(a, b)
    perms = itertools.permutations(range(len(b)))
    expected = np.mean([_pair_index(a, [b[k] for k in p]) for p in perms])
    together_a = _pair_index(a, a)
    together_b = _pair_index(b, b)
    return (index - expected) / (0.5 * (together_a + together_b) - expected)


@pytest.mark.parametrize("seed", range(6))
def test_adjusted_rand_index_matches_permutation_definition(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, size=7)
    b = rng.integers(-2, 2, size=7)
    if len(set(a)) in (1, 7) and len(set(b)) in (1, 7):
        pytest.skip("degenerate draw")
    assert pmc.adjusted_rand_index(a, b) == pytest.approx(_ari_by_permutations(a, b), abs=1e-12)


def test_adjusted_rand_index_hand_examples_and_errors():
    # contingency [[2, 1, 0], [0, 1, 2]]: (2 - 6*3/15) / ((6 + 3)/2 - 6*3/15) = 0.8 / 3.3
    assert pmc.adjusted_rand_index([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]) == pytest.approx(
        0.8 / 3.3
    )
    assert pmc.adjusted_rand_index([0, 0, 1, 1], [5, 5, 2, 2]) == 1.0
    assert pmc.adjusted_rand_index([0, 1, 0, 1], [0, 0, 1, 1]) == pytest.approx(-0.5)
    assert pmc.adjusted_rand_index([3, 3, 3], [1, 1, 1]) == 1.0
    with pytest.raises(ValueError, match="same length"):
        pmc.adjusted_rand_index([0, 1], [0, 1, 2])
    with pytest.raises(TypeError, match="labels_b"):
        pmc.adjusted_rand_index([0, 1], [0.5, 1.0])
