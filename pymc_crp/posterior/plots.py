"""Plots of posterior partitions and partial orders (matplotlib; never calls ``plt.show``).

- :func:`plot_similarity`: posterior similarity heatmap, items ordered by a point estimate;
- :func:`plot_n_clusters`: trace and histogram of the number of clusters by chain;
- :func:`plot_membership`: stacked membership probabilities of each item;
- :func:`plot_partial_order`: Hasse diagram of a (consensus) partial order.
"""

from __future__ import annotations

import importlib.util

import arviz as az
import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
import xarray as xr
from matplotlib.ticker import MaxNLocator
from scipy.cluster.hierarchy import leaves_list, linkage
from scipy.spatial.distance import squareform

from pymc_crp.core.posets import transitive_reduction, validate_partial_order
from pymc_crp.posterior.consensus import threshold_order
from pymc_crp.posterior.diagnostics import DEFAULT_MAX_MEMORY_BYTES, posterior_similarity
from pymc_crp.posterior.draws import canonical_draws, label_draws
from pymc_crp.posterior.point_estimate import point_estimate_partition
from pymc_crp.posterior.relabel import membership_probabilities

__all__ = ["plot_membership", "plot_n_clusters", "plot_partial_order", "plot_similarity"]


def _axes(ax, figsize=(6.0, 5.0)):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _is_draws(data) -> bool:
    if isinstance(data, az.InferenceData | xr.Dataset | xr.DataArray):
        return True
    return np.asarray(data).dtype.kind in "iu"


