"""Issue 12: ``python -m bench.latency`` measures the overhead between two sequential step bodies.

Its own module: the command starts its own in-process moto, which must not nest in another test's.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench.latency import main


def test_command_models_the_gap_between_bodies_and_writes_its_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN it runs 4 steps with bodies of 0 and 10 ms, inline on and with the kill switch
    args = ["--steps", "4", "--body-ms", "0,10", "--runs", "1", "--max-inline", "3", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    # THEN it printed the op costs it measured on moto and a row per variant and body time
    assert "`events.append_after`" in out and "`events.flush`" in out
    for variant in ("inline | 0 |", "inline | 10 |", "kill switch | 0 |", "kill switch | 10 |"):
        assert f"| {variant}" in out
    # AND the JSON holds every gap: 3 between 4 bodies
    document = json.loads((tmp_path / "latency.json").read_text())
    samples = document["samples"]
    assert [(s["variant"], s["body_ms"]) for s in samples] == [
        ("inline", 0.0),
        ("inline", 10.0),
        ("kill switch", 0.0),
        ("kill switch", 10.0),
    ]
    assert all(len(s["overheads"]) == 3 and min(s["overheads"]) > 0 for s in samples)
    # AND the flush was measured as its own op: a put at most, beside the next body (a small
    # batch is kept for the next append to carry instead: one flush in two puts)
    flush = document["op_costs"]["ops"]["events.flush"]
    assert set(flush["calls"]) == {"dynamodb.PutItem"}
    assert 0 < flush["calls"]["dynamodb.PutItem"] < flush["invocations"]
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "latency.png").stat().st_size > 0
