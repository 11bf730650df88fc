"""Tests of expected losses and the SALSO-style point estimate against brute-force oracles.

The oracles are written here from the definitions: VI from the entropies of the contingency
table (natural logarithms), Binder from a double loop over the pairs, and the exact optimum
by enumerating every set partition of a small set.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import partition_labels, set_partitions

from pymc_crp.posterior.point_estimate import expected_loss, point_estimate_partition


# --------------------------------------------------------------------------------------------
# Oracles
# --------------------------------------------------------------------------------------------
def entropy(p):
    p = np.asarray([x for x in p if x > 0], dtype=float)
    return float(-(p * np.log(p)).sum())


def vi_oracle(a, b) -> float:
    """VI = H(a) + H(b) - 2 I(a, b) from the joint distribution of the two labellings."""
    n = len(a)
    joint = {}
    for x, y in zip(a, b, strict=True):
        joint[(x, y)] = joint.get((x, y), 0) + 1
    pa, pb = {}, {}
    for (x, y), c in joint.items():
        pa[x] = pa.get(x, 0) + c / n
        pb[y] = pb.get(y, 0) + c / n
    mutual = sum((c / n) * math.log((c / n) / (pa[x] * pb[y])) for (x, y), c in joint.items())
    return entropy(pa.values()) + entropy(pb.values()) - 2 * mutual


def binder_oracle(a, b) -> float:
    n = len(a)
    bad = sum((a[i] == a[j]) != (b[i] == b[j]) for i in range(n) for j in range(i + 1, n))
    return bad / max(n * (n - 1) / 2, 1)


def expected_oracle(c, draws, loss):
    f = vi_oracle if loss == "VI" else binder_oracle
    return float(np.mean([f(list(c), list(d)) for d in draws]))


def similarity_loop(draws):
    s, n = draws.shape
    out = np.zeros((n, n))
    for d in draws:
        for i in range(n):
            for j in range(n):
                out[i, j] += d[i] == d[j]
    return out / s


def canonical(labels):
    mapping = {}
    return np.array([mapping.setdefault(x, len(mapping)) for x in labels])


def planted_draws(rng, truth, n_draws, noise, n_labels):
    draws = np.tile(truth, (n_draws, 1))
    flip = rng.random(draws.shape) < noise
    draws[flip] = rng.integers(0, n_labels, flip.sum())
    return draws


# --------------------------------------------------------------------------------------------
# Expected loss
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["VI", "binder"])
def test_expected_loss_matches_oracle(loss):
    rng = np.random.default_rng(1)
    draws = rng.integers(0, 5, size=(40, 23)) * 7  # sparse label values
    draws[:10] = draws[10:20]  # duplicated draws are weighted correctly
    for _ in range(3):
        c = rng.integers(0, 4, size=23)
        got = expected_loss(c, draws, loss)
        assert got == pytest.approx(expected_oracle(c, draws, loss), rel=1e-12, abs=1e-14)


def test_binder_from_similarity_matches_draws():
    rng = np.random.default_rng(2)
    draws = rng.integers(0, 3, size=(30, 15))
    c = rng.integers(0, 3, size=15)
    sim = similarity_loop(draws)
    iu = np.triu_indices(15, 1)
    direct = np.abs((c[:, None] == c[None, :])[iu] - sim[iu]).sum() / len(iu[0])
    assert expected_loss(c, sim, "binder") == pytest.approx(direct, rel=1e-12)
    assert expected_loss(c, sim, "binder") == pytest.approx(
        expected_loss(c, draws, "binder"), rel=1e-12
    )


def test_known_values():
    n = 8
    singletons = np.arange(n)
    one = np.zeros(n, dtype=int)
    assert expected_loss(one, singletons[None, :], "VI") == pytest.approx(math.log(n))
    assert expected_loss(one, singletons[None, :], "binder") == pytest.approx(1.0)
    assert expected_loss(singletons, singletons[None, :] * 3, "VI") == 0.0
    labels = np.array([2, 2, 5, 5, 1, 1, 1, 0])
    assert expected_loss(labels, np.stack([labels + 10, canonical(labels)]), "VI") == 0.0


def test_expected_loss_accepts_inference_data():
    rng = np.random.default_rng(3)
    z = rng.integers(0, 4, size=(2, 25, 12))
    idata = az.from_dict(posterior={"z": z})
    c = rng.integers(0, 3, size=12)
    assert expected_loss(c, idata, "VI", var_name="z") == pytest.approx(
        expected_oracle(c, z.reshape(-1, 12), "VI"), rel=1e-12
    )


def test_expected_loss_errors():
    draws = np.zeros((3, 4), dtype=int)
    with pytest.raises(ValueError, match="loss"):
        expected_loss([0, 0, 1, 1], draws, "vi2")
    with pytest.raises(ValueError, match="VI.*draws"):
        expected_loss([0, 0, 1, 1], np.eye(4), "VI")
    with pytest.raises(ValueError, match="4 items"):
        expected_loss([0, 0, 1], draws, "VI")
    with pytest.raises(ValueError, match="shape"):
        expected_loss([0, 0, 1, 1], np.zeros(4, dtype=int), "VI")
    with pytest.raises(ValueError, match="non-negative"):
        expected_loss([0, 0, 1, 1], -np.ones((2, 4), dtype=int), "VI")
    with pytest.raises(TypeError, match="integer"):
        expected_loss([0, 0, 1, 1], np.full((2, 4), "a"), "VI")
    with pytest.raises(ValueError, match="square"):
        expected_loss([0, 0, 1, 1], np.zeros((4, 3)), "binder")


# --------------------------------------------------------------------------------------------
# Point estimate
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["VI", "binder"])
def test_point_estimate_recovers_planted_partition(loss):
    rng = np.random.default_rng(4)
    truth = np.repeat([3, 0, 2, 1], [12, 8, 15, 5])
    rng.shuffle(truth)
    draws = planted_draws(rng, truth, 300, noise=0.12, n_labels=6)
    assert not any(np.array_equal(canonical(d), canonical(truth)) for d in draws[:5])
    labels, value = point_estimate_partition(draws, loss=loss, return_loss=True, seed=1)
    np.testing.assert_array_equal(labels, canonical(truth))
    assert value == pytest.approx(expected_oracle(truth, draws, loss), rel=1e-10)


@pytest.mark.parametrize("loss", ["VI", "binder"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_point_estimate_finds_exhaustive_optimum(loss, seed):
    rng = np.random.default_rng(seed)
    n = 6
    # a multimodal posterior: mixture of two planted partitions plus noise
    a = rng.integers(0, 3, n)
    b = rng.integers(0, 3, n)
    draws = np.concatenate([planted_draws(rng, a, 15, 0.3, 4), planted_draws(rng, b, 10, 0.3, 4)])
    best = min(
        expected_oracle(partition_labels(blocks, n), draws, loss) for blocks in set_partitions(n)
    )
    labels, value = point_estimate_partition(
        draws, loss=loss, max_clusters=n, return_loss=True, seed=seed
    )
    assert value == pytest.approx(best, rel=1e-10, abs=1e-12)
    assert expected_oracle(labels, draws, loss) == pytest.approx(best, rel=1e-10, abs=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(0, 4), min_size=n, max_size=n), min_size=1, max_size=10
        )
    ),
    st.sampled_from(["VI", "binder"]),
    st.integers(0, 3),
)
def test_never_worse_than_best_draw(rows, loss, n_runs):
    draws = np.array(rows)
    labels, value = point_estimate_partition(
        draws, loss=loss, n_runs=n_runs, seed=0, return_loss=True
    )
    best_draw = min(expected_loss(d, draws, loss) for d in draws)
    assert value <= best_draw
    assert expected_loss(labels, draws, loss) == value
    assert labels.max() + 1 <= canonical_max_blocks(draws)
    np.testing.assert_array_equal(labels, canonical(labels))


def canonical_max_blocks(draws):
    return max(len(set(d)) for d in draws)


def test_point_estimate_options():
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 4, 30)
    z = planted_draws(rng, truth, 60, 0.2, 5).reshape(2, 30, 30)
    idata = az.from_dict(posterior={"z": z, "mu": rng.normal(size=(2, 30))})
    from_idata = point_estimate_partition(idata, "z", seed=3)
    np.testing.assert_array_equal(from_idata, point_estimate_partition(z, seed=3))
    np.testing.assert_array_equal(from_idata, point_estimate_partition(idata, seed=3))
    assert point_estimate_partition(z, max_clusters=2).max() <= 1
    only_draws = point_estimate_partition(z, n_runs=0, max_zealous=0)
    assert expected_loss(only_draws, z, "VI") <= min(
        expected_loss(d, z, "VI") for d in z.reshape(-1, 30)
    )


def test_point_estimate_errors():
    z = np.zeros((4, 5), dtype=int)
    with pytest.raises(ValueError, match="loss"):
        point_estimate_partition(z, loss="l2")
    with pytest.raises(TypeError, match="n_runs"):
        point_estimate_partition(z, n_runs=1.5)
    with pytest.raises(ValueError, match="max_clusters"):
        point_estimate_partition(z, max_clusters=0)
    idata = az.from_dict(posterior={"a": z[None], "b": z[None]})
    with pytest.raises(ValueError, match="var_name"):
        point_estimate_partition(idata)
    with pytest.raises(ValueError, match="'c'"):
        point_estimate_partition(idata, "c")
    many = np.tile(np.arange(5), (3, 1))  # no draw has at most 2 clusters
    assert point_estimate_partition(many, max_clusters=2, n_runs=0).max() <= 1
