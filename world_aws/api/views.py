"""How the API shows runs and their logs: records of the World → the response models.

Payloads are decoded with the app's serializer and rendered JSON-safe
(:func:`world_aws.api.jsonable.to_jsonable`). The event rows carry no
payloads, only a failed attempt's error (``step_retrying``, ``step_failed``).
"""

from __future__ import annotations

import logging
from typing import Any

from world_aws.api import payloads, workflow_calls
from world_aws.api.jsonable import to_jsonable
from world_aws.api.models import (
    AttemptView,
    BlockedView,
    ErrorView,
    EventDetail,
    EventRow,
    ListRunsQuery,
    RunDetail,
    RunSummary,
    StepRow,
    WorkflowView,
)
from world_aws.api.payloads import error_view
from world_aws.client.forks import forked_from
from world_aws.contract.records import (
    Event,
    PatchAppliedData,
    Run,
    RunCancelledData,
    RunStatus,
    Step,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    TokenData,
    owner_of,
)
from world_aws.contract.rules import RESERVED_ATTRIBUTE_PREFIX
from world_aws.contract.sealing import ENCRYPTED_MARKER
from world_aws.engine.children import PARENT_RUN_ID
from world_aws.errors import PayloadEncrypted, SerializationError
from world_aws.serde.codec import Serializer, decode_error
from world_aws.workflow.registry import Workflows

LOG = logging.getLogger("world_aws.api")


def run_summary(run: Run) -> RunSummary:
    blocked = run.blocked if run.held else None
    return RunSummary(
        run_id=run.run_id,
        workflow=run.workflow_name,
        status=run.status,
        created_at=run.created_at,
        started_at=run.started_at,
        completed_at=run.completed_at,
        parent_run_id=run.attributes.get(PARENT_RUN_ID),
        deployment_id=run.deployment_id,
        blocked=None if blocked is None else BlockedView.model_validate(blocked, from_attributes=True),
        attributes={k: v for k, v in run.attributes.items() if not k.startswith(RESERVED_ATTRIBUTE_PREFIX)},
    )


def matches(run: Run, query: ListRunsQuery) -> bool:
    """Whether ``run`` passes the list's page filters (attribute, creation window)."""
    if query.attribute is not None:
        name, _, value = query.attribute.partition("=")
        if run.attributes.get(name) != value:
            return False
    if query.created_after is not None and run.created_at <= query.created_after:
        return False
    return query.created_before is None or run.created_at < query.created_before


def run_detail(run: Run, serializer: Serializer, *, cancel_reason: str | None = None) -> RunDetail:
    """The run with its outcome: the decoded result, or the error that ended it.

    Args:
        run: the run, read with payloads.
        serializer: the app's serializer (it knows the app's registered types).
        cancel_reason: the reason recorded on ``run_cancelled``, for a cancelled run.
    """
    summary = {
        **run_summary(run).model_dump(),
        "forked_from": forked_from(run),
        "input": _value(run.input, serializer, "input", run.run_id),
    }
    if run.status is RunStatus.COMPLETED:
        return RunDetail(**summary, result=_result(run, serializer))
    if run.status is RunStatus.FAILED:
        return RunDetail(**summary, error=_error(run))
    if run.status is RunStatus.CANCELLED:
        message = "the run was cancelled" + (f": {cancel_reason}" if cancel_reason else "")
        return RunDetail(**summary, error=ErrorView(type="RunCancelledError", message=message))
    return RunDetail(**summary)


ABANDONED = "abandoned"


def step_status(step: Step, run: Run) -> str:
    """The status to show for ``step``: ``abandoned`` when it has no outcome and its run has ended.

    Such a step will never run again: a start is refused on an ended run (contract
    §3.1), and a retry it recorded after the end (accepted, as an outcome would be)
    left it pending for nothing.
    """
    if run.status.terminal and not step.status.terminal:
        return ABANDONED
    return step.status.value


def step_rows(
    run: Run, steps: list[Step], *, attempts: dict[str, list[AttemptView]] | None = None
) -> list[StepRow]:
    """One row per step of ``run``, oldest first, with its attempts (step id → attempts) if given."""
    attempts = attempts or {}
    return [
        StepRow(
            step_id=step.step_id,
            step_name=step.step_name,
            status=step_status(step, run),
            attempt=step.attempt,
            created_at=step.created_at,
            started_at=step.started_at,
            completed_at=step.completed_at,
            attempts=attempts.get(step.step_id, []),
        )
        for step in sorted(steps, key=_created)
    ]


def _created(step: Step) -> tuple[object, str]:
    return (step.created_at, step.step_id)


def _result(run: Run, serializer: Serializer) -> object:
    return _value(run.output, serializer, "result", run.run_id)


