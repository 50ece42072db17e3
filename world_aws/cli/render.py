"""How the CLI shows runs: live progress lines, the timeline table, run lists, and ``--json``.

The timeline is computed from event rows as the HTTP API returns them
(``GET /runs/{run_id}/events``: position, type, correlation id, step name,
token, created_at), so ``world-aws run`` (local records) and ``world-aws
inspect`` (over HTTP) show the same table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TextIO

from world_aws.api.jsonable import to_jsonable
from world_aws.api.views import event_rows, step_names
from world_aws.contract.records import (
    Event,
    EventType,
    PatchAppliedData,
    StepFailedData,
    StepRetryingData,
    TokenData,
)
from world_aws.runtime.serde import decode_error

__all__ = [
    "attempt_line",
    "events_json",
    "print_attempt_errors",
    "print_error",
    "print_rows_timeline",
    "print_runs",
    "print_steps",
    "print_timeline",
    "progress_line",
    "short_name",
    "step_names",
    "summary_line",
    "timeline",
    "timeline_rows",
    "to_jsonable",
]

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
_STEP_OUTCOMES = frozenset({EventType.STEP_COMPLETED, EventType.STEP_FAILED, EventType.STEP_RETRYING})


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def progress_line(event: Event, names: dict[str, str]) -> str:
    """One event as it happens; a failed attempt (read with its data) shows its error."""
    data = event.data
    token = data.token if isinstance(data, TokenData) else None
    change = data.change_id if isinstance(data, PatchAppliedData) else None
    label = short_name(names.get(event.correlation_id or "", "")) or token or change or ""
    line = f"  {event.position:>4}  {event.type.value:<15} {label}".rstrip()
    if isinstance(data, StepRetryingData | StepFailedData) and data.error:
        info = decode_error(data.error)
        line += f"  {info.type}: {_first_line(info.message)}"
    return line


def print_error(error: dict[str, Any], out: TextIO, *, label: str = "error") -> None:
    """A run's error as the API shows it: its line, then each cause with its traceback."""
    code = f" ({error['code']})" if error.get("code") else ""
    out.write(f"{label}: {error['type']}: {error['message']}{code}\n")
    cause = error.get("cause")
    shown = error
    while cause:
        out.write(f"  caused by {cause['type']}: {_first_line(cause['message'])}\n")
        shown, cause = cause, cause.get("cause")
    if shown.get("stack"):
        out.write(_indent(shown["stack"]))


def print_attempt_errors(rows: list[dict[str, Any]], out: TextIO) -> None:
    """Each failed step attempt of the log (rows with an ``error``), with its traceback."""
    failed = [row for row in timeline_rows(rows) if row.get("error")]
    if not failed:
        return
    out.write("\nfailed attempts:\n")
    for row in failed:
        error = row["error"]
        out.write(f"  {row['position']:>4}  {row['step']} attempt {row['attempt']}: ")
        out.write(f"{error['type']}: {_first_line(error['message'])}\n")
        if error.get("stack"):
            out.write(_indent(error["stack"], "        "))


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def _indent(text: str, prefix: str = "    ") -> str:
    return "".join(f"{prefix}{line}\n" for line in text.rstrip("\n").split("\n"))


def events_json(events: list[Event]) -> list[dict[str, Any]]:
    """The run's events as the HTTP API shows them (``GET /runs/{run_id}/events``)."""
    return [row.model_dump(mode="json") for row in event_rows(events)]


def timeline(events: list[Event]) -> list[dict[str, Any]]:
    """:func:`timeline_rows` of local event records."""
    return timeline_rows(events_json(events))


