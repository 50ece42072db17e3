"""The API's routes: one small function per route, over a ``Runtime``.

Each route takes the :class:`Request`, its path parameters and the runtime,
and returns a :class:`Response`, or raises a world-aws error that
:mod:`world_aws.api.app` maps to a status code. Routing is a plain table
(:data:`ROUTES`) matched on path segments, so the same code answers API Gateway
(any route configuration: ``$default``, ``ANY /{proxy+}`` or one route per
path) and the local dev server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel

from world_aws.api import timeline, views
from world_aws.api.flow_waits import flow_waits, may_wait, run_flow_view
from world_aws.api.gate_route import get_gate
from world_aws.api.http import Request, Response, json_response, parse_body, parse_query
from world_aws.api.lineage_view import run_links
from world_aws.api.log_route import read_log
from world_aws.api.models import (
    AuditView,
    CancelledRun,
    CancelRunRequest,
    DeletedRun,
    DeleteRunRequest,
    DeploymentList,
    DeploymentView,
    EventList,
    ForkedRun,
    ForkRunRequest,
    ListEventsQuery,
    ListRunsQuery,
    ResumedHook,
    ResumeHookRequest,
    RetiredDeployment,
    RunList,
    StartedRun,
    StartRunRequest,
    StepList,
    WorkflowList,
)
from world_aws.api.schedule_routes import list_schedules
from world_aws.api.stream_route import read_stream
from world_aws.client.audit import audit_trail
from world_aws.contract.erasure import expires_at
from world_aws.contract.records import Event, ResolveData, RunStatus
from world_aws.errors import BadInput, Conflict, NotFound, RetryLater, UnknownWorkflow
from world_aws.runtime.runtime import Runtime

# Keyword names Runtime.start() takes for itself: a workflow argument of that name cannot pass.
LOG = logging.getLogger("world_aws.api")
RESERVED_KWARGS = ("workflow", "idempotency_key", "attributes", "priority")

Params = dict[str, str]
RouteFn = Callable[[Request, Params, Runtime], Response]


def start_run(request: Request, _params: Params, runtime: Runtime) -> Response:
    """``POST /runs`` → 201 ``{run_id, status}``."""
    body = parse_body(StartRunRequest, request.body)
    for name in RESERVED_KWARGS:
        if name in body.kwargs:
            raise BadInput(f"kwargs.{name}: this name cannot pass through the API (Runtime.start uses it)")
    try:  # JSON arguments converted to the annotated types (a dict to its dataclass, ...)
        wf = runtime.app.get_workflow(body.workflow)
        if wf.gate is not None and wf.gate.batch is not None and len(body.args) == 1 and not body.kwargs:
            # A batched start's one argument is an item of the list the run takes.
            args = (wf.convert(([body.args[0]],), {})[0][0][0],)
            kwargs: dict[str, Any] = {}
        else:
            args, kwargs = wf.convert(tuple(body.args), body.kwargs)
    except UnknownWorkflow as exc:
        raise BadInput(f"workflow: {exc}") from None
    except BadInput as exc:
        raise BadInput(f"args: {exc}") from None
    handle = runtime.start(
        body.workflow, *args, idempotency_key=body.idempotency_key, priority=body.priority, **kwargs
    )
    try:
        status = handle.status()
    except NotFound:
        status = RunStatus.PENDING  # run_created may land later (resilient start, contract §6.1)
    except RetryLater:
        # The run is started: a failed read of its status must not answer "try again", whose
        # retry would start a second run when the start has no idempotency key.
        status = RunStatus.PENDING
    started = StartedRun(run_id=handle.run_id, status=status)
    return json_response(201, _dump(started), headers={"location": f"/runs/{handle.run_id}"})


def list_runs(request: Request, _params: Params, runtime: Runtime) -> Response:
    """``GET /runs?status=&workflow=&attribute=&created_after=&created_before=&limit=&cursor=`` → 200."""
    query = parse_query(ListRunsQuery, request.query)
    if query.blocked:
        if query.status not in (None, RunStatus.RUNNING) or query.cursor is not None:
            raise BadInput("blocked: held runs are running, listed at once (no other status, no cursor)")
        held = runtime.world.runs.list_blocked(limit=query.limit)
        held = [
            run
            for run in held
            if (query.workflow is None or run.workflow_name == query.workflow) and views.matches(run, query)
        ]
        return json_response(200, _dump(RunList(runs=[views.run_summary(run) for run in held])))
    page = runtime.world.runs.list(
        status=query.status, workflow_name=query.workflow, limit=query.limit, cursor=query.cursor
    )
    runs = [views.run_summary(run) for run in page.runs if views.matches(run, query)]
    listed = RunList(runs=runs, cursor=page.cursor)
    return json_response(200, _dump(listed))


def get_run(_request: Request, params: Params, runtime: Runtime) -> Response:
    """``GET /runs/{run_id}`` → 200 the run with its result or error."""
    run = runtime.world.runs.get(params["run_id"])
    events = runtime.world.events.list(run.run_id, resolve_data=ResolveData.NONE)  # reason, children
    reason = views.cancel_reason(events) if run.status is RunStatus.CANCELLED else None
    detail = views.run_detail(run, runtime.app.serializer, cancel_reason=reason)
    detail.links = run_links(run, events, runtime.app.serializer)
    detail.audit = [AuditView.model_validate(asdict(entry)) for entry in audit_trail(run, events)]
    detail.expires_at = expires_at(run)
    detail.waiting, detail.priority = run_flow_view(runtime.world, runtime.app, run)
    return json_response(200, _dump(detail))


def list_events(request: Request, params: Params, runtime: Runtime) -> Response:
    """``GET /runs/{run_id}/events?after=&limit=&payloads=`` → 200 the log's rows (see ListEventsQuery)."""
    query = parse_query(ListEventsQuery, request.query)
    run_id = params["run_id"]
    runtime.world.runs.get(run_id, resolve_data=ResolveData.NONE)  # 404 for an unknown run
    # Only the log after ``after`` (a polling client reads each event once), with the attempts' errors.
    events = runtime.world.events.list(run_id, after=query.after, resolve_data=ResolveData.ALL)
    page = events[: query.limit]
    more = len(events) > len(page)
    serializer = runtime.app.serializer if query.payloads else None
    rows = views.event_rows(page, names=_step_names(run_id, page, runtime), serializer=serializer)
    listed = EventList(run_id=run_id, events=rows, next_after=page[-1].position if more else None)
    return json_response(200, _dump(listed))


