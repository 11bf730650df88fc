"""Tests of the agreement of chains' point-estimate partitions and of the extra summary rows."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from oracles import pair_counting_ari, pooled_co_clustering_split_rhat

import pymc_crp as pmc

N = 24
BASES = (
    np.repeat([0, 1, 2], 8),  # three blocks of 8
    np.repeat([0, 1, 2], 8),  # the same partition
    np.repeat([0, 1], 12),  # two of the blocks merged
    np.tile([0, 1, 2, 3], 6),  # an unrelated partition
)


def noisy_chains(bases, draws=150, seed=0):
    """Draws around each chain's base partition: in each draw one item in ten (on average)
    takes a uniformly chosen label, and the labels are permuted (label switching)."""
    rng = np.random.default_rng(seed)
    z = np.empty((len(bases), draws, N), dtype=np.int64)
    for c, base in enumerate(bases):
        for d in range(draws):
            labels = base.copy()
            moved = rng.random(N) < 0.1
            labels[moved] = rng.integers(0, 6, size=moved.sum())
            z[c, d] = rng.permutation(6)[labels]
    return az.from_dict(posterior={"z": z, "p": rng.random((len(bases), draws))})


def test_chain_agreement_matches_pair_counting_oracle():
    ari = pmc.chain_agreement(noisy_chains(BASES), "z")
    expected = np.array([[pair_counting_ari(a, b) for b in BASES] for a in BASES])
    np.testing.assert_allclose(ari, expected, atol=1e-12)
    assert ari[0, 1] == 1.0 and ari[0, 2] < 0.7 and abs(ari[0, 3]) < 0.2
    np.testing.assert_array_equal(ari, ari.T)


def test_chain_agreement_one_chain_and_binder():
    idata = noisy_chains(BASES[:1], seed=3)
    np.testing.assert_array_equal(pmc.chain_agreement(idata, "z", loss="binder"), [[1.0]])


def test_chain_agreement_warns_when_every_estimate_is_trivial():
    """Diffuse draws (each item one of 4 labels at random in each draw: similarity 1/4 for
    every pair) give one-block VI estimates whose ARI is 1 by construction: a warning points to
    similarity_rhat; estimates with structure do not warn."""
    rng = np.random.default_rng(1)
    diffuse = az.from_dict(posterior={"z": rng.integers(0, 4, size=(3, 100, N))})
    with pytest.warns(UserWarning, match=r"clusters per chain: 1, 1, 1.*similarity_rhat"):
        ari = pmc.chain_agreement(diffuse, "z")
    np.testing.assert_array_equal(ari, np.ones((3, 3)))
    singletons = np.tile(np.arange(N), (2, 20, 1))
    with pytest.warns(UserWarning, match=f"clusters per chain: {N}, {N}"):
        pmc.chain_agreement(az.from_dict(posterior={"z": singletons}), "z")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pmc.chain_agreement(noisy_chains(BASES[:2]), "z")


def test_chain_agreement_bad_input():
    idata = noisy_chains(BASES[:2])
    with pytest.raises(TypeError, match="idata"):
        pmc.chain_agreement({"z": 1}, "z")
    with pytest.raises(ValueError, match="var_name"):
        pmc.chain_agreement(idata, "nope")
    with pytest.raises(ValueError, match=r"p must have dims \(chain, draw, N\)"):
        pmc.chain_agreement(idata, "p")
    with pytest.raises(ValueError, match="loss"):
        pmc.chain_agreement(idata, "z", loss="x")


def test_cluster_summary_extra_scalars():
    idata = noisy_chains(BASES[:2])
    table = pmc.cluster_summary(idata, "z", var_names=["p"], kind="stats")
    assert list(table.index) == ["z_n_clusters", "z_largest_cluster", "z_entropy", "p"]
    assert table.loc["p", "mean"] == pytest.approx(float(idata.posterior["p"].mean()), abs=1e-3)
    with pytest.raises(TypeError, match="var_names"):
        pmc.cluster_summary(idata, "z", var_names="p")
    with pytest.raises(ValueError, match="var_names: 'z'"):
        pmc.cluster_summary(idata, "z", var_names=["z"])
    with pytest.raises(ValueError, match="var_names: 'q'"):
        pmc.cluster_summary(idata, "z", var_names=["q"])


def test_similarity_rhat_matches_pair_loop_oracle():
    """The pooled split R-hat against a loop over pairs and halves (odd draw count: the
    middle draw is left out), and for two items against ArviZ's split R-hat."""
    z = noisy_chains(BASES, draws=41, seed=5).posterior["z"].values
    expected = pooled_co_clustering_split_rhat(z)
    assert expected > 1.1
    assert pmc.similarity_rhat(z) == pytest.approx(expected, rel=1e-12)
    # rows computed in blocks of one give the same sums
    assert pmc.similarity_rhat(z, max_memory_bytes=1) == pytest.approx(expected, rel=1e-12)
    pair = z[:, :, [0, 9]]
    indicator = (pair[..., 0] == pair[..., 1]).astype(float)
    assert pmc.similarity_rhat(pair) == pytest.approx(
        float(az.rhat(indicator, method="split")), rel=1e-12
    )


def test_similarity_rhat_separates_agreeing_from_disagreeing_chains():
    """Four chains around one partition (fresh noise each draw) give R-hat within its Monte
    Carlo spread of 1 (about 1 + 1/(2n) for independent draws); a chain that splits the
    first block in two gives far more, and by item singles out that block's 8 items."""
    agree = pmc.similarity_rhat(noisy_chains(BASES[:2] * 2, draws=200, seed=1), "z")
    assert 0.99 < agree < 1.01
    split_first = np.repeat([0, 3, 1, 2], [4, 4, 8, 8])
    bases = BASES[:1] * 3 + (split_first,)
    chains = noisy_chains(bases, draws=200, seed=1)
    assert pmc.similarity_rhat(chains, "z") > 1.04  # 16 of the 276 pairs differ
    by_item = pmc.similarity_rhat(chains, "z", by_item=True)
    assert by_item.shape == (N,)
    assert by_item[:8].min() > 1.1 and by_item[8:].max() < 1.01


def test_similarity_rhat_constant_chains():
    """Nothing varies: 1 (and nan per item); constant halves that differ: infinite."""
    same = np.zeros((2, 6, 3), dtype=np.int64)
    assert pmc.similarity_rhat(same) == 1.0
    assert np.isnan(pmc.similarity_rhat(same, by_item=True)).all()
    differ = same.copy()
    differ[1] = [0, 1, 2]
    assert pmc.similarity_rhat(differ) == np.inf
    np.testing.assert_array_equal(pmc.similarity_rhat(differ, by_item=True), np.inf)


def test_similarity_rhat_bad_input():
    idata = noisy_chains(BASES[:2])
    with pytest.raises(ValueError, match=r"shape \(chain, draw, N\)"):
        pmc.similarity_rhat(np.zeros((10, 4), dtype=np.int64))
    with pytest.raises(ValueError, match="at least 4 draws"):
        pmc.similarity_rhat(np.zeros((2, 3, 4), dtype=np.int64))
    with pytest.raises(TypeError, match="by_item"):
        pmc.similarity_rhat(idata, "z", by_item=1)
    with pytest.raises(TypeError, match="max_memory_bytes"):
        pmc.similarity_rhat(idata, "z", max_memory_bytes=1.5)
    with pytest.raises(ValueError, match="var_name 'q'"):
        pmc.similarity_rhat(idata, "q")
    with pytest.raises(TypeError, match="integer labels"):
        pmc.similarity_rhat(np.full((2, 6, 3), 0.5))
