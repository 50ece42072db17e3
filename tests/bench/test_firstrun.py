"""bench.firstrun: a fresh ``world-aws run`` process, measured (wall, CPU, the run's own duration)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import firstrun


def test_one_measured_run_reports_wall_cpu_and_the_runs_duration(tmp_path: Path) -> None:
    # WHEN the trivial 3-step run is measured once on the memory World (the fast one)
    out = tmp_path / "firstrun.json"
    assert firstrun.main(["--reps", "1", "--world", "memory", "--out", str(out)]) == 0
    # THEN the report holds the command, one repetition with all three figures, and their summary
    report = json.loads(out.read_text())
    assert report["command"][:3] == ["world-aws", "run", "tests.cli.three_steps:app"]
    [rep] = report["reps"]
    assert rep["wall_s"] > 0 and rep["cpu_s"] > 0 and rep["run_s"] is not None
    assert rep["run_s"] <= rep["wall_s"]  # the run's own duration is a part of the command's
    assert report["summary"]["wall_s"] == {"median": rep["wall_s"], "min": rep["wall_s"]}
