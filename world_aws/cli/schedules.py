"""``world-aws schedules [MODULE:APP]``: the schedules with their next tick.

Without an app it asks the API (``GET /schedules``: ``world-aws dev`` or a deployed
stack), which adds what the scheduler recorded (the last tick handled, its run,
the counts of started, skipped and missed ticks); with ``MODULE:APP`` it lists
that app's schedules offline, with the next tick from now.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, TextIO

from world_aws.cli.client import ApiClient
from world_aws.client.schedule_view import describe_schedules
from world_aws.workflow.loading import load_app


def list_schedules(client: ApiClient, ns: argparse.Namespace, out: TextIO) -> int:
    """Print the schedules (a table, or ``--json``); 0."""
    if ns.app:
        rows = [asdict(info) for info in describe_schedules(load_app(ns.app), datetime.now(UTC))]
    else:
        rows = list(client.call("GET", "/schedules")["schedules"])
    if ns.json:
        out.write(json.dumps({"schedules": rows}, indent=2) + "\n")
        return 0
    print_schedules(rows, out)
    return 0


def print_schedules(rows: list[dict[str, Any]], out: TextIO) -> None:
    """A table of schedules as ``GET /schedules`` returns them."""
    if not rows:
        out.write("no schedules\n")
        return
    out.write(
        f"{'schedule':<20} {'workflow':<20} {'expression':<24} {'overlap':<7} "
        f"{'next tick':<21} {'last tick':<21} {'started':>7} {'skipped':>7} {'missed':>6}\n"
    )
    for row in rows:
        out.write(
            f"{row['name']:<20} {row['workflow']:<20} {row['expression']:<24} {row['overlap']:<7} "
            f"{row['next_tick'] or 'never':<21} {row['last_tick'] or '-':<21} "
            f"{row['started']:>7} {row['skipped']:>7} {row['missed']:>6}\n"
        )
