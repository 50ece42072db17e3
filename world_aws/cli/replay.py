"""``world-aws export`` and ``world-aws replay``: the replay gate before a deploy.

``world-aws export RUN_ID... [--api URL] > runs.json`` writes the runs' whole logs,
payloads exact, in the export format (``contract.log_export``), read through the
HTTP API (``GET /runs/{id}/log``) of ``world-aws dev`` or a deployed stack.

``world-aws replay MODULE:APP runs.json`` replays each run against the local code
(``runtime.replay_gate``) and prints ``ok`` per run, or ``DIVERGED`` with where the
code parts from the log: the position, what the log has there and what the code
does. Without a file it reads the runs from the API instead, filtered with
``--workflow``, ``--status`` and ``--since`` (e.g. ``7d``); the filters apply to a
file's runs too. Exit codes: 0 every run replays, 1 a run diverges, 2 bad input
(arguments, an unreadable file or app, an unreachable API), with a one-line message.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from world_aws.cli.client import ApiClient, ApiError, Unreachable, api_url
from world_aws.cli.operate import add_api_options
from world_aws.contract import log_export
from world_aws.contract.log_export import ExportedRun
from world_aws.contract.records import RunStatus
from world_aws.engine.replay_gate import RunVerdict, replay_runs
from world_aws.errors import BadInput
from world_aws.workflow.context import parse_duration
from world_aws.workflow.loading import load_app

COMMANDS = ("export", "replay")
EXIT_DIVERGED = 1
EXIT_BAD_INPUT = 2
# Runs ``replay --api`` reads at most unless ``--limit`` says otherwise.
DEFAULT_LIMIT = 200
_LIST_PAGE = 100


def add_commands(sub: Any) -> None:
    """Add ``export`` and ``replay`` to the ``world-aws`` parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    add_api_options(common, default=argparse.SUPPRESS)
    export = sub.add_parser(
        "export", parents=[common], help="write runs' logs (events and payloads) as JSON, for `replay`"
    )
    export.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    export.add_argument("--out", type=Path, metavar="FILE", help="write here instead of stdout")
    export.set_defaults(func=_guarded(_export))

    replay = sub.add_parser(
        "replay", parents=[common], help="replay recorded runs against local code; exit 1 if one diverges"
    )
    replay.add_argument("app", metavar="MODULE:APP", help="the code about to be deployed")
    replay.add_argument("file", nargs="?", type=Path, help="an export (default: read runs from the API)")
    replay.add_argument("--workflow", metavar="NAME", help="only runs of this workflow")
    replay.add_argument("--status", choices=[s.value for s in RunStatus], help="only runs in this status")
    replay.add_argument("--since", metavar="DURATION", help="only runs created this recently (e.g. 7d, 12h)")
    replay.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N runs (default {DEFAULT_LIMIT})",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    replay.set_defaults(func=_guarded(_replay))


Command = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _guarded(command: Command) -> Command:
    """``command`` with every failure turned into a one-line message and exit 2."""

    def run(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        try:
            return int(command(ns, out, err))
        except BadInput as exc:
            err.write(f"world-aws: error: {exc}\n")
        except (ApiError, Unreachable) as exc:
            err.write(f"world-aws: {exc}\n")
        return EXIT_BAD_INPUT

    return run


def _client(ns: argparse.Namespace) -> ApiClient:
    return ApiClient(api_url(getattr(ns, "api", None)), sign=getattr(ns, "sign", None))


def _export(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    client = _client(ns)
    runs = [client.run_log(run_id) for run_id in dict.fromkeys(ns.run_ids)]
    for entry in runs:  # what is written must read back
        log_export.read_run(entry)
    text = json.dumps(log_export.document(runs), indent=1) + "\n"
    if ns.out is not None:
        try:
            ns.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write {ns.out}: {exc.strerror or exc}") from None
        err.write(f"exported {len(runs)} run(s) to {ns.out}\n")
    else:
        out.write(text)
    return 0


def _replay(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if ns.limit < 1:
        raise BadInput(f"--limit must be at least 1, got {ns.limit}")
    if ns.file is not None and getattr(ns, "api", None):
        raise BadInput(f"replay reads {ns.file} or the API at --api, not both")
    since = _cutoff(ns.since)
    app = load_app(ns.app)
    if ns.file is not None:
        runs = [r for r in log_export.read_file(ns.file) if _wanted(r, ns.workflow, ns.status, since)][
            : ns.limit
        ]
    else:
        runs = list(_from_api(_client(ns), ns.workflow, ns.status, since, ns.limit))
    verdicts = replay_runs(app, runs)
    if ns.json:
        out.write(json.dumps({"runs": [_verdict_json(v) for v in verdicts]}, indent=2) + "\n")
    else:
        for verdict in verdicts:
            out.write(verdict.line() + "\n")
        diverged = sum(1 for v in verdicts if not v.ok)
        out.write(f"{len(verdicts)} run(s) replayed, {diverged} diverged\n")
    if not verdicts:
        err.write("world-aws: no runs matched: nothing was replayed\n")
    return EXIT_DIVERGED if any(not v.ok for v in verdicts) else 0


def _cutoff(since: str | None) -> datetime | None:
    if since is None:
        return None
    return datetime.now().astimezone() - timedelta(seconds=parse_duration(since))


def _wanted(run: ExportedRun, workflow: str | None, status: str | None, since: datetime | None) -> bool:
    header = run.run
    return (
        (workflow is None or header.workflow_name == workflow)
        and (status is None or header.status.value == status)
        and (since is None or header.created_at >= since)
    )


def _from_api(
    client: ApiClient, workflow: str | None, status: str | None, since: datetime | None, limit: int
) -> Iterator[ExportedRun]:
    """The runs the API lists (newest first) that the filters keep, each with its whole log."""
    cursor: str | None = None
    taken = 0
    while True:
        page = client.list_runs(status=status, workflow=workflow, limit=_LIST_PAGE, cursor=cursor)
        for row in page["runs"]:
            created = datetime.fromisoformat(str(row["created_at"]).replace("Z", "+00:00"))
            if since is not None and created < since:
                return  # newest first: the rest are older
            yield log_export.read_run(client.run_log(str(row["run_id"])))
            taken += 1
            if taken >= limit:
                return
        cursor = page.get("cursor")
        if not cursor:
            return


def _verdict_json(verdict: RunVerdict) -> dict[str, Any]:
    divergence = verdict.divergence
    return {
        "run_id": verdict.run_id,
        "workflow": verdict.workflow_name,
        "status": verdict.status,
        "events": verdict.events,
        "reached": verdict.reached,
        "ok": verdict.ok,
        "divergence": None
        if divergence is None
        else {
            "position": divergence.position,
            "correlation_id": divergence.correlation_id,
            "log_has": divergence.logged,
            "code": divergence.called,
            "message": divergence.message,
        },
    }
