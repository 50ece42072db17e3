"""How the CLI shows a run: live progress lines, the timeline table, and ``--json``."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, TextIO

from world_aws.contract.records import Event, EventType


def step_names(events: list[Event]) -> dict[str, str]:
    """correlation id → step name, from the step events that carry it."""
    names: dict[str, str] = {}
    for event in events:
        if event.correlation_id and event.data.step_name:
            names.setdefault(event.correlation_id, event.data.step_name)
    return names


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def progress_line(event: Event, names: dict[str, str]) -> str:
    label = short_name(names.get(event.correlation_id or "", "")) or event.data.token or ""
    return f"  {event.position:>4}  {event.type.value:<15} {label}".rstrip()


def timeline(events: list[Event]) -> list[dict[str, Any]]:
    """One row per event: position, event, step name, and a duration where one ends something."""
    names = step_names(events)
    opened: dict[str, datetime] = {}
    rows = []
    for event in events:
        cid = event.correlation_id or "<run>"
        duration = None
        if event.type in (EventType.STEP_STARTED, EventType.RUN_STARTED, EventType.WAIT_CREATED):
            opened[cid] = event.created_at
        elif (
            event.type
            in (
                EventType.STEP_COMPLETED,
                EventType.STEP_FAILED,
                EventType.STEP_RETRYING,
                EventType.RUN_COMPLETED,
                EventType.RUN_FAILED,
                EventType.RUN_CANCELLED,
                EventType.WAIT_COMPLETED,
            )
            and cid in opened
        ):
            duration = (event.created_at - opened[cid]).total_seconds()
        rows.append(
            {
                "position": event.position,
                "event": event.type.value,
                "step": short_name(names.get(event.correlation_id or "", "")),
                "duration_s": duration,
            }
        )
    return rows


def print_timeline(events: list[Event], out: TextIO) -> None:
    out.write(f"  {'pos':>4}  {'event':<15} {'step':<24} {'duration':>10}\n")
    for row in timeline(events):
        duration = "" if row["duration_s"] is None else f"{row['duration_s'] * 1000:.0f} ms"
        out.write(f"  {row['position']:>4}  {row['event']:<15} {row['step']:<24} {duration:>10}\n")


def to_jsonable(value: Any) -> Any:
    """``value`` with everything JSON cannot hold rendered as a string."""
    return json.loads(json.dumps(value, default=_fallback))


def _fallback(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def events_json(events: list[Event]) -> list[dict[str, Any]]:
    names = step_names(events)
    return [
        {
            "position": e.position,
            "type": e.type.value,
            "correlation_id": e.correlation_id,
            "step_name": names.get(e.correlation_id or ""),
            "created_at": e.created_at.isoformat(),
        }
        for e in events
    ]
