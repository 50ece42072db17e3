"""The ``world-aws`` command line.

``world-aws run MODULE:APP WORKFLOW [--arg JSON]...`` runs a workflow to
completion on the embedded default (moto in-process on loopback, resources from
template.yaml), showing progress, then the result and the run's timeline.
``world-aws demo`` runs the bundled order-pipeline example. Exit codes: 0 the
run completed, 1 it failed (or timed out), 2 bad arguments.

``world-aws dev [MODULE:APP]`` serves an app on the embedded stack with its HTTP
API on 127.0.0.1 until Ctrl-C (:mod:`world_aws.cli.dev`). The operator commands
``start``, ``ls``, ``inspect``, ``cancel`` and ``resume`` talk to that API, or a
deployed one (:mod:`world_aws.cli.operate`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from world_aws.api.views import error_view
from world_aws.cli import dev, operate, render
from world_aws.contract.records import Event, ResolveData, Run, RunStatus
from world_aws.errors import BadInput
from world_aws.runtime.handle import RunHandle
from world_aws.runtime.loading import load_app
from world_aws.runtime.registry import Workflows
from world_aws.runtime.serde import decode_error

DEMO_APP = "world_aws.demo:app"
DEMO_WORKFLOW = "checkout"
DEMO_ARGS = ['"order-42"']
WORLD_HELP = (
    "embedded (default): moto on 127.0.0.1 with template.yaml's table, queues and bucket; "
    "memory: the in-memory World, no AWS emulation (fastest)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="world-aws", description="Durable async Python workflows on AWS.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a workflow to completion on the embedded default")
    run.add_argument("app", help="MODULE:APP (a module name or a path to a .py file)")
    run.add_argument("workflow", help="the workflow's name")
    _add_run_options(run)
    demo = sub.add_parser("demo", help="run the bundled order-pipeline example")
    _add_run_options(demo, with_args=False)
    dev.add_command(sub)
    operate.add_commands(sub)
    return parser


def _add_run_options(parser: argparse.ArgumentParser, *, with_args: bool = True) -> None:
    if with_args:
        parser.add_argument(
            "--arg", action="append", default=[], metavar="JSON", help="a positional argument, as JSON"
        )
    parser.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    parser.add_argument("--world", choices=["embedded", "memory"], default="embedded", help=WORLD_HELP)
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the run (default 120)"
    )


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if getattr(ns, "func", None) is not None:
        return int(ns.func(ns, out, err))
    try:
        if ns.command == "demo":
            app, workflow, raw_args = load_app(DEMO_APP), DEMO_WORKFLOW, DEMO_ARGS
        else:
            app, workflow, raw_args = load_app(ns.app), ns.workflow, ns.arg
        args = [_parse_json(raw) for raw in raw_args]
        app.get_workflow(workflow).bind(tuple(args), {})
    except BadInput as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    return _run(app, workflow, args, ns, out, err)


def _parse_json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadInput(f"--arg {raw!r} is not valid JSON: {exc.msg}") from None


def _run(
    app: Workflows, workflow: str, args: list[Any], ns: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    from world_aws.local.stack import local_stack

    quiet = bool(ns.json)
    with local_stack(app, kind=ns.world) as stack:
        if not quiet:
            where = f"moto on {stack.endpoint_url}" if stack.endpoint_url else "the in-memory World"
            out.write(f"world-aws: running {workflow} on {where}\n")
        handle = stack.runtime.start(workflow, *args)
        if not quiet:
            out.write(f"run {handle.run_id}\n")
        events = _follow(handle, stack.world, ns.timeout, None if quiet else out)
        run = handle.run()
        events = handle.events(resolve_data=ResolveData.ALL)  # with each failed attempt's error
        result, error = _outcome(handle, run)
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
        out.write(f"\nstatus: {run.status.value}{_took(run)}\n")
        if error is None:
            out.write(f"result: {json.dumps(render.to_jsonable(result), indent=2)}\n")
        else:
            render.print_error(error, out)
        out.write("\ntimeline:\n")
        rows = render.events_json(events)
        render.print_rows_timeline(rows, out)
        render.print_attempt_errors(rows, out)
    return 0 if run.status is RunStatus.COMPLETED else 1


def _took(run: Run) -> str:
    """`` in 1.2s``: the run's own duration (started to ended, as its timeline shows), not the command's."""
    started = run.started_at or run.created_at
    if run.completed_at is None or started is None:
        return ""
    return f" in {(run.completed_at - started).total_seconds():.1f}s"


def _follow(handle: RunHandle, world: Any, timeout: float, out: TextIO | None) -> list[Event]:
    """Poll the run's log until it ends, printing each new event."""
    deadline = time.monotonic() + timeout
    seen: list[Event] = []
    while True:
        fresh = world.events.list(
            handle.run_id, after=seen[-1].position if seen else 0, resolve_data=ResolveData.ALL
        )
        seen += fresh
        if out is not None and fresh:
            names = render.step_names(seen)
            for event in fresh:
                out.write(render.progress_line(event, names) + "\n")
            out.flush()
        if handle.status().terminal or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def _outcome(handle: RunHandle, run: Run) -> tuple[Any, dict[str, Any] | None]:
    status = run.status
    if status is RunStatus.COMPLETED:
        return handle.result(timeout=0), None
    if status is RunStatus.FAILED:  # with its traceback and causes, as GET /runs/{run_id} shows it
        return None, error_view(decode_error(run.error or b""), code=run.error_code).model_dump(mode="json")
    if status is RunStatus.CANCELLED:
        return None, {"type": "RunCancelledError", "message": "the run was cancelled", "code": None}
    return None, {"type": "Timeout", "message": f"the run is still {status.value}", "code": None}
