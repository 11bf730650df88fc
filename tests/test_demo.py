"""``python -m pymc_crp.demo`` end to end on a short run."""

import pytest

from pymc_crp import demo


def test_demo_runs_and_reports_convergence_and_uncertainty(tmp_path, capsys):
    idata = demo.main(
        ["--draws", "40", "--tune", "40", "--chains", "2", "--cores", "1", "--no-progressbar",
         "--output", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "Co-clustering R-hat" in out
    assert "R-hat" in out and ("All R-hat <= 1.01" in out or "WARNING: largest R-hat" in out)
    assert "share a cluster" in out  # the clustering comes with co-clustering probabilities
    for name in ("consensus_orders.png", "similarity.png", "n_clusters.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert idata.posterior.sizes["chain"] == 2


def test_demo_runs_one_process_per_chain_up_to_the_cpus(monkeypatch):
    """PyMC's default counts half the CPUs (one process on 2 CPUs); the demo uses them all."""
    monkeypatch.setattr(demo.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert demo.default_cores(4) == 2
    monkeypatch.setattr(demo.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert demo.default_cores(4) == 4
    assert demo.default_cores(1) == 1


def test_demo_refuses_a_non_positive_number_of_processes(capsys):
    with pytest.raises(SystemExit):
        demo.parse_args(["--cores", "0"])
    assert "--cores must be a positive number of processes, got 0" in capsys.readouterr().err