def get_event(_request: Request, params: Params, runtime: Runtime) -> Response:
    """``GET /runs/{run_id}/events/{position}`` → 200 the event with every payload decoded."""
    run_id, raw = params["run_id"], params["position"]
    if not raw.isdigit() or int(raw) < 1:
        raise BadInput(f"position: expected a positive integer, got {raw[:40]!r}")
    position = int(raw)
    runtime.world.runs.get(run_id, resolve_data=ResolveData.NONE)  # 404 for an unknown run
    # The protocol reads a log from a position on: the events after this one come along, unused.
    found = runtime.world.events.list(run_id, after=position - 1, resolve_data=ResolveData.ALL)[:1]
    if not found or found[0].position != position:
        raise NotFound(f"run {run_id!r} has no event at position {position}")
    names = _step_names(run_id, found, runtime)
    return json_response(200, _dump(views.event_detail(found[0], runtime.app.serializer, names=names)))


def _step_names(run_id: str, events: list[Event], runtime: Runtime) -> dict[str, str]:
    """correlation id → step name for ``events``, a part of the log.

    A step's outcome events do not carry its name: when ``events`` lack the step's
    ``step_created``/``step_started``, the step rows (no payloads) name it.
    """
    names = views.step_names(events)
    if any(e.type.is_step_event and (e.correlation_id or "") not in names for e in events):
        steps = runtime.world.steps.list(run_id, resolve_data=ResolveData.NONE)
        names = {step.step_id: step.step_name for step in steps} | names
    return names


