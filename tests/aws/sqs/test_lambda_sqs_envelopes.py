"""process_sqs_event on odd envelopes (issue 14): every one is a logged, counted, single-record failure."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import encode_body
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName
from world_aws.local.embedded import EmbeddedAws

ARN = "arn:aws:sqs:us-east-1:123456789012:wf-workflows"
URLS = {
    QueueName.WORKFLOW: "https://sqs.us-east-1.amazonaws.com/123456789012/wf-workflows",
    QueueName.STEP: "https://sqs.us-east-1.amazonaws.com/123456789012/wf-steps",
}
GOOD_BODY = encode_body(InvokePayload(run_id="wrun_good"))


def record(message_id: str, **fields: Any) -> dict[str, Any]:
    base = {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": GOOD_BODY,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSourceARN": ARN,
    }
    return {**base, **fields}


class Run:
    """One batch through process_sqs_event: the handler's deliveries and the rejections counted."""

    def __init__(self, embedded: EmbeddedAws, records: list[Any]) -> None:
        self.deliveries: list[Delivery] = []
        self.rejected: list[str] = []
        self.response = process_sqs_event(
            {"Records": records},
            self._handle,
            sqs=embedded.clients.sqs,
            queue_urls=URLS,
            on_malformed=self.rejected.append,
        )

    def _handle(self, delivery: Delivery) -> HandlerResult:
        self.deliveries.append(delivery)
        return Ack()

    @property
    def failed(self) -> list[str]:
        return [f["itemIdentifier"] for f in self.response["batchItemFailures"]]


def logged_reasons(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [str(getattr(r, "reason", "")) for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"body": "\ud800" + GOOD_BODY}, "body is not valid Unicode"),
        ({"body": b"bytes"}, "body must be text"),
        ({"messageAttributes": ["wf_due_at"]}, "messageAttributes must be a map"),
        ({"messageAttributes": {"wf_due_at": "123"}}, "message attribute 'wf_due_at' must be a map"),
        ({"messageAttributes": {"wf_due_at": {"binaryValue": "AA=="}}}, "wf_due_at must have a non-empty"),
        ({"messageAttributes": {"wf_origin_id": {"stringValue": 7}}}, "wf_origin_id must have a non-empty"),
        ({"attributes": ["not", "a", "map"], "body": "%%"}, "not base64"),
        ({"messageAttributes": {"wf_due_at": {"stringValue": str(2**100)}}}, "beyond the 31622400 s"),
    ],
)
def test_an_odd_envelope_fails_only_its_record_with_a_logged_reason_and_a_count(
    embedded: EmbeddedAws, caplog: pytest.LogCaptureFixture, fields: dict[str, Any], reason: str
) -> None:
    # GIVEN a batch of a good record and an odd one
    run = Run(embedded, [record("good"), record("odd", **fields)])
    # THEN the odd one alone failed, its reason was logged and counted, and the good one ran
    assert run.failed == ["odd"]
    assert len(run.rejected) == 1 and reason in run.rejected[0]
    assert any(reason in logged for logged in logged_reasons(caplog))
    assert [d.message_id for d in run.deliveries] == ["good"]


@pytest.mark.parametrize("odd", [record("")], ids=["empty id"])
def test_a_record_without_a_message_id_is_one_rejected_record_not_a_failed_batch(
    embedded: EmbeddedAws, caplog: pytest.LogCaptureFixture, odd: dict[str, Any]
) -> None:
    no_id = record("x")
    del no_id["messageId"]
    # GIVEN a batch with records that have no usable messageId between two good ones
    run = Run(embedded, [record("good-1"), no_id, odd, "not a map", record("good-2")])
    # THEN the batch did not raise, the good records ran and nothing unnameable was listed
    assert [d.message_id for d in run.deliveries] == ["good-1", "good-2"]
    assert run.failed == []
    # AND each unnameable record was logged and counted once
    assert run.rejected == ["record has no messageId (a non-empty string)"] * 3
    assert logged_reasons(caplog).count("record has no messageId (a non-empty string)") == 3


@pytest.mark.parametrize("records", [[], [{"body": "x"}]], ids=["empty", "only unnamed"])
def test_a_batch_with_nothing_to_process_answers_no_failures(
    embedded: EmbeddedAws, records: list[Any]
) -> None:
    # (found by tests/fuzz: Powertools raised UnexpectedBatchTypeError for an empty Records list)
    assert Run(embedded, records).response == {"batchItemFailures": []}


def test_an_event_without_a_records_list_is_logged_and_answers_no_failures(
    embedded: EmbeddedAws, caplog: pytest.LogCaptureFixture
) -> None:
    rejected: list[str] = []
    event = {"Records": "nope"}
    response = process_sqs_event(
        event, lambda _d: Ack(), sqs=embedded.clients.sqs, queue_urls=URLS, on_malformed=rejected.append
    )
    assert response == {"batchItemFailures": []}
    assert rejected == ["event Records must be a list, got str"]
    assert logged_reasons(caplog) == rejected
