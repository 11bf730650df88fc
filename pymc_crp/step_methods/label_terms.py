r"""How a model's terms use a label vector: observation axes, slot parameters, locality checks.

:class:`~pymc_crp.CRPGibbs` is exact when the density of observation ``i`` depends on the labels
only through ``c_i``, and may refresh a parameter ``φ`` from its prior in the empty slots only
where the labels index ``φ``'s leading axis in every term that reads it. Both are decided here
with sharp numerical checks at *probe points*: the model's initial point with every continuous
value jittered (so that slots hold distinct parameters), every other free integer variable
drawn from its prior (values that differ between the points where the prior allows) and the
label vectors drawn at random (so that no slot coincides with an observation index or with
another label vector's slot).

* :func:`observation_axis`: the axis of a term's elementwise log-density that runs over the
  labels — changing label ``i0`` alone must change only elements with index ``i0`` there.
* :func:`row_local_slot_params`: parameters of leading length ``L`` whose row ``r``, when
  perturbed, changes only the densities of observations with ``c_i = r`` (and whose transform
  maps each row on its own, and whose prior rows are independent batch elements).
* :func:`check_label_locality`: the likelihood matrix built with constant label vectors agrees
  with the direct evaluation at random label vectors, ``ℓ_direct[i] = ℓ[i, c_i]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pymc.model import Model
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

from pymc_crp.distributions.partitions import partition_params
from pymc_crp.roles import REGISTRY
from pymc_crp.step_methods.model_graph import (
    PointFunction,
    compile_point_function,
    dependent_terms,
    is_partition_rv,
    model_signature,
    prior_draw_function,
    reseed,
    same_signature,
    term_logps,
)

__all__ = [
    "LabelProbe",
    "check_label_locality",
    "observation_axis",
    "per_observation",
    "loglik_value_inputs",
    "row_local_slot_params",
    "slot_terms_are_local",
]

_PROBE_SEED = 20261123
_N_PROBES = 3
_JITTER = 0.7
_MAX_ROWS = 16
_DISCRETE_TRIES = 64  # prior draws tried for a value not yet used at another probe point


@dataclass
class LabelProbe:
    """Probe points of a model for the label vector ``label_name`` (see the module docstring).

    ``points[k]`` is the initial point with every continuous value jittered, every other free
    integer variable drawn from its prior (a value not used at the other points where the
    prior allows) and every partition-prior label vector drawn uniformly over its slots;
    ``rng`` is a fixed-seed generator (the checks are part of building a step and use none
    of the sampler's randomness).
    """

    label_name: str
    n_obs: int
    n_slots: int
    points: list[dict]
    rng: np.random.Generator

    @classmethod
    def build(
        cls, model: Model, initial_point: dict, label_value_var, n_slots: int, fixed_labels=None
    ):
        """Probe points; ``fixed_labels``: the values of observed labels (held at every
        point under ``label_value_var``'s name), else the labels are free and drawn."""
        rng = np.random.default_rng(_PROBE_SEED)
        label_slots = {}
        for rv in model.free_RVs:
            if is_partition_rv(rv):
                label_slots[model.rvs_to_values[rv].name] = int(
                    pt.get_underlying_scalar_constant_value(partition_params(rv).n_slots)
                )
        if fixed_labels is None:
            label_slots[label_value_var.name] = n_slots
        points = []
        for _ in range(_N_PROBES):
            point = {}
            for name, value in initial_point.items():
                value = np.asarray(value)
                if name in label_slots:
                    point[name] = rng.integers(0, label_slots[name], size=value.shape)
                elif value.dtype.kind == "f":
                    point[name] = value + _JITTER * rng.standard_normal(value.shape)
                else:
                    point[name] = value
            points.append(point)
        _vary_discrete_values(model, points, set(label_slots), rng)
        if fixed_labels is not None:
            for point in points:
                point[label_value_var.name] = np.asarray(fixed_labels, dtype=np.int64)
            n_obs = int(np.asarray(fixed_labels).shape[0])
        else:
            n_obs = int(np.asarray(initial_point[label_value_var.name]).shape[0])
        return cls(label_value_var.name, n_obs, n_slots, points, rng)

    def with_labels(self, point: dict, labels: np.ndarray) -> dict:
        out = dict(point)
        out[self.label_name] = np.asarray(labels, dtype=np.int64)
        return out


def _vary_discrete_values(model: Model, points: list[dict], skip: set, rng) -> None:
    """Give each free integer variable (other than label vectors) values from its prior that
    differ between the probe points where the prior allows: a term that is local in the labels
    for one value of such a variable (a gate ``b = 0``) may not be for another."""
    for rv in model.free_RVs:
        value_var = model.rvs_to_values[rv]
        if value_var.name in skip or rv.dtype[:3] not in ("int", "uin", "boo"):
            continue
        if not isinstance(getattr(rv.owner, "op", None), RandomVariable):
            continue
        try:
            draw, draw_rng = prior_draw_function(model, [rv])
            reseed(draw_rng, rng)
            draw(points[0])
        except Exception:  # noqa: BLE001 - no prior draw to be had: keep the initial value
            continue
        seen = []
        for point in points:
            value = np.asarray(draw(point)[0])
            for _ in range(_DISCRETE_TRIES):
                if not any(np.array_equal(value, other) for other in seen):
                    break
                value = np.asarray(draw(point)[0])
            seen.append(value)
            point[value_var.name] = value.astype(np.asarray(point[value_var.name]).dtype)


def per_observation(logp, axis: int):
    """Sum an elementwise log-density over every axis but ``axis`` (the labels' axis), which
    becomes the only one."""
    if logp.ndim <= 1:
        return logp
    others = tuple(a for a in range(logp.ndim) if a != axis)
    return pt.sum(logp, axis=others)


def observation_axis(model: Model, term, logp, probe: LabelProbe, compile_kwargs=None) -> int:
    """The axis of ``term``'s elementwise log-density that runs over the labels.

    Label ``i0`` is moved to another slot at the probe points; the elements that change must
    all have index ``i0`` along the returned axis. When no element changes (no parameter
    differs between the slots), the only axis of length ``n`` is taken.

    Raises
    ------
    ValueError
        If no axis has the labels' length (missing values imputed by PyMC give such a term),
        or the changed elements cannot be attributed to one axis (the term depends on other
        labels than its own).
    """
    shape = _eval_shape(model, logp, probe, compile_kwargs)
    n = probe.n_obs
    candidates = [a for a, length in enumerate(shape) if length == n]
    if not candidates:
        raise ValueError(_no_observation_axis_message(term, shape, probe))
    if len(candidates) == 1 and logp.ndim == 1:
        return candidates[0]
    fn = compile_point_function(model, logp, compile_kwargs)
    found = set(candidates)
    seen_change = False
    for point in probe.points:
        base_labels = np.asarray(point[probe.label_name])
        base = np.asarray(fn(point))
        for i0 in probe.rng.choice(n, size=min(n, 3), replace=False):
            moved = base_labels.copy()
            moved[i0] = (moved[i0] + 1 + probe.rng.integers(probe.n_slots - 1)) % probe.n_slots
            changed = ~_close(np.asarray(fn(probe.with_labels(point, moved))), base)
            if not changed.any():
                continue
            seen_change = True
            where = np.nonzero(changed)
            found &= {a for a in candidates if np.all(where[a] == i0)}
    if seen_change and not found:
        raise ValueError(
            f"the density of {term.name} changes in elements of other observations when one "
            f"label of {probe.label_name} changes; CRPGibbs needs the density of observation i "
            f"to depend on the labels only through {probe.label_name}[i]"
        )
    return min(found)


def row_local_slot_params(
    model: Model,
    label_rv,
    loglik_fn: PointFunction,
    loglik_inputs: set,
    terms: list,
    logps: dict,
    probe: LabelProbe,
    compile_kwargs=None,
) -> tuple[list, list]:
    """Split the free parameters of leading length ``L`` read by the label terms into those
    whose empty rows can be refreshed from the prior and the rest.

    A parameter ``φ`` is refreshable when (1) it is a plain random variable whose leading axis
    is a batch axis (rows independent given the parents), (2) every term that reads it depends
    on the labels, (3) its transform maps each row on its own, and (4) perturbing row ``r`` of
    its value changes only the per-observation densities of observations with label ``r`` at
    every probe point (and changes some density somewhere). Everything else is left to its own
    step method.
    """
    refreshable, skipped = [], []
    n_slots = probe.n_slots
    for rv in model.free_RVs:
        if rv is label_rv or is_partition_rv(rv):
            continue
        value_var = model.rvs_to_values[rv]
        if value_var not in loglik_inputs:
            continue
        value = np.asarray(probe.points[0][value_var.name])
        if value.ndim == 0 or value.shape[0] != n_slots:
            continue
        children = dependent_terms(model, value_var, logps, exclude=(rv,))
        ok = (
            isinstance(rv.owner.op, RandomVariable)
            and rv.owner.op.ndim_supp < rv.ndim
            and all(child in terms for child in children)
            and _transform_is_row_local(model, rv, probe, compile_kwargs)
            and _labels_index_rows(value_var.name, loglik_fn, probe)
        )
        (refreshable if ok else skipped).append(rv)
    return refreshable, skipped


def slot_terms_are_local(
    model: Model, terms: list, labels_rv, slot_rvs: list, *, check_labels: bool = False
) -> bool:
    """Whether the summed log-density of ``terms`` (one value per observation each) reads the
    slot parameters ``slot_rvs`` (and, with ``check_labels``, the free labels) only through
    each observation's own label.

    At the probe points: perturbing row ``r`` of a slot parameter changes only the elements
    of observations with label ``r``, and moving label ``i0`` changes element ``i0`` only.
    Graph patterns (every use of ``ψ`` is ``ψ[z]``) do not see what follows the indexing
    (``ψ[z].mean()`` couples every slot and every label); this does. Steps that update slots
    one by one or sweep labels collapsed accept a model only when it holds. Cached per model
    until its variables change.
    """
    signature = model_signature(model)
    cache = REGISTRY.cache(model, "slot_terms_local")
    if "found" not in cache or not same_signature(cache["signature"], signature):
        cache.update(signature=signature, found=[])  # [(key, result)], keys compared by `is`
    key = (labels_rv, *terms, None, *slot_rvs, None, bool(check_labels))
    for seen, result in cache["found"]:
        if same_signature((seen,), (key,)):
            return result
    result = _slot_terms_are_local(model, terms, labels_rv, slot_rvs, check_labels)
    cache["found"].append((key, result))
    return result


def _slot_terms_are_local(model, terms, labels_rv, slot_rvs, check_labels) -> bool:
    logps = term_logps(model)
    if any(logps[t].ndim != 1 for t in terms):
        return False
    n_slots = int(pt.get_underlying_scalar_constant_value(partition_params(labels_rv).n_slots))
    label_value = model.rvs_to_values[labels_rv]
    fixed = None if labels_rv in model.free_RVs else np.asarray(label_value.eval())
    probe = LabelProbe.build(model, model.initial_point(), label_value, n_slots, fixed)
    loglik = pt.add(*[logps[t] for t in terms]) if len(terms) > 1 else logps[terms[0]]
    fn = compile_point_function(model, loglik)
    if check_labels and fixed is None and not _labels_move_their_own_elements(fn, probe):
        return False
    return all(_labels_index_rows(model.rvs_to_values[rv].name, fn, probe) for rv in slot_rvs)


def _labels_move_their_own_elements(fn: PointFunction, probe: LabelProbe) -> bool:
    """Moving label ``i0`` alone changes element ``i0`` of ``fn`` only (vacuous with one slot,
    where no label can move)."""
    if probe.n_slots < 2:
        return True
    for point in probe.points:
        labels = np.asarray(point[probe.label_name])
        base = np.asarray(fn(point))
        for i0 in probe.rng.choice(probe.n_obs, size=min(probe.n_obs, 3), replace=False):
            moved = labels.copy()
            moved[i0] = (moved[i0] + 1 + probe.rng.integers(probe.n_slots - 1)) % probe.n_slots
            changed = ~_close(np.asarray(fn(probe.with_labels(point, moved))), base)
            changed[i0] = False
            if changed.any():
                return False
    return True


def check_label_locality(
    matrix_fn, single_fn: PointFunction, probe: LabelProbe, term_names: list[str]
) -> None:
    """Check ``ℓ_direct[i] = ℓ[i, c_i]`` at every probe point (random labels, distinct slot
    parameters); raise ``ValueError`` naming the terms otherwise."""
    rows = np.arange(probe.n_obs)
    for point in probe.points:
        matrix = matrix_fn(point)
        if matrix.shape != (probe.n_obs, probe.n_slots):
            raise ValueError(
                f"the label-dependent terms {term_names} give a likelihood matrix of shape "
                f"{matrix.shape}, expected (n, L) = ({probe.n_obs}, {probe.n_slots})"
            )
        labels = np.asarray(point[probe.label_name])
        direct = np.asarray(single_fn(point))
        if not np.all(_close(direct, matrix[rows, labels])):
            raise ValueError(
                f"the density of observation i depends on labels other than "
                f"{probe.label_name}[i] in {term_names} (e.g. a reordered, sorted or summed "
                f"label vector, or observations whose elements do not line up with the labels, "
                f"such as a partly masked array that PyMC flattens); CRPGibbs cannot update "
                f"these labels exactly"
            )


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def _close(a, b) -> np.ndarray:
    return np.isclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True)


def _eval_shape(model, graph, probe, compile_kwargs) -> tuple:
    fn = compile_point_function(model, pt.as_tensor_variable(graph).shape, compile_kwargs)
    return tuple(int(s) for s in fn(probe.points[0]))


def _no_observation_axis_message(term, shape, probe) -> str:
    msg = (
        f"the log-density of {term.name} has shape {shape}, with no axis of length "
        f"n = {probe.n_obs} (one element per label of {probe.label_name}); CRPGibbs needs the "
        f"observations of a label-dependent term laid out along one axis of length n"
    )
    if term.name and term.name.endswith(("_observed", "_unobserved")):
        msg += (
            f". {term.name} comes from PyMC's automatic imputation of missing values, which "
            "CRPGibbs does not support: drop the observations with missing values and their "
            "labels, or give the missing values a variable of their own with the full length n"
        )
    return msg


def _transform_is_row_local(model, rv, probe, compile_kwargs) -> bool:
    """Perturbing row ``r`` of the transformed value moves only row ``r`` of the variable."""
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return True
    value_var = model.rvs_to_values[rv]
    params = model.replace_rvs_by_values(rv.owner.inputs)
    backward = compile_point_function(
        model, pt.as_tensor_variable(transform.backward(value_var, *params)), compile_kwargs
    )
    for point in probe.points[:1]:
        base = np.asarray(backward(point))
        for r in _rows(probe):
            moved = dict(point)
            moved[value_var.name] = _perturb_row(point[value_var.name], r, probe.rng)
            changed = ~_close(np.asarray(backward(moved)), base)
            if (
                changed.reshape(changed.shape[0], -1)
                .any(axis=1)[np.arange(probe.n_slots) != r]
                .any()
            ):
                return False
    return True


def _labels_index_rows(value_name: str, loglik_fn: PointFunction, probe: LabelProbe) -> bool:
    """Perturbing row ``r`` changes only ``ℓ_i`` with ``c_i = r``, and some ``ℓ_i`` at all."""
    any_change = False
    for point in probe.points:
        labels = np.asarray(point[probe.label_name])
        base = np.asarray(loglik_fn(point))
        for r in _rows(probe):
            moved = dict(point)
            moved[value_name] = _perturb_row(point[value_name], r, probe.rng)
            changed = ~_close(np.asarray(loglik_fn(moved)), base)
            if changed[labels != r].any():
                return False
            any_change |= bool(changed.any())
    return any_change


def _rows(probe: LabelProbe) -> np.ndarray:
    if probe.n_slots <= _MAX_ROWS:
        return np.arange(probe.n_slots)
    return np.sort(probe.rng.choice(probe.n_slots, size=_MAX_ROWS, replace=False))


def _perturb_row(value, r: int, rng: np.random.Generator) -> np.ndarray:
    """Row ``r`` moved by independent normal noise per element (+1 for integers): a common
    shift could leave piecewise-constant likelihoods (orders of utilities) unchanged."""
    out = np.array(value, copy=True)
    if out.dtype.kind in "iu":
        out[r] = out[r] + 1
    else:
        out[r] = out[r] + rng.normal(0.0, 1.0, size=np.shape(out[r]))
    return out


def loglik_value_inputs(model: Model, loglik) -> set:
    """The value variables a graph reads."""
    return set(ancestors([loglik])) & set(model.value_vars)
