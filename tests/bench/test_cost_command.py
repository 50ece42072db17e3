"""Issue 12: ``python -m bench.cost`` prints its tables and writes ``cost.json`` and ``cost.png``.

Its own module: the command starts its own in-process moto, which must not nest in another test's.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench.cost import main


def test_command_writes_the_table_the_json_and_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the meter runs W0 alone
    assert main(["--workloads", "W0", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # THEN it printed the summary and the breakdown, and wrote both files
    assert "W0: 1 step" in out and "`events.append_after`" in out and "`events.create:run_created`" in out
    assert (tmp_path / "cost.json").stat().st_size > 0
    if importlib.util.find_spec("matplotlib") is not None:  # the bench extra; CI installs only dev
        assert (tmp_path / "cost.png").stat().st_size > 0
    else:
        assert "no plot: matplotlib is missing" in out
    # AND the JSON holds the row it printed, with the price table it used
    document = json.loads((tmp_path / "cost.json").read_text())
    (row,) = document["rows"]
    assert row["workload"] == "W0" and row["usd_per_million_steps"] > 0
    assert document["prices"]["dynamodb_wru"]["source"].startswith("https://aws.amazon.com/")