def list_steps(_request: Request, params: Params, runtime: Runtime) -> Response:
    """``GET /runs/{run_id}/steps`` → 200 the steps with their attempts, and the run's stats."""
    run = runtime.world.runs.get(params["run_id"], resolve_data=ResolveData.NONE)
    steps = runtime.world.steps.list(run.run_id, resolve_data=ResolveData.NONE)
    events = runtime.world.events.list(run.run_id, resolve_data=ResolveData.ALL)  # the attempts' errors
    shown = timeline.timeline(run, events, as_of=runtime.world.clock.now())
    attempts = {span.id: span.attempts for span in shown.spans if span.kind == "step"}
    rows = views.step_rows(run, steps, attempts=attempts)
    waits = flow_waits(runtime.world, runtime.app, run, steps)
    rows = [row.model_copy(update={"waiting": waits.get(row.step_id)}) for row in rows]
    return json_response(200, _dump(StepList(run_id=run.run_id, steps=rows, summary=shown.summary)))


def get_timeline(_request: Request, params: Params, runtime: Runtime) -> Response:
    """``GET /runs/{run_id}/timeline`` → 200 the run's spans (steps, sleeps, hooks) and its stats."""
    run = runtime.world.runs.get(params["run_id"], resolve_data=ResolveData.NONE)
    events = runtime.world.events.list(run.run_id, resolve_data=ResolveData.ALL)  # the attempts' errors
    shown = timeline.timeline(run, events, as_of=runtime.world.clock.now())
    if any(s.kind == "step" and may_wait(runtime.app, s.name, s.status) for s in shown.spans):
        steps = runtime.world.steps.list(run.run_id, resolve_data=ResolveData.NONE)
        waits = flow_waits(runtime.world, runtime.app, run, steps)
        spans = [span.model_copy(update={"waiting": waits.get(span.id)}) for span in shown.spans]
        shown = shown.model_copy(update={"spans": spans})
    return json_response(200, _dump(shown))


def list_workflows(_request: Request, _params: Params, runtime: Runtime) -> Response:
    """``GET /workflows`` → 200 the registered workflows with their parameters."""
    return json_response(200, _dump(WorkflowList(workflows=views.workflow_views(runtime.app))))


def cancel_run(request: Request, params: Params, runtime: Runtime) -> Response:
    """``POST /runs/{run_id}/cancel`` ``{reason?}`` → 200, or 409 if the run had already ended."""
    body = parse_body(CancelRunRequest, request.body, required=False)
    handle = runtime.get_run(params["run_id"])
    if not handle.cancel(body.reason, actor=request.actor):
        status = handle.status()
        raise Conflict(f"run {handle.run_id} has already ended ({status.value})")
    return json_response(200, _dump(CancelledRun(run_id=handle.run_id, status=RunStatus.CANCELLED)))


def fork_run(request: Request, params: Params, runtime: Runtime) -> Response:
    """``POST /runs/{run_id}/fork`` ``{from_step?, idempotency_key?}`` → 201 the fork.

    The answer is ``{run_id, status, forked_from}``.

    409 if the run has not ended; 404 for an unknown run or step (``Runtime.fork``).
    The fork's copy of the original's log is written by its first delivery, so the
    answer does not wait for it: the fork is ``pending`` until then.
    """
    request.require_json()
    body = parse_body(ForkRunRequest, request.body, required=False)
    handle = runtime.fork(
        params["run_id"], body.from_step, idempotency_key=body.idempotency_key, actor=request.actor
    )
    try:
        status = handle.status()
    except (NotFound, RetryLater):
        status = RunStatus.PENDING  # as for a start: it exists once its first message is handled
    forked = ForkedRun(run_id=handle.run_id, status=status, forked_from=params["run_id"])
    return json_response(201, _dump(forked), headers={"location": f"/runs/{handle.run_id}"})


