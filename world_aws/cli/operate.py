"""The operator commands (start, ls, inspect, cancel, fork, resume, schedules, stream, ...) over the HTTP API.

``workflows``, ``result``, ``watch`` and ``start --wait`` are in :mod:`world_aws.cli.waiting`.

They talk to ``$WORLD_AWS_API`` (``world-aws dev``, or a deployed stack's API
URL) or ``--api URL`` through :class:`world_aws.cli.client.ApiClient`. ``--api``
and ``--sign`` go before or after the command (``world-aws --api URL ls`` or
``world-aws ls --api URL``; after it wins when both are given). Exit
codes: 0 done; 1 the API refused because of the run's state (cancelling a run
that has ended, forking one that has not); 2 anything else (bad arguments or JSON, unknown run or token,
unreachable API), always with a one-line message on stderr.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO
from urllib.parse import quote

from world_aws.cli import render, waiting
from world_aws.cli.client import ApiClient, ApiError, Unreachable, api_url
from world_aws.cli.options import json_option, kwarg_options
from world_aws.cli.schedules import list_schedules
from world_aws.contract.records import RunStatus
from world_aws.errors import BadInput

Command = Callable[[ApiClient, argparse.Namespace, TextIO], int]


COMMANDS = (
    "start",
    "ls",
    "inspect",
    "cancel",
    "fork",
    "resume",
    "schedules",
    "gate",
    "stream",
    "deployments",
    "runs",
    *waiting.COMMANDS,
)


def add_api_options(parser: argparse.ArgumentParser, *, default: Any = None) -> None:
    """``--api URL`` and ``--sign/--no-sign`` on ``parser``.

    The top-level parser gets them with ``default=None``; each operator command with
    ``argparse.SUPPRESS``, so that a value given before the command is not reset by
    the command's own default.
    """
    parser.add_argument(
        "--api",
        metavar="URL",
        default=default,
        help="the API's base URL (default: $WORLD_AWS_API, else http://127.0.0.1:8787)",
    )
    parser.add_argument(
        "--sign",
        action=argparse.BooleanOptionalAction,
        default=default,
        help="SigV4-sign requests with your AWS credentials (default: only for *.execute-api.* hosts)",
    )


def add_commands(sub: Any) -> None:
    """Add the operator subcommands (``COMMANDS``) to the ``world-aws`` parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    add_api_options(common, default=argparse.SUPPRESS)

    start = sub.add_parser("start", parents=[common], help="start a run through the HTTP API; prints its id")
    start.add_argument("workflow", help="the workflow's name")
    start.add_argument("--arg", action="append", default=[], metavar="JSON", help="a positional argument")
    start.add_argument("--kwarg", action="append", default=[], metavar="NAME=JSON", help="a keyword argument")
    start.add_argument("--idempotency-key", metavar="KEY", help="the same key starts the same run")
    start.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    start.add_argument("--wait", action="store_true", help="wait for the run's end; print its result")
    waiting.add_timeout(start)
    start.set_defaults(func=_operate(_start))

    ls = sub.add_parser("ls", parents=[common], help="list runs, newest first")
    ls.add_argument("--status", choices=[s.value for s in RunStatus], help="only runs in this status")
    ls.add_argument("--workflow", metavar="NAME", help="only runs of this workflow")
    ls.add_argument("--limit", type=int, default=20, metavar="N", help="at most N runs (default 20)")
    ls.add_argument("--cursor", help="continue a previous listing")
    ls.add_argument(
        "--blocked",
        action="store_true",
        help="only the held runs: running, their replay diverged on newer code (README 'Deploying changes')",
    )
    ls.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    ls.set_defaults(func=_operate(_ls))

    inspect = sub.add_parser("inspect", parents=[common], help="a run's status, result, steps and timeline")
    inspect.add_argument("run_id", metavar="RUN_ID")
    inspect.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    inspect.set_defaults(func=_operate(_inspect))

    cancel = sub.add_parser("cancel", parents=[common], help="cancel a run")
    cancel.add_argument("run_id", metavar="RUN_ID")
    cancel.add_argument("--reason", help="recorded on the run_cancelled event")
    cancel.set_defaults(func=_operate(_cancel))

    fork = sub.add_parser(
        "fork",
        parents=[common],
        help="start a run again on the current code from a step, reusing the steps before it; prints its id",
    )
    fork.add_argument("run_id", metavar="RUN_ID", help="an ended run (failed, cancelled or completed)")
    fork.add_argument(
        "--from-step",
        metavar="NAME",
        help="the step to run again from: its name or NAME#n (its n-th call); default: where the run failed",
    )
    fork.add_argument("--idempotency-key", metavar="KEY", help="the same key forks the run once")
    fork.add_argument("--json", action="store_true", help="print the API's answer")
    fork.set_defaults(func=_operate(_fork))

    resume = sub.add_parser("resume", parents=[common], help="deliver a payload to the hook holding TOKEN")
    resume.add_argument("token", metavar="TOKEN")
    resume.add_argument("--payload", required=True, metavar="JSON", help="the payload, as JSON")
    resume.add_argument(
        "--resume-id", metavar="ID", help="a key of yours: repeating the command with it delivers once"
    )
    resume.set_defaults(func=_operate(_resume))

    gate = sub.add_parser(
        "gate", parents=[common], help="a debounced, batched or singleton workflow's key: what it holds now"
    )
    gate.add_argument("workflow", help="the workflow's name")
    gate.add_argument("key", nargs="?", default="*", help="the key (default '*': a workflow without a key)")
    gate.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    gate.set_defaults(func=_operate(_gate))

    schedules = sub.add_parser("schedules", parents=[common], help="the schedules, with their next tick")
    schedules.add_argument(
        "app",
        nargs="?",
        metavar="MODULE:APP",
        help="list this app's schedules offline (default: ask the API)",
    )
    schedules.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    schedules.set_defaults(func=_operate(list_schedules))
    stream = sub.add_parser("stream", parents=[common], help="print a run's stream values, one JSON per line")
    stream.add_argument("run_id", metavar="RUN_ID")
    stream.add_argument("--name", default="default", help="the stream (default: default)")
    stream.add_argument("--from", dest="start_index", type=int, default=0, metavar="N", help="from index N")
    stream.add_argument(
        "--follow", action="store_true", help="keep reading until the stream is closed or the run ends"
    )
    stream.set_defaults(func=_operate(_stream))
    waiting.add_commands(sub, common, _operate)

    deployments = sub.add_parser(
        "deployments", parents=[common], help="the deployments (code versions) and their live runs"
    )
    deployments.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    deployments.set_defaults(func=_operate(_deployments))
    actions = deployments.add_subparsers(dest="action", metavar="{retire}")
    retire = actions.add_parser(
        "retire", parents=[common], help="remove an older deployment; refused while a run is pinned to it"
    )
    retire.add_argument("deployment", metavar="VERSION")
    retire.set_defaults(func=_operate(_retire))

    runs = sub.add_parser("runs", parents=[common], help="act on runs: delete (erase) an ended run")
    run_actions = runs.add_subparsers(dest="action", metavar="{delete}", required=True)
    delete = run_actions.add_parser(
        "delete", parents=[common], help="erase an ended run and all its data; refused while it is live"
    )
    delete.add_argument("run_id", metavar="RUN_ID")
    delete.set_defaults(func=_operate(_delete))