def timeline_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per event: position, event, step (or hook token), attempt, and a duration where one ends.

    ``attempt`` is the step's attempt number on the events that start an attempt
    (``step_started``, an inline step's ``step_created``) and on outcomes; ``duration_s`` is the time
    since the step started (for an outcome), the run started (for its end), the
    wait was created, or the hook was created or last received.

    Args:
        rows: event rows in position order, as ``GET /runs/{run_id}/events`` returns them.
    """
    opened: dict[str, datetime] = {}
    attempts: dict[str, int] = {}
    names: dict[str, str] = {}
    for row in rows:
        if row.get("correlation_id") and row.get("step_name"):
            names.setdefault(row["correlation_id"], row["step_name"])
    out = []
    for row in rows:
        kind = _event_type(row.get("type"))
        cid = row.get("correlation_id") or "<run>"
        at = _parse_time(row.get("created_at"))
        duration = None
        attempt = None
        starts = kind is EventType.STEP_STARTED or (kind is EventType.STEP_CREATED and row.get("owner"))
        if starts:  # an inline step's create is also its first start
            attempts[cid] = attempt = attempts.get(cid, 0) + 1
        elif kind in _STEP_OUTCOMES:
            attempt = attempts.get(cid)
        if kind in _CLOSES and cid in opened and at is not None:
            duration = (at - opened[cid]).total_seconds()
        if (kind in _OPENS or starts or kind is EventType.HOOK_RECEIVED) and at is not None:
            opened[cid] = at
        out.append(
            {
                "position": row.get("position"),
                "event": row.get("type"),
                "step": short_name(names.get(cid, "")) or row.get("token") or row.get("change_id") or "",
                "attempt": attempt,
                "duration_s": duration,
                "error": row.get("error"),
            }
        )
    return out


def print_timeline(events: list[Event], out: TextIO) -> None:
    print_rows_timeline(events_json(events), out)


def print_rows_timeline(rows: list[dict[str, Any]], out: TextIO) -> None:
    """The timeline table of :func:`timeline_rows`."""
    out.write(f"  {'pos':>4}  {'event':<15} {'step':<24} {'attempt':>7} {'duration':>10}\n")
    for row in timeline_rows(rows):
        duration = "" if row["duration_s"] is None else _duration(row["duration_s"])
        attempt = "" if row["attempt"] is None else str(row["attempt"])
        out.write(
            f"  {row['position']:>4}  {row['event']:<15} {row['step']:<24} {attempt:>7} {duration:>10}\n"
        )


def print_steps(steps: list[dict[str, Any]], out: TextIO) -> None:
    """A table of a run's steps as ``GET /runs/{run_id}/steps`` returns them, each attempt under its step.

    An attempt line shows its number, outcome, duration and, for a failed one, its error's
    first line (``print_attempt_errors`` prints the tracebacks).
    """
    out.write(f"  {'step':<24} {'status':<10} {'attempt':>7}  step id\n")
    for step in steps:
        name = short_name(str(step.get("step_name", "")))
        status, attempt = step.get("status", ""), step.get("attempt", "")
        out.write(f"  {name:<24} {status:<10} {attempt:>7}  {step.get('step_id', '')}\n")
        for row in step.get("attempts") or []:
            out.write(f"      {ATTEMPT_MARK} {attempt_line(row)}\n")


ATTEMPT_MARK = "attempt"


def attempt_line(attempt: dict[str, Any]) -> str:
    """``2  retrying     12 ms  ConnectionError: unavailable``: one attempt of ``GET .../steps``."""
    started, ended = _parse_time(attempt.get("started_at")), _parse_time(attempt.get("ended_at"))
    took = _duration((ended - started).total_seconds()) if started and ended else ""
    line = f"{attempt.get('attempt', ''):>2}  {attempt.get('outcome', ''):<11} {took:>8}"
    error = attempt.get("error")
    if error:
        line += f"  {short_name(str(error.get('type', '')))}: {_first_line(str(error.get('message', '')))}"
    return line.rstrip()


def summary_line(summary: dict[str, Any]) -> str:
    """The run in one line, from a ``summary`` of the API (steps, retries, duration, waiting time).

    E.g. ``3 steps, 5 attempts (2 retries, 1 failed); 6.4 s, 5.5 s of it waiting (1 sleep, 1 hook)``.
    """
    steps, attempts = summary.get("steps", 0), summary.get("attempts", 0)
    retries, failed = summary.get("retries", 0), summary.get("failed_steps", 0)
    line = f"{_count(steps, 'step')}, {_count(attempts, 'attempt')} ({_count(retries, 'retry', 'retries')}"
    line += f", {failed} failed)" if failed else ")"
    if summary.get("duration_s") is not None:
        line += f"; {_duration(float(summary['duration_s']))}"
    waits, hooks = summary.get("waits", 0), summary.get("hooks", 0)
    if waits or hooks:
        kinds = ", ".join(
            k for k in (_count(waits, "sleep") if waits else "", _count(hooks, "hook") if hooks else "") if k
        )
        line += f", {_duration(float(summary.get('waiting_s') or 0))} of it waiting ({kinds})"
    return line


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def print_links(links: dict[str, Any] | None, out: TextIO) -> None:
    """A run's parent, root, children and continue-as-new links (``GET /runs/{id}``'s ``links``)."""
    if not links:
        return
    for key, label in (
        ("parent_run_id", "parent"),
        ("root_run_id", "root"),
        ("continued_from", "continues"),
        ("continued_as", "continued"),
    ):
        if links.get(key):
            out.write(f"{label:<9} {links[key]}\n")
    for kid in links.get("children") or []:
        out.write(f"{'child':<9} {kid}\n")


def print_runs(runs: list[dict[str, Any]], out: TextIO) -> None:
    """A table of runs as ``GET /runs`` returns them."""
    out.write(f"{'run id':<32} {'workflow':<20} {'status':<10} {'created':<20} {'duration':>10}\n")
    for run in runs:
        created = _parse_time(run.get("created_at"))
        started = _parse_time(run.get("started_at")) or created
        completed = _parse_time(run.get("completed_at"))
        duration = _duration((completed - started).total_seconds()) if completed and started else ""
        shown = created.strftime("%Y-%m-%d %H:%M:%S") if created else ""
        out.write(
            f"{run.get('run_id', ''):<32} {run.get('workflow', ''):<20} {run.get('status', ''):<10} "
            f"{shown:<20} {duration:>10}\n"
        )
        if run.get("blocked"):
            out.write(f"  blocked: {blocked_line(run['blocked'])}\n")


def blocked_line(blocked: dict[str, Any]) -> str:
    """Where a held run diverged, on one line: the deployment, the log position, expected vs actual."""
    where = f"on deployment {blocked.get('deployment_id')} at position {blocked.get('position')}"
    if blocked.get("expected") is not None:
        return f"{where}: the log has {blocked['expected']!r}, the code calls {blocked.get('actual')!r}"
    return f"{where}: {_first_line(str(blocked.get('message', '')))}"


def print_deployments(deployments: list[dict[str, Any]], out: TextIO) -> None:
    """A table of deployments as ``GET /deployments`` returns them, oldest first."""
    out.write(f"{'deployment':<24} {'live runs':>10}\n")
    for deployment in deployments:
        newest = "  (newest: new runs start here)" if deployment.get("newest") else ""
        out.write(f"{deployment.get('deployment_id', ''):<24} {deployment.get('live_runs', 0):>10}{newest}\n")


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 600:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def _event_type(value: Any) -> EventType | None:
    try:
        return EventType(value)
    except ValueError:
        return None  # a newer server's event type: shown, never timed


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
