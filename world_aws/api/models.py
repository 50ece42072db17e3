"""The HTTP API's wire schemas: request bodies and query strings, and the documents it answers with.

Requests are validated with these models at the edge (unknown fields are
refused, so a typo is a 400 rather than silently ignored). Responses are built
from the response models and dumped in JSON mode. Every non-2xx answer is
``{"error": {"kind": ..., "message": ...}}`` (:func:`world_aws.api.http.error_response`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from world_aws.contract.records import RunStatus

MAX_PAGE = 1000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- requests ------------------------------------------------------------------------


class StartRunRequest(_Strict):
    """``POST /runs``."""

    workflow: str = Field(min_length=1, description="the workflow's registered name")
    args: list[Any] = Field(default_factory=list, description="positional arguments")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="keyword arguments")
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=256, description="the same key starts the same run"
    )
    priority: int | None = Field(
        default=None, description="among runs waiting for the workflow's slots, higher first"
    )


class CancelRunRequest(_Strict):
    """``POST /runs/{run_id}/cancel`` (the body may be empty)."""

    reason: str | None = Field(default=None, max_length=1024)


class ForkRunRequest(_Strict):
    """``POST /runs/{run_id}/fork`` (the body may be empty): see ``Runtime.fork``."""

    from_step: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="the step to start again at: its name or 'name#n' (its n-th call); "
        "default: where the run failed (or stopped)",
    )
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=256, description="the same key forks the run once"
    )


class ResumeHookRequest(_Strict):
    """``POST /hooks/{token}/resume``: ``payload`` is required (``null`` is a payload).

    ``resume_id`` (optional) makes a retried request append the payload once.
    """

    payload: Any
    resume_id: str | None = Field(default=None, min_length=1, max_length=200)


class ListRunsQuery(_Strict):
    """``GET /runs?status=&workflow=&attribute=&created_after=&created_before=&limit=&cursor=``.

    ``attribute`` (``name=value``) and the creation window filter each page the store
    lists: a filtered page may hold fewer than ``limit`` runs and still have a ``cursor``.
    """

    status: RunStatus | None = None
    workflow: str | None = Field(default=None, min_length=1)
    attribute: str | None = Field(default=None, pattern=r"^[^=$][^=]*=.*$", description="name=value")
    created_after: AwareDatetime | None = None
    created_before: AwareDatetime | None = None
    # Only the held runs (README "Deploying changes"), oldest hold first; no cursor.
    blocked: bool = False
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, min_length=1)


class ListEventsQuery(_Strict):
    """``GET /runs/{run_id}/events?after=&limit=&payloads=``: a page of the log after position ``after``.

    ``payloads=true`` puts each row's small payloads, decoded, in its ``data``.
    """

    after: int = Field(default=0, ge=0)
    limit: int = Field(default=MAX_PAGE, ge=1, le=MAX_PAGE)
    payloads: bool = False


class ReadLogQuery(_Strict):
    """``GET /runs/{run_id}/log?after=``: the log after position ``after``, as exported (the replay gate)."""

    after: int = Field(default=0, ge=0)


class ReadStreamQuery(_Strict):
    """``GET /runs/{run_id}/streams/{name}?start_index=&limit=&wait=``: values from an index on."""

    start_index: int = Field(default=0, ge=0)
    limit: int = Field(default=MAX_PAGE, ge=1, le=MAX_PAGE)
    # Seconds to hold the request while nothing new is there (long poll); the API function's
    # timeout is 29 s (template.yaml), so at most 20.
    wait: float = Field(default=0, ge=0, le=20)


# --- responses -----------------------------------------------------------------------


class ErrorView(BaseModel):
    """Why a run or a step attempt failed: type, message, the run's error code, traceback and cause.

    ``stack`` is the traceback of the user's frames; ``cause`` the error behind this one
    (a run failed by a step: the step's own error, with its traceback).
    """

    type: str
    message: str
    code: str | None = None
    stack: str = ""
    cause: ErrorView | None = None


class BlockedView(BaseModel):
    """Where a held run's replay diverged from its log (README "Deploying changes")."""

    deployment_id: str = Field(description="the deployment whose code diverged")
    position: int = Field(description="the log's last position when it diverged")
    message: str
    since: datetime
    at: str | None = Field(default=None, description="the diverging call's correlation id")
    expected: str | None = Field(default=None, description="what the log has there")
    actual: str | None = Field(default=None, description="what the code calls there")


class RunSummary(BaseModel):
    run_id: str
    workflow: str
    status: RunStatus
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    parent_run_id: str | None = Field(default=None, description="set on a child workflow's run")
    deployment_id: str = Field(default="", description="the deployment the run is pinned to")
    blocked: BlockedView | None = Field(
        default=None, description="set while the run is held: running, waiting for a deploy or a cancel"
    )
    attributes: dict[str, str] = Field(
        default_factory=dict, description="the caller's attributes (the runtime's own, $-prefixed, left out)"
    )


class RunLinks(BaseModel):
    """How a run is linked to others: child workflows and continue-as-new (``client/lineage.py``)."""

    root_run_id: str
    parent_run_id: str | None = None
    children: list[str] = Field(default_factory=list, description="child runs, in the order started")
    continued_from: str | None = Field(default=None, description="the run this one continues")
    continued_as: str | None = Field(default=None, description="the run that continues this one")


class AuditView(BaseModel):
    """One operator action on a run (``runtime/audit.py``): who cancelled, resumed or forked it."""

    action: str = Field(description="cancel, resume or fork")
    actor: str = Field(description="the caller's IAM ARN, or local")
    at: datetime
    detail: str | None = Field(default=None, description="the reason, the hook id, or the run forked from")


class RunDetail(RunSummary):
    """``GET /runs/{run_id}``: ``result`` when completed, ``error`` when failed or cancelled."""

    forked_from: str | None = Field(default=None, description="the run this one is a fork of")
    input: Any = Field(default=None, description="the run's arguments: {args, kwargs}")
    result: Any = None
    error: ErrorView | None = None
    links: RunLinks | None = None
    audit: list[AuditView] = Field(default_factory=list)
    expires_at: datetime | None = Field(default=None, description="when retention erases it (ended runs)")
    waiting: str | None = Field(
        default=None, description="what the pending run waits for under its workflow's flow control"
    )
    priority: int | None = Field(default=None, description="its priority (workflows with flow control)")


class RunList(BaseModel):
    """``GET /runs``: newest first; ``cursor`` fetches the next page (absent on the last)."""

    runs: list[RunSummary]
    cursor: str | None = None


class EventRow(BaseModel):
    """One event of a run's log: its payloads' size, and (``payloads=true``) the small ones decoded."""

    position: int
    type: str
    correlation_id: str | None = None
    step_name: str | None = None
    token: str | None = Field(default=None, description="the hook's token, on hook events")
    change_id: str | None = Field(
        default=None, description="on patch_applied: the change whose patched branch the run took"
    )
    owner: str | None = Field(
        default=None,
        description="an inline step's events: the delivery that ran it; its step_created also starts it",
    )
    created_at: datetime
    error: ErrorView | None = Field(
        default=None, description="the attempt's error, on step_retrying and step_failed"
    )
    payload_bytes: int = Field(default=0, description="the size of the event's payloads, encoded")
    data: dict[str, Any] | None = Field(
        default=None,
        description="with payloads=true, the decoded payloads if small (else GET .../events/{position})",
    )


class EventList(BaseModel):
    """``GET /runs/{run_id}/events``: ``next_after`` continues a truncated page."""

    run_id: str
    events: list[EventRow]
    next_after: int | None = None


class AttemptView(BaseModel):
    """One attempt of a step: from its ``step_started`` to the outcome that ended it.

    ``outcome``: ``running`` (no outcome yet), ``completed``, ``retrying`` (failed, retried
    after ``retry_after``), ``failed`` (the step's last), ``interrupted`` (a later attempt
    started without an outcome of this one: its delivery was lost) or ``abandoned`` (the
    run ended first). ``ended_at`` is absent while it runs.
    """

    attempt: int
    started_at: datetime
    ended_at: datetime | None = None
    outcome: str
    error: ErrorView | None = None
    retry_after: datetime | None = None


class StepRow(BaseModel):
    """One step of a run, without its payloads.

    ``status`` is the step's own (pending, running, completed, failed), except that
    a step without an outcome whose run has ended reads ``abandoned``: no attempt
    of it will start again (contract §3.1), whatever its row last said.
    """

    step_id: str
    step_name: str
    status: str = Field(description="pending, running, completed, failed, or abandoned")
    attempt: int
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    attempts: list[AttemptView] = Field(default_factory=list, description="each start, with its error")
    waiting: str | None = Field(
        default=None, description="what a pending step under flow control waits for (a slot, a rate token)"
    )


class RunStats(BaseModel):
    """A run in one line: its steps, attempts and retries, how long it took and how long it waited.

    ``duration_s`` runs from ``run_started`` (else ``run_created``) to the run's end, or to
    the answer's ``as_of`` while it runs. ``waiting_s`` is the time covered by its sleeps,
    hooks and child runs (overlaps counted once), open ones up to the end or ``as_of``.
    """

    steps: int
    attempts: int
    retries: int
    failed_steps: int
    waits: int
    hooks: int
    children: int = Field(default=0, description="child workflow runs started (not counted as hooks)")
    duration_s: float | None = None
    waiting_s: float = 0.0


class StepList(BaseModel):
    """``GET /runs/{run_id}/steps``: every step of the run, in creation order, and the run's stats."""

    run_id: str
    steps: list[StepRow]
    summary: RunStats | None = None


class SpanView(BaseModel):
    """One bar of a run's Gantt: a step (with its attempts), a sleep or a hook.

    ``ended_at`` is absent while it is open (a running step, a pending sleep, a hook
    waiting for its first payload). A hook's bar runs from its creation to its last
    payload (``received_at``) or its disposal; a sleep's from its creation to its wake-up.
    """

    kind: str = Field(description="step, wait, hook, child or patch (a patched() decision: an instant)")
    id: str = Field(description="the correlation id: step, wait, hook, child call or patch id")
    name: str = Field(
        description="the step's name, the hook's token, the child's run id, 'sleep', or the patch's change id"
    )
    status: str
    created_at: datetime
    ended_at: datetime | None = None
    resume_at: datetime | None = Field(default=None, description="a sleep's due time")
    attempts: list[AttemptView] = Field(default_factory=list)
    received_at: list[datetime] = Field(default_factory=list, description="a hook's payload arrivals")
    waiting: str | None = Field(
        default=None, description="what a pending step under flow control waits for (a slot, a rate token)"
    )


class Timeline(BaseModel):
    """``GET /runs/{run_id}/timeline``: the run's spans in creation order, its stats, and ``as_of``.

    ``as_of`` is the server's time when it answered: open spans extend to it.
    """

    run_id: str
    status: RunStatus
    as_of: datetime
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    summary: RunStats
    spans: list[SpanView]


class WorkflowView(BaseModel):
    """One registered workflow: its name and parameters (``name: type = default``).

    ``called_by``: the workflows whose code calls this one as a child (empty for a top-level one).
    """

    name: str
    parameters: list[str]
    signature: str
    called_by: list[str] = []


class WorkflowList(BaseModel):
    """``GET /workflows``: the workflows this deployment can start, by name."""

    workflows: list[WorkflowView]


class EventDetail(BaseModel):
    """``GET /runs/{run_id}/events/{position}``: one event with its payloads decoded.

    ``data`` maps each payload field the event carries (``input``, ``output``, ``payload``,
    ``metadata``, ``error``, ...) to its decoded, JSON-safe value, fetched from S3 when it
    was stored there.
    """

    position: int
    type: str
    correlation_id: str | None = None
    step_name: str | None = None
    created_at: datetime
    data: dict[str, Any]


class StartedRun(BaseModel):
    run_id: str
    status: RunStatus


class ForkedRun(BaseModel):
    run_id: str
    status: RunStatus
    forked_from: str


class CancelledRun(BaseModel):
    run_id: str
    status: RunStatus


class DeleteRunRequest(_Strict):
    """``POST /runs/{run_id}/delete``: an empty JSON object (the run id is in the path)."""


class DeletedRun(BaseModel):
    """``POST /runs/{run_id}/delete``: the run and its data are erased."""

    run_id: str
    deleted: bool = True
    records: int
    blobs_deleted: int
    blobs_kept: int


class ResumedHook(BaseModel):
    token: str
    resume_id: str


class DeploymentView(BaseModel):
    deployment_id: str
    live_runs: int = Field(description="runs not yet ended pinned to it (held runs aside)")
    newest: bool = Field(description="new runs start on it")


class DeploymentList(BaseModel):
    """``GET /deployments``: oldest first."""

    deployments: list[DeploymentView]


class RetiredDeployment(BaseModel):
    """``POST /deployments/{deployment_id}/retire``."""

    deployment_id: str
    retired: bool = True
