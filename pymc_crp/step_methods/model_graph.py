"""Reading a PyMC model's graph: which terms depend on a variable, and exact prior draws.

Shared by the step methods of this package. Everything here works on the model's value
variables (the sampler's state), so transforms are respected.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.logprob.utils import local_check_parameter_to_ninf_switch
from pymc.model import Model
from pytensor.compile.mode import Mode
from pytensor.graph.basic import equal_computations
from pytensor.graph.rewriting.basic import in2out
from pytensor.graph.traversal import ancestors, explicit_graph_inputs
from pytensor.tensor.random.op import RandomVariable

from pymc_crp.distributions.params import constant_value
from pymc_crp.distributions.partitions import (
    CRPRV,
    DirichletMultinomialPartitionRV,
    partition_params,
)
from pymc_crp.roles import REGISTRY

__all__ = [
    "CHECK_MODE",
    "PARTITION_OPS",
    "PointFunction",
    "check_same_slot_prior",
    "compile_point_function",
    "dependent_terms",
    "is_partition_rv",
    "model_signature",
    "same_signature",
    "prior_draw_function",
    "term_logps",
]

PARTITION_OPS = (CRPRV, DirichletMultinomialPartitionRV)

CHECK_MODE = Mode(linker="py", optimizer="None").register(
    (in2out(local_check_parameter_to_ninf_switch), -1)
)
"""The PyTensor mode of functions that a step's set-up calls a few times (its structure
checks): PyTensor's Python implementations and no graph rewriting other than PyMC's
parameter checks turned into ``-inf`` (as in the model's own log-density), so that compiling
costs a few hundredths of a second where rewriting a model's density costs tenths (0.03
against 0.37 s in ``FAST_COMPILE`` for a clustered partial-order model's joint density)."""


def is_partition_rv(var) -> bool:
    owner = getattr(var, "owner", None)
    return owner is not None and isinstance(owner.op, PARTITION_OPS)


def model_signature(model: Model) -> tuple:
    """What a model's log-density graphs are built from: its variables, their value variables
    and transforms, and its potentials (compare with :func:`same_signature`)."""
    rvs = tuple(model.basic_RVs)
    return (
        rvs,
        tuple(model.rvs_to_values[rv] for rv in rvs),
        tuple(model.rvs_to_transforms.get(rv) for rv in rvs),
        tuple(model.potentials),
    )


def term_logps(model: Model, jacobian: bool = True) -> dict:
    """Elementwise log-density of every basic RV and potential of ``model``, with the
    Jacobians of the transforms (``jacobian=False``: without them).

    Keys are the model variables; values are graphs in terms of the value variables. The
    graphs are built once per model (building them takes a good part of a second, and every
    step method's set-up and competence check needs them; PyMC's ``model.logp(vars=[rv])``
    builds every term of the model too) and rebuilt when variables, values, transforms or
    potentials change.
    """
    signature = model_signature(model)
    # "signature": what the graphs were built from; "logps": the graphs.
    cache = REGISTRY.cache(model, "term_logps" if jacobian else "term_logps_nojac")
    if "logps" in cache and same_signature(cache["signature"], signature):
        return dict(cache["logps"])
    rvs = list(model.basic_RVs)
    logps = model.logp(vars=rvs, sum=False, jacobian=jacobian)
    out = dict(zip(rvs, logps, strict=True))
    for pot in model.potentials:
        out[pot] = model.replace_rvs_by_values([pot])[0]
    cache.update(signature=signature, logps=out)
    return dict(out)


def compiled_once_per_model(model: Model, name: str, signature: tuple, compile_kwargs, build):
    """``build()`` (compiled functions) once per ``model`` and ``name``, shared by the steps
    that ask for it; built again when ``signature`` (what it was built from, compared with
    :func:`same_signature`) or ``compile_kwargs`` change."""
    # "held": (signature, compile_kwargs, what build returned)
    cache = REGISTRY.cache(model, name)
    held = cache.get("held")
    if held is not None and same_signature(held[0], signature) and held[1] == compile_kwargs:
        return held[2]
    built = build()
    cache["held"] = (signature, compile_kwargs, built)
    return built


def same_signature(a: tuple, b: tuple) -> bool:
    """Element-wise identity of two signatures (PyTensor variables do not define ``==``)."""
    return len(a) == len(b) and all(
        len(x) == len(y) and all(u is v for u, v in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True)
    )


def dependent_terms(model: Model, value_var, logps: dict | None = None, exclude=()) -> list:
    """Model variables whose log-density graph depends on ``value_var``."""
    logps = term_logps(model) if logps is None else logps
    return [
        var
        for var, logp in logps.items()
        if var not in exclude and value_var in set(ancestors([logp]))
    ]


def prior_draw_function(
    model: Model, rvs, compile_kwargs: dict | None = None, batch: int | None = None
):
    """Compile exact draws of ``rvs`` from their priors given the current values of parents.

    Returns ``(fn, rng)``: ``fn(point)`` gives the draws on the sampler's (transformed) scale,
    and ``rng`` is the shared generator to re-seed from the step's own generator before a call.
    Each ``rv`` must be a plain :class:`RandomVariable`. ``batch``: each output gets a leading
    axis of ``batch`` independent draws (one call instead of ``batch``; untransformed ``rvs``
    only).
    """
    rng = pytensor.shared(np.random.default_rng(0), name="pymc_crp_refresh_rng")
    next_rng = rng
    outs = []
    for rv in rvs:
        node = rv.owner
        if not isinstance(node.op, RandomVariable):
            raise TypeError(f"{rv.name} is not a plain RandomVariable")
        _, size, *params = node.inputs
        if batch is not None:
            if model.rvs_to_transforms.get(rv) is not None:
                raise ValueError(f"batch needs an untransformed variable, got {rv.name}")
            batch_shape = rv.shape[: rv.ndim - node.op.ndim_supp]
            size = pt.concatenate([pt.as_tensor([batch], dtype="int64"), batch_shape])
            (size,) = model.replace_rvs_by_values([size])
        params = model.replace_rvs_by_values(params)
        # Thread the generator through the draws so that each one uses fresh randomness.
        next_rng, draw = node.op.make_node(next_rng, size, *params).outputs
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            draw = transform.forward(draw, next_rng, size, *params)
        outs.append(pt.as_tensor_variable(draw))
    return compile_point_function(model, outs, compile_kwargs), rng


def reseed(shared_rng, rng: np.random.Generator) -> None:
    """Seed the shared generator of a compiled draw (e.g. from :func:`prior_draw_function`)
    with one integer from the step's generator ``rng``, so that every draw comes from the
    generator PyMC hands the step. The new generator is not copied (``borrow=True``): copying
    one costs about 75 µs, as much as a small draw."""
    shared_rng.set_value(np.random.default_rng(rng.integers(2**63)), borrow=True)


class PointFunction:
    """A compiled function called with a point (dict of value-variable values).

    Only the values the graph needs are passed, so any point of the model will do.
    """

    def __init__(self, fn, input_names):
        self.fn = fn
        self.input_names = list(input_names)

    def __call__(self, point):
        return self.fn(*(point[name] for name in self.input_names))


def compile_point_function(model: Model, outs, compile_kwargs: dict | None = None):
    """Compile ``outs`` (graphs of value variables) into a :class:`PointFunction`.

    A graph that computes the same as one compiled before for ``model`` with the same
    ``compile_kwargs`` (:func:`~pytensor.graph.basic.equal_computations`: the same operations
    on the same variables and equal constants) reuses that compiled function: the steps of a
    model read the same quantities (labels, noise, slot priors), and each PyTensor compile
    costs tens of milliseconds of graph rewriting. A compiled function has no state between
    calls and returns fresh outputs, so sharing it between steps changes no value."""
    several = isinstance(outs, list | tuple)
    graphs = [pt.as_tensor_variable(g) for g in (outs if several else [outs])]
    inputs = [v for v in explicit_graph_inputs(graphs) if v in set(model.value_vars)]
    kwargs = dict(compile_kwargs or {})
    compiled = REGISTRY.cache(model, "point_functions").setdefault("compiled", [])
    for seen_several, seen_graphs, seen_kwargs, seen_fn in compiled:
        if (
            seen_several == several
            and seen_kwargs == kwargs
            and len(seen_graphs) == len(graphs)
            and equal_computations(seen_graphs, graphs)
        ):
            return seen_fn
    fn = model.compile_fn(graphs if several else graphs[0], inputs=inputs, point_fn=False, **kwargs)
    point_fn = PointFunction(fn, [v.name for v in inputs])
    compiled.append((several, graphs, kwargs, point_fn))
    return point_fn


def compile_partition_prior(model: Model, label_rv, compile_kwargs: dict | None = None):
    """``(prior, params_fn)`` of the partition prior of ``label_rv``: the
    :class:`~pymc_crp.core.partition_math.PartitionPrior` the label kernels of
    :mod:`pymc_crp.core.partition_math` switch on, and a compiled function of a point
    returning the kernels' ``(concentration, discount)`` as float64 (``(θ, d)`` or
    ``(γ, 0)``)."""
    params = partition_params(label_rv)
    graphs = model.replace_rvs_by_values(list(params.kernel_params))
    fn = compile_point_function(model, [pt.cast(p, "float64") for p in graphs], compile_kwargs)
    return params.prior, fn


def check_same_slot_prior(utility_rv, step_name: str) -> None:
    """Refuse slot utilities whose prior may differ between slots (``ValueError`` naming
    ``step_name``): auxiliary slots and new clusters take draws of one common slot prior. A
    parameter with a slot axis passes if that axis is broadcastable or if the parameter is a
    constant equal along it."""
    node = utility_rv.owner
    batch_ndim = utility_rv.ndim - node.op.ndim_supp
    for param, core_ndim in zip(node.op.dist_params(node), node.op.ndims_params, strict=True):
        axis = param.ndim - core_ndim - batch_ndim  # the slot axis of this parameter
        if axis < 0 or param.type.broadcastable[axis]:
            continue
        value = constant_value(param, fold=True)
        if value is not None and np.array_equal(
            value, np.repeat(value.take([0], axis), value.shape[axis], axis)
        ):
            continue
        raise ValueError(
            f"{step_name} needs the same prior for every slot of {utility_rv.name}; "
            f"a parameter of its prior has a slot axis of length {param.type.shape[axis]} "
            "that may vary between slots (give it without the slot axis)"
        )
