"""``world-aws run`` and ``world-aws demo``: one workflow run to its end on a local World.

The run's timeline, a line per event as the log grows (a retried attempt's error on its line),
then the status, a summary line, the result (or the error with its cause and traceback, and
each failed attempt's). Exit codes: 0 the
run completed, 1 it failed or was cancelled, 2 bad arguments, 3 ``--timeout``
passed first (the run is left running), 130 Ctrl-C (the run is left where it was).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from world_aws.api.payloads import error_view
from world_aws.api.timeline import timeline
from world_aws.cli import render
from world_aws.cli.timeline_table import HEADER, TimelineTable, gap_note, timeline_line
from world_aws.client.handle import RunHandle
from world_aws.contract.records import Event, EventType, ResolveData, Run, RunStatus
from world_aws.errors import BadInput
from world_aws.serde.codec import decode_error
from world_aws.workflow.registry import Workflows

if TYPE_CHECKING:
    from world_aws.local.moto_process import MotoProcess

EXIT_TIMEOUT = 3
EXIT_INTERRUPTED = 130
# A result longer than this is cut in the text output (``--json`` has it all).
MAX_SHOWN_RESULT_CHARS = 4_000
# The log is read for new events this often (one Query each): a progress line is at most this late.
POLL_SECONDS = 0.1
# The run's status is read this often too, in case its terminal event cannot reach the log.
STATUS_EVERY_SECONDS = 1.0
# A run whose status is terminal is followed this much longer for its terminal event: the status
# changes in the write that reserves the event's position, the event lands in the next one.
TERMINAL_EVENT_GRACE_SECONDS = 2.0
_TERMINAL_EVENTS = frozenset({EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED})


def run_workflow(
    app: Workflows,
    workflow: str,
    args: list[Any],
    kwargs: dict[str, Any],
    ns: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    *,
    prestarted: MotoProcess | None = None,
) -> int:
    """Run ``workflow`` on a fresh local stack of kind ``ns.world`` and report it; returns the exit code.

    ``prestarted``: an embedded stack already starting in a child process, used if the kind is embedded.
    """
    from world_aws.local.stack import local_stack

    quiet = bool(ns.json)
    handle: RunHandle | None = None
    try:
        with local_stack(
            app, kind=ns.world, run_schedules=False, prestarted=prestarted, encrypt=ns.encrypt
        ) as stack:
            if not quiet:
                where = f"moto on {stack.endpoint_url}" if stack.endpoint_url else "the in-memory World"
                out.write(f"world-aws: running {workflow} on {where}\n")
            try:
                handle = stack.runtime.start(workflow, *args, **kwargs)
            except BadInput as exc:
                err.write(f"world-aws: error: {exc}\n")
                return 2
            if not quiet:
                out.write(f"run {handle.run_id}\n\ntimeline:\n{HEADER}\n")
            events = _follow(handle, stack.world, ns.timeout, None if quiet else out)  # with attempts' errors
            run = handle.run()
            result, error = _outcome(handle, run, ns.timeout)
    except KeyboardInterrupt:
        left = f"run {handle.run_id} was left unfinished" if handle else "no run was started"
        err.write(
            f"\nworld-aws: interrupted: {left}; the local stack is gone with it "
            "(to keep runs you can inspect or cancel, use `world-aws dev` and `world-aws start`)\n"
        )
        return EXIT_INTERRUPTED
    if quiet:
        document = {
            "run_id": handle.run_id,
            "status": run.status.value,
            "result": render.to_jsonable(result),
            "error": error,
            "events": render.events_json(events),
        }
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        _print(run, result, error, events, out)
    if run.status is RunStatus.COMPLETED:
        return 0
    return EXIT_TIMEOUT if not run.status.terminal else 1


def _print(run: Run, result: Any, error: dict[str, Any] | None, events: list[Event], out: TextIO) -> None:
    """What follows the live timeline: the status, a summary, the result or error.

    A run that did not complete also gets each failed attempt with its traceback; a completed
    one's retried attempts are in its timeline, one line each (``--json`` has their tracebacks).
    """
    out.write(f"\nstatus: {run.status.value}{_took(run)}\n")
    as_of = run.completed_at or (events[-1].created_at if events else run.created_at)
    out.write(f"summary: {render.summary_line(_summary(run, events, as_of))}\n")
    if error is None:
        shown = json.dumps(render.to_jsonable(result), indent=2)
        if len(shown) > MAX_SHOWN_RESULT_CHARS:
            shown = f"{shown[:MAX_SHOWN_RESULT_CHARS]}... ({len(shown)} characters; --json prints it all)"
        out.write(f"result: {shown}\n")
    else:
        render.print_error(error, out)
    if run.status is not RunStatus.COMPLETED:
        render.print_attempt_errors(render.events_json(events), out)


def _summary(run: Run, events: list[Event], as_of: datetime) -> dict[str, Any]:
    summary = timeline(run, events, as_of=as_of).summary
    return summary.model_dump(mode="json")


def _took(run: Run) -> str:
    """`` in 1.2s``: the run's own duration (started to ended, as its timeline shows), not the command's."""
    started = run.started_at or run.created_at
    if run.completed_at is None or started is None:
        return ""
    return f" in {(run.completed_at - started).total_seconds():.1f}s"


def _follow(handle: RunHandle, world: Any, timeout: float, out: TextIO | None) -> list[Event]:
    """Read the run's log as it grows, printing each new event, until its terminal event (or ``timeout``).

    Returns the whole log read, with payloads. The end is the terminal event rather than
    the run's status: the status changes one write before the event lands, and the
    timeline shown afterwards must include it.
    """
    started = time.monotonic()
    deadline, next_status = started + timeout, started + STATUS_EVERY_SECONDS
    terminal_since: float | None = None
    seen: list[Event] = []
    table = TimelineTable()
    while True:
        fresh = world.events.list(
            handle.run_id, after=seen[-1].position if seen else 0, resolve_data=ResolveData.ALL
        )
        seen += fresh
        if out is not None and fresh:
            for row in render.events_json(fresh):
                out.write(timeline_line(table.add(row), with_error=True) + "\n")
            out.flush()
        now = time.monotonic()
        if any(event.type in _TERMINAL_EVENTS for event in fresh) or now > deadline:
            note = gap_note(table.skipped)
            if out is not None and note:
                out.write(note + "\n")
            return seen
        if now >= next_status:
            next_status = now + STATUS_EVERY_SECONDS
            if terminal_since is None and handle.status().terminal:
                terminal_since = now
        if terminal_since is not None and now - terminal_since > TERMINAL_EVENT_GRACE_SECONDS:
            return seen
        time.sleep(POLL_SECONDS)


def _outcome(handle: RunHandle, run: Run, timeout: float) -> tuple[Any, dict[str, Any] | None]:
    status = run.status
    if status is RunStatus.COMPLETED:  # a run that continued as new: its chain's last result
        return handle.result(timeout=timeout), None
    if status is RunStatus.FAILED:  # with its traceback and causes, as GET /runs/{run_id} shows it
        return None, error_view(decode_error(run.error or b""), code=run.error_code).model_dump(mode="json")
    if status is RunStatus.CANCELLED:
        return None, {"type": "RunCancelledError", "message": "the run was cancelled", "code": None}
    message = f"the run is still {status.value} after --timeout (exit {EXIT_TIMEOUT})"
    return None, {"type": "Timeout", "message": message, "code": None}
