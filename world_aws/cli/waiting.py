"""The operator commands that wait on a run, and the workflows list: ``result``, ``watch``, ``workflows``.

``world-aws result RUN`` prints a completed run's result as JSON (exit 0), a failed or
cancelled run's error (exit 1), or says the run is still going (exit 3); ``--wait`` waits
for its end first (``--timeout`` seconds, default 120, then exit 3). ``world-aws watch RUN``
prints the run's timeline as its log grows, a line per event as ``world-aws run`` does,
then its result or error, with the same exit codes. ``world-aws start WORKFLOW --wait``
starts a run and then does what ``result --wait`` does. ``world-aws workflows`` lists the
workflows the API can start, with their signatures and the workflows that call each as a
child. Waiting polls the API (``POLL_SECONDS``): nothing needs more than the API's reads.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any, TextIO

from world_aws.cli import render
from world_aws.cli.client import ApiClient
from world_aws.cli.timeline_table import HEADER, TimelineTable, gap_note, timeline_line

# The run's status (and, for watch, its new events) is read this often while waiting.
POLL_SECONDS = 0.25
DEFAULT_TIMEOUT_SECONDS = 120.0
EXIT_FAILED = 1
EXIT_NOT_ENDED = 3
_TERMINAL = frozenset({"completed", "failed", "cancelled"})

COMMANDS = ("workflows", "result", "watch")


def add_commands(sub: Any, common: argparse.ArgumentParser, operate: Callable[[Any], Any]) -> None:
    """Add ``workflows``, ``result`` and ``watch`` (``operate`` wraps each as the other operator commands)."""
    workflows = sub.add_parser("workflows", parents=[common], help="the workflows the API can start")
    workflows.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    workflows.set_defaults(func=operate(list_workflows))

    result = sub.add_parser("result", parents=[common], help="a run's result (exit 0), or its error (exit 1)")
    result.add_argument("run_id", metavar="RUN_ID")
    result.add_argument("--wait", action="store_true", help="wait for the run to end first")
    add_timeout(result)
    result.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    result.set_defaults(func=operate(show_result))

    watch = sub.add_parser("watch", parents=[common], help="follow a run's timeline until it ends")
    watch.add_argument("run_id", metavar="RUN_ID")
    add_timeout(watch)
    watch.set_defaults(func=operate(watch_run))


def add_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help=f"seconds to wait (default {DEFAULT_TIMEOUT_SECONDS:g}); then exit {EXIT_NOT_ENDED}",
    )


def list_workflows(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    listed = client.call("GET", "/workflows")
    if ns.json:
        out.write(json.dumps(listed, indent=2) + "\n")
        return 0
    for workflow in listed["workflows"]:
        callers = workflow.get("called_by") or []
        child = f"   (child of {', '.join(callers)})" if callers else ""
        out.write(f"{workflow['name']}{workflow['signature']}{child}\n")
    return 0


def show_result(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    run = wait_for_end(client, ns.run_id, ns.timeout) if ns.wait else client.get_run(ns.run_id)
    return report(run, out, as_json=bool(getattr(ns, "json", False)))


def wait_for_end(client: ApiClient, run_id: str, timeout: float) -> Any:
    """The run once it has ended, or as it is when ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        run = client.get_run(run_id)
        if run["status"] in _TERMINAL or time.monotonic() >= deadline:
            return run
        time.sleep(POLL_SECONDS)


def report(run: Any, out: TextIO, *, as_json: bool = False) -> int:
    """A run's result (exit 0), its error (exit 1), or that it has not ended (exit 3)."""
    status = run["status"]
    if as_json:
        keep = ("run_id", "status", "result", "error")
        out.write(json.dumps({k: run.get(k) for k in keep}, indent=2) + "\n")
    elif status == "completed":
        out.write(json.dumps(run.get("result"), indent=2) + "\n")
    elif status in _TERMINAL:
        render.print_error(run.get("error") or {"type": status, "message": f"the run {status}"}, out)
    else:
        out.write(f"run {run['run_id']} is {status}: it has not ended (exit {EXIT_NOT_ENDED})\n")
    if status == "completed":
        return 0
    return EXIT_FAILED if status in _TERMINAL else EXIT_NOT_ENDED


def watch_run(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    """Print the run's timeline a line per event until its end (or ``--timeout``), then its outcome."""
    deadline = time.monotonic() + ns.timeout
    table = TimelineTable()
    after = 0
    out.write(f"run {ns.run_id}\n\ntimeline:\n{HEADER}\n")
    while True:
        run = client.get_run(ns.run_id)  # first: the events read next include its end, if it ended
        page = client.call("GET", f"/runs/{ns.run_id}/events", query={"after": after})
        for row in page["events"]:
            out.write(timeline_line(table.add(row), with_error=True) + "\n")
            after = max(after, int(row["position"]))
        out.flush()
        if page.get("next_after") is not None:
            continue  # more pages of what is there already
        if run["status"] in _TERMINAL or time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    note = gap_note(table.skipped)
    if note:
        out.write(note + "\n")
    out.write(f"\nstatus: {run['status']}\n")
    return report(run, out)
