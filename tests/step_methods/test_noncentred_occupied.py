"""The non-centred moves of rho and tau over the occupied slots only.

For an empty slot the map keeps the whitened value, so its prior density times its Jacobian
factor does not depend on the proposed value: differences of the occupied-slot log-density
between proposed values equal those of the full model density (every term, every slot) plus
the full Jacobian.
"""

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from mc_checks import quantile_failures
from oracles import equicorrelated_prior_draws, gaussian_log_density
from scipy import stats

import pymc_crp as pmc
from pymc_crp.roles import HyperparameterRole, set_role
from pymc_crp.step_methods.noncentred import _FullMove, _joint_logp_function, _OccupiedMove

N_SLOTS = 12


def clustered_model(n_dims=3, covariates=None):
    rng = np.random.default_rng(0)
    lists = [rng.permutation(6)[: 3 + i % 4].tolist() for i in range(30)]
    return pmc.models.clustered_partial_orders(
        lists, 6, n_dims=n_dims, max_clusters=N_SLOTS, covariates=covariates
    )


def random_point(model, seed, occupied=(1, 4, 9)):
    """Random utilities and hyperparameters; the lists in the slots ``occupied`` only."""
    rng = np.random.default_rng(seed)
    point = model.initial_point(random_seed=0)
    for name in ("U0", "U"):
        point[name] = rng.normal(size=point[name].shape)
    for name in ("rho_logodds__", "tau_interval__", "p_logodds__"):
        if name in point:
            point[name] = np.asarray(rng.normal(scale=0.7))
    point["cluster"] = np.asarray(occupied)[rng.integers(len(occupied), size=30)]
    return point


def steps(model):
    with model:
        return {
            name: pmc.NonCentredHyperparameterMetropolis([model[name]])
            for name in ("rho", "tau")
            if name in model.named_vars
        }


