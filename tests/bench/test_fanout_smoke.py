"""Issue 6 (contract §5.1): the fan-out benchmark's core, once at N=4 with no injected latency.

Asserts what the benchmark counts, never how long anything took: with
``run_context`` on the step messages no step delivery reads the run before its
claim; a legacy producer's messages make each branch read it once; every step
completes. The benchmark itself is ``python -m bench.fanout``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.core import FanoutBench
from bench.instrument import Latency
from bench.measure import DISPATCH_MODES, Variant

BRANCHES = 4


@pytest.fixture(scope="module")
def bench() -> Iterator[FanoutBench]:
    with FanoutBench(Latency(dynamodb=0, sqs=0, s3=0), run_timeout=60) as built:
        yield built


@pytest.mark.parametrize("dispatch", DISPATCH_MODES)
def test_fan_out_with_run_context_reads_no_run_before_any_claim(bench: FanoutBench, dispatch: str) -> None:
    # GIVEN step messages that carry run_context (the normal producer)
    variant = Variant("run_context", dispatch)
    # WHEN a 4-branch fan-out runs to its end
    sample = bench.run_once(BRANCHES, variant)
    # THEN no step delivery read the run before its claim, and every step completed
    assert sample.pre_claim_run_reads == 0
    assert sample.step_starts == BRANCHES
    assert sample.steps_completed == BRANCHES
    assert sample.run_status == "completed"
    # AND the calls were counted (each claim and each completion commits a transaction)
    assert sample.calls.get("dynamodb.TransactWriteItems", 0) >= 2 * BRANCHES


@pytest.mark.parametrize("dispatch", DISPATCH_MODES)
def test_fan_out_from_a_legacy_producer_reads_the_run_once_per_branch(
    bench: FanoutBench, dispatch: str
) -> None:
    # GIVEN a producer that omits run_context from step messages
    variant = Variant("legacy", dispatch)
    # WHEN a 4-branch fan-out runs to its end
    sample = bench.run_once(BRANCHES, variant)
    # THEN each step delivery read the run once before its claim, and every step completed
    assert sample.pre_claim_run_reads == BRANCHES
    assert sample.steps_completed == BRANCHES
    assert sample.run_status == "completed"


def test_held_fan_out_starts_every_branch_then_ends_cancelled(bench: FanoutBench) -> None:
    # GIVEN the held mode the TTLS table uses (steps wait until every branch has started)
    variant = Variant("run_context", "resilient")
    # WHEN a 4-branch fan-out runs
    sample = bench.run_once(BRANCHES, variant, held=True)
    # THEN every branch started without a run read, and the run ended by its cancellation
    assert sample.step_starts == BRANCHES
    assert sample.pre_claim_run_reads == 0
    assert sample.run_status == "cancelled"
    assert sample.steps_completed == 0
    assert sample.calls_to_last_start.get("sqs.SendMessage", 0) >= BRANCHES
