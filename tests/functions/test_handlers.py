"""The Lambda handlers on the sample events, against moto: runs start, steps run, bad records fail alone.

The handlers are the deployed entry points (``functions.*_handler.handler``), with
the environment ``template.yaml`` gives them, and the container they build on first
use. State is read back through an AWS World on the same resources; metrics are
read from the EMF lines the handlers print.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from lambda_support import CONTEXT, metrics, receive, step_id_of

from functions import api_handler, reconciler_handler, scheduler_handler, step_handler, workflow_handler
from functions._container import PROCESS, Container
from infra.events.make_events import RUN_ID, STEP_NAME
from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock
from world_aws.contract.payload import HealthCheck, InvokePayload
from world_aws.contract.records import RunStatus, StepStatus
from world_aws.contract.schedules import ScheduleState
from world_aws.contract.transport import decode_body, encode_body
from world_aws.contract.world import QueueName
from world_aws.demo import app as orders_app
from world_aws.errors import BadInput
from world_aws.local.embedded import EmbeddedAws
from world_aws.testing.conformance.support import create_run

SampleEvent = Callable[[str], dict[str, Any]]


class Records(logging.Handler):
    """Keeps the log records it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# What an EventBridge schedule sends (the reconciler does not read it).
SCHEDULED_EVENT = {
    "version": "0",
    "id": "00000000-0000-4000-8000-0000000000ee",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-01-01T00:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/world-aws-ReconcilerFunctionTick"],
    "detail": {},
}


def start_sample_run(sample_event: SampleEvent) -> None:
    assert workflow_handler.handler(sample_event("sqs_workflow_event.json"), CONTEXT) == {
        "batchItemFailures": []
    }


# About the step-message path (inline execution off).
pytestmark = pytest.mark.dispatched


