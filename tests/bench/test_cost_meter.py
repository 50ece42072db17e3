"""Issue 12: ``python -m bench.cost`` meters a real run: invocations per batch, duration model, dollars.

W0 (one step) runs through the AWS World on moto with the template's consumers;
the pump delivers each queue in its template batches (``BatchSize: 1``); the duration
model charges round trips in sequence on the invocation's thread and overlapped
across a parallel batch. Latencies are modelled numbers, never slept.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from bench.core import MotoWorlds
from bench.cost_report import CostRow
from bench.cost_run import WORKLOADS, Meters, run_workload, template_functions
from bench.instrument import EVENT_SOURCE, CallRecorder, Latency
from bench.invocations import InvocationMeter, propagating_context
from bench.measure import wait_idle
from bench.meter import BillingMeter
from bench.prices import PRICES
from bench.pump import QueuePump
from world_aws.client.parallel import run_parallel
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, Delivery, QueueName

# Modelled round trips, large enough that CPU (well under a second here) cannot blur them.
ROUND_TRIP = {"dynamodb": 1.0, "sqs": 2.0, "s3": 2.0}


@dataclass
class Rig:
    moto: MotoWorlds
    meters: Meters


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    recorder = CallRecorder(Latency(0.0, 0.0, 0.0))
    with MotoWorlds(recorder) as moto, propagating_context():
        invocations = InvocationMeter(lambda service: ROUND_TRIP[service])
        billing = BillingMeter(recorder, invocations)
        billing.attach(moto.clients)
        yield Rig(moto, Meters(moto, billing, invocations, template_functions()))


def test_one_step_run_is_one_invocation_per_delivered_batch_and_priced_from_its_units(rig: Rig) -> None:
    # (inline execution on, the default: the step runs in the workflow function)
    # GIVEN the template's step function (BatchSize 1) and workflow function
    functions = template_functions()
    step_fn, workflow_fn = functions[QueueName.STEP], functions[QueueName.WORKFLOW]
    assert (step_fn.batch_size, workflow_fn.batch_size) == (1, 1)
    # WHEN W0 (one step) runs to completion
    sample = run_workload(rig.meters, WORKLOADS["W0"], timeout=120)
    # THEN the step ran inline in the workflow function's one invocation: no step message
    assert sample.run_status == "completed" and sample.steps_completed == 1
    assert step_fn.name not in sample.functions
    workflow_usage = sample.functions[workflow_fn.name]
    assert workflow_usage.invocations == workflow_usage.records == 1
    # AND the event source received and deleted each delivered record: one request each, plus at
    # most the invocation's first visibility beat (aws/queue/heartbeat.py: made at once on its own
    # thread, so a short invocation may end before it is sent)
    records = workflow_usage.records
    received_and_deleted = 2 * records
    beats = sample.bill[EVENT_SOURCE].sqs_requests - received_and_deleted
    assert 0 <= beats <= workflow_usage.invocations
    total = sample.total
    # AND every event was written (at least 1 WRU each); the inline step has no step_started
    for op, usage in sample.bill.items():
        if op.startswith("events.create:"):
            assert usage.wru >= 1, op
    assert "events.create:step_started" not in sample.bill
    # AND the writes by kind of item add up to the table's WRU, the event items among them
    assert sum(w.wru for w in sample.items.values()) == total.wru
    assert sample.items["evt"].writes >= sum(1 for op in sample.bill if op.startswith("events.create:"))
    # AND the dollars are the units times the price table
    row = CostRow.of(sample, ddb_latency_ms=5)
    expected = (
        PRICES["dynamodb_wru"].of(total.wru + total.gsi_wru)
        + PRICES["dynamodb_rru"].of(total.rru)
        + PRICES["sqs_request"].of(total.sqs_requests)
        + PRICES["s3_put"].of(total.s3_put)
        + PRICES["s3_get"].of(total.s3_get)
        + PRICES["lambda_request"].of(records)
        + PRICES["lambda_gb_second_arm64"].of(workflow_usage.billed_ms / 1000 * workflow_fn.memory_mb / 1024)
    )
    assert row.total == pytest.approx(expected * 1_000_000)
    assert sum(entry["usd_per_million_steps"] for entry in row.breakdown.values()) == pytest.approx(row.total)


def test_workflow_queue_messages_are_delivered_ten_to_an_invocation(rig: Rig) -> None:
    # GIVEN three messages waiting on the workflow queue
    with rig.moto.fresh_world() as aws:
        sent = [encode_payload(InvokePayload(run_id=f"wrun_{n}")) for n in range(3)]
        for body in sent:
            aws.queue.publish(QueueName.WORKFLOW, body)
        seen: list[tuple[QueueName, int]] = []
        bodies: list[bytes] = []

        def handler(delivery: Delivery) -> Ack:
            bodies.append(delivery.body)
            return Ack()

        def on_invoke(queue: QueueName, records: int) -> Any:
            seen.append((queue, records))
            return rig.meters.invocations.invocation("WorkflowFunction", records)

        recorder = rig.moto.recorder
        before = recorder.snapshot()
        # WHEN the event source runs with the template's batch size
        with recorder.muted():
            pump = QueuePump(
                aws.clients.sqs, aws.queue_urls(), handler, aws.clock,
                workers={QueueName.WORKFLOW: 1, QueueName.STEP: 1},
                pollers={QueueName.WORKFLOW: 1, QueueName.STEP: 1},
                batch_sizes={QueueName.WORKFLOW: 10},
                on_invoke=on_invoke,
            )  # fmt: skip
        try:
            wait_idle(recorder, pump, 30)
        finally:
            with recorder.muted():
                pump.stop()
        calls = (recorder.snapshot() - before).calls
    # THEN one invocation got all three, and one batch delete removed them
    assert seen == [(QueueName.WORKFLOW, 3)]
    assert sorted(bodies) == sorted(sent)
    assert calls["sqs.DeleteMessageBatch"] == 1 and calls["sqs.DeleteMessage"] == 0


def test_round_trips_add_up_on_the_invocation_thread_and_overlap_across_a_parallel_batch(rig: Rig) -> None:
    invocations = rig.meters.invocations
    with rig.moto.fresh_world() as aws:
        ddb, sqs, url = aws.clients.dynamodb, aws.clients.sqs, aws.config.step_queue_url
        key = {"pk": {"S": "run#none"}, "sk": {"S": "run"}}

        def get() -> None:
            ddb.get_item(TableName=aws.config.table_name, Key=key)

        def work(width: int, *, alongside: bool = False) -> None:
            # two DynamoDB calls on the invocation's thread, then SQS sends on a pool
            get()
            get()
            with ThreadPoolExecutor(width) as pool:
                sends = 1 if alongside else 2
                futures = [pool.submit(sqs.send_message, QueueUrl=url, MessageBody="x") for _ in range(sends)]
                if alongside:
                    get()  # as run_parallel does: the caller runs one call itself before it waits
                for f in futures:
                    f.result()

        # WHEN one invocation runs two sends on a pool of two, one on a pool of one,
        # and one sends once while its own thread makes a third DynamoDB call
        with invocations.invocation("wide", 1):
            work(2)
        with invocations.invocation("narrow", 1):
            work(1)
        with invocations.invocation("alongside", 1):
            work(2, alongside=True)
        with invocations.invocation("runtime", 1), ThreadPoolExecutor(2) as pool:
            # the runtime's own run_parallel: each task runs its call in a copied context
            get()
            get()
            run_parallel(pool, [get, partial(sqs.send_message, QueueUrl=url, MessageBody="x")])
        after = invocations.snapshot()
    ms = {name: after[name].billed_ms for name in ("wide", "narrow", "alongside", "runtime")}
    ddb_ms, sqs_ms = ROUND_TRIP["dynamodb"] * 1000, ROUND_TRIP["sqs"] * 1000
    # THEN each is billed its two DynamoDB calls in turn (plus well under a second of CPU), then:
    # the wide one one send, the narrow one both sends in turn, the third the longer of its branches
    assert 2 * ddb_ms + sqs_ms <= ms["wide"] < 2 * ddb_ms + 2 * sqs_ms
    assert 2 * ddb_ms + 2 * sqs_ms <= ms["narrow"] < 2 * ddb_ms + 3 * sqs_ms
    assert 2 * ddb_ms + max(ddb_ms, sqs_ms) <= ms["alongside"] < 2 * ddb_ms + ddb_ms + sqs_ms
    # AND a task of the runtime's run_parallel overlaps too (its call is the task's, not the thread's)
    assert 2 * ddb_ms + max(ddb_ms, sqs_ms) <= ms["runtime"] < 2 * ddb_ms + ddb_ms + sqs_ms