def resume_hook(request: Request, params: Params, runtime: Runtime) -> Response:
    """``POST /hooks/{token}/resume`` ``{payload, resume_id?}`` → 202 ``{token, resume_id}``."""
    body = parse_body(ResumeHookRequest, request.body)
    resume_id = runtime.resume_hook(
        params["token"], body.payload, resume_id=body.resume_id, actor=request.actor
    )
    return json_response(202, _dump(ResumedHook(token=params["token"], resume_id=resume_id)))


def delete_run(request: Request, params: Params, runtime: Runtime) -> Response:
    """``POST /runs/{run_id}/delete`` ``{}`` → 200: an ended run and all its data erased.

    409 while the run is live (cancel it first); 404 for an unknown or erased run. The
    body is JSON, as for every route that changes state (a cross-site form cannot send it).
    """
    request.require_json()
    parse_body(DeleteRunRequest, request.body, required=False)
    erased = runtime.delete_run(params["run_id"])
    LOG.info(
        "run deleted", extra={"run_id": erased.run_id, "actor": request.actor}
    )  # the audit of an erasure
    deleted = DeletedRun(
        run_id=erased.run_id,
        records=erased.records,
        blobs_deleted=erased.blobs_deleted,
        blobs_kept=erased.blobs_kept,
    )
    return json_response(200, _dump(deleted))


@dataclass(frozen=True, slots=True)
class Route:
    """``method`` + a path pattern of literal segments and ``{name}`` parameters."""

    method: str
    pattern: tuple[str, ...]
    fn: RouteFn

    def match(self, segments: tuple[str, ...]) -> Params | None:
        """The path parameters if ``segments`` fit the pattern (whatever the method), else None."""
        if len(segments) != len(self.pattern):
            return None
        params: Params = {}
        for want, got in zip(self.pattern, segments, strict=True):
            if want.startswith("{"):
                params[want.strip("{}")] = got
            elif want != got:
                return None
        return params


def list_deployments(_request: Request, _params: Params, runtime: Runtime) -> Response:
    """``GET /deployments`` → 200 ``{deployments: [{deployment_id, live_runs, newest}]}``, oldest first."""
    listed = DeploymentList(
        deployments=[
            DeploymentView(deployment_id=d.deployment_id, live_runs=d.live_runs, newest=d.newest)
            for d in runtime.deployments.list()
        ]
    )
    return json_response(200, _dump(listed))


def retire_deployment(_request: Request, params: Params, runtime: Runtime) -> Response:
    """``POST /deployments/{deployment_id}/retire`` → 200; 409 while a run is pinned to it."""
    runtime.deployments.retire(params["deployment_id"])
    return json_response(200, _dump(RetiredDeployment(deployment_id=params["deployment_id"])))


ROUTES: tuple[Route, ...] = (
    Route("POST", ("runs",), start_run),
    Route("GET", ("runs",), list_runs),
    Route("GET", ("runs", "{run_id}"), get_run),
    Route("GET", ("runs", "{run_id}", "events"), list_events),
    Route("GET", ("runs", "{run_id}", "events", "{position}"), get_event),
    Route("GET", ("runs", "{run_id}", "steps"), list_steps),
    Route("GET", ("runs", "{run_id}", "timeline"), get_timeline),
    Route("GET", ("runs", "{run_id}", "log"), read_log),
    Route("GET", ("workflows",), list_workflows),
    Route("GET", ("workflows", "{workflow}", "gates", "{key}"), get_gate),
    Route("POST", ("runs", "{run_id}", "cancel"), cancel_run),
    Route("POST", ("runs", "{run_id}", "fork"), fork_run),
    Route("POST", ("runs", "{run_id}", "delete"), delete_run),
    Route("GET", ("runs", "{run_id}", "streams", "{name}"), read_stream),
    Route("POST", ("hooks", "{token}", "resume"), resume_hook),
    Route("GET", ("schedules",), list_schedules),
    Route("GET", ("deployments",), list_deployments),
    Route("POST", ("deployments", "{deployment_id}", "retire"), retire_deployment),
)


def _dump(model: BaseModel) -> object:
    return model.model_dump(mode="json")
