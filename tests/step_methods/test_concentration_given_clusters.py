"""PartialOrderLabelGibbs with the concentration integrated out of its label moves.

Oracle (tests/oracles.py): 5 lists over 3 items, ``n_dims = 1`` and independent slot
utilities, so each cluster's order is a uniformly random total order; the concentration has a
Gamma prior, integrated out by quadrature for every set partition (truncated at ``K <= L``).
The step draws the labels with ``θ`` integrated out and then ``θ | K`` exactly: the draws of
the labels and of ``θ`` must match the oracle's co-clustering, ``P(K = k)`` and ``E[θ]``.
"""

import numpy as np
import pymc as pm
import pytest
from mc_checks import z_scores
from oracles import exact_clustered_total_orders_random_concentration
from test_po_labels import LISTS, N_ITEMS, N_LISTS, P_NOISE, mismatches

import pymc_crp as pmc
from pymc_crp.roles import LabelsRole, set_role

SHAPE, RATE = 2.0, 1.5


def tiny_model(n_slots, discount, shape=SHAPE, rate=RATE):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", shape, rate)
        z = pmc.CRP("z", alpha, discount=discount, max_clusters=n_slots, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((n_slots, N_ITEMS, 1)), rho=0.0)
        pmc.PartialOrderLists("y", u, z, P_NOISE, observed=LISTS)
    return model


