"""The timeline table, built a row at a time: ``world-aws run`` prints each event once, as it lands.

:class:`TimelineTable` turns event rows (as ``GET /runs/{run_id}/events`` returns them) into
timeline rows (position, event, step or hook token, attempt, duration) one by one, so the
live output of ``world-aws run`` is the table itself, not a progress list followed by the
same events again. :func:`timeline_line` formats a row, with a failed attempt's error on one
line (``RetryableError: payment provider timed out``); the traceback stays in the log, in
``--json`` and in ``world-aws inspect``. A child run's hook events (its reserved token
``wchild_<run id>``) show as ``child_started`` / ``child_ended`` of ``child <run id>``;
``--json`` keeps the log's own types.

Positions may skip numbers: a write that was refused (a duplicate, a lost race, or an inline
step's retry written again once its step item exists) had reserved a position, which was
sealed with a ``noop`` that the log leaves out. :func:`gap_note` says so under a table with gaps.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from world_aws.contract.records import EventType
from world_aws.engine.children import CHILD_TOKEN_PREFIX

HEADER = f"  {'pos':>4}  {'event':<15} {'step':<24} {'attempt':>7} {'duration':>10}"

# An event of these kinds opens a span on its correlation id (the run's own: "<run>") ...
_OPENS = frozenset(
    {EventType.STEP_STARTED, EventType.RUN_STARTED, EventType.WAIT_CREATED, EventType.HOOK_CREATED}
)
# ... that one of these closes (a hook's span is the wait for each payload).
_CLOSES = frozenset(
    {
        EventType.STEP_COMPLETED,
        EventType.STEP_FAILED,
        EventType.STEP_RETRYING,
        EventType.RUN_COMPLETED,
        EventType.RUN_FAILED,
        EventType.RUN_CANCELLED,
        EventType.WAIT_COMPLETED,
        EventType.HOOK_RECEIVED,
    }
)
# How the hook events of a child call are shown: the child's start and end.
_CHILD_EVENTS = {
    EventType.HOOK_CREATED: "child_started",
    EventType.HOOK_RECEIVED: "child_ended",
    EventType.HOOK_DISPOSED: "child_released",
}
_STEP_OUTCOMES = frozenset({EventType.STEP_COMPLETED, EventType.STEP_FAILED, EventType.STEP_RETRYING})


class TimelineTable:
    """Timeline rows from event rows given in position order, one at a time.

    ``attempt`` is the step's attempt number on the events that start an attempt
    (``step_started``, an inline step's ``step_created``) and on outcomes; ``duration_s`` is the
    time since the step started (for an outcome), the run started (for its end), the wait was
    created, or the hook was created or last received.

    Args:
        names: step names by correlation id known beforehand (rows name their step too).
    """

    def __init__(self, names: dict[str, str] | None = None) -> None:
        self._opened: dict[str, datetime] = {}
        self._attempts: dict[str, int] = {}
        self._names: dict[str, str] = dict(names or {})
        self.last_position = 0
        self.skipped: list[int] = []

    def add(self, row: dict[str, Any]) -> dict[str, Any]:
        """The timeline row of event ``row``."""
        kind = event_type(row.get("type"))
        cid = row.get("correlation_id") or "<run>"
        if row.get("correlation_id") and row.get("step_name"):
            self._names.setdefault(cid, row["step_name"])
        position = row.get("position")
        if isinstance(position, int):
            self.skipped += range(self.last_position + 1, position)
            self.last_position = max(self.last_position, position)
        at = parse_time(row.get("created_at"))
        duration = None
        attempt = None
        starts = kind is EventType.STEP_STARTED or (kind is EventType.STEP_CREATED and row.get("owner"))
        if starts:  # an inline step's create is also its first start
            self._attempts[cid] = attempt = self._attempts.get(cid, 0) + 1
        elif kind in _STEP_OUTCOMES:
            attempt = self._attempts.get(cid)
        if kind in _CLOSES and cid in self._opened and at is not None:
            duration = (at - self._opened[cid]).total_seconds()
        if (kind in _OPENS or starts or kind is EventType.HOOK_RECEIVED) and at is not None:
            self._opened[cid] = at
        token = row.get("token") or ""
        shown = row.get("type")
        if token.startswith(CHILD_TOKEN_PREFIX):  # a child run, recorded as a hook with a reserved token
            shown = _CHILD_EVENTS.get(kind, shown) if kind is not None else shown
            token = f"child {token[len(CHILD_TOKEN_PREFIX) :]}"
        return {
            "position": position,
            "event": shown,
            "step": short_name(self._names.get(cid, "")) or token or row.get("change_id") or "",
            "attempt": attempt,
            "duration_s": duration,
            "error": row.get("error"),
        }


def timeline_line(row: dict[str, Any], *, with_error: bool = False) -> str:
    """One timeline row as a table line; ``with_error``: a failed attempt's error after it, on one line."""
    duration = "" if row["duration_s"] is None else duration_text(row["duration_s"])
    attempt = "" if row["attempt"] is None else str(row["attempt"])
    line = f"  {row['position']:>4}  {row['event']:<15} {row['step']:<24} {attempt:>7} {duration:>10}"
    error = row.get("error")
    if with_error and error:
        line += f"  {error_line(error)}"
    return line


def error_line(error: dict[str, Any]) -> str:
    """``RetryableError: payment provider timed out``: an error's short type and first message line."""
    return f"{short_name(str(error.get('type', '')))}: {str(error.get('message', '')).split(chr(10), 1)[0]}"


def gap_note(skipped: list[int]) -> str | None:
    """The line explaining the positions a table skips, or None if it skips none."""
    if not skipped:
        return None
    shown = ", ".join(str(p) for p in skipped[:10]) + (", ..." if len(skipped) > 10 else "")
    return f"  (no event at {shown}: a refused write had reserved it; the noop sealing it is not listed)"


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def duration_text(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 600:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def event_type(value: Any) -> EventType | None:
    try:
        return EventType(value)
    except ValueError:
        return None  # a newer server's event type: shown, never timed


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
