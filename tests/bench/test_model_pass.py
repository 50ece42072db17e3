"""Issue 6: the model pass — the in-memory World, each op charged its measured round trips.

The latency proxy is checked with an injected sleep (what it was asked to wait,
never how long anything took); the model pass itself runs a held 4-branch
fan-out with small latencies. The costs are written here, in the shape the moto
pass measures them (``tests/bench/test_op_costs.py`` checks that measurement).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.fanout import main
from bench.instrument import CallRecorder, Latency
from bench.measure import RunSample, Variant
from bench.model import ModelBench
from bench.opcosts import LatencyCharge, OpCost, OpCosts
from bench.report import model_table, samples_from_json, summarise
from bench.world import BenchWorld, RunTimeline
from world_aws.contract.records import EventRequest, EventType, RunCancelledData, RunCreatedData
from world_aws.local.memory import create_memory_world
from world_aws.testing.conformance.support import creation, new_id

BRANCHES = 4
LATENCY = Latency(dynamodb=0.005, sqs=0.010, s3=0.010)
JUDGE_RESERVE_COMMIT = {
    "dynamodb.BatchGetItem": 1,
    "dynamodb.UpdateItem": 1,
    "dynamodb.TransactWriteItems": 1,
}


def _costs() -> OpCosts:
    """Costs as the moto pass measures them, one invocation each."""
    return OpCosts(
        {
            "events.create:run_created": OpCost(1, {"dynamodb.TransactWriteItems": 1}),
            "events.create:run_started": OpCost(1, {"dynamodb.PutItem": 1, "dynamodb.UpdateItem": 1}),
            "events.create:step_created": OpCost(1, dict(JUDGE_RESERVE_COMMIT)),
            "events.create:step_started": OpCost(1, dict(JUDGE_RESERVE_COMMIT)),
            "events.list": OpCost(1, {"dynamodb.Query": 1}),
            "queue.publish:keyed": OpCost(
                1, {"dynamodb.PutItem": 1, "sqs.SendMessage": 1, "dynamodb.UpdateItem": 1}
            ),
            "runs.get": OpCost(1, {"dynamodb.GetItem": 1}),
        }
    )


def test_the_latency_proxy_charges_an_op_its_measured_round_trips() -> None:
    # GIVEN a charge over measured costs, sleeping into a list
    slept: list[float] = []
    charge = LatencyCharge(_costs(), LATENCY, sleep=slept.append)
    # WHEN ops run through a BenchWorld over the memory World
    world = BenchWorld(
        create_memory_world(), RunTimeline(), CallRecorder(), legacy_producer=False, charge=charge
    )
    run_id = new_id("wrun")
    world.events.create(run_id, EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=creation())))
    world.runs.get(run_id)
    world.events.create(run_id, EventRequest(EventType.RUN_CANCELLED, data=RunCancelledData(reason="test")))
    world.hooks.list(run_id)
    # THEN each op slept its round trips: run_created 1 transaction, runs.get 1 GetItem, and
    # run_cancelled (never measured) the mean of every measured event: 9 calls over 4 invocations
    assert slept == pytest.approx([0.005, 0.005, 9 / 4 * 0.005])
    # AND hooks.list, whose method was never measured, is charged nothing and reported
    assert charge.unmeasured == ["hooks.list"]
    # AND the op ran on the memory World
    assert world.inner.runs.get(run_id).status.value == "cancelled"


def test_a_keyed_publish_costs_its_dynamodb_claim_and_record_and_its_send() -> None:
    # GIVEN the measured cost of a keyed publish (2 DynamoDB + 1 SQS round trips)
    charge = LatencyCharge(_costs(), LATENCY, sleep=lambda _: None)
    # THEN it is charged both services' latencies, in sequence
    assert charge.seconds("queue.publish:keyed") == pytest.approx(2 * 0.005 + 0.010)
    assert charge.seconds("events.create:step_started") == pytest.approx(3 * 0.005)


@pytest.fixture(scope="module")
def held() -> dict[str, RunSample]:
    bench = ModelBench(_costs(), Latency(dynamodb=0.001, sqs=0.002, s3=0.002), run_timeout=30)
    return {
        prologue: bench.run_once(BRANCHES, Variant(prologue, "resilient"), held=True)
        for prologue in ("run_context", "legacy")
    }


def test_the_model_pass_starts_every_branch_then_ends_cancelled(held: dict[str, RunSample]) -> None:
    # GIVEN a held 4-branch fan-out on the model, per prologue
    for sample in held.values():
        # THEN every branch started, the run ended by its cancellation, and TTLS was measured
        assert sample.backend == "model"
        assert sample.step_starts == BRANCHES
        assert sample.run_status == "cancelled"
        assert sample.ttls_seconds > 0
        # AND the model's event source received and deleted through the modeled SQS calls
        assert sample.calls.get("sqs.DeleteMessage", 0) >= BRANCHES
        assert sample.round_trips["dynamodb"] > 0


def test_legacy_on_the_model_reads_the_run_once_per_branch_before_the_claim(
    held: dict[str, RunSample],
) -> None:
    # GIVEN a held fan-out per prologue on the model
    legacy, current = held["legacy"], held["run_context"]
    # THEN each legacy branch ran one runs.get before its claim; run_context none
    assert legacy.pre_claim_ops == {"runs.get": BRANCHES}
    assert legacy.pre_claim_run_reads == BRANCHES
    assert current.pre_claim_ops == {}
    assert current.pre_claim_run_reads == 0
    # AND the model table says so per branch
    table = model_table(summarise(held.values()))
    assert "| 4 | legacy | resilient | 1 |" in table
    assert "| 1.00 |" in table and "| 0.00 |" in table


def test_model_only_keeps_the_costs_of_the_document_it_reads(tmp_path: Path) -> None:
    # GIVEN a fanout.json with op costs (and, here, no moto samples to carry over)
    source = tmp_path / "before.json"
    source.write_text(json.dumps({"config": {}, "op_costs": _costs().to_json(), "samples": []}))
    # WHEN the model pass alone runs from it at N=2, one round
    argv = ["--model-only", "--op-costs", str(source), "--ns", "2", "--full-ns", "", "--model-runs", "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    # THEN the new document has the same costs and one held model sample per variant
    document = json.loads((tmp_path / "fanout.json").read_text())
    assert OpCosts.from_json(document["op_costs"]) == _costs()
    samples = samples_from_json(document)
    assert len(samples) == 4
    assert {(s.backend, s.n, s.held, s.run_status) for s in samples} == {("model", 2, True, "cancelled")}
