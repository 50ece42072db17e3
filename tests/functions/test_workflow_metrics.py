"""Issue 15 item 3: the run and step counts are also emitted per workflow (EMF dimension ``workflow``).

The name comes from what the invocation holds anyway: the first message's
``run_input``, a step message's ``run_context``, the run an event returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools.metrics import Metrics
from lambda_support import CONTEXT, metrics_by_workflow, receive

from functions import api_handler, step_handler, workflow_handler
from functions._metrics import EventCounts, ObservedWorld
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.contract.clock import ManualClock
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import (
    EventRequest,
    EventType,
    ResolveData,
    RunCreation,
    RunStartedData,
    StepCreatedData,
    StepStartedData,
)
from world_aws.contract.transport import decode_body
from world_aws.contract.world import QueueName
from world_aws.local.embedded import EmbeddedAws
from world_aws.local.memory import create_memory_world

SampleEvent = Callable[[str], dict[str, Any]]


RUN_AND_STEP_COUNTS = {
    "RunsStarted",
    "RunsCompleted",
    "RunsFailed",
    "StepsStarted",
    "StepsCompleted",
    "StepsFailed",
    "StepsRetried",
}


def start_checkout(
    sample_event: SampleEvent, capsys: pytest.CaptureFixture[str]
) -> dict[str | None, dict[str, float]]:
    """The first message of a run of checkout through the workflow function; the metrics it printed."""
    assert workflow_handler.handler(sample_event("sqs_workflow_event.json"), CONTEXT) == {
        "batchItemFailures": []
    }
    return metrics_by_workflow(capsys.readouterr().out)


@pytest.mark.usefixtures("deployed")
def test_a_workflow_invocation_counts_its_run_and_inline_steps_under_the_workflow(
    sample_event: SampleEvent, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the workflow function starts a run of checkout, running its first steps inline
    counted = start_checkout(sample_event, capsys)
    # THEN every run and step count is also counted under checkout, equal to its total
    totals = {name: value for name, value in counted[None].items() if name in RUN_AND_STEP_COUNTS}
    assert totals["RunsStarted"] == 1 and totals["StepsCompleted"] >= 1
    # (an inline step starts in its create: it is counted as started like any other)
    assert totals["StepsStarted"] >= totals["StepsCompleted"]
    assert counted["checkout"] == totals
    # AND the delivery itself is only in the totals
    assert counted[None]["Deliveries"] == 1


def test_a_step_invocation_counts_under_the_workflow_its_message_names(
    deploy: Callable[..., None],
    sample_event: SampleEvent,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN steps dispatched by message (inline off) and a started run of checkout
    deploy(WORKFLOW_MAX_INLINE_STEPS="0")
    assert start_checkout(sample_event, capsys)["checkout"] == {"RunsStarted": 1}
    # WHEN the step function runs the dispatched step, whose message names the workflow
    event = receive(embedded, resources, QueueName.STEP)
    payload = decode_body(event["Records"][0]["body"])
    assert isinstance(payload, InvokePayload) and payload.run_context is not None
    assert payload.run_context.workflow_name == "checkout"
    assert step_handler.handler(event, CONTEXT) == {"batchItemFailures": []}
    # THEN the step's start and completion are counted under checkout too, equal to the totals
    ran = metrics_by_workflow(capsys.readouterr().out)
    assert ran["checkout"] == {"StepsStarted": 1, "StepsCompleted": 1}
    assert (ran[None]["StepsStarted"], ran[None]["StepsCompleted"]) == (1, 1)


@pytest.mark.usefixtures("deployed")
def test_a_run_created_through_the_api_is_counted_under_its_workflow(
    sample_event: SampleEvent, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the API function starts a run of checkout
    response = api_handler.handler(sample_event("http_start_run_event.json"), CONTEXT)
    assert response["statusCode"] == 201 and json.loads(response["body"])["run_id"]
    # THEN RunsCreated is counted in the totals and under checkout
    counted = metrics_by_workflow(capsys.readouterr().out)
    assert counted[None]["RunsCreated"] == 1 and counted[None]["ApiRequests"] == 1
    assert counted["checkout"] == {"RunsCreated": 1}


def test_a_delivery_that_reads_its_run_counts_its_events_under_the_workflow(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a running run of checkout with a created step, and an invocation's counts that
    # know nothing of it (a wake-up message names no workflow)
    inner = create_memory_world(clock=ManualClock())
    creation = RunCreation(workflow_name="checkout", deployment_id="d", spec_version=1, input=b"i")
    inner.events.create("wrun_1", EventRequest(EventType.RUN_STARTED, data=RunStartedData(creation=creation)))
    step = StepCreatedData(step_name="charge", input=b"x")
    inner.events.create("wrun_1", EventRequest(EventType.STEP_CREATED, "step_1", step))
    counts = EventCounts()
    world = ObservedWorld(inner, counts)
    # WHEN its continuation reads the run (it writes no run_started) and starts the step
    world.runs.get("wrun_1", resolve_data=ResolveData.NONE)
    world.events.create(
        "wrun_1", EventRequest(EventType.STEP_STARTED, "step_1", StepStartedData(step_name="charge"))
    )
    metrics = Metrics(namespace="WorldAws", service="test")
    counts.publish(metrics)
    metrics.flush_metrics()
    # THEN the start is counted under checkout as well as in the totals
    counted = metrics_by_workflow(capsys.readouterr().out)
    assert counted["checkout"] == {"StepsStarted": 1}
    assert counted[None] == {"StepsStarted": 1}
