"""``world-aws``: the argument parser and the dispatch to each command (the package docstring lists them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from world_aws.cli import dev, operate, project, replay, ui
from world_aws.cli.options import json_option, kwarg_options
from world_aws.cli.outcome import JsonErrors, Parser, UsageError, json_error, write_usage_error
from world_aws.cli.run import EXIT_TIMEOUT, run_workflow
from world_aws.errors import BadInput
from world_aws.local.extras import embedded_unavailable
from world_aws.workflow.loading import load_app

if TYPE_CHECKING:
    from world_aws.local.moto_process import MotoProcess

# The commands that talk to an HTTP API (--api/--sign before or after the command).
API_COMMANDS = (*operate.COMMANDS, *replay.COMMANDS, "ui")
DEMO_APP = "world_aws.demo:app"
DEMO_WORKFLOW = "checkout"
DEMO_ARGS = ['"order-42"']
ENCRYPT_HELP = (
    "seal every payload with a data key per run under a moto KMS key (embedded only), "
    "as PayloadKmsKeyArn does on AWS"
)
WORLD_HELP = (
    "embedded (default): moto on 127.0.0.1 with template.yaml's table, queues and bucket; "
    "memory: the in-memory World, no AWS emulation (fastest)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="world-aws", description="Durable async Python workflows on AWS.")
    operate.add_api_options(parser)  # `world-aws --api URL ls` as well as `world-aws ls --api URL`
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a workflow to completion on the embedded default")
    run.add_argument("app", help="MODULE:APP (a module name or a path to a .py file)")
    run.add_argument("workflow", help="the workflow's name")
    _add_run_options(run)
    demo = sub.add_parser("demo", help="run the bundled order-pipeline example")
    _add_run_options(demo, with_args=False)
    dev.add_command(sub)
    ui.add_command(sub)
    operate.add_commands(sub)
    replay.add_commands(sub)
    project.add_commands(sub)
    return parser


def _add_run_options(parser: argparse.ArgumentParser, *, with_args: bool = True) -> None:
    if with_args:
        parser.add_argument(
            "--arg", action="append", default=[], metavar="JSON", help="a positional argument, as JSON"
        )
        parser.add_argument(
            "--kwarg", action="append", default=[], metavar="NAME=JSON", help="a keyword argument"
        )
    parser.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    parser.add_argument("--world", choices=["embedded", "memory"], default="embedded", help=WORLD_HELP)
    parser.add_argument("--encrypt", action="store_true", help=ENCRYPT_HELP)
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help=f"seconds to wait for the run (default 120); then exit {EXIT_TIMEOUT}, the run left running",
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    prestarted: MotoProcess | None = None,
) -> int:
    """Run the command in ``argv``; returns its exit code.

    ``prestarted``: the embedded stack already starting in a child process
    (``world_aws._entry``), for ``run`` and ``demo`` to use instead of starting one.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        ns, unknown = parser.parse_known_args(args)
        if unknown and ns.command != "deploy":  # deploy passes what it does not know to sam deploy
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        if ns.command == "deploy":
            ns.sam_args = [*ns.sam_args, *unknown]
    except UsageError as exc:
        return write_usage_error(exc, err, as_json="--json" in args)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if not getattr(ns, "json", False):
        return _command(ns, out, err, prestarted)
    errors = JsonErrors()
    code = _command(ns, out, errors, prestarted)
    if errors.getvalue():  # with --json, what went wrong is JSON too
        err.write(json_error(errors.getvalue(), code))
    return code


def _command(ns: argparse.Namespace, out: TextIO, err: TextIO, prestarted: MotoProcess | None) -> int:
    if ns.command not in API_COMMANDS and (ns.api is not None or ns.sign is not None):
        err.write(f"world-aws: error: --api and --sign are options of {', '.join(API_COMMANDS)}\n")
        return 2
    missing = embedded_unavailable(getattr(ns, "world", ""))
    if missing is None and getattr(ns, "encrypt", False) and ns.world != "embedded":
        missing = "--encrypt needs the embedded World (moto's KMS), not --world memory"
    if missing is not None:
        err.write(f"world-aws: error: {missing}\n")
        return 2
    if getattr(ns, "func", None) is not None:
        return int(ns.func(ns, out, err))
    try:
        if ns.command == "demo":
            app, workflow, raw_args = load_app(DEMO_APP), DEMO_WORKFLOW, DEMO_ARGS
        else:
            app, workflow, raw_args = load_app(ns.app), ns.workflow, ns.arg
        args = [json_option("--arg", raw) for raw in raw_args]
        kwargs = kwarg_options(getattr(ns, "kwarg", []))
        converted, kwargs = app.get_workflow(workflow).convert(tuple(args), kwargs)
        args = list(converted)
    except BadInput as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    return run_workflow(app, workflow, args, kwargs, ns, out, err, prestarted=prestarted)