def sample_collapsed(n_slots, discount, seed, draws=3000, **label_kwargs):
    model = tiny_model(n_slots, discount)
    label_kwargs.setdefault("sweeps", 1)
    label_kwargs.setdefault("annealed_split_merge", 0)
    label_kwargs.setdefault("tune_annealed_split_merge", 0)
    with model:
        step = pmc.PartialOrderLabelGibbs([model["z"], model["alpha"]], n_aux=2, **label_kwargs)
        idata = pm.sample(
            draws, tune=300, chains=2, cores=1, random_seed=seed, step=[step],
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
    return idata.posterior["z"].values, idata.posterior["alpha"].values


def alpha_mismatch(alpha, mean, k=4.5):
    """``|mean of the draws - E[θ]|`` beyond ``k`` MCSE (no fixed floor), else ``None``."""
    z = float(z_scores(alpha, mean, indicators=False))
    return (float(alpha.mean()), mean, z) if abs(z) > k else None


@pytest.mark.parametrize(
    ("n_slots", "discount", "seed"),
    [  # untruncated Dirichlet process (slow: 29 s; the truncated case stays in the default run);
        pytest.param(20, 0.0, 3, marks=pytest.mark.slow),
        (3, 0.3, 5),  # truncated Pitman-Yor
    ],
)
def test_labels_and_concentration_match_enumeration(n_slots, discount, seed):
    z, alpha = sample_collapsed(n_slots, discount, seed)
    co, k_dist, mean = exact_clustered_total_orders_random_concentration(
        LISTS, N_ITEMS, P_NOISE, SHAPE, RATE, discount, n_slots
    )
    assert not mismatches(z, co, k_dist)
    assert alpha_mismatch(alpha, mean) is None
    # power: the same draws against the posterior under a prior of half the mean
    co2, k2, mean2 = exact_clustered_total_orders_random_concentration(
        LISTS, N_ITEMS, P_NOISE, SHAPE, 2 * RATE, discount, n_slots
    )
    assert mismatches(z, co2, k2) or alpha_mismatch(alpha, mean2) is not None


def test_merge_split_alone_with_the_concentration_matches_enumeration():
    """Only the merge--split moves change the labels (their EPPF ratios read ``G(K+1)/G(K)``);
    4 slots, so that splits are sometimes refused and the truncation enters ``G``."""
    z, alpha = sample_collapsed(4, 0.0, 11, sweep=False, merge_split=3)
    co, k_dist, mean = exact_clustered_total_orders_random_concentration(
        LISTS, N_ITEMS, P_NOISE, SHAPE, RATE, 0.0, 4
    )
    assert not mismatches(z, co, k_dist)
    assert alpha_mismatch(alpha, mean) is None


@pytest.mark.parametrize(("discount", "claimed"), [(0.0, True), (0.5, True), ((2.0, 2.0), False)])
def test_assigned_with_the_labels_where_it_can_be_integrated(discount, claimed):
    """``pm.sample`` gives the concentration to the label step for a fixed discount; with a
    random discount it keeps its own step (the tables of ``G`` would depend on ``d``)."""
    model = pmc.models.clustered_partial_orders(LISTS, N_ITEMS, n_dims=1, discount=discount)
    with model:
        _, selected = pm.sampling.mcmc.assign_step_methods(model)
    names = {cls: {v.name for v in vs} for cls, vs in selected.items()}
    label_step = names[pmc.PartialOrderLabelGibbs]
    assert ("alpha_log__" in label_step) is claimed
    assert "cluster" in label_step


def test_refuses_what_it_cannot_integrate():
    with pm.Model() as model:
        scale = pm.HalfNormal("scale", 1.0)
        alpha = pm.Gamma("alpha", 2.0, scale)  # a random prior parameter: no fixed table
        z = pmc.CRP("z", alpha, discount=0.0, max_clusters=6, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((6, N_ITEMS, 1)), rho=0.0)
        pmc.PartialOrderLists("y", u, z, P_NOISE, observed=LISTS)
    with model, pytest.raises(ValueError, match="alpha.*concentration"):
        pmc.PartialOrderLabelGibbs([z, alpha])
    with model, pytest.raises(ValueError, match="scale.*concentration"):
        pmc.PartialOrderLabelGibbs([z, model["scale"]])
    with model:
        assert pmc.PartialOrderLabelGibbs.competence(alpha) == 0  # INCOMPATIBLE
        with pytest.raises(ValueError, match="No free random variables"):
            pmc.ConcentrationGivenClusters([])


def test_refuses_a_prior_parameter_that_is_data():
    """A prior parameter set by ``pm.Data`` can change after the table of ``log G(K)`` is made
    (``pm.set_data``): the concentration keeps a step of its own."""
    with pm.Model() as model:
        shape = pm.Data("shape", SHAPE)
        alpha = pm.Gamma("alpha", shape, RATE)
        z = pmc.CRP("z", alpha, discount=0.0, max_clusters=6, n=N_LISTS)
        u = pmc.EquicorrelatedNormal("U", mu=np.zeros((6, N_ITEMS, 1)), rho=0.0)
        pmc.PartialOrderLists("y", u, z, P_NOISE, observed=LISTS)
    with model, pytest.raises(ValueError, match="alpha.*concentration"):
        pmc.PartialOrderLabelGibbs([z, alpha])
    with model:
        assert pmc.PartialOrderLabelGibbs.competence(alpha) == 0
    assert pmc.step_methods.concentration_given_clusters.integrable_concentration(model, z) is None
    constant = tiny_model(6, 0.0)
    assert (
        pmc.step_methods.concentration_given_clusters.integrable_concentration(
            constant, constant["z"]
        )
        is constant["alpha"]
    )


def test_same_seed_same_concentration_draws():
    a = sample_collapsed(6, 0.0, 21, draws=50)[1]
    b = sample_collapsed(6, 0.0, 21, draws=50)[1]
    c = sample_collapsed(6, 0.0, 22, draws=50)[1]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def given_label_step():
    """A model whose labels get ``PartialOrderLabelGibbs`` from the user, for the labels alone
    (a role set as ``models.clustered_partial_orders`` sets it), and the steps ``pm.sample``
    assigns around it."""
    model = tiny_model(20, 0.0)
    set_role(model, model["z"], LabelsRole())
    with model:
        given = pmc.PartialOrderLabelGibbs(
            [model["z"]], n_aux=2, sweeps=1, annealed_split_merge=0, tune_annealed_split_merge=0
        )
        _, selected = pm.sampling.mcmc.assign_step_methods(model, [given])
    return model, given, selected


def test_concentration_alone_when_the_labels_have_a_given_step():
    """A label step given to ``pm.sample`` for the labels alone leaves the concentration to
    the automatic assignment, which hands it to the exact draw of ``θ | K``; the labels'
    moves then read ``θ`` (not integrated out)."""
    model, given, selected = given_label_step()
    assert [v.name for v in selected[pmc.PartialOrderLabelGibbs]] == ["alpha_log__"]
    steps = pm.sampling.mcmc.instantiate_steppers(model, [given], selected)
    assert any(isinstance(s, pmc.ConcentrationGivenClusters) for s in steps)


@pytest.mark.slow  # 37 s; the labels with the concentration are exact in the default run (above)
def test_concentration_alone_when_the_labels_have_a_given_step_matches_enumeration():
    model, given, _ = given_label_step()
    with model:
        idata = pm.sample(
            3000, tune=300, chains=2, cores=1, random_seed=7, step=[given], progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    co, k_dist, mean = exact_clustered_total_orders_random_concentration(
        LISTS, N_ITEMS, P_NOISE, SHAPE, RATE, 0.0, 20
    )
    assert not mismatches(idata.posterior["z"].values, co, k_dist)
    assert alpha_mismatch(idata.posterior["alpha"].values, mean) is None
