"""bench.report.paired_prologues: legacy against run_context, round by round."""

from __future__ import annotations

import pytest

from bench.measure import RunSample, Variant
from bench.report import paired_prologues, paired_table


def _sample(n: int, prologue: str, dispatch: str, ttls: float) -> RunSample:
    return RunSample(
        n=n,
        variant=Variant(prologue, dispatch),
        held=True,
        ttls_seconds=ttls,
        calls={},
        calls_to_last_start={},
        pre_claim_run_reads=0,
        steps_completed=0,
        step_starts=n,
        run_status="cancelled",
        wall_seconds=ttls,
    )


def test_rounds_pair_the_kth_runs_and_pool_both_dispatch_modes() -> None:
    # GIVEN three rounds at N=64: legacy slower in rounds 1 and 3 (resilient), in round 2 only (sequential)
    samples = []
    for fast, slow in ((1.0, 1.2), (2.0, 1.9), (1.0, 1.1)):
        samples += [_sample(64, "run_context", "resilient", fast), _sample(64, "legacy", "resilient", slow)]
    for fast, slow in ((1.0, 0.9), (1.0, 1.5), (1.0, 0.8)):
        samples += [_sample(64, "legacy", "sequential", slow), _sample(64, "run_context", "sequential", fast)]
    pairs = {p.dispatch: p for p in paired_prologues(samples)}
    # THEN each mode counts its own rounds, and "both" pools them
    assert (pairs["resilient"].rounds, pairs["resilient"].legacy_slower) == (3, 2)
    assert pairs["resilient"].median_delta_seconds == pytest.approx(0.1)
    assert pairs["resilient"].median_delta_percent == pytest.approx(10.0)
    assert (pairs["sequential"].rounds, pairs["sequential"].legacy_slower) == (3, 1)
    assert (pairs["both"].rounds, pairs["both"].legacy_slower) == (6, 3)
    assert "| 64 | both | 6 | 3/6 |" in paired_table(list(pairs.values()))
