"""How the CLI shows runs: live progress lines, the timeline table, run lists, and ``--json``.

The timeline is computed from event rows as the HTTP API returns them
(``GET /runs/{run_id}/events``: position, type, correlation id, step name,
token, created_at), so ``world-aws run`` (local records) and ``world-aws
inspect`` (over HTTP) show the same table.
"""

from __future__ import annotations

from typing import Any, TextIO

from world_aws.api.jsonable import to_jsonable
from world_aws.api.views import event_rows, step_names
from world_aws.cli.timeline_table import (
    HEADER,
    TimelineTable,
    duration_text,
    gap_note,
    parse_time,
    short_name,
    timeline_line,
)
from world_aws.contract.records import Event, PatchAppliedData, StepFailedData, StepRetryingData, TokenData
from world_aws.serde.codec import decode_error

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


def print_error(
    error: dict[str, Any], out: TextIO, *, label: str = "error", width: int | None = None
) -> None:
    """A run's error as the API shows it: its line, then each cause with its traceback.

    ``width``: the label is padded to it, as ``inspect`` pads its field names, instead of
    ``label:``.
    """
    code = f" ({error['code']})" if error.get("code") else ""
    head = f"{label:<{width}}" if width is not None else f"{label}: "
    out.write(f"{head}{error['type']}: {error['message']}{code}\n")
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

    See :class:`world_aws.cli.timeline_table.TimelineTable`, which builds them.

    Args:
        rows: event rows in position order, as ``GET /runs/{run_id}/events`` returns them.
    """
    names: dict[str, str] = {}
    for row in rows:
        if row.get("correlation_id") and row.get("step_name"):
            names.setdefault(row["correlation_id"], row["step_name"])
    table = TimelineTable(names)
    return [table.add(row) for row in rows]


def print_timeline(events: list[Event], out: TextIO) -> None:
    print_rows_timeline(events_json(events), out)


def print_rows_timeline(rows: list[dict[str, Any]], out: TextIO) -> None:
    """The timeline table of :func:`timeline_rows`, and a note on the positions it skips."""
    out.write(HEADER + "\n")
    table = TimelineTable()
    for row in rows:
        out.write(timeline_line(table.add(row)) + "\n")
    note = gap_note(table.skipped)
    if note:
        out.write(note + "\n")


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
        if step.get("waiting"):
            out.write(f"      waiting: {step['waiting']}\n")


ATTEMPT_MARK = "attempt"


def attempt_line(attempt: dict[str, Any]) -> str:
    """``2  retrying     12 ms  ConnectionError: unavailable``: one attempt of ``GET .../steps``."""
    started, ended = parse_time(attempt.get("started_at")), parse_time(attempt.get("ended_at"))
    took = duration_text((ended - started).total_seconds()) if started and ended else ""
    line = f"{attempt.get('attempt', ''):>2}  {attempt.get('outcome', ''):<11} {took:>8}"
    error = attempt.get("error")
    if error:
        line += f"  {short_name(str(error.get('type', '')))}: {_first_line(str(error.get('message', '')))}"
    return line.rstrip()


def summary_line(summary: dict[str, Any]) -> str:
    """The run in one line, from a ``summary`` of the API (steps, retries, duration, waiting time).

    E.g. ``3 steps, 5 attempts (2 retries, 1 failed); 6.4 s, 5.5 s of it waiting (1 sleep, 1 hook)``;
    child runs are counted apart from hooks (``2 children``).
    """
    steps, attempts = summary.get("steps", 0), summary.get("attempts", 0)
    retries, failed = summary.get("retries", 0), summary.get("failed_steps", 0)
    line = f"{_count(steps, 'step')}, {_count(attempts, 'attempt')} ({_count(retries, 'retry', 'retries')}"
    line += f", {failed} failed)" if failed else ")"
    if summary.get("duration_s") is not None:
        line += f"; {duration_text(float(summary['duration_s']))}"
    waits, hooks, children = summary.get("waits", 0), summary.get("hooks", 0), summary.get("children", 0)
    if waits or hooks or children:
        counted = ((waits, "sleep", None), (hooks, "hook", None), (children, "child", "children"))
        kinds = ", ".join(_count(n, one, many) for n, one, many in counted if n)
        line += f", {duration_text(float(summary.get('waiting_s') or 0))} of it waiting ({kinds})"
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
        created = parse_time(run.get("created_at"))
        started = parse_time(run.get("started_at")) or created
        completed = parse_time(run.get("completed_at"))
        duration = duration_text((completed - started).total_seconds()) if completed and started else ""
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


def audit_line(entry: dict[str, Any]) -> str:
    """One audit entry of a run: ``cancel by <actor> at <time> (<detail>)``."""
    detail = f" ({entry['detail']})" if entry.get("detail") else ""
    return f"{entry['action']} by {entry['actor']} at {entry['at']}{detail}"
