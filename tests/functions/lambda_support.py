"""Helpers of the Lambda function tests: a Lambda context, EMF metrics read back, messages as events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue.event_source import lambda_sqs_event
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import decode_body
from world_aws.contract.world import QueueName
from world_aws.local.embedded import EmbeddedAws


class Context:
    """The attributes of a Lambda context that Powertools reads."""

    function_name = "world-aws-test"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:world-aws-test"
    aws_request_id = "00000000-0000-4000-8000-00000000abcd"
    remaining_ms = 150_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


CONTEXT: Any = Context()


def metrics(printed: str) -> dict[str, float]:
    """The sum of every EMF metric in ``printed`` (the handlers' stdout), by service only."""
    return metrics_by_workflow(printed).get(None, {})


def metrics_by_workflow(printed: str) -> dict[str | None, dict[str, float]]:
    """The sums of the EMF metrics in ``printed`` by their ``workflow`` dimension (None: the totals)."""
    sums: dict[str | None, dict[str, float]] = {}
    for line in printed.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            assert directive["Namespace"] == "WorldAws"
            dimensions = {name for names in directive["Dimensions"] for name in names}
            assert dimensions in ({"service"}, {"service", "workflow"})
            totals = sums.setdefault(document.get("workflow") if "workflow" in dimensions else None, {})
            for metric in directive["Metrics"]:
                totals[metric["Name"]] = totals.get(metric["Name"], 0) + sum(document[metric["Name"]])
    return sums


def receive(embedded: EmbeddedAws, resources: ProvisionedResources, queue: QueueName) -> dict[str, Any]:
    """The Lambda SQS event of every visible message of ``queue`` (held for 60 s)."""
    settings = resources.queues[queue]
    messages = embedded.clients.sqs.receive_message(
        QueueUrl=settings.url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=60,
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
    ).get("Messages", [])
    return lambda_sqs_event(messages, settings.arn)


def step_id_of(event: dict[str, Any]) -> str:
    """The step id the first record of a step event carries."""
    payload = decode_body(event["Records"][0]["body"])
    assert isinstance(payload, InvokePayload) and payload.step_id is not None
    return payload.step_id


@contextmanager
def access_denied(client: Any, operation: str) -> Iterator[None]:
    """Every call of ``operation`` (``"dynamodb"``, ``"sqs.SendMessage"``) refused as AWS refuses a role.

    The refusal is the one a role without the permission gets (AccessDenied).
    """

    def deny(**_: Any) -> None:
        response: Any = {"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}
        raise ClientError(response, "call")

    client.meta.events.register(f"before-call.{operation}", deny)
    try:
        yield
    finally:
        client.meta.events.unregister(f"before-call.{operation}", deny)
