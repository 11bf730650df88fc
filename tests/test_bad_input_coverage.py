"""The bad-input tables of ``tests/*/test_*_inputs.py`` together reach every public callable."""

import importlib.util
import pickle
from pathlib import Path

import numpy as np
from bad_inputs import DRAWS, IDATA, LISTS, Y, lists_logp, targets

import pymc_crp as pmc

TABLES = sorted(Path(__file__).parent.glob("*/test_*_inputs.py"))


def _cases(path: Path) -> list:
    spec = importlib.util.spec_from_file_location(f"_table_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def test_bad_input_tables_cover_every_public_callable():
    """Every public callable of ``pymc_crp``, ``pymc_crp.models`` and the data-set readers
    that take arguments (``read_preflib``, ``load_albury_ballots``)."""
    assert len(TABLES) == 5, TABLES
    covered = set().union(*(targets(case) for path in TABLES for case in _cases(path)))
    expected = {
        name
        for name in pmc.__all__
        if callable(getattr(pmc, name)) and name != "ConsensusOrder"  # a plain result record
    }
    expected |= set(pmc.models.__all__) | {"read_preflib", "load_albury_ballots"}
    missing = expected - covered
    assert not missing, f"no bad-input case for {sorted(missing)}"


def test_fixtures_are_valid_inputs():
    """The module-level inputs are valid (so each case fails for its own reason)."""
    assert pmc.posterior_similarity(DRAWS).shape == (6, 6)
    assert pickle.loads(pickle.dumps(IDATA)).posterior["z"].shape == (2, 5, 6)
    assert pmc.models.measurement_error_mixture(Y) is not None
    assert pmc.models.clustered_partial_orders(LISTS, 4, max_clusters=3) is not None
    assert np.isfinite(lists_logp(np.zeros((1, 4, 2))).sum())
