"""Tests of the agreement of chains' point-estimate partitions and of the extra summary rows."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
from oracles import pair_counting_ari

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