def _value(data: bytes | None, serializer: Serializer, what: str, run_id: str) -> object:
    if data is None:
        return None
    try:
        return to_jsonable(serializer.loads(data))
    except PayloadEncrypted:
        return ENCRYPTED_MARKER  # sealed, and this process has no kms:Decrypt on the run's key
    except SerializationError as exc:
        # e.g. a type this deployment's app does not register: show why, keep the rest of the run
        LOG.warning("cannot decode the %s of run %s: %s", what, run_id, exc)
        return f"<undecodable {what}: {exc}>"


def _error(run: Run) -> ErrorView:
    try:
        info = decode_error(run.error or b"")
    except PayloadEncrypted:
        return ErrorView(type=ENCRYPTED_MARKER, message=ENCRYPTED_MARKER, code=run.error_code)
    except SerializationError as exc:
        LOG.warning("cannot decode the error of run %s: %s", run.run_id, exc)
        return ErrorView(type="UnknownError", message=f"<undecodable error: {exc}>", code=run.error_code)
    return error_view(info, code=run.error_code)


def event_error(event: Event) -> ErrorView | None:
    data = event.data
    if not isinstance(data, StepRetryingData | StepFailedData) or not data.error:
        return None
    try:
        return error_view(decode_error(data.error))
    except PayloadEncrypted:
        return ErrorView(type=ENCRYPTED_MARKER, message=ENCRYPTED_MARKER)
    except SerializationError:
        return None


def cancel_reason(events: list[Event]) -> str | None:
    """The reason on the log's ``run_cancelled`` event, if any."""
    for event in reversed(events):
        if isinstance(event.data, RunCancelledData):
            return event.data.reason
    return None


def step_names(events: list[Event]) -> dict[str, str]:
    """correlation id → step name, from the step events that carry it."""
    names: dict[str, str] = {}
    for event in events:
        if (
            event.correlation_id
            and isinstance(event.data, StepCreatedData | StepStartedData)
            and event.data.step_name
        ):
            names.setdefault(event.correlation_id, event.data.step_name)
    return names


def event_rows(
    events: list[Event], *, names: dict[str, str] | None = None, serializer: Serializer | None = None
) -> list[EventRow]:
    """One row per event (position, type, correlation id, step name, hook token, created_at).

    Args:
        events: events of one run, in position order.
        names: correlation id → step name; by default taken from ``events`` themselves
            (pass the whole log's when ``events`` is a page of it).
        serializer: the app's; when given, each row carries its payloads decoded in ``data``
            if they are small (:data:`~world_aws.api.payloads.INLINE_PAYLOAD_BYTES`).
    """
    names = step_names(events) if names is None else names
    return [
        EventRow(
            position=event.position,
            type=event.type.value,
            correlation_id=event.correlation_id,
            step_name=names.get(event.correlation_id or ""),
            token=event.data.token if isinstance(event.data, TokenData) else None,
            change_id=event.data.change_id if isinstance(event.data, PatchAppliedData) else None,
            owner=owner_of(event.data),
            created_at=event.created_at,
            error=event_error(event),
            payload_bytes=payloads.payload_size(event),
            data=_inline_data(event, serializer),
        )
        for event in events
    ]


def _inline_data(event: Event, serializer: Serializer | None) -> dict[str, Any] | None:
    if serializer is None or payloads.payload_size(event) > payloads.INLINE_PAYLOAD_BYTES:
        return None
    return payloads.decoded_payloads(event, serializer) or None


def event_detail(event: Event, serializer: Serializer, *, names: dict[str, str]) -> EventDetail:
    """One event with every payload decoded, however large."""
    return EventDetail(
        position=event.position,
        type=event.type.value,
        correlation_id=event.correlation_id,
        step_name=names.get(event.correlation_id or ""),
        created_at=event.created_at,
        data=payloads.decoded_payloads(event, serializer),
    )


def workflow_views(app: Workflows) -> list[WorkflowView]:
    """The app's registered workflows, by name, with their parameters (resolved annotations).

    Each names the workflows whose code calls it as a child (``api/workflow_calls.py``).
    """
    called_by = workflow_calls.callers(app)
    views = []
    for name in app.workflow_names:
        workflow = app.get_workflow(name)
        signature = workflow.signature.replace(
            parameters=[
                p.replace(annotation=workflow.hints.get(p.name, p.annotation))
                for p in workflow.signature.parameters.values()
            ],
            return_annotation=workflow.hints.get("return", workflow.signature.return_annotation),
        )
        views.append(
            WorkflowView(
                name=name,
                parameters=[str(p) for p in signature.parameters.values()],
                signature=str(signature),
                called_by=called_by.get(name, []),
            )
        )
    return views
