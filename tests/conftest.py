"""Shared test configuration."""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))  # tests/oracles.py

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
