"""A message is decoded once, where it enters (Lambda's SQS batch), and travels parsed to the worker.

Counted on the deployed handlers against moto: every function that turns a message's
bytes into its payload is wrapped, and one delivery through the workflow or the step
function calls them once in all (they were called three times: ``lambda_sqs``,
``_container`` and ``Runtime.handle``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lambda_support import CONTEXT

from functions import _container, step_handler, workflow_handler
from infra.events.make_events import RUN_ID
from world_aws.aws.queue import lambda_sqs
from world_aws.aws.world import AwsWorld
from world_aws.contract import world as contract_world
from world_aws.contract.records import RunStatus, StepStatus
from world_aws.worker import worker

SampleEvent = Callable[[str], dict[str, Any]]

pytestmark = pytest.mark.dispatched


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every decode of a message body, wherever it is made."""
    seen: list[bytes] = []
    # Each module on the way in that could decode: the SQS edge, the delivery, the handler
    # container and the worker (the last two must not hold a decoder of their own).
    for module in (lambda_sqs, contract_world, _container, worker):
        original = getattr(module, "decode_payload", None)
        if original is None:
            continue

        def counted(body: bytes, _original: Any = original) -> Any:
            seen.append(body)
            return _original(body)

        monkeypatch.setattr(module, "decode_payload", counted)
    return seen


@pytest.mark.usefixtures("deployed")
def test_a_workflow_delivery_is_decoded_once(
    sample_event: SampleEvent, world: AwsWorld, decodes: list[bytes]
) -> None:
    # GIVEN the sample workflow event (the first message of a new run)
    event = sample_event("sqs_workflow_event.json")
    # WHEN the workflow function handles it
    assert workflow_handler.handler(event, CONTEXT) == {"batchItemFailures": []}
    # THEN the run started, and its message was decoded once
    assert world.runs.get(RUN_ID).status is RunStatus.RUNNING
    assert len(decodes) == 1


@pytest.mark.usefixtures("deployed")
def test_a_step_delivery_is_decoded_once(
    sample_event: SampleEvent, world: AwsWorld, decodes: list[bytes]
) -> None:
    # GIVEN a running run and the sample step event
    assert workflow_handler.handler(sample_event("sqs_workflow_event.json"), CONTEXT) == {
        "batchItemFailures": []
    }
    decodes.clear()
    # WHEN the step function handles the step's message
    assert step_handler.handler(sample_event("sqs_step_event.json"), CONTEXT) == {"batchItemFailures": []}
    # THEN the step ran (its first attempt fails, retryable: a retry is recorded) ...
    (step,) = [s for s in world.steps.list(RUN_ID) if s.attempt >= 1]
    assert step.status in (StepStatus.PENDING, StepStatus.COMPLETED)
    # ... and the message was decoded once on its way in
    assert len(decodes) == 1
