"""Bad inputs to the analysis of posterior draws: diagnostics, point estimates, relabelling, plots.

Rows ``(callable, kwargs, error, match)`` (see ``tests/bad_inputs.py``); behaviours that are
not errors (documented defaults) are checked by the tests after the table.
"""

import arviz as az
import numpy as np
import pytest
from bad_inputs import (
    DRAWS,
    IDATA,
    IDATA_HPO,
    NAN,
    UTIL_DRAWS,
    Z,
    case_id,
    check_raises,
)

import pymc_crp as pmc

CASES = [
    # ---- diagnostics ------------------------------------------------------------------------
    (pmc.partition_stats, dict(idata=IDATA, var_name="q"), ValueError, "var_name 'q'"),
    (pmc.partition_stats, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (
        pmc.partition_stats,
        dict(idata=az.from_dict(posterior={"z": Z + 0.5}), var_name="z"),
        TypeError,
        "z must hold integer labels",
    ),
    (
        pmc.partition_stats,
        dict(idata=az.from_dict(posterior={"z": np.where(Z == 0, NAN, Z)}), var_name="z"),
        TypeError,
        "z must hold integer labels",
    ),
    (
        pmc.partition_stats,
        dict(idata=az.from_dict(posterior={"z": Z - 1}), var_name="z"),
        ValueError,
        "z must hold non-negative labels",
    ),
    (
        pmc.cluster_summary,
        dict(idata=IDATA, var_name="z", concentration="alpha"),
        ValueError,
        "concentration 'alpha'",
    ),
    (pmc.cluster_summary, dict(idata=IDATA, var_name="z", var_names="mu"), TypeError, "var_names"),
    (pmc.cluster_summary, dict(idata=IDATA, var_name="z", var_names=["mu"]), ValueError, "'mu'"),
    (pmc.chain_agreement, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (pmc.chain_agreement, dict(idata=IDATA, var_name="q"), ValueError, "var_name 'q'"),
    (pmc.chain_agreement, dict(idata=IDATA, var_name="z", loss="x"), ValueError, "loss"),
    (pmc.chain_agreement, dict(idata=IDATA, var_name="z", n_runs=-1), ValueError, "n_runs"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS[0]), ValueError, "idata_or_labels"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS - 1), ValueError, "non-negative"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS + 0.5), TypeError, "integer labels"),
    (pmc.posterior_similarity, dict(idata_or_labels=np.zeros((0, 6), int)), ValueError, "draw"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS, rows=[7]), ValueError, "rows"),
    (pmc.posterior_similarity, dict(idata_or_labels=DRAWS, method="x"), ValueError, "method"),
    (pmc.similarity_rhat, dict(idata_or_labels=DRAWS[0]), ValueError, "idata_or_labels"),
    (pmc.similarity_rhat, dict(idata_or_labels=IDATA, var_name="q"), ValueError, "var_name 'q'"),
    (pmc.similarity_rhat, dict(idata_or_labels=IDATA, by_item="yes"), TypeError, "by_item"),
    (pmc.similarity_rhat, dict(idata_or_labels=DRAWS - 1), ValueError, "non-negative"),
    (
        pmc.posterior_similarity,
        dict(idata_or_labels=DRAWS, max_memory_bytes=-1),
        ValueError,
        "max_memory_bytes",
    ),
    (pmc.adjusted_rand_index, dict(labels_a=[0, 1], labels_b=[0, 1, 1]), ValueError, "same len"),
    (pmc.adjusted_rand_index, dict(labels_a=[0, NAN], labels_b=[0, 1]), TypeError, "labels_a"),
    (pmc.adjusted_rand_index, dict(labels_a=[], labels_b=[]), ValueError, "non-empty"),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, loss="x"), ValueError, "loss"),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, n_runs=-1), ValueError, "n_runs"),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=DRAWS, max_clusters=0),
        ValueError,
        "max_clusters",
    ),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, seed=-1), ValueError, "seed"),
    (pmc.point_estimate_partition, dict(idata_or_draws=DRAWS, seed=1.5), TypeError, "seed"),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=DRAWS, max_sweeps=0),
        ValueError,
        "max_sweeps",
    ),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=DRAWS - 1),
        ValueError,
        "idata_or_draws must hold non-negative",
    ),
    (
        pmc.point_estimate_partition,
        dict(idata_or_draws=np.where(DRAWS == 0, NAN, DRAWS)),
        TypeError,
        "idata_or_draws must hold integer",
    ),
    (pmc.expected_loss, dict(labels=[0, 1], draws_or_similarity=DRAWS), ValueError, "labels has"),
    (pmc.expected_loss, dict(labels=[-1] * 6, draws_or_similarity=DRAWS), ValueError, "labels"),
    (pmc.expected_loss, dict(labels=[0.5] * 6, draws_or_similarity=DRAWS), TypeError, "labels"),
    (
        pmc.expected_loss,
        dict(labels=[0] * 6, draws_or_similarity=np.eye(6), loss="VI"),
        ValueError,
        "loss='VI' needs the posterior draws",
    ),
    (
        pmc.expected_loss,
        dict(labels=[0] * 6, draws_or_similarity=np.full((6, 6), 2.0), loss="binder"),
        ValueError,
        "similarity matrix must lie in",
    ),
    (
        pmc.expected_loss,
        dict(labels=[0] * 6, draws_or_similarity=np.full((6, 6), NAN), loss="binder"),
        ValueError,
        "draws_or_similarity",
    ),
    (pmc.relabel_by_appearance, dict(labels=[0, NAN]), ValueError, "labels must be finite"),
    (pmc.relabel_by_appearance, dict(labels=[0, 1.5]), ValueError, "labels must be integer"),
    (pmc.relabel_by_appearance, dict(labels=["a", "b"]), TypeError, "labels must be an array"),
    (pmc.relabel_by_appearance, dict(labels=3), ValueError, "labels must be a vector"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", method="x"), ValueError, "method"),
    (pmc.relabel, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", params=["nope"]), ValueError, "params"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", params="mu"), TypeError, "params"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", pivot=[0, 1]), ValueError, "pivot"),
    (
        pmc.relabel,
        dict(idata=IDATA, var_name="z", pivot=[0, 1, 2, 3, 4, 9]),
        ValueError,
        "pivot",
    ),
    (pmc.relabel, dict(idata=IDATA, var_name="z", n_slots=2), ValueError, "n_slots=2"),
    (pmc.relabel, dict(idata=IDATA, var_name="z", n_slots=0), ValueError, "n_slots"),
    (
        pmc.relabel,
        dict(idata=IDATA, var_name="z", method="stephens", max_iter=0),
        ValueError,
        "max_iter",
    ),
    (
        pmc.relabel,
        dict(idata=IDATA, var_name="z", params=["mu"], slot_dims={"mu": "nodim"}),
        ValueError,
        "slot_dims",
    ),
    (pmc.membership_probabilities, dict(idata=IDATA, var_name="z", method="x"), ValueError, "me"),
    (
        pmc.membership_probabilities,
        dict(idata=IDATA, var_name="z", n_slots=-1),
        ValueError,
        "n_slots",
    ),
    (pmc.membership_probabilities, dict(idata=DRAWS, var_name="z"), TypeError, "idata must be"),
    (
        pmc.relation_probabilities,
        dict(utilities=np.where(UTIL_DRAWS > 1, NAN, UTIL_DRAWS)),
        ValueError,
        "finite",
    ),
    (pmc.relation_probabilities, dict(utilities=UTIL_DRAWS[0]), ValueError, "utilities must"),
    (pmc.relation_probabilities, dict(utilities=UTIL_DRAWS, chunk=0), ValueError, "chunk"),
    (pmc.relation_probabilities, dict(utilities=UTIL_DRAWS, transform=3), TypeError, "transform"),
    (
        pmc.relation_probabilities,
        dict(utilities=UTIL_DRAWS, transform=lambda u: u[:, :2]),
        ValueError,
        "transform must return shape",
    ),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 3)), threshold=1.0), ValueError, "thr"),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 3)), threshold=NAN), ValueError, "thr"),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 3)), threshold="a"), TypeError, "thr"),
    (pmc.threshold_order, dict(probabilities=np.full((3, 3), NAN)), ValueError, "probabilities"),
    (pmc.threshold_order, dict(probabilities=np.full((3, 3), 1.5)), ValueError, "probabilities"),
    (pmc.threshold_order, dict(probabilities=np.zeros((3, 2))), ValueError, "probabilities"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, threshold=2), ValueError, "threshold"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, utilities="V"), ValueError, "utilities 'V'"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, labels="c"), ValueError, "'c'"),
    (pmc.consensus_order, dict(idata=IDATA_HPO, partition=[0, 1]), ValueError, "partition"),
    (
        pmc.consensus_order,
        dict(idata=IDATA_HPO, partition=[0, -1, 0, 0, 0, 0]),
        ValueError,
        "partition",
    ),
    (
        pmc.consensus_order,
        dict(idata=IDATA_HPO, partition=[0, NAN, 0, 0, 0, 0]),
        TypeError,
        "partition",
    ),
    (pmc.consensus_order, dict(idata=IDATA_HPO, loss="x"), ValueError, "loss"),
    (pmc.consensus_order, dict(idata=UTIL_DRAWS), TypeError, "idata must be"),
    (
        pmc.consensus_order,
        dict(
            idata=az.from_dict(posterior={"U": IDATA_HPO.posterior["U"].values, "cluster": Z + 1})
        ),
        ValueError,
        "use slot 3 but utilities 'U' have 3 slots",
    ),
    # ---- plots ------------------------------------------------------------------------------
    (pmc.plot_partial_order, dict(adj_or_probs=np.zeros((3, 2))), ValueError, "square"),
    (pmc.plot_partial_order, dict(adj_or_probs=np.full((3, 3), NAN)), ValueError, "lie in"),
    (
        pmc.plot_partial_order,
        dict(adj_or_probs=np.zeros((3, 3)), threshold=1.5),
        ValueError,
        "threshold",
    ),
    (pmc.plot_partial_order, dict(adj_or_probs=np.zeros((3, 3)), labels=["a"]), ValueError, "lab"),
    (
        pmc.plot_partial_order,
        dict(adj_or_probs=np.array([[0, 1], [1, 0]], bool)),
        ValueError,
        "adj_or_probs has a cycle",
    ),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.full((3, 3), NAN)),
        ValueError,
        "similarity_or_idata",
    ),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.full((3, 3), 2.0)),
        ValueError,
        "similarity_or_idata",
    ),
    (pmc.plot_similarity, dict(similarity_or_idata=np.zeros((3, 2))), ValueError, "square"),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.eye(3), order_by="x"),
        ValueError,
        "order_by",
    ),
    (
        pmc.plot_similarity,
        dict(similarity_or_idata=np.eye(3), order_by=[0, 1]),
        ValueError,
        "order_by",
    ),
    (pmc.plot_n_clusters, dict(idata=IDATA, var_name="q"), ValueError, "var_name 'q'"),
    (pmc.plot_n_clusters, dict(idata=DRAWS - 1), ValueError, "non-negative"),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), NAN)),
        ValueError,
        "membership_or_idata",
    ),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), -1.0)),
        ValueError,
        "membership_or_idata",
    ),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), 0.9)),
        ValueError,
        "rows must sum to 1",
    ),
    (pmc.plot_membership, dict(membership_or_idata=np.ones(3)), ValueError, r"\(N, K\) matrix"),
    (
        pmc.plot_membership,
        dict(membership_or_idata=np.full((6, 3), 1 / 3), order_by="x"),
        ValueError,
        "order_by",
    ),
]


@pytest.mark.parametrize("fn, kwargs, error, match", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises(fn, kwargs, error, match):
    check_raises(fn, kwargs, error, match)
