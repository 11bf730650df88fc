"""Typed roles, the model registry, lists encoded once and the named partition priors."""

import numpy as np
import pymc as pm
import pytest

import pymc_crp as pmc
from pymc_crp.core.lists import EncodedLists, encode_lists
from pymc_crp.core.partition_math import (
    CRP_PRIOR,
    DIRICHLET_MULTINOMIAL_PRIOR,
    PartitionPrior,
    conditional_slot_weights,
)
from pymc_crp.roles import (
    REGISTRY,
    HyperparameterRole,
    LabelsRole,
    UtilityMeanRole,
    find_model,
    get_role,
    noncentred_roles,
    roles,
    set_role,
)

LISTS = [[0, 1, 2], [2, 1], [1, 0, 3], [3, 2, 1, 0]]


def test_the_builders_record_typed_roles():
    model = pmc.models.clustered_partial_orders(LISTS, 4, max_clusters=3)
    rho, tau, p, u0, u = (model[n] for n in ("rho", "tau", "p", "U0", "U"))
    assert isinstance(get_role(p), HyperparameterRole) and get_role(p).noncentred is None
    assert get_role(rho).noncentred == "correlation" and get_role(rho).utilities == (u0, u)
    assert get_role(tau).noncentred == "shrinkage" and get_role(tau).moved == (u, u0)
    assert isinstance(get_role(model["cluster"]), LabelsRole)
    mean = get_role(u0, model)
    assert isinstance(mean, UtilityMeanRole)
    assert (mean.slots, mean.tau, mean.rho, mean.labels) == (u, tau, rho, model["cluster"])
    assert list(noncentred_roles(model)) == [rho, tau]
    assert get_role(u) is None and find_model(u) is model


def test_role_records_are_checked():
    with pytest.raises(ValueError, match="noncentred"):
        HyperparameterRole("sideways")
    model = pmc.models.partial_order(LISTS, 4)
    with pytest.raises(TypeError, match="role must be one of"):
        set_role(model, model["p"], "hyperparameter")
    with pytest.raises(AttributeError):
        get_role(model["p"]).noncentred = "correlation"  # frozen


def test_a_term_added_after_the_builder_voids_the_roles_it_reads():
    """A builder's role steps assume the model it made: a term added later that reads a role's
    variables gives them to the generic steps (which see every term)."""
    from pymc.sampling.mcmc import assign_step_methods

    y = np.array([-1.5, -1.2, 1.0, 1.4])
    prior = {"m0": 0.0, "kappa0": 0.25, "nu": 3.0, "Omega": 1.0}
    model = pmc.models.measurement_error_mixture(y, None, max_clusters=4, prior=prior)
    before = {c.__name__ for c in assign_step_methods(model)[1]}
    assert "NormalInverseWishartGibbs" in before
    with model:
        pm.Normal("unrelated", 0.0, 1.0)  # reads no role variable: the roles hold
    assert get_role(model["mu"]) is not None
    with model:
        pm.Potential("pin", -0.5 * (model["mu"][:, 0] / 0.3) ** 2)
    assert get_role(model["mu"]) is None and get_role(model["Sigma"]) is None
    after = {c.__name__: vs for c, vs in assign_step_methods(model)[1].items()}
    assert set(after) == {"CRPGibbs", "ConcentrationGibbs", "NUTS"}

    model = pmc.models.clustered_partial_orders(LISTS, 4, max_clusters=3)
    with model:
        pm.Potential("pull", -((model["U0"] - 1.0) ** 2).sum())
    assert get_role(model["U0"]) is None and model["U0"] not in roles(model)
    assert get_role(model["tau"]) is None  # its move maps U0 too
    assert isinstance(get_role(model["p"]), HyperparameterRole)
    assigned = assign_step_methods(model)[1]
    assert not any(c.__name__ == "UtilityMeanGibbs" for c in assigned)


def test_the_registry_owns_the_per_model_caches():
    model = pmc.models.partial_order(LISTS, 4)
    assert model in REGISTRY.models() and len(REGISTRY) >= 1
    cache = REGISTRY.cache(model, "example")
    cache["x"] = 1
    assert REGISTRY.cache(model, "example") is cache
    assert REGISTRY.cache(model, "other") == {}


def test_encoded_lists_are_not_encoded_twice():
    encoded = EncodedLists.encode(LISTS, 4)
    assert encoded.shape == (4, 4)
    assert encode_lists(encoded, 4) is encoded.padded
    again = encode_lists(encoded, 5)  # another n_items: checked again
    np.testing.assert_array_equal(again, encoded.padded)


def test_partition_prior_codes():
    assert (CRP_PRIOR, DIRICHLET_MULTINOMIAL_PRIOR) == (PartitionPrior.CRP, 1)
    counts = np.array([2.0, 0.0, 1.0])
    out = np.empty(3)
    conditional_slot_weights(counts, int(PartitionPrior.CRP), 1.0, 0.5, out)
    np.testing.assert_allclose(out, [1.5, 2.0, 0.5])
