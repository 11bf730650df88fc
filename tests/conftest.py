"""Shared test configuration."""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))  # tests/oracles.py

# One PyTensor compile directory per xdist worker. PyTensor compiles each C module under a lock
# on its compile directory, so workers sharing one wait for each other's compilations: a run
# from an empty cache (as in CI) compiles about 540 modules. Set before PyTensor is imported.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and "compiledir_format" not in os.environ.get("PYTENSOR_FLAGS", ""):
    _FORMAT = "compiledir_%(short_platform)s-%(processor)s-%(python_version)s-%(python_bitwidth)s"
    os.environ["PYTENSOR_FLAGS"] = ",".join(
        filter(None, [os.environ.get("PYTENSOR_FLAGS"), f"compiledir_format={_FORMAT}-{_WORKER}"])
    )

warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")

# The files that take longest (about 1–3 minutes of one worker each, measured with
# ``--durations=0``). They go first, so that their long tests start early and the workers'
# stealing (``--dist worksteal``) balances the short tests at the end.
LONGEST_FILES = (
    "test_po_labels.py",
    "test_sbc_partial_orders.py",
    "test_noncentred.py",
    "test_noise_labels.py",
    "test_replica_exchange.py",
    "test_reproducibility.py",
)


def pytest_collection_modifyitems(config, items):
    """Longest files first, the rest in their collected order (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
