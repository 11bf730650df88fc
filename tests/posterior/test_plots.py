"""Smoke tests of the plots: each saves a PNG with non-trivial content (Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import arviz as az  # noqa: E402
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from pymc_crp.posets import transitive_closure, transitive_reduction  # noqa: E402
from pymc_crp.posterior.plots import (  # noqa: E402
    _layered_layout,
    plot_membership,
    plot_n_clusters,
    plot_partial_order,
    plot_similarity,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def idata():
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [10, 6, 8])
    z = np.tile(truth, (2, 60, 1))
    flip = rng.random(z.shape) < 0.1
    z[flip] = rng.integers(0, 4, flip.sum())
    z = np.array([[rng.permutation(5)[d] for d in chain] for chain in z])  # label switching
    return az.from_dict(posterior={"z": z})


def check_png(fig, path, min_bytes=5_000):
    fig.savefig(path, dpi=80)
    assert path.exists() and path.stat().st_size > min_bytes
    image = mpimg.imread(path)
    flat = image.reshape(-1, image.shape[-1])
    assert np.unique(flat, axis=0).shape[0] > 10, "image is (nearly) one colour"


def test_plot_similarity(idata, tmp_path):
    ax = plot_similarity(idata, "z")
    assert isinstance(ax, matplotlib.axes.Axes)
    check_png(ax.figure, tmp_path / "similarity.png")
    sim = np.asarray(ax.images[0].get_array())
    # ordered by the point estimate: the blocks lie on the diagonal
    assert sim[:10, :10].mean() > 0.7 and sim[:10, 10:].mean() < 0.3
    from pymc_crp.posterior.diagnostics import posterior_similarity

    ax2 = plot_similarity(posterior_similarity(idata, "z"), colorbar=False)
    check_png(ax2.figure, tmp_path / "similarity_matrix.png")
    ax3 = plot_similarity(idata, "z", order_by=np.arange(24) % 3, loss="binder")
    assert ax3.get_title() == "Posterior similarity"
    with pytest.raises(ValueError, match="order_by"):
        plot_similarity(idata, "z", order_by="size")


def test_plot_n_clusters(idata, tmp_path):
    axes = plot_n_clusters(idata, "z")
    assert axes.shape == (2,)
    assert len(axes[0].lines) == 2  # one trace per chain
    check_png(axes[0].figure, tmp_path / "n_clusters.png")


def test_plot_membership(idata, tmp_path):
    ax = plot_membership(idata, "z")
    check_png(ax.figure, tmp_path / "membership.png")
    probs = np.random.default_rng(1).dirichlet(np.ones(3), size=20)
    ax2 = plot_membership(probs, order_by=None)
    heights = np.array([p.get_height() for p in ax2.patches]).reshape(3, 20)
    np.testing.assert_allclose(heights.T, probs)
    with pytest.raises(ValueError, match=r"\(N, K\)"):
        plot_membership(np.ones(3))


def test_plot_partial_order(tmp_path):
    probs = np.zeros((5, 5))
    probs[0, 1:] = 0.97
    probs[1, 3] = probs[2, 3] = probs[1, 4] = probs[2, 4] = probs[3, 4] = 0.9
    probs[1, 2] = 0.3
    ax = plot_partial_order(probs, labels=list("abcde"), threshold=0.5)
    check_png(ax.figure, tmp_path / "hasse.png")
    texts = {t.get_text() for t in ax.texts}
    assert set("abcde") <= texts and "0.90" not in texts  # no text over the edges
    assert len(ax.figure.axes) == 2  # the colour bar of P(i > j)
    closed = transitive_closure(probs > 0.5)
    ax2 = plot_partial_order(closed)
    check_png(ax2.figure, tmp_path / "hasse_bool.png")
    with pytest.raises(ValueError, match="labels"):
        plot_partial_order(closed, labels=["a"])
    with pytest.raises(ValueError, match="cycle"):
        plot_partial_order(np.array([[False, True], [True, False]]))


def test_layered_layout_depths():
    closed = transitive_closure(np.array(
        [[0, 1, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 1, 0]], dtype=bool
    ))  # fmt: skip
    graph = nx.DiGraph(transitive_reduction(closed))
    pos = _layered_layout(graph)
    assert pos[0][1] == pos[3][1] > pos[1][1] > pos[2][1]  # depths 0, 1, 2, 0: best on top
    assert pos[0][0] < pos[3][0]  # within a layer in item order
