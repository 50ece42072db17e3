"""Issue 6: the moto pass attributes every AWS call to the World operation that made it.

A held 2-branch fan-out per prologue on moto (no injected latency, sequential dispatch), then the
``OpCosts`` built from those runs: what each op costs in round trips, what the
event source did outside any op, and which ops a step delivery ran before its
claim. The benchmark itself is ``python -m bench.fanout``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.core import FanoutBench
from bench.instrument import EVENT_SOURCE, Latency
from bench.measure import RunSample, Variant
from bench.opcosts import OpCosts

BRANCHES = 2


@pytest.fixture(scope="module")
def samples() -> Iterator[dict[str, RunSample]]:
    with FanoutBench(Latency(dynamodb=0, sqs=0, s3=0), run_timeout=60) as bench:
        yield {
            # Sequential dispatch: each step exists before its message, so no claim ever beats its
            # create (in resilient mode a loaded machine sometimes makes one claim twice).
            prologue: bench.run_once(BRANCHES, Variant(prologue, "sequential"), held=True)
            for prologue in ("run_context", "legacy")
        }


def test_a_claim_costs_its_judge_reserve_and_commit_and_a_run_read_one_get(
    samples: dict[str, RunSample],
) -> None:
    # GIVEN the op costs of both prologues' runs
    costs = OpCosts.from_samples(samples.values())
    # THEN a claim (step_started) is at least two sequential DynamoDB round trips
    started = costs.ops["events.create:step_started"]
    assert started.invocations == 2 * BRANCHES
    assert started.round_trips()["dynamodb"] >= 2
    # AND a run read is one GetItem
    assert costs.ops["runs.get"].round_trips() == {"dynamodb": 1.0, "sqs": 0.0, "s3": 0.0}
    assert costs.ops["runs.get"].calls == {"dynamodb.GetItem": costs.ops["runs.get"].invocations}
    # AND a keyed publish is one SQS send between its DynamoDB claim and record
    assert costs.ops["queue.publish:keyed"].round_trips()["sqs"] == 1.0
    assert costs.ops["queue.publish:keyed"].round_trips()["dynamodb"] >= 1


def test_event_source_calls_are_kept_apart_from_every_op(samples: dict[str, RunSample]) -> None:
    # GIVEN the op costs of both runs
    costs = OpCosts.from_samples(samples.values())
    # THEN the receives and deletes are the event source's, and no op made one
    assert costs.event_source.get("sqs.ReceiveMessage", 0) >= 2
    assert costs.event_source.get("sqs.DeleteMessage", 0) >= 2
    for key, cost in costs.ops.items():
        assert not {"sqs.ReceiveMessage", "sqs.DeleteMessage"} & set(cost.calls), key
    # AND every call of a run is attributed once: to an op or to the event source
    for sample in samples.values():
        attributed = sum(sum(calls.values()) for calls in sample.op_calls.values())
        counted = sum(n for op, n in sample.calls.items() if op != "dynamodb.run_item_read")
        assert attributed == counted
        assert EVENT_SOURCE in sample.op_calls


def test_legacy_deliveries_read_the_run_once_each_before_the_claim(samples: dict[str, RunSample]) -> None:
    # GIVEN a held fan-out per prologue
    legacy, current = samples["legacy"], samples["run_context"]
    # THEN each legacy delivery ran one runs.get before its claim, and that was a run-item GetItem
    assert legacy.pre_claim_ops == {"runs.get": BRANCHES}
    assert legacy.pre_claim_run_reads == BRANCHES
    # AND with run_context no delivery ran any op before its claim
    assert current.pre_claim_ops == {}
    assert current.pre_claim_run_reads == 0
    assert current.run_status == legacy.run_status == "cancelled"


def test_op_costs_survive_their_json_form(samples: dict[str, RunSample]) -> None:
    # GIVEN measured op costs
    costs = OpCosts.from_samples(samples.values())
    # WHEN written to JSON and read back
    again = OpCosts.from_json(costs.to_json())
    # THEN nothing is lost, and the markdown table names every op
    assert again == costs
    table = costs.markdown()
    assert all(f"`{key}`" in table for key in costs.ops)
