"""The HTTP API's wire schemas: request bodies and query strings, and the documents it answers with.

Requests are validated with these models at the edge (unknown fields are
refused, so a typo is a 400 rather than silently ignored). Responses are built
from the response models and dumped in JSON mode. Every non-2xx answer is
``{"error": {"kind": ..., "message": ...}}`` (:func:`world_aws.api.http.error_response`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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


class CancelRunRequest(_Strict):
    """``POST /runs/{run_id}/cancel`` (the body may be empty)."""

    reason: str | None = Field(default=None, max_length=1024)


class ResumeHookRequest(_Strict):
    """``POST /hooks/{token}/resume``: ``payload`` is required (``null`` is a payload).

    ``resume_id`` (optional) makes a retried request append the payload once.
    """

    payload: Any
    resume_id: str | None = Field(default=None, min_length=1, max_length=200)


class ListRunsQuery(_Strict):
    """``GET /runs?status=&workflow=&limit=&cursor=``."""

    status: RunStatus | None = None
    workflow: str | None = Field(default=None, min_length=1)
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, min_length=1)


class ListEventsQuery(_Strict):
    """``GET /runs/{run_id}/events?after=&limit=``: a page of the log after position ``after``."""

    after: int = Field(default=0, ge=0)
    limit: int = Field(default=MAX_PAGE, ge=1, le=MAX_PAGE)


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


class RunSummary(BaseModel):
    run_id: str
    workflow: str
    status: RunStatus
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None


class RunDetail(RunSummary):
    """``GET /runs/{run_id}``: ``result`` when completed, ``error`` when failed or cancelled."""

    result: Any = None
    error: ErrorView | None = None


class RunList(BaseModel):
    """``GET /runs``: newest first; ``cursor`` fetches the next page (absent on the last)."""

    runs: list[RunSummary]
    cursor: str | None = None


class EventRow(BaseModel):
    """One event of a run's log, without payloads."""

    position: int
    type: str
    correlation_id: str | None = None
    step_name: str | None = None
    token: str | None = Field(default=None, description="the hook's token, on hook events")
    owner: str | None = Field(
        default=None,
        description="an inline step's events: the delivery that ran it; its step_created also starts it",
    )
    created_at: datetime
    error: ErrorView | None = Field(
        default=None, description="the attempt's error, on step_retrying and step_failed"
    )


class EventList(BaseModel):
    """``GET /runs/{run_id}/events``: ``next_after`` continues a truncated page."""

    run_id: str
    events: list[EventRow]
    next_after: int | None = None


class StepRow(BaseModel):
    """One step of a run, without its payloads.

    ``status`` is the step's own (pending, running, completed, failed), except that
    a step without an outcome whose run has ended reads ``abandoned``: no attempt
    of it will start again (SPEC §3.1), whatever its row last said.
    """

    step_id: str
    step_name: str
    status: str = Field(description="pending, running, completed, failed, or abandoned")
    attempt: int
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None


class StepList(BaseModel):
    """``GET /runs/{run_id}/steps``: every step of the run, in creation order."""

    run_id: str
    steps: list[StepRow]


class StartedRun(BaseModel):
    run_id: str
    status: RunStatus


class CancelledRun(BaseModel):
    run_id: str
    status: RunStatus


class ResumedHook(BaseModel):
    token: str
    resume_id: str
