"""Fuzz the SQS batch path (issue 14): odd records fail alone, with a logged reason and a count.

For any batch of records (ids missing or not strings, bodies of any type, hostile CBOR,
attributes of any shape, ``wf_due_at`` anywhere), ``process_sqs_event``:

* never raises;
* reports only ids of records in the batch, each at most once;
* hands the handler only bodies that decode as invoke payloads;
* counts a rejection for every failed record, except those that met a misconfiguration
  (a queue this World does not know: redelivered, not rejected).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult
from world_aws.local.embedded import EmbeddedAws

from .strategies import attributes, bodies

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def aws() -> Iterator[tuple[EmbeddedAws, ProvisionedResources]]:
    with EmbeddedAws(name_prefix="t-fuzz") as embedded:
        yield embedded, embedded.provision(f"t-{uuid.uuid4().hex[:10]}")


records = st.lists(
    st.fixed_dictionaries(
        {
            "messageId": st.one_of(st.uuids().map(str), st.just(""), st.none(), st.integers()),
            "body": bodies,
            "messageAttributes": attributes,
            "attributes": st.one_of(
                st.fixed_dictionaries({"ApproximateReceiveCount": st.sampled_from(["1", "x", None])}),
                st.text(max_size=3),
            ),
            "queue": st.sampled_from(["workflow", "step", "elsewhere"]),
        }
    ),
    max_size=6,
)


@FUZZ
@given(batch=records)
def test_any_batch_is_answered_and_every_odd_record_fails_alone(
    aws: tuple[EmbeddedAws, ProvisionedResources], batch: list[dict[str, Any]]
) -> None:
    embedded, resources = aws
    arns = {q.value: s.arn for q, s in resources.queues.items()}
    event_records = []
    for fields in batch:
        queue = fields.pop("queue")
        arn = arns.get(queue, "arn:aws:sqs:us-east-1:123456789012:nowhere")
        event_records.append({**fields, "eventSourceARN": arn, "receiptHandle": "rh"})
    delivered: list[Delivery] = []
    rejected: list[str] = []
    misconfigured: list[object] = []

    def handler(delivery: Delivery) -> HandlerResult:
        decode_payload(delivery.body)  # only valid payloads get this far
        delivered.append(delivery)
        return Ack()

    # WHEN the batch is processed (it must not raise)
    response = process_sqs_event(
        {"Records": event_records},
        handler,
        sqs=embedded.clients.sqs,
        queue_urls=resources.queue_urls(),
        on_malformed=rejected.append,
        on_misconfigured=misconfigured.append,
    )
    # THEN only named records of this batch are reported, once each
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    named = [r["messageId"] for r in event_records if isinstance(r["messageId"], str) and r["messageId"]]
    assert len(failed) == len(set(failed)) and set(failed) <= set(named)
    # AND every record is delivered, re-enqueued (a chained delay, acked) or rejected with a reason
    assert all(rejected)
    assert len(delivered) + len(rejected) <= len(event_records)
    # (the handler acks, and moto accepts every re-enqueue: each failure is a rejection or a
    # misconfiguration)
    assert len(rejected) + len(misconfigured) == len(event_records) - len(named) + len(failed)
