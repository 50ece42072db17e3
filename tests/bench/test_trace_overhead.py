"""The tracing overhead benchmark runs its chain to the end and counts its deliveries (no timing asserted)."""

from __future__ import annotations

import json

import pytest

from bench import trace_overhead


def test_trace_overhead_runs_a_chain_and_reports_per_delivery_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # WHEN the benchmark runs a 3-step chain once, each step by its own message
    assert trace_overhead.main(["--steps", "3", "--repeat", "1", "--dispatched"]) == 0
    # THEN it reports the chain's deliveries (the first workflow message and one per step)
    result = json.loads(capsys.readouterr().out)
    assert (result["steps"], result["deliveries"]) == (3, 4)
    assert result["cpu_us_per_step"] > 0
