"""Which models hold this package's variables, and the roles model builders give them.

PyMC calls a step method's ``competence`` with a variable only; these registries let it find
the variable's model (even outside a ``with model:`` block) and any role that one of the
package's model builders recorded for it. Models are held weakly.
"""

from __future__ import annotations

import weakref

from pymc.model import Model, modelcontext

__all__ = ["find_model", "get_role", "register_model", "roles", "set_role"]

# Models in which partition priors were created, so that competence checks (which PyMC
# calls with a variable only) can find the model even outside a ``with model:`` block.
_MODELS: weakref.WeakSet = weakref.WeakSet()


# Roles that the model builders give their variables, so that the builders' step methods are
# assigned automatically to those variables only: model -> {variable: (role, info)}.
_ROLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register_model(model: Model) -> None:
    _MODELS.add(model)


def set_role(model: Model, var, role: str, **info) -> None:
    """Record that ``var`` of ``model`` plays ``role`` (with graph ``info``) for step methods."""
    register_model(model)
    _ROLES.setdefault(model, {})[var] = (role, info)


def get_role(var, model: Model | None = None) -> tuple[str | None, dict]:
    """The role of ``var`` recorded by :func:`set_role`, or ``(None, {})``."""
    model = find_model(var) if model is None else model
    if model is None:
        return None, {}
    return _ROLES.get(model, {}).get(var, (None, {}))


def roles(model: Model) -> dict:
    """All recorded roles of ``model``: ``{variable: (role, info)}``."""
    return dict(_ROLES.get(model, {}))


def find_model(var) -> Model | None:
    """The model that holds ``var``: the model on the context stack, else a registered one."""
    try:
        model = modelcontext(None)
        if var in model.basic_RVs:
            return model
    except TypeError:
        pass
    for model in list(_MODELS):
        if var in model.basic_RVs:
            return model
    return None
