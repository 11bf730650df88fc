"""The step sets of ``po_convergence.py``'s variants: ``variant_steps(model, name)`` gives the
steps handed to ``pm.sample`` for a variant name (``new``, ``old``, ``margN``, ``coordN``, ...;
see its docstring), and ``in_default_order`` puts them in ``pm.sample``'s order of the steps."""

from __future__ import annotations

import pymc as pm
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods.compound import CompoundStep

import pymc_crp as pmc


class _Repeated(CompoundStep):
    """``methods`` in turn, ``repeats`` times per step (the last round's stats)."""

    def __init__(self, methods, repeats):
        super().__init__(methods)
        self.repeats = repeats

    def step(self, point):
        for _ in range(self.repeats - 1):
            point, _ = super().step(point)
        return super().step(point)


def label_block(model):
    """The variables of the default label step: the labels and the concentration, which it
    integrates out of its moves (when the concentration is random)."""
    return [model["cluster"]] + [model["alpha"]] * ("alpha" in model.named_vars)


def variant_steps(model, variant):
    """The step methods given to ``pm.sample`` for ``variant`` (``None``: all automatic);
    ``a+b`` joins the steps of ``a`` and ``b`` (they must update different variables)."""
    if "+" in variant:
        return [s for part in variant.split("+") for s in variant_steps(model, part) or []]
    step = None
    if variant == "old":
        with model:
            step = [pmc.CRPGibbs([model["cluster"]])]
    elif variant == "alpha":  # the default before the concentration was integrated out
        with model:  # of the label moves: the labels at fixed alpha, Escobar-West on alpha
            step = [
                pmc.PartialOrderLabelGibbs([model["cluster"]]),
                pmc.ConcentrationGibbs([model["alpha"]]),
            ]
    elif variant == "heldempty":  # the centred moves of rho and tau before the empty slots
        with model:  # were mapped: they held the empty slots (nineteenth session)
            step = [
                pmc.NonCentredHyperparameterMetropolis([model[name]])
                for name in ("rho", "tau")
                if name in model.named_vars
            ]
        for hyperparameter_step in step:
            hyperparameter_step._centred_occupied = False
    elif variant.startswith("marg"):  # new, with N utility proposals per anchored slot with
        with model:  # the labels of the movable lists summed out (twentieth session)
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model), marginal_utility_moves=int(variant[4:])
                )
            ]
    elif variant.startswith("coord"):  # new, N coordinate draws per step with the movable
        with model:  # lists' labels summed out (twenty-seventh session)
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model), marginal_coordinates=int(variant[5:])
                )
            ]
    elif variant.startswith("wms"):  # new, weight moves from N lists per cluster on average
        with model:  # (wms0: in every round, the default of the twenty-fourth session)
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model), weight_moves_mean_size=float(variant[3:])
                )
            ]
    elif variant.startswith("wm"):  # new, N weight moves of pairs of clusters per round
        with model:  # (wm0: the default before them, twenty-third session)
            step = [pmc.PartialOrderLabelGibbs(label_block(model), weight_moves=int(variant[2:]))]
    elif variant.startswith("tm"):  # new, N tuning-phase merges per try (tm0: the default
        with model:  # before the twenty-first session)
            step = [pmc.PartialOrderLabelGibbs(label_block(model), tune_merges=int(variant[2:]))]
    elif variant.startswith("gibbs"):  # new, with coordinate Gibbs utility draws
        with model:
            step = [pmc.UtilityMetropolis([model["U"]], coordinate_items=int(variant[5:]))]
    elif variant.startswith("cells"):  # new, with N scans of within-interval utility draws
        with model:
            step = [pmc.UtilityMetropolis([model["U"]], cell_sweeps=int(variant[5:]))]
    elif variant in ("reuse", "fresh"):  # new, the sweeps' auxiliaries reused from round to
        with model:  # round or drawn for each sweep (forty-fifth session; default by item sets)
            step = [
                pmc.PartialOrderLabelGibbs(label_block(model), reuse_auxiliaries=variant == "reuse")
            ]
    elif variant.startswith("aux"):  # new, with another number of auxiliary slots
        with model:
            step = [pmc.PartialOrderLabelGibbs(label_block(model), n_aux=int(variant[3:]))]
    elif variant.startswith("inf"):  # new, with N informed split-merge proposals per step
        with model:
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model), informed_split_merge=int(variant[3:])
                )
            ]
    elif variant.startswith("um"):  # new, with N utility steps between N + 1 groups of rounds
        with model:
            step = [pmc.PartialOrderLabelGibbs(label_block(model), utility_moves=int(variant[2:]))]
    elif variant.startswith("sw"):  # new, with N rounds of label moves per step (swNtM: M
        sweeps, _, tune_sweeps = variant[2:].partition("t")  # rounds per step while tuning)
        with model:
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model),
                    sweeps=int(sweeps),
                    tune_sweeps=int(tune_sweeps) if tune_sweeps else None,
                )
            ]
    elif variant.startswith("asm"):  # new, R annealed split-merge proposals per step (tuning too)
        with model:
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model),
                    annealed_split_merge=float(variant[3:]),
                    tune_annealed_split_merge=float(variant[3:]),
                )
            ]
    elif variant.startswith("ann"):  # new, annealing the label moves over N tuning steps
        with model:
            step = [pmc.PartialOrderLabelGibbs(label_block(model), anneal=int(variant[3:]))]
    elif variant.startswith("mc"):  # new, with N list-free cycles per UtilityMeanGibbs step
        with model:
            step = [pmc.UtilityMeanGibbs([model["U0"]], cycles=int(variant[2:]))]
    elif variant.startswith("cone"):  # N order-keeping trajectories per slot and cycle (cone0:
        # the default before them)
        with model:
            step = [pmc.UtilityMeanGibbs([model["U0"]], cone_trajectories=int(variant[4:]))]
    elif variant.startswith("coll"):  # new, N collapsed tau/rho moves per UtilityMeanGibbs step
        with model:
            step = [pmc.UtilityMeanGibbs([model["U0"]], collapsed_moves=int(variant[4:]))]
    elif variant.startswith("hmc"):  # new, with N exact Hamiltonian trajectories per slot
        with model:
            step = [pmc.UtilityMetropolis([model["U"]], hmc_trajectories=int(variant[3:]))]
    elif variant.startswith("cyc"):  # N cycles of whole steps: U0 (one cycle), list-free U
        with model:  # (the prototype of UtilityMeanGibbs(cycles=N); benchmarks/README.md)
            cheap = pmc.UtilityMetropolis(
                [model["U"]], item_sweeps=0, pcn=False, hmc_trajectories=0, column_swaps=1
            )
            mean = pmc.UtilityMeanGibbs([model["U0"]], cycles=1)
            cycle = _Repeated([mean, cheap], int(variant[3:]))
            step = [cycle, pmc.UtilityMetropolis([model["U"]])]
    elif variant.startswith("cs"):  # new, with N passes of column swaps per utility step
        with model:
            step = [pmc.UtilityMetropolis([model["U"]], column_swaps=int(variant[2:]))]
    elif variant.startswith("is"):  # new, with N item sweeps per UtilityMetropolis step
        with model:
            step = [pmc.UtilityMetropolis([model["U"]], item_sweeps=int(variant[2:]))]
    elif variant == "single" or variant.startswith("rep"):  # hyperparameter updates per step
        repeats = 1 if variant == "single" else int(variant[3:])
        with model:
            step = [
                pmc.NonCentredHyperparameterMetropolis([model["rho"]], repeats=repeats),
                pmc.NonCentredHyperparameterMetropolis([model["tau"]], repeats=repeats),
                pmc.HyperparameterMetropolis([model["p"]], repeats=repeats),
            ]
            if variant == "single":  # and one item sweep: the rule for large data
                step.append(pmc.UtilityMetropolis([model["U"]], item_sweeps=1))
    elif variant == "prev":  # the defaults before utility_moves and five updates of p
        with model:
            step = [
                pmc.PartialOrderLabelGibbs([model["cluster"]], utility_moves=0),
                pmc.HyperparameterMetropolis([model["p"]], repeats=1),
            ]
    elif variant.startswith("ilv"):  # new, N alternations of labels (8/N rounds) and U
        n = int(variant[3:])
        with model:
            labels = pmc.PartialOrderLabelGibbs(
                [model["cluster"]], sweeps=8 // n, anneal=700 * n, utility_moves=0
            )  # the annealing counts calls: n per iteration
            step = [_Repeated([labels, pmc.UtilityMetropolis([model["U"]])], n)]
    elif variant.startswith("hyp"):  # new, with N updates of rho and of tau per step
        with model:
            step = [
                pmc.NonCentredHyperparameterMetropolis([model[name]], repeats=int(variant[3:]))
                for name in ("rho", "tau")
            ]
    elif variant.startswith("trep"):  # new, with N updates of tau per step
        with model:
            step = [
                pmc.NonCentredHyperparameterMetropolis([model["tau"]], repeats=int(variant[4:]))
            ]
    elif variant.startswith("prep"):  # new, with N updates of p per step
        with model:
            step = [pmc.HyperparameterMetropolis([model["p"]], repeats=int(variant[4:]))]
    elif variant.startswith("noise"):  # new, with joint moves of p and the labels (path N)
        with model:
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model), noise_moves=1, noise_path=int(variant[5:])
                )
            ]
    elif variant.startswith("ord"):  # new, with the joint path of p, labels and orders
        all_slots = variant.endswith("all")  # ordNall: the pool holds every slot
        sweeps, _, points = variant[3:].removesuffix("all").partition("t")  # ordNtT: T points
        with model:
            step = [
                pmc.PartialOrderLabelGibbs(
                    label_block(model),
                    noise_moves=1,
                    noise_item_sweeps=int(sweeps),
                    noise_path=int(points or 10),
                    noise_all_slots=all_slots,
                )
            ]
    elif variant.startswith("ms"):  # new, with another number of merge-split proposals
        with model:
            step = [  # no annealing: the merge-split moves alone
                pmc.PartialOrderLabelGibbs(
                    label_block(model), merge_split=int(variant[2:]), anneal=0
                )
            ]
    return step


def _value_names(step):
    if isinstance(step, CompoundStep | list | tuple):
        methods = step.methods if isinstance(step, CompoundStep) else step
        return set().union(*(_value_names(method) for method in methods))
    return {v.name for v in step.vars}


def in_default_order(model, steps):
    """The steps ``pm.sample`` would assign, each replaced by those of ``steps`` that update
    any of its variables, in ``pm.sample``'s order (given steps alone would run first)."""
    if not steps:
        return None
    with model:
        provided, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        defaults = instantiate_steppers(model, provided, selected)
    defaults = defaults if isinstance(defaults, list) else [defaults]
    out = []
    for default in defaults:
        names = _value_names(default)
        given = [s for s in steps if _value_names(s) & names]
        out += [s for s in given if all(s is not o for o in out)] if given else [default]
    missing = [s for s in steps if all(s is not o for o in out)]
    if missing:
        raise ValueError(f"no default step updates the variables of {missing}")
    return out