@pytest.mark.parametrize("name", ["rho", "tau"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_occupied_differences_equal_full_model_differences(name, seed):
    model = clustered_model()
    step = steps(model)[name]
    point = random_point(model, seed)
    assert step._occupied is not None
    logp = model.compile_logp(jacobian=True)  # every term, every slot
    value = float(point[step._value_name])
    old = float(step._from_value(np.asarray(value)))
    move = step._move(point, old)
    assert isinstance(move, _OccupiedMove)
    assert move.slots.tolist() == [1, 4, 9]

    def full(new_value):
        new = float(step._from_value(np.asarray(new_value)))
        proposal, log_det = step._joint_proposal(point, new_value, old, new)
        return logp(proposal) + log_det

    def occupied(new_value):
        return move.log_density(new_value, float(step._from_value(np.asarray(new_value))))

    values = [value - 1.1, value - 0.05, value + 0.3, value + 2.0]
    for a, b in zip(values[:-1], values[1:], strict=True):
        assert occupied(a) - occupied(b) == pytest.approx(full(a) - full(b), abs=1e-9)
    # the point itself (not mapped) against a proposal
    assert occupied(values[2]) - move.current() == pytest.approx(
        full(values[2]) - logp(point), abs=1e-9
    )
    # the point reached: every slot mapped, the occupied ones as evaluated
    new = float(step._from_value(np.asarray(values[1])))
    reached = move.point_at(values[1], new)
    expected = step._joint_proposal(point, values[1], old, new)[0]
    for key in expected:
        np.testing.assert_array_equal(reached[key], expected[key])


def test_occupied_ratio_is_exact_near_rho_one():
    """The closed-form slot prior keeps the ratio exact as ``1 - ρ → 2^-50`` (see the
    ``test_noncentred_ratio_is_exact_near_rho_one`` test of the full density)."""
    model = clustered_model()
    step = steps(model)["rho"]
    rng = np.random.default_rng(3)
    point = random_point(model, 5)
    v = 50 * math.log(2.0)
    point["rho_logodds__"] = np.array(v)
    whiten = math.exp(-0.5 * np.logaddexp(0.0, v))
    common = 0.5 * np.arange(6.0)[::-1, None]
    for name in ("U0", "U"):
        point[name] = common + whiten * rng.normal(size=point[name].shape)
    old = float(step._from_value(np.asarray(v)))
    move = step._move(point, old)
    for new_v in (v - 8.0, v - 1.0, v - 0.2, v + 0.2, v + 1.0):
        new = float(step._from_value(np.asarray(new_v)))
        got = move.log_density(new_v, new) - move.current()

        def prior(x):
            return -np.logaddexp(0.0, -x) - np.logaddexp(0.0, x) / 6.0

        assert got == pytest.approx(prior(new_v) - prior(v), abs=1e-6)


def hand_built(shift, dims=True, noise_from_tau=False):
    """The clustered model by hand, with the slot prior's mean ``τ U0 + shift``; the slots
    given by ``dims`` (the value variable takes any number of slots) or by ``shape``; the
    lists' noise 0.1, or ``0.05 + 0.2 τ`` with ``noise_from_tau``."""
    rng = np.random.default_rng(1)
    lists = np.array([rng.permutation(4) for _ in range(10)])
    size = {"dims": ("slot", "item", "dim")} if dims else {"shape": (6, 4, 2)}
    coords = {"slot": range(6), "item": range(4), "dim": range(2)}
    with pm.Model(coords=coords) as model:
        rho = pm.Beta("rho", 2.0, 2.0)
        tau = pm.Uniform("tau", 0.0, 1.0)
        mean = pmc.EquicorrelatedNormal("U0", mu=np.zeros((4, 2)), rho=rho)
        slots = pmc.EquicorrelatedNormal(
            "U", mu=tau * mean + shift, rho=rho, scale=pt.sqrt(1.0 - tau**2), **size
        )
        labels = pmc.CRP("cluster", 1.0, max_clusters=6, shape=10)
        noise = 0.05 + 0.2 * tau if noise_from_tau else 0.1
        pmc.PartialOrderLists("lists", slots, labels, noise, n_items=4, observed=lists)
    set_role(model, tau, HyperparameterRole("shrinkage", (slots,), mean))
    set_role(model, rho, HyperparameterRole("correlation", (mean, slots)))
    return model


def test_recognised_structures_and_fallbacks():
    # the hand-built model is recognised; with a slot mean the maps do not whiten, it is not
    assert all(s._occupied is not None for s in steps(hand_built(0.0)).values())
    assert all(s._centred_occupied for s in steps(hand_built(0.0)).values())
    assert all(s._occupied is None for s in steps(hand_built(0.5)).values())
    assert not any(s._centred_occupied for s in steps(hand_built(0.5)).values())
    # the inherited random walk's target is compiled only where the centred moves use it
    # and the full joint density of the moves only where they use it (the checks' own is
    # compiled without graph rewriting)
    for model in (hand_built(0.0), hand_built(0.5)):
        for s in steps(model).values():
            assert (s._target_fn is None) == s._centred_occupied
            assert s._check_parts is _joint_logp_function(model, None, checking=True)
            if s._occupied is None:
                assert s._joint_parts is _joint_logp_function(model, None)
            else:
                assert s._joint_parts is None
    # the lists' noise follows tau: the lists' sums at the move's start noise would not follow
    # it, the check against the full density sees that and tau falls back (rho does not)
    moves = steps(hand_built(0.0, noise_from_tau=True))
    assert moves["tau"]._occupied is None and moves["rho"]._occupied is not None
    # the number of slots fixed in the value variable's type: not recognised
    assert all(s._occupied is None for s in steps(hand_built(0.0, dims=False)).values())
    # the lists read G^-1(Phi(U)) + x beta: not recognised
    covariates = np.random.default_rng(2).normal(size=(6, 1))
    assert all(s._occupied is None for s in steps(clustered_model(covariates=covariates)).values())
    # one order (no slots)
    single = pmc.models.partial_order([[0, 1, 2], [2, 0]], 3, n_dims=2)
    (step,) = steps(single).values()
    assert step._occupied is None and not step._centred_occupied
    point = single.initial_point(random_seed=0)
    assert isinstance(step._move(point, 0.5), _FullMove)


def test_list_sums_count_each_order_of_a_slot_once(monkeypatch):
    """The lists' part of the occupied density equals the list term's log-density at the
    gathered point, and orders a move has met are not counted again."""
    model = clustered_model()
    step = steps(model)["rho"]
    point = random_point(model, 4)
    move = step._move(point, float(step._from_value(np.asarray(point["rho_logodds__"]))))
    list_logp = model.compile_logp(vars=[model["lists"]])
    assert move.sums.total(move.gathered["U"]) == pytest.approx(list_logp(move.gathered), 1e-12)
    calls = []
    term = move.sums.term
    original = term.slot_logliks
    monkeypatch.setattr(term, "slot_logliks", lambda *a, **k: calls.append(1) or original(*a, **k))
    for shift in (0.0, 1.0, 0.0, 1.0):
        new_value = float(point["rho_logodds__"]) + shift
        new = float(step._from_value(np.asarray(new_value)))
        proposal, _ = step._joint_proposal(move.gathered, new_value, move.old, new)
        got = move.sums.total(proposal["U"])
        assert got == pytest.approx(list_logp(proposal), rel=1e-12)
    assert 0 < len(calls) <= 3  # the second visit of each value counts nothing


@pytest.mark.slow  # 38 s (three builds of the steps); the differences are compared (default run)
def test_same_seed_same_draws_and_full_path_agrees():
    """Same ``random_seed``, same draws; the occupied and the full evaluations give the same
    chain up to rounding (here: the same draws to 1e-9)."""
    model = clustered_model()

    def run(full=False):
        with model:
            step_list = list(steps(model).values())
            if full:
                for s in step_list:
                    s._occupied = None
                    s._joint_parts = _joint_logp_function(model, None)
            idata = pm.sample(
                draws=30,
                tune=20,
                chains=1,
                random_seed=11,
                step=step_list,
                progressbar=False,
                compute_convergence_checks=False,
            )
        return {v: idata.posterior[v].values for v in ("rho", "tau", "p", "alpha")}

    first, again, full = run(), run(), run(full=True)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
        np.testing.assert_allclose(first[name], full[name], rtol=1e-9)


@pytest.mark.parametrize("name", ["rho", "tau"])
@pytest.mark.parametrize("seed", [0, 3])
def test_centred_move_over_occupied_slots(name, seed):
    """The centred move holds the occupied slots and ``U0`` and maps the empty slots keeping
    their whitened values; differences of its density over the occupied slots equal those of
    the full model density at the mapped points plus the empty slots' log-Jacobian."""
    model = clustered_model()
    step = steps(model)[name]
    assert step._centred_occupied
    point = random_point(model, seed)
    value_name = step._value_name
    value = float(point[value_name])
    old = float(step._from_value(np.asarray(value)))
    gathered, full = step._centred_density(point, old), step._centred_density(point, old, True)
    new_values = value + np.array([0.0, 0.9, -1.4])
    news = [float(step._from_value(np.asarray(v))) for v in new_values]
    g = np.array([gathered(v, t) for v, t in zip(new_values, news, strict=True)])
    f = np.array([full(v, t) for v, t in zip(new_values, news, strict=True)])
    np.testing.assert_allclose(g[1:] - g[0], f[1:] - f[0], rtol=1e-9, atol=1e-8)
    assert abs((g[1] - g[0]) - (g[2] - g[0])) > 1e-3  # the density does depend on the value
    mapped, _ = step._empty_slots_mapped(point, old, news[1])
    occupied = np.unique(point["cluster"])
    empty = np.setdiff1d(np.arange(N_SLOTS), occupied)
    np.testing.assert_array_equal(mapped[occupied], point["U"][occupied])
    rho = 1 / (1 + np.exp(-float(point["rho_logodds__"])))
    tau = 1 / (1 + np.exp(-float(point["tau_interval__"])))

    def whitened(u, rho, tau):  # A^-1 (u - tau U0) / sqrt(1 - tau^2), by the eigenvectors
        d = (u - tau * point["U0"]) / math.sqrt(1 - tau**2)
        mean = d.mean(axis=-1, keepdims=True)
        return mean / math.sqrt(1 + 2 * rho) + (d - mean) / math.sqrt(1 - rho)

    new_rho, new_tau = (news[1], tau) if name == "rho" else (rho, news[1])
    np.testing.assert_allclose(
        whitened(mapped[empty], new_rho, new_tau), whitened(point["U"][empty], rho, tau)
    )


def beta_prior_step(name, seed, scale):
    """``(rng, model, step)``: the clustered model with ``rho ~ Beta(2, 2)`` and the untuned
    step of ``name`` with the centred move over the occupied slots at ``scale``."""
    rng = np.random.default_rng(seed)
    lists = [rng.permutation(6)[: 3 + i % 4].tolist() for i in range(30)]
    model = pmc.models.clustered_partial_orders(
        lists, 6, n_dims=3, max_clusters=N_SLOTS, rho_prior=(2.0, 2.0)
    )
    step = steps(model)[name]
    step.tune, step.scale = False, scale
    assert step._centred_occupied
    return rng, model, step


@pytest.mark.parametrize("name", ["rho", "tau"])
def test_centred_move_keeps_the_prior_invariant(name):
    """One centred move from exact prior draws of ``(ρ, τ, U0, U)`` (the lists do not enter
    the move) leaves them prior draws: ``ρ`` (``τ``) keeps its Beta(2, 2) (uniform) marginal,
    and the empty slots' squared whitened deviations under the *new* value are chi-square,
    also among the accepted moves up and down (holding the empty slots unmapped would put
    their mean at ``(1-ρ)/(1-ρ')`` of it)."""
    rng, model, step = beta_prior_step(name, 21, 1.2)
    point = random_point(model, 0)
    empty = np.setdiff1d(np.arange(N_SLOTS), point["cluster"])
    n_items, k = point["U0"].shape
    moves, values, perp, along = [], [], [], []
    for _ in range(1500):
        rho, tau = rng.beta(2.0, 2.0), rng.uniform()
        u0 = equicorrelated_prior_draws(np.zeros((n_items, k)), rho, 1.0, 1, rng)[0]
        point["U"] = equicorrelated_prior_draws(tau * u0, rho, math.sqrt(1 - tau**2), N_SLOTS, rng)
        point.update(U0=u0, rho_logodds__=np.asarray(math.log(rho / (1 - rho))))
        point["tau_interval__"] = np.asarray(math.log(tau / (1 - tau)))
        old = rho if name == "rho" else tau
        new_point, _ = step._centred_occupied_move(point)
        new = float(step._from_value(new_point[step._value_name]))
        new_rho, new_tau = (new, tau) if name == "rho" else (rho, new)
        np.testing.assert_array_equal(new_point["U0"], u0)
        d = (new_point["U"][empty] - new_tau * u0) / math.sqrt(1 - new_tau**2)
        mean = d.mean(axis=-1, keepdims=True)
        perp.append(np.sum((d - mean) ** 2) / (1 - new_rho) / (empty.size * n_items * (k - 1)))
        along.append(np.sum(k * mean**2) / (1 + (k - 1) * new_rho) / (empty.size * n_items))
        moves.append(np.sign(new - old))
        values.append(new)
    moves, values = np.array(moves), np.array(values)
    perp, along = np.array(perp), np.array(along)
    assert 300 < np.sum(moves > 0) and 300 < np.sum(moves < 0)  # accepted both ways
    prior = stats.beta(2.0, 2.0) if name == "rho" else stats.uniform()
    assert stats.kstest(values, prior.cdf).pvalue > 1e-3
    dof = {"perp": empty.size * n_items * (k - 1), "along": empty.size * n_items}
    for label, stat in (("perp", perp), ("along", along)):
        se = math.sqrt(2.0 / dof[label])  # sd of a chi-square over its degrees of freedom
        for subset in (moves > 0, moves < 0, moves == 0):
            z = (stat[subset].mean() - 1.0) / (se / math.sqrt(subset.sum()))
            assert abs(z) < 4.5, (label, z)


@pytest.mark.slow
def test_centred_moves_keep_the_prior_when_lists_carry_no_information():
    """With ``p = 1`` the lists carry no information and the labels follow the CRP, so the
    posterior of ``rho`` is its Beta(2, 2) prior and that of ``tau`` is uniform. The
    non-centred moves are switched off (a scale of 1e-12, not tuned), so ``rho`` and ``tau``
    move by the centred moves over the occupied slots and by the collapsed moves of
    ``UtilityMeanGibbs`` (assigned by ``pm.sample``): a check of their density, while the
    handling of the empty slots is checked by the one-move test above (the ``U0`` step's
    redraw of the empty slots would hide a defect there)."""
    from test_noncentred import check_quantiles

    rng = np.random.default_rng(4)
    lists = [rng.permutation(4)[: 2 + i % 3].tolist() for i in range(8)]
    model = pmc.models.clustered_partial_orders(
        lists, 4, n_dims=3, noise=1.0, rho_prior=(2.0, 2.0), max_clusters=8
    )
    with model:
        hyper = [
            pmc.NonCentredHyperparameterMetropolis(
                [model[name]],
                noncentred_move="metropolis",
                noncentred_scale=1e-12,
                scale=1.0,
                tune=False,
            )
            for name in ("rho", "tau")
        ]
        assert all(s._centred_occupied for s in hyper)
        idata = pm.sample(
            1500,
            tune=300,
            chains=2,
            cores=1,
            step=hyper,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    grid = np.linspace(1e-5, 1 - 1e-5, 20_001)
    for name, density in (("rho", stats.beta.pdf(grid, 2, 2)), ("tau", np.ones_like(grid))):
        assert not check_quantiles(idata.posterior[name].values, grid, density), name
    assert check_quantiles(idata.posterior["rho"].values, grid, stats.beta.pdf(grid, 2, 2.6))


@pytest.mark.parametrize("name", ["rho", "tau"])
def test_repeated_centred_moves_target_the_conditional_given_the_occupied_slots(name):
    """The centred move alone, repeated, holds ``U0`` and the occupied slots, so its chain must
    target ``p(ρ | U0, U_occ)`` (``p(τ | U0, U_occ)``), computed here by quadrature with the
    oracles' Gaussian density: the empty slots, mapped keeping their whitened values, must not
    enter. A ratio with the empty slots' density at their unmapped values (9 of 12 slots) would
    pull the chain towards where it started."""
    rng, model, step = beta_prior_step(name, 7, 1.0)
    point = random_point(model, 3)
    rho0, tau0 = 0.4, 0.6
    n_items, k = point["U0"].shape
    u0 = equicorrelated_prior_draws(np.zeros((n_items, k)), rho0, 1.0, 1, rng)[0]
    point["U"] = equicorrelated_prior_draws(tau0 * u0, rho0, math.sqrt(1 - tau0**2), N_SLOTS, rng)
    point.update(U0=u0, rho_logodds__=np.asarray(math.log(rho0 / (1 - rho0))))
    point["tau_interval__"] = np.asarray(math.log(tau0 / (1 - tau0)))
    occupied = np.unique(point["cluster"])
    u_occ = point["U"][occupied]

    def log_target(value):
        rho, tau = (value, tau0) if name == "rho" else (rho0, value)
        sigma = (1 - rho) * np.eye(k) + rho
        lp = math.log(stats.beta.pdf(rho, 2, 2)) if name == "rho" else 0.0
        for j in range(n_items):
            if name == "rho":
                lp += gaussian_log_density(u0[j], sigma)
            for u in u_occ:
                lp += gaussian_log_density(u[j] - tau * u0[j], (1 - tau**2) * sigma)
        return lp

    grid = np.linspace(1e-4, 1 - 1e-4, 4001)
    log_density = np.array([log_target(v) for v in grid])
    density = np.exp(log_density - log_density.max())
    draws = []
    for _ in range(6000):
        point, _ = step._centred_occupied_move(point)
        draws.append(float(step._from_value(point[step._value_name])))
    np.testing.assert_array_equal(point["U"][occupied], u_occ)
    assert not quantile_failures(np.array(draws)[None], grid, density, 4.5, check_mean=True)
