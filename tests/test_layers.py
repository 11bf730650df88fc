"""The package's layers, checked on the imports of its source files (read with ``ast``).

* ``pymc_crp.core`` — NumPy, SciPy and numba only: no PyMC, PyTensor, ArviZ or xarray, and
  nothing of the package outside ``core``.
* ``pymc_crp.distributions`` — no step method, model builder or posterior analysis.
* ``pymc_crp.models`` — no step method (the builders record roles in ``pymc_crp.roles``).
* ``pymc_crp.posterior`` — no PyMC, PyTensor or step method: it reads draws only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pymc_crp"

# layer -> module prefixes that none of its files may import
FORBIDDEN = {
    "core": (
        "pymc",
        "pytensor",
        "arviz",
        "xarray",
        "pymc_crp.distributions",
        "pymc_crp.step_methods",
        "pymc_crp.models",
        "pymc_crp.posterior",
        "pymc_crp.roles",
        "pymc_crp.datasets",
        "pymc_crp.sbc",
        "pymc_crp.distributed",
        "pymc_crp.posets",
    ),
    "distributions": (
        "pymc_crp.step_methods",
        "pymc_crp.models",
        "pymc_crp.posterior",
    ),
    "models": ("pymc_crp.step_methods", "pymc_crp.posterior"),
    "posterior": ("pymc", "pytensor", "pymc_crp.step_methods", "pymc_crp.models"),
}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = PACKAGE) -> set[str]:
    """Every module that ``path`` imports, at any depth of the file (relative imports made
    absolute; ``from pymc_crp import x`` counts as ``pymc_crp.x``)."""
    package = _module_name(path, root).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _is_under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _files(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer):
    files = _files(layer)
    assert files, f"no modules in pymc_crp/{layer}"
    broken = [
        f"{path.relative_to(PACKAGE.parent)} imports {module}"
        for path in files
        for module in sorted(imported_modules(path))
        if any(_is_under(module, prefix) for prefix in FORBIDDEN[layer])
    ]
    assert not broken, "layer rule broken:\n" + "\n".join(broken)


def test_the_checker_sees_imports(tmp_path):
    """The checker finds plain, aliased, nested and relative imports."""
    pkg = tmp_path / "pymc_crp" / "core"
    pkg.mkdir(parents=True)
    src = pkg / "mod.py"
    src.write_text(
        "import numpy as np\n"
        "from pymc_crp import roles\n"
        "def f():\n"
        "    import pytensor.tensor as pt\n"
        "from .posets import x\n"
    )
    found = imported_modules(src, root=tmp_path / "pymc_crp")
    assert {"numpy", "pymc_crp.roles", "pytensor.tensor", "pymc_crp.core.posets"} <= found