@pytest.mark.usefixtures("deployed")
def test_workflow_event_starts_its_run_and_dispatches_the_first_step(
    sample_event: SampleEvent,
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the sample workflow event: the first message of a new run of checkout
    event = sample_event("sqs_workflow_event.json")
    # WHEN the workflow function handles it
    response = workflow_handler.handler(event, CONTEXT)
    # THEN the record is acked, the run exists and runs, and its first step is created
    assert response == {"batchItemFailures": []}
    run = world.runs.get(RUN_ID)
    assert (run.workflow_name, run.status) == ("checkout", RunStatus.RUNNING)
    (step,) = world.steps.list(RUN_ID)
    assert (step.step_name, step.status) == ("world_aws.demo.validate", StepStatus.PENDING)
    # AND its message waits on the step queue
    (record,) = receive(embedded, resources, QueueName.STEP)["Records"]
    payload = decode_body(record["body"])
    assert isinstance(payload, InvokePayload) and payload.step_id == step.step_id
    # AND the invocation's metrics were printed as EMF
    counted = metrics(capsys.readouterr().out)
    assert counted["Deliveries"] == 1 and counted["RunsStarted"] == 1


@pytest.mark.usefixtures("deployed")
def test_step_event_runs_its_step_and_the_redelivery_after_a_retry_completes_it(
    sample_event: SampleEvent,
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a running run and the sample step event (charge fails its first attempt, retryable)
    start_sample_run(sample_event)
    event = sample_event("sqs_step_event.json")
    step_id = step_id_of(event)
    # WHEN the step function handles it
    first = step_handler.handler(event, CONTEXT)
    # THEN the step ran, its retry is recorded, and the record is acked: the next attempt
    # has a delayed message of its own (retries do not count against the delivery cap)
    assert first == {"batchItemFailures": []}
    retried = world.steps.get(RUN_ID, step_id)
    assert (retried.step_name, retried.status, retried.attempt) == (STEP_NAME, StepStatus.PENDING, 1)
    counters = embedded.clients.sqs.get_queue_attributes(
        QueueUrl=resources.queues[QueueName.STEP].url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert counters["ApproximateNumberOfMessagesDelayed"] == "1"
    # WHEN SQS delivers that step's message again (the same body, a later receive)
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = "2"
    second = step_handler.handler(event, CONTEXT)
    # THEN the second attempt completes the step with the body's result
    assert second == {"batchItemFailures": []}
    done = world.steps.get(RUN_ID, step_id)
    assert (done.status, done.attempt) == (StepStatus.COMPLETED, 2)
    assert done.output is not None
    assert orders_app.serializer.loads(done.output).startswith("ch_order-1_500_")
    counted = metrics(capsys.readouterr().out)
    assert counted["StepsStarted"] == 2 and counted["StepsRetried"] == 1 and counted["StepsCompleted"] == 1
    assert counted["StepPrologueRunContext"] == 2


@pytest.mark.usefixtures("deployed")
def test_dispatched_step_message_runs_its_step_and_continues_the_workflow_inline(
    sample_event: SampleEvent, world: AwsWorld, embedded: EmbeddedAws, resources: ProvisionedResources
) -> None:
    # GIVEN the step message the workflow function dispatched (validate)
    start_sample_run(sample_event)
    event = receive(embedded, resources, QueueName.STEP)
    # WHEN the step function handles it
    response = step_handler.handler(event, CONTEXT)
    # THEN validate completed and, as the last completer, continued the run: the fan-out is created
    assert response == {"batchItemFailures": []}
    by_name: dict[str, list[StepStatus]] = {}
    for step in world.steps.list(RUN_ID):
        by_name.setdefault(step.step_name, []).append(step.status)
    assert by_name == {
        "world_aws.demo.validate": [StepStatus.COMPLETED],
        "world_aws.demo.reserve": [StepStatus.PENDING] * 3,
    }
    assert len(receive(embedded, resources, QueueName.STEP)["Records"]) == 3


@pytest.mark.usefixtures("deployed")
def test_malformed_record_is_reported_alone_while_its_neighbour_succeeds(
    sample_event: SampleEvent, world: AwsWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a batch of the sample workflow record and a record whose body is not base64(CBOR)
    event = sample_event("sqs_workflow_event.json")
    bad = {**event["Records"][0], "messageId": "bad-record", "body": "%% not a world-aws message %%"}
    event["Records"].append(bad)
    # WHEN the workflow function handles the batch
    response = workflow_handler.handler(event, CONTEXT)
    # THEN only the malformed record is reported (it reaches the DLQ after its redrive count)
    assert response == {"batchItemFailures": [{"itemIdentifier": "bad-record"}]}
    # AND its neighbour was processed
    assert world.runs.get(RUN_ID).status is RunStatus.RUNNING
    counted = metrics(capsys.readouterr().out)
    assert counted["Deliveries"] == 2 and counted["DeliveriesRejected"] == 1


@pytest.mark.usefixtures("deployed")
def test_health_check_is_acked_without_touching_any_run(
    sample_event: SampleEvent, world: AwsWorld, embedded: EmbeddedAws, resources: ProvisionedResources
) -> None:
    # GIVEN a health-check message on the step queue
    event = sample_event("sqs_step_event.json")
    event["Records"][0]["body"] = encode_body(HealthCheck(health_check=True, correlation_id="probe-1"))
    # WHEN the step function handles it
    response = step_handler.handler(event, CONTEXT)
    # THEN it is acked, and nothing was written or queued
    assert response == {"batchItemFailures": []}
    assert world.runs.list().runs == []
    assert receive(embedded, resources, QueueName.STEP)["Records"] == []
    assert receive(embedded, resources, QueueName.WORKFLOW)["Records"] == []


@pytest.mark.usefixtures("deployed")
def test_delivery_over_the_cap_fails_its_run_and_counts_as_dead_lettered(
    sample_event: SampleEvent, world: AwsWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a running run and a step message delivered once more than WORKFLOW_MAX_QUEUE_DELIVERIES
    start_sample_run(sample_event)
    event = sample_event("sqs_step_event.json")
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = "49"
    capsys.readouterr()
    # WHEN the step function handles it
    response = step_handler.handler(event, CONTEXT)
    # THEN the message is acked and its run failed with MAX_DELIVERIES_EXCEEDED
    assert response == {"batchItemFailures": []}
    run = world.runs.get(RUN_ID)
    assert (run.status, run.error_code) == (RunStatus.FAILED, "MAX_DELIVERIES_EXCEEDED")
    counted = metrics(capsys.readouterr().out)
    assert counted["RunsFailed"] == 1 and counted["DeliveriesDeadLettered"] == 1


@pytest.mark.usefixtures("deployed")
def test_http_event_starts_a_run_through_the_api(
    sample_event: SampleEvent,
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the sample HTTP API request POST /runs (checkout, "order-2")
    event = sample_event("http_start_run_event.json")
    # WHEN the API function answers it
    response = api_handler.handler(event, CONTEXT)
    # THEN the run is created and its first message queued
    assert response["statusCode"] == 201
    run_id = json.loads(response["body"])["run_id"]
    assert world.runs.get(run_id).workflow_name == "checkout"
    (record,) = receive(embedded, resources, QueueName.WORKFLOW)["Records"]
    payload = decode_body(record["body"])
    assert isinstance(payload, InvokePayload) and (payload.run_id, payload.run_input is not None) == (
        run_id,
        True,
    )
    counted = metrics(capsys.readouterr().out)
    assert counted["ApiRequests"] == 1 and counted["RunsCreated"] == 1


@pytest.mark.usefixtures("deployed")
def test_reconciler_tick_wakes_the_run_silent_past_the_threshold_and_counts_it(
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    function_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a pending run created an hour ago whose first message was never sent (written
    # through a World whose clock is an hour behind), and a pending run created now
    hour_ago = ManualClock(datetime.now(UTC) - timedelta(hours=1))
    past = create_aws_world(AwsConfig.from_env(function_env), clients=embedded.clients, clock=hour_ago)
    silent = create_run(past, started=False)
    create_run(world, started=False)
    # WHEN the reconciler function ticks (default threshold: 600 s)
    records = Records()
    logging.getLogger("world_aws").addHandler(records)
    try:
        response = reconciler_handler.handler(SCHEDULED_EVENT, CONTEXT)
    finally:
        logging.getLogger("world_aws").removeHandler(records)
    # THEN it looked at the old run only and woke it with a workflow message
    assert response == {"looked_at": 1, "woken": 1, "remarked": 0, "failed": 0}
    (record,) = receive(embedded, resources, QueueName.WORKFLOW)["Records"]
    payload = decode_body(record["body"])
    assert isinstance(payload, InvokePayload) and payload.run_id == silent
    assert payload.reconcile_tag is not None and payload.run_input is None
    # AND the repair was counted as EMF and logged with its run id
    assert metrics(capsys.readouterr().out)["RunsReconciled"] == 1
    repairs = [r for r in records.records if r.getMessage().startswith("reconciler woke a run")]
    assert [getattr(r, "run_id", None) for r in repairs] == [silent]
    # AND a second tick leaves the run alone: its next look is a bucket later
    assert reconciler_handler.handler(SCHEDULED_EVENT, CONTEXT)["looked_at"] == 0


def test_scheduler_pass_starts_the_latest_due_tick_once_and_counts_it(
    deploy: Callable[..., None],
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN an hourly schedule whose last handled tick was three hours ago (the scheduler was down)
    deploy(WORKFLOW_APP="scheduled_app:app")
    three_hours_ago = datetime.now(UTC) - timedelta(hours=3)
    assert world.schedules.advance(ScheduleState("hourly", last_tick=three_hours_ago), expected_tick=None)
    # WHEN the scheduler function passes
    response = scheduler_handler.handler(SCHEDULED_EVENT, CONTEXT)
    # THEN it started the latest due tick (catch_up=1), the older ones counted as missed
    assert (response["started"], response["missed"], response["failed"]) == (1, 2, 0)
    (record,) = receive(embedded, resources, QueueName.WORKFLOW)["Records"]
    payload = decode_body(record["body"])
    assert isinstance(payload, InvokePayload) and payload.run_input is not None
    run = world.runs.get(payload.run_id)
    assert (run.workflow_name, run.attributes["schedule"]) == ("scheduled_app.hourly", "hourly")
    state = world.schedules.get("hourly")
    assert state is not None and (state.last_run_id, state.started) == (run.run_id, 1)
    counted = metrics(capsys.readouterr().out)
    assert counted["ScheduledRunsStarted"] == 1 and counted["RunsCreated"] == 1
    # AND a second pass starts nothing more
    assert scheduler_handler.handler(SCHEDULED_EVENT, CONTEXT)["started"] == 0


def test_container_without_an_app_names_the_missing_variable(function_env: dict[str, str]) -> None:
    # GIVEN the function environment without WORKFLOW_APP
    env = {name: value for name, value in function_env.items() if name != "WORKFLOW_APP"}
    # WHEN the container is built THEN the error names the variable
    with pytest.raises(BadInput, match="WORKFLOW_APP"):
        Container.from_env(PROCESS.logger, PROCESS.metrics, environ=env)


@pytest.mark.usefixtures("deployed")
def test_an_answer_that_cannot_be_rendered_is_a_500_counted_in_api_server_errors(
    sample_event: SampleEvent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an API whose answer json cannot write (it raised out of the handler before)
    from world_aws.api import app as api_app
    from world_aws.api.http import Response

    monkeypatch.setattr(api_app, "respond", lambda _event, _runtime: Response(200, {"oops": {1, 2}}))
    # WHEN the API function answers a request
    response = api_handler.handler(sample_event("http_start_run_event.json"), CONTEXT)
    # THEN it is a JSON 500, counted as a server error
    assert response["statusCode"] == 500
    assert json.loads(response["body"])["error"]["kind"] == "Internal"
    counted = metrics(capsys.readouterr().out)
    assert counted["ApiRequests"] == 1 and counted["ApiServerErrors"] == 1
