"""The line every benchmark prints first: the machine and the package versions that made its
numbers (times differ between machines and releases; the load average says whether the machine
was busy when the run started)."""

from __future__ import annotations

import os
import platform
from importlib import metadata

__all__ = ["describe_machine"]

# Packages whose versions the line names.
VERSIONS_PRINTED = ("pymc_crp", "pymc", "pytensor", "numpy", "numba", "scipy")


def describe_machine() -> str:
    """``"<python> on <arch>, <n> CPUs, load average <l>; pymc_crp <v>, pymc <v>, …"``."""
    return (
        f"{platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load "
        f"average {os.getloadavg()[0]:.2f}; "
        + ", ".join(f"{name} {metadata.version(name)}" for name in VERSIONS_PRINTED)
    )
