"""Write the sample Lambda events of this folder: one per queue, with valid bodies, and one HTTP request.

Each SQS event has the exact shape Lambda's SQS event source sends, and its body is
made with ``world_aws.contract.transport`` (``base64(cbor(payload))``), so the
samples stay valid when the payload schema changes: rerun
``python -m infra.events.make_events``. Every value is fixed, so the output is
reproducible (a test checks the committed files against it).

The samples name the template's default app, ``world_aws.demo:app`` (workflow
``checkout``, step ``world_aws.demo.charge``), so that they also run against a
deployed default stack (``sam local invoke StepFunction -e infra/events/sqs_step_event.json``).
``http_start_run_event.json`` is an API Gateway HTTP API (payload format 2.0)
request, ``POST /runs``, as API Gateway sends it after IAM authorization.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cbor2

from world_aws.contract.payload import InlineStepInput, InvokePayload, RunContext, RunInput
from world_aws.contract.transport import encode_body
from world_aws.contract.world import SPEC_VERSION_CURRENT

EVENTS_DIR = Path(__file__).resolve().parent
REGION = "us-east-1"
ACCOUNT = "123456789012"
# Queue names as EmbeddedAws creates them with its default prefix ("world-aws").
QUEUE_NAMES = {"workflow": "world-aws-workflow-queue", "step": "world-aws-step-queue"}
RUN_ID = "wrun_01JD0000000000000000000000"
STEP_NAME = "world_aws.demo.charge"
STARTED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def _record(queue: str, message_id: str, body: str) -> dict[str, Any]:
    sent_ms = str(int(STARTED_AT.timestamp() * 1000))
    return {
        "messageId": message_id,
        "receiptHandle": f"AQEB-sample-receipt-handle-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": sent_ms,
            "SenderId": "AIDAEXAMPLESENDER",
            "ApproximateFirstReceiveTimestamp": sent_ms,
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode("ascii")).hexdigest(),  # SQS's checksum, not security
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{QUEUE_NAMES[queue]}",
        "awsRegion": REGION,
    }


def _http_request(method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    epoch_ms = int(STARTED_AT.timestamp() * 1000)
    return {
        "version": "2.0",
        "routeKey": "ANY /{proxy+}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "abc123.execute-api.us-east-1.amazonaws.com"},
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "abc123",
            "authorizer": {
                "iam": {
                    "accessKey": "AKIAEXAMPLEEXAMPLE",
                    "accountId": ACCOUNT,
                    "callerId": "AIDAEXAMPLECALLER",
                    "principalOrgId": None,
                    "userArn": f"arn:aws:iam::{ACCOUNT}:user/operator",
                    "userId": "AIDAEXAMPLECALLER",
                }
            },
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.10",
                "userAgent": "world-aws-sample",
            },
            "requestId": "sample-request-id",
            "routeKey": "ANY /{proxy+}",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": epoch_ms,
        },
        "pathParameters": {"proxy": path.lstrip("/")},
        "body": json.dumps(body, sort_keys=True),
        "isBase64Encoded": False,
    }


def build_events() -> dict[str, dict[str, Any]]:
    """The sample events by file name."""
    workflow = InvokePayload(
        run_id=RUN_ID,
        run_input=RunInput(
            workflow_name="checkout",
            deployment_id="dpl_default",
            spec_version=SPEC_VERSION_CURRENT,
            input=cbor2.dumps({"args": ["order-1"], "kwargs": {}}),
        ),
        requested_at=STARTED_AT,
    )
    step = InvokePayload(
        run_id=RUN_ID,
        step_id="step_01JD0000000000000000000001",
        step_name=STEP_NAME,
        step_input=InlineStepInput(input=cbor2.dumps({"args": ["order-1", 500], "kwargs": {}})),
        run_context=RunContext(
            deployment_id="dpl_default",
            spec_version=SPEC_VERSION_CURRENT,
            started_at=int(STARTED_AT.timestamp() * 1000),
            root_run_id=RUN_ID,
        ),
        requested_at=STARTED_AT,
    )
    return {
        "sqs_workflow_event.json": {
            "Records": [_record("workflow", "00000000-0000-4000-8000-000000000001", encode_body(workflow))]
        },
        "sqs_step_event.json": {
            "Records": [_record("step", "00000000-0000-4000-8000-000000000002", encode_body(step))]
        },
        "http_start_run_event.json": _http_request(
            "POST",
            "/runs",
            {"workflow": "checkout", "args": ["order-2"], "idempotency_key": "sample-order-2"},
        ),
    }


def render(event: dict[str, Any]) -> str:
    """The file text of an event."""
    return json.dumps(event, indent=2, sort_keys=True) + "\n"


def main() -> None:
    """Write every sample event next to this script."""
    for name, event in build_events().items():
        (EVENTS_DIR / name).write_text(render(event), encoding="utf-8")


if __name__ == "__main__":
    main()