def _operate(command: Command) -> Callable[[argparse.Namespace, TextIO, TextIO], int]:
    """``command`` with the client built from the options and every failure turned into a one-liner."""

    def run(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        try:
            client = ApiClient(api_url(ns.api), sign=ns.sign)
            return command(client, ns, out)
        except BadInput as exc:
            err.write(f"world-aws: error: {exc}\n")
        except ApiError as exc:
            err.write(f"world-aws: {exc}\n")
            if exc.status == 409:
                return 1
        except Unreachable as exc:
            err.write(f"world-aws: {exc}\n")
        return 2

    return run


def _start(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    args = [json_option("--arg", raw) for raw in ns.arg]
    kwargs = kwarg_options(ns.kwarg)
    started = client.start(ns.workflow, args, kwargs, ns.idempotency_key)
    if ns.wait:  # the run's outcome, as `world-aws result --wait` shows it
        if not ns.json:
            out.write(f"{started['run_id']}\n")
        return waiting.report(
            waiting.wait_for_end(client, started["run_id"], ns.timeout), out, as_json=ns.json
        )
    out.write(json.dumps(started, indent=2) + "\n" if ns.json else f"{started['run_id']}\n")
    return 0


def _ls(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    query: dict[str, Any] = {
        "status": ns.status,
        "workflow": ns.workflow,
        "limit": ns.limit,
        "cursor": ns.cursor,
    }
    if ns.blocked:
        query["blocked"] = "true"
    listed = client.list_runs(**query)
    if ns.json:
        out.write(json.dumps(listed, indent=2) + "\n")
        return 0
    render.print_runs(listed["runs"], out)
    if listed.get("cursor"):
        out.write(f"(more: --cursor {listed['cursor']})\n")
    return 0


def _gate(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    shown = client.call("GET", f"/workflows/{quote(ns.workflow, safe='')}/gates/{quote(ns.key, safe='')}")
    if ns.json:
        out.write(json.dumps(shown, indent=2) + "\n")
        return 0
    out.write(f"{shown['kind']} {shown['workflow']} key {shown['key']}: {shown['waiting']}\n")
    return 0


def _deployments(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    listed = client.call("GET", "/deployments")
    if ns.json:
        out.write(json.dumps(listed, indent=2) + "\n")
        return 0
    render.print_deployments(listed["deployments"], out)
    return 0


def _retire(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    client.call("POST", f"/deployments/{quote(ns.deployment, safe='')}/retire", body={})
    out.write(f"retired {ns.deployment}\n")
    return 0


def _delete(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    erased = client.call("POST", f"/runs/{quote(ns.run_id, safe='')}/delete", body={})
    out.write(
        f"deleted {erased['run_id']} ({erased['records']} records, {erased['blobs_deleted']} blobs;"
        f" {erased['blobs_kept']} shared blobs kept)\n"
    )
    return 0


def _inspect(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    run = client.get_run(ns.run_id)
    rows = client.events(ns.run_id)
    listed = client.step_list(ns.run_id)
    steps = list(listed["steps"])
    if ns.json:
        document = {
            "run": run,
            "summary": listed.get("summary"),
            "steps": steps,
            "events": rows,
            "timeline": render.timeline_rows(rows),
        }
        out.write(json.dumps(document, indent=2) + "\n")
        return 0
    out.write(f"run       {run['run_id']}\n")
    out.write(f"workflow  {run['workflow']}\n")
    out.write(f"status    {run['status']}\n")
    if run.get("forked_from"):
        out.write(f"forked    from {run['forked_from']}\n")
    if run.get("deployment_id"):
        out.write(f"deployed  {run['deployment_id']}\n")
    if run.get("blocked"):
        out.write(f"blocked   {render.blocked_line(run['blocked'])}\n")
    for label in ("created", "started", "completed"):
        if run.get(f"{label}_at"):
            out.write(f"{label:<9} {run[f'{label}_at']}\n")
    if run.get("expires_at"):
        out.write(f"expires   {run['expires_at']}\n")
    if run.get("priority") is not None:
        out.write(f"priority  {run['priority']}\n")
    if run.get("waiting"):
        out.write(f"waiting   {run['waiting']}\n")
    for entry in run.get("audit") or []:
        out.write(f"{'audit':<9} {render.audit_line(entry)}\n")
    if listed.get("summary"):
        out.write(f"summary   {render.summary_line(listed['summary'])}\n")
    render.print_links(run.get("links"), out)
    if run["status"] == RunStatus.COMPLETED.value:
        out.write(f"result    {json.dumps(run.get('result'), indent=2)}\n")
    elif run.get("error"):
        render.print_error(run["error"], out, label="error", width=10)
    if steps:
        out.write("\nsteps:\n")
        render.print_steps(steps, out)
    out.write("\ntimeline:\n")
    render.print_rows_timeline(rows, out)
    render.print_attempt_errors(rows, out)
    return 0


def _cancel(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    cancelled = client.cancel(ns.run_id, ns.reason)
    out.write(f"cancelled {cancelled['run_id']}\n")
    return 0


def _fork(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    forked = client.fork(ns.run_id, ns.from_step, ns.idempotency_key)
    out.write(json.dumps(forked, indent=2) + "\n" if ns.json else f"{forked['run_id']}\n")
    return 0


def _resume(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    payload = json_option("--payload", ns.payload)
    try:
        resumed = client.resume(ns.token, payload, ns.resume_id)
    except ApiError as exc:
        if exc.status != 404:
            raise
        hint = " (has the run reached its hook yet? `world-aws inspect RUN_ID` shows hook_created)"
        raise ApiError(exc.status, exc.kind, f"{exc}{hint}") from None
    out.write(f"resumed {resumed['token']} ({resumed['resume_id']})\n")
    return 0


# Seconds each --follow request long-polls (below the API's 20 s cap and the client's timeout).
FOLLOW_WAIT_SECONDS = 10.0


def _stream(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    index = ns.start_index
    while True:
        *values, cursor = client.stream(ns.run_id, ns.name, index, FOLLOW_WAIT_SECONDS if ns.follow else 0)
        for line in values:
            out.write(json.dumps(line["value"]) + "\n")
        out.flush()
        index = int(cursor["next_index"])
        if cursor["done"] or not ns.follow:
            return 0
