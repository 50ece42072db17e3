"""A run's timeline from its event log: the Gantt spans, each step's attempts, and the run's stats.

One pass over the log (in position order, read with payloads so that failed
attempts carry their errors) builds a span per step, sleep, hook and child run, and an
instant per ``patched()`` decision recorded (kind ``patch``). A
child run is recorded in the log as a hook with the reserved token
``wchild_<child run id>``; it is shown as a ``child`` span named by the child's run
id, which the child's end closes, and counted apart from hooks. A step's
attempts run from each ``step_started`` (or the ``step_created`` of an inline step,
which also starts it) to the outcome that ended it; a start
that follows another without an outcome marks the earlier attempt
``interrupted``; an attempt, sleep or hook still open when the run ended is cut
at the run's end (``abandoned`` for an attempt). While the run goes on, open
spans have no end and the stats count them up to ``as_of``, the time of the
answer. ``GET /runs/{run_id}/timeline``, ``GET /runs/{run_id}/steps`` and
``world-aws inspect`` all show what this module computes.
"""

from __future__ import annotations

from datetime import datetime

from world_aws.api.models import AttemptView, RunStats, SpanView, Timeline
from world_aws.api.views import event_error, step_names
from world_aws.contract.records import (
    Event,
    EventType,
    HookCreatedData,
    PatchAppliedData,
    Run,
    StepRetryingData,
    WaitCreatedData,
    owner_of,
)
from world_aws.engine.children import child_of_token

_STEP_ENDS = {
    EventType.STEP_COMPLETED: "completed",
    EventType.STEP_RETRYING: "retrying",
    EventType.STEP_FAILED: "failed",
}


def timeline(run: Run, events: list[Event], *, as_of: datetime) -> Timeline:
    """The run's spans in creation order and its stats.

    Args:
        run: the run (its status and end decide how open spans are cut).
        events: its whole log, in position order, read with payloads.
        as_of: the time of the answer; open spans count up to it.
    """
    spans = _spans(events)
    ended = run.completed_at if run.status.terminal else None
    if ended is not None:
        for span in spans:
            _cut(span, ended)
    return Timeline(
        run_id=run.run_id,
        status=run.status,
        as_of=as_of,
        created_at=run.created_at,
        started_at=run.started_at,
        completed_at=run.completed_at,
        summary=stats(run, spans, as_of=as_of),
        spans=spans,
    )


def stats(run: Run, spans: list[SpanView], *, as_of: datetime) -> RunStats:
    """The run's stats line from its spans (see :class:`~world_aws.api.models.RunStats`)."""
    steps = [s for s in spans if s.kind == "step"]
    start = run.started_at or run.created_at
    end = run.completed_at if run.status.terminal else as_of
    waiting = [(s.created_at, s.ended_at or end) for s in spans if s.kind in ("wait", "hook", "child")]
    return RunStats(
        steps=len(steps),
        attempts=sum(len(s.attempts) for s in steps),
        retries=sum(1 for s in steps for a in s.attempts if a.outcome == "retrying"),
        failed_steps=sum(1 for s in steps if s.status == "failed"),
        waits=sum(1 for s in spans if s.kind == "wait"),
        hooks=sum(1 for s in spans if s.kind == "hook"),
        children=sum(1 for s in spans if s.kind == "child"),
        duration_s=(end - start).total_seconds() if end is not None else None,
        waiting_s=_covered(waiting),
    )


def _spans(events: list[Event]) -> list[SpanView]:
    names = step_names(events)
    spans: dict[str, SpanView] = {}
    for event in events:
        cid = event.correlation_id
        if cid is None:
            continue
        span = spans.get(cid)
        kind, at = event.type, event.created_at
        if kind is EventType.STEP_CREATED:
            spans[cid] = SpanView(
                kind="step", id=cid, name=names.get(cid, ""), status="pending", created_at=at
            )
            if owner_of(event.data):  # an inline step: its create is also its first start
                _start_attempt(spans[cid], at)
        elif kind is EventType.WAIT_CREATED:
            resume_at: datetime = event.data_as(WaitCreatedData).resume_at
            spans[cid] = SpanView(
                kind="wait", id=cid, name="sleep", status="waiting", created_at=at, resume_at=resume_at
            )
        elif kind is EventType.PATCH_APPLIED and span is None:
            # patched() took the new branch here: an instant (a second marker of it adds nothing)
            change = event.data_as(PatchAppliedData).change_id
            spans[cid] = SpanView(
                kind="patch", id=cid, name=change, status="applied", created_at=at, ended_at=at
            )
        elif kind is EventType.HOOK_CREATED:
            token: str = event.data_as(HookCreatedData).token
            child = child_of_token(token)  # a child run's start is recorded as a hook with a reserved token
            if child is not None:
                spans[cid] = SpanView(kind="child", id=cid, name=child, status="running", created_at=at)
            else:
                spans[cid] = SpanView(kind="hook", id=cid, name=token, status="waiting", created_at=at)
        elif span is not None and span.kind == "child":
            if kind is EventType.HOOK_RECEIVED:  # the child's end, with its outcome
                span.status, span.ended_at = "ended", at
        elif span is None:
            continue  # an event of an entity this log never created (not expected)
        elif kind is EventType.STEP_STARTED:
            _start_attempt(span, at)
        elif kind in _STEP_ENDS:
            _end_attempt(span, event)
        elif kind is EventType.WAIT_COMPLETED:
            span.status, span.ended_at = "completed", at
        elif kind is EventType.HOOK_RECEIVED:
            span.received_at.append(at)
            span.status, span.ended_at = "received", at
        elif kind is EventType.HOOK_DISPOSED:
            span.status, span.ended_at = "disposed", at
    return list(spans.values())


def _start_attempt(span: SpanView, at: datetime) -> None:
    if span.attempts and span.attempts[-1].outcome == "running":
        span.attempts[-1] = span.attempts[-1].model_copy(update={"outcome": "interrupted", "ended_at": at})
    span.attempts.append(AttemptView(attempt=len(span.attempts) + 1, started_at=at, outcome="running"))
    span.status = "running"


def _end_attempt(span: SpanView, event: Event) -> None:
    outcome = _STEP_ENDS[event.type]
    if not span.attempts or span.attempts[-1].outcome != "running":  # no logged start (not expected)
        span.attempts.append(
            AttemptView(attempt=len(span.attempts) + 1, started_at=event.created_at, outcome="running")
        )
    update = {
        "outcome": outcome,
        "ended_at": event.created_at,
        "error": event_error(event),
        "retry_after": event.data.retry_after if isinstance(event.data, StepRetryingData) else None,
    }
    span.attempts[-1] = span.attempts[-1].model_copy(update=update)
    span.status = outcome
    if outcome != "retrying":
        span.ended_at = event.created_at


def _cut(span: SpanView, ended: datetime) -> None:
    """Close what the run's end left open: a running attempt is abandoned, a sleep or hook ends."""
    if span.attempts and span.attempts[-1].outcome == "running":
        span.attempts[-1] = span.attempts[-1].model_copy(update={"outcome": "abandoned", "ended_at": ended})
    if span.ended_at is None:
        span.ended_at = ended
        if span.kind == "step":
            span.status = "abandoned"


def _covered(intervals: list[tuple[datetime, datetime | None]]) -> float:
    """Seconds covered by the union of ``intervals`` (open ones, ending None, are skipped)."""
    total = 0.0
    reach: datetime | None = None
    for start, end in sorted((s, e) for s, e in intervals if e is not None and e > s):
        if reach is not None and start < reach:
            start = reach
        if end > start:
            total += (end - start).total_seconds()
            reach = end
    return total