def _item_order(labels: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Items grouped by cluster (largest first), by decreasing ``score`` within a cluster."""
    sizes = np.bincount(labels)
    rank = np.argsort(np.argsort(-sizes, kind="stable"), kind="stable")
    return np.lexsort((-score, rank[labels]))


def plot_similarity(
    similarity_or_idata,
    var_name: str | None = None,
    *,
    order_by="point_estimate",
    loss: str = "VI",
    ax=None,
    cmap: str = "viridis",
    colorbar: bool = True,
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
):
    """Heatmap of the posterior similarity matrix ``P(c_i = c_j | Y)``.

    Parameters
    ----------
    similarity_or_idata : InferenceData, DataArray, integer array or float array
        Label draws (``InferenceData`` with ``var_name``, ``(S, N)`` or ``(chain, draw, N)``)
        or a floating ``(N, N)`` similarity matrix.
    var_name : str, optional
    order_by : "point_estimate", "linkage", array_like of int, or None
        Item order: grouped by the clusters of the point estimate (needs draws; for a
        similarity matrix, ``"point_estimate"`` falls back to ``"linkage"``), by the leaves of
        an average-linkage tree on ``1 - P``, by given labels, or unchanged. Cluster
        boundaries are drawn for partitions.
    loss : {"VI", "binder"}
        Loss of the point estimate.
    ax : matplotlib Axes, optional
    cmap, colorbar
        Colour map and whether to add a colour bar.
    max_memory_bytes : int
        Passed to :func:`pymc_crp.posterior_similarity`.

    Returns
    -------
    matplotlib.axes.Axes
    """
    draws = None
    if _is_draws(similarity_or_idata):
        draws = label_draws(similarity_or_idata, var_name, name="similarity_or_idata")
        sim = posterior_similarity(draws, max_memory_bytes=max_memory_bytes)
    else:
        sim = np.asarray(similarity_or_idata, dtype=np.float64)
        if sim.ndim != 2 or sim.shape[0] != sim.shape[1]:
            raise ValueError(
                f"similarity_or_idata must be label draws or a square similarity matrix, "
                f"got shape {sim.shape}"
            )
        if not np.all(np.isfinite(sim)) or np.any((sim < 0.0) | (sim > 1.0)):
            raise ValueError(
                "similarity_or_idata as a similarity matrix must hold probabilities in [0, 1] "
                "(no NaN or infinity)"
            )
    n = sim.shape[0]
    labels = None
    if isinstance(order_by, str):
        if order_by not in ("point_estimate", "linkage"):
            raise ValueError(
                f"order_by must be 'point_estimate', 'linkage', labels or None, got {order_by!r}"
            )
        if order_by == "point_estimate" and draws is not None:
            labels = point_estimate_partition(draws, loss=loss)
        elif n > 1:
            dist = np.clip(1.0 - (sim + sim.T) / 2.0, 0.0, None)
            np.fill_diagonal(dist, 0.0)
            order = leaves_list(linkage(squareform(dist, checks=False), method="average"))
        else:
            order = np.arange(n)
    elif order_by is None:
        order = np.arange(n)
    else:
        labels = np.asarray(order_by)
        if labels.shape != (n,):
            raise ValueError(f"order_by labels must have shape ({n},), got {labels.shape}")
        labels = canonical_draws(label_draws(labels[None, :], name="order_by"))[0][0]
    if labels is not None:
        same = labels[:, None] == labels[None, :]
        cohesion = (sim * same).sum(axis=1) / same.sum(axis=1)
        order = _item_order(labels, cohesion)
    ax = _axes(ax)
    image = ax.imshow(
        sim[np.ix_(order, order)], vmin=0.0, vmax=1.0, cmap=cmap, interpolation="nearest"
    )
    if labels is not None:
        sorted_labels = labels[order]
        for b in np.flatnonzero(sorted_labels[1:] != sorted_labels[:-1]) + 0.5:
            ax.axhline(b, color="white", lw=0.8)
            ax.axvline(b, color="white", lw=0.8)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="P(c_i = c_j | Y)")
    ax.set_xlabel("item")
    ax.set_ylabel("item")
    ax.set_title("Posterior similarity")
    return ax


def plot_n_clusters(idata, var_name: str | None = None, *, axes=None, figsize=(10.0, 3.5)):
    """Trace (left) and histogram (right) of the number of clusters, one colour per chain.

    Parameters
    ----------
    idata : InferenceData, DataArray or array_like of int
        Label draws with dims ``(chain, draw, N)`` (an ``(S, N)`` array is one chain).
    var_name : str, optional
    axes : sequence of two Axes, optional
    figsize : tuple

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes, shape (2,)
    """
    z = label_draws(idata, var_name, name="idata", flatten=False)
    if z.ndim == 2:
        z = z[None]
    n_chains, n_draws, _ = z.shape
    k = canonical_draws(z.reshape(-1, z.shape[-1]))[1].reshape(n_chains, n_draws)
    created = axes is None
    if created:
        _, axes = plt.subplots(1, 2, figsize=figsize, gridspec_kw={"width_ratios": [2, 1]})
    axes = np.asarray(axes).ravel()
    if axes.size != 2:
        raise ValueError(f"axes must hold two Axes, got {axes.size}")
    values = np.arange(k.min(), k.max() + 1)
    width = 0.8 / n_chains
    for c in range(n_chains):
        color = f"C{c % 10}"
        axes[0].plot(np.arange(n_draws), k[c], color=color, lw=0.8, label=f"chain {c}")
        freq = (k[c][:, None] == values[None, :]).mean(axis=0)
        axes[1].bar(values - 0.4 + width * (c + 0.5), freq, width=width, color=color)
    axes[0].set_xlabel("draw")
    axes[0].set_ylabel("number of clusters")
    axes[0].set_title("Trace")
    if n_chains > 1:
        axes[0].legend(fontsize="small", loc="upper right")
    axes[1].set_xlabel("number of clusters")
    axes[1].set_ylabel("posterior probability")
    axes[1].set_xticks(values)
    axes[1].set_title("Histogram")
    axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))
    if created:
        axes[0].figure.tight_layout()
    return axes


def plot_membership(
    membership_or_idata,
    var_name: str | None = None,
    *,
    method: str | None = "ecr",
    order_by="cluster",
    ax=None,
    figsize=(8.0, 3.5),
):
    """Stacked bars of each item's membership probabilities ``P(z_i = k | Y)``.

    Parameters
    ----------
    membership_or_idata : InferenceData or array_like (N, K)
        An ``InferenceData`` (passed to :func:`pymc_crp.membership_probabilities` with
        ``var_name`` and ``method``) or a membership matrix.
    var_name : str, optional
    method : {"ecr", "stephens"} or None
        Relabelling applied to an ``InferenceData``.
    order_by : "cluster" or None
        Group items by their most probable cluster, by decreasing probability within it.
    ax : matplotlib Axes, optional
    figsize : tuple

    Returns
    -------
    matplotlib.axes.Axes
    """
    if isinstance(membership_or_idata, az.InferenceData):
        probs = membership_probabilities(membership_or_idata, var_name, method=method)
    else:
        probs = np.asarray(membership_or_idata, dtype=np.float64)
        if probs.ndim != 2:
            raise ValueError(
                f"membership_or_idata must be an (N, K) matrix, got shape {probs.shape}"
            )
        if not np.all(np.isfinite(probs)) or np.any((probs < 0.0) | (probs > 1.0)):
            raise ValueError(
                "membership_or_idata must hold probabilities in [0, 1] (no NaN or infinity)"
            )
        if np.any(np.abs(probs.sum(axis=1) - 1.0) > 1e-6):
            raise ValueError("membership_or_idata rows must sum to 1 (one distribution per item)")
    if order_by not in ("cluster", None):
        raise ValueError(f"order_by must be 'cluster' or None, got {order_by!r}")
    n, k = probs.shape
    if order_by == "cluster":
        order = _item_order(probs.argmax(axis=1), probs.max(axis=1))
    else:
        order = np.arange(n)
    created = ax is None
    ax = _axes(ax, figsize)
    bottom = np.zeros(n)
    x = np.arange(n)
    for j in range(k):
        ax.bar(
            x,
            probs[order, j],
            bottom=bottom,
            width=1.0,
            color=f"C{j % 10}",
            label=f"cluster {j}",
            linewidth=0,
        )
        bottom += probs[order, j]
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("item" + (" (grouped by most probable cluster)" if order_by else ""))
    ax.set_ylabel("membership probability")
    if k <= 12:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if created:
        ax.figure.tight_layout()
    return ax


def _layered_layout(cover: nx.DiGraph) -> dict:
    """Positions of the Hasse diagram ``cover`` (edges from each item to the items it covers).

    Layers are the topological generations (the length of the longest chain above an item),
    best on top; within a layer items are ordered by the mean position of their covers above
    (barycentre); :func:`networkx.multipartite_layout` places them.
    """
    layers: dict[int, list] = {}
    rank: dict = {}
    for depth, layer in enumerate(nx.topological_generations(cover)):
        layer = sorted(layer)
        if depth:
            layer.sort(key=lambda j: np.mean([rank[p] for p in cover.predecessors(j)]))
        rank.update((j, r - (len(layer) - 1) / 2.0) for r, j in enumerate(layer))
        layers[-depth] = layer
    return nx.multipartite_layout(cover, subset_key=layers, align="horizontal")


def plot_partial_order(
    adj_or_probs,
    labels=None,
    threshold: float = 0.5,
    ax=None,
    *,
    show_probabilities: bool = True,
    node_size: int = 900,
    node_color: str = "#dde8f6",
    font_size: int = 9,
):
    """Hasse diagram (transitive reduction) of a partial order, best items at the top.

    Parameters
    ----------
    adj_or_probs : array_like (M, M)
        A boolean partial order (``adj[i, j]`` True iff ``i ≻ j``; closed or not) or relation
        probabilities (floats), turned into an order by
        :func:`pymc_crp.posterior.consensus.threshold_order` at ``threshold``.
    labels : sequence of str, optional
        Item names (default ``0..M-1``).
    threshold : float, default 0.5
    ax : matplotlib Axes, optional
    show_probabilities : bool, default True
        Shade each cover edge by its probability, with a colour bar ``P(i ≻ j)``
        (probability input only; no text is drawn over the edges).
    node_size, node_color, font_size
        Drawing options.

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    Items are placed in layers by the length of the longest chain above them (maximal items
    on top) and ordered within a layer by the mean position of their covers above; the
    ``dot`` layout of graphviz is used instead when ``pygraphviz`` is installed.
    """
    arr = np.asarray(adj_or_probs)
    probs = None
    if arr.dtype == np.bool_:
        closed = validate_partial_order(arr, name="adj_or_probs")
    else:
        probs = np.asarray(arr, dtype=np.float64)
        closed, _ = threshold_order(probs, threshold)
    m = closed.shape[0]
    names = [str(j) for j in range(m)] if labels is None else [str(x) for x in labels]
    if len(names) != m:
        raise ValueError(f"labels must have {m} names, got {len(names)}")
    cover = transitive_reduction(closed)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(m))
    graph.add_edges_from((int(i), int(j)) for i, j in np.argwhere(cover))
    if importlib.util.find_spec("pygraphviz") is not None:  # pragma: no cover - optional
        pos = nx.nx_agraph.graphviz_layout(graph, prog="dot")
    else:
        pos = _layered_layout(graph)
    ax = _axes(ax, (max(4.0, 1.2 * np.sqrt(m) + 3), 5.0))
    nx.draw_networkx_nodes(
        graph, pos, ax=ax, node_size=node_size, node_color=node_color, edgecolors="#34495e"
    )
    nx.draw_networkx_labels(graph, pos, labels=dict(enumerate(names)), ax=ax, font_size=font_size)
    shade = probs is not None and show_probabilities and graph.number_of_edges() > 0
    edges = list(graph.edges)
    edge_probs = [float(probs[i, j]) for i, j in edges] if shade else None
    low = min(threshold, 1.0) if shade else 0.0
    nx.draw_networkx_edges(
        graph,
        pos,
        edgelist=edges,
        ax=ax,
        arrows=True,
        arrowstyle="-|>",
        arrowsize=12,
        node_size=node_size,
        edge_color=edge_probs if shade else "#34495e",
        edge_cmap=plt.get_cmap("viridis_r") if shade else None,
        edge_vmin=low,
        edge_vmax=1.0,
        width=[1.0 + 2.0 * (q - low) / max(1.0 - low, 1e-9) for q in edge_probs] if shade else 1.0,
    )
    if shade:  # probabilities as colour, so that no text sits over an edge
        mappable = plt.cm.ScalarMappable(
            cmap=plt.get_cmap("viridis_r"), norm=plt.Normalize(vmin=low, vmax=1.0)
        )
        ax.figure.colorbar(mappable, ax=ax, shrink=0.6, label="P(i ≻ j)")
    ax.set_axis_off()
    ax.margins(0.15)
    return ax
