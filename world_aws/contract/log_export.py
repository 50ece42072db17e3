"""The exported run log: a versioned JSON document of runs with their whole event logs.

``world-aws export`` writes it, ``world-aws replay`` and ``WorkflowKit.replay`` read
it, and ``GET /runs/{run_id}/log`` serves one run's log in pages of the same shape.
Version 1::

    {
      "format": "world-aws.runs",
      "version": 1,
      "runs": [
        {
          "run": {"run_id": "wrun_...", "workflow_name": "checkout", "status": "running",
                  "deployment_id": "...", "spec_version": 1, "created_at": "2026-...Z",
                  "updated_at": "...", "started_at": "..." | null, "completed_at": null,
                  "error_code": null, "attributes": {}},
          "events": [
            {"position": 1, "type": "run_created", "correlation_id": null,
             "created_at": "...", "data": {"creation": {..., "input": "<base64>"}}},
            ...
          ]
        }
      ]
    }

An event's ``data`` holds its record's fields (``records.DATA_RECORDS``) by name:
payloads (the serializer's bytes: inputs, outputs, errors, hook payloads and
metadata) in standard base64, times as ISO 8601 with their offset, a run's creation
as an object, the rest as JSON scalars. Payloads are exact: a replay of the file
decodes what the run's replay decodes. A reader refuses another format or version,
a log that is not dense from position 1, and an event whose data is not its type's.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from world_aws.contract.records import (
    DATA_RECORDS,
    Event,
    EventData,
    EventType,
    FieldKind,
    ResolveData,
    Run,
    RunCreation,
    RunStatus,
    field_kinds,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput

FORMAT = "world-aws.runs"
VERSION = 1


@dataclass(frozen=True, slots=True)
class ExportedRun:
    """One run of an export: its header (without its input: the log's ``run_created`` has it) and log."""

    run: Run
    events: list[Event]


# ------------------------------------------------------------------------------ writing


def document(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The export document of ``runs`` (each :func:`run_json`)."""
    return {"format": FORMAT, "version": VERSION, "runs": runs}


def export_runs(world: World, run_ids: list[str]) -> dict[str, Any]:
    """The export document of ``run_ids``, read from ``world`` (each whole log, with payloads).

    Raises:
        NotFound: a run is missing.
    """
    runs = []
    for run_id in dict.fromkeys(run_ids):
        run = world.runs.get(run_id, resolve_data=ResolveData.NONE)
        events = world.events.list(run_id, resolve_data=ResolveData.ALL)
        runs.append(run_json(run, [event_json(event) for event in events]))
    return document(runs)


def run_json(run: Run, events: list[dict[str, Any]]) -> dict[str, Any]:
    """One run of the document: its header and its events (each :func:`event_json`)."""
    return {"run": header_json(run), "events": events}


def header_json(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "workflow_name": run.workflow_name,
        "status": run.status.value,
        "deployment_id": run.deployment_id,
        "spec_version": run.spec_version,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
        "started_at": _iso(run.started_at),
        "completed_at": _iso(run.completed_at),
        "error_code": run.error_code,
        "attributes": dict(run.attributes),
    }


def event_json(event: Event) -> dict[str, Any]:
    """One event, its payloads in base64 (read it with ``ResolveData.ALL``)."""
    kinds = field_kinds(type(event.data))
    return {
        "position": event.position,
        "type": event.type.value,
        "correlation_id": event.correlation_id,
        "created_at": event.created_at.isoformat(),
        "data": {name: _value_json(kind, getattr(event.data, name)) for name, kind in kinds.items()},
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _value_json(kind: FieldKind, value: Any) -> Any:
    if value is None:
        return None
    if kind is FieldKind.PAYLOAD:
        return _b64(value)
    if kind is FieldKind.TIME:
        return value.isoformat()
    if kind is FieldKind.CREATION:
        return {
            "workflow_name": value.workflow_name,
            "deployment_id": value.deployment_id,
            "spec_version": value.spec_version,
            "input": _b64(value.input),
            "attributes": dict(value.attributes),
        }
    return value


# ------------------------------------------------------------------------------ reading


def read_file(path: str | Path) -> list[ExportedRun]:
    """The runs of an export file.

    Raises:
        BadInput: the file cannot be read, is not JSON, or not this format.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BadInput(f"{path} is not JSON: {exc}") from None
    return read_document(doc)


def read_document(doc: object) -> list[ExportedRun]:
    """The runs of an export document (parsed JSON).

    Raises:
        BadInput: not this format and version, or a run or event that does not read,
            naming where (run id and position).
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadInput(f"not a world-aws run export: expected an object with format {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise BadInput(f"run export version {doc.get('version')!r} is not supported (this reads {VERSION})")
    runs = doc.get("runs")
    if not isinstance(runs, list):
        raise BadInput("a run export's 'runs' is a list")
    return [read_run(entry, index) for index, entry in enumerate(runs)]


def read_run(entry: object, index: int = 0) -> ExportedRun:
    """One run of the document (``{"run": ..., "events": [...]}``).

    Raises:
        BadInput: naming the run and what is wrong.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("run"), dict):
        raise BadInput(f"runs[{index}] is not an object with a 'run'")
    run = read_header(entry["run"], f"runs[{index}]")
    raw_events = entry.get("events")
    if not isinstance(raw_events, list) or not raw_events:
        raise BadInput(f"run {run.run_id}: 'events' is a non-empty list")
    events = [read_event(run.run_id, raw) for raw in raw_events]
    positions = [e.position for e in events]
    if positions != list(range(1, len(events) + 1)):
        raise BadInput(
            f"run {run.run_id}: the log is not dense from position 1 (positions {positions[:8]}...)"
        )
    if events[0].type is not EventType.RUN_CREATED:
        raise BadInput(f"run {run.run_id}: the log does not begin with run_created")
    return ExportedRun(run, events)


def read_header(raw: Mapping[str, Any], where: str) -> Run:
    try:
        run_id = _text(raw, "run_id")
        return Run(
            run_id=run_id,
            workflow_name=_text(raw, "workflow_name"),
            status=RunStatus(str(raw.get("status"))),
            deployment_id=str(raw.get("deployment_id") or ""),
            spec_version=int(raw.get("spec_version") or 1),
            input=None,  # the replay takes it from the log's run_created
            created_at=_time(raw.get("created_at"), "created_at"),
            updated_at=_time(raw.get("updated_at") or raw.get("created_at"), "updated_at"),
            started_at=_time(raw["started_at"], "started_at") if raw.get("started_at") else None,
            completed_at=_time(raw["completed_at"], "completed_at") if raw.get("completed_at") else None,
            error_code=raw.get("error_code") if isinstance(raw.get("error_code"), str) else None,
            attributes=_attributes(raw.get("attributes")),
        )
    except (ValueError, TypeError) as exc:
        raise BadInput(f"{where}: the run header does not read: {exc}") from None


def read_event(run_id: str, raw: object) -> Event:
    """One event of ``run_id``'s log.

    Raises:
        BadInput: naming the position and what is wrong.
    """
    if not isinstance(raw, dict):
        raise BadInput(f"run {run_id}: an event is not an object")
    where = f"run {run_id}, position {raw.get('position')!r}"
    try:
        etype = EventType(str(raw.get("type")))
        record = DATA_RECORDS[etype]
        data = raw.get("data") or {}
        if not isinstance(data, dict):
            raise ValueError("'data' is not an object")
        unknown = set(data) - {f.name for f in fields(record)}
        if unknown:
            raise ValueError(f"{etype.value} has no field {sorted(unknown)[0]!r}")
        kinds = field_kinds(record)
        values = {name: _value(kind, data.get(name), name) for name, kind in kinds.items() if name in data}
        position = raw.get("position")
        if not isinstance(position, int) or isinstance(position, bool) or position < 1:
            raise ValueError("'position' is a positive integer")
        cid = raw.get("correlation_id")
        if cid is not None and not isinstance(cid, str):
            raise ValueError("'correlation_id' is a string or null")
        decoded: EventData = record(**values)
        return Event(run_id, position, etype, cid, _time(raw.get("created_at"), "created_at"), decoded)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise BadInput(f"{where}: the event does not read: {exc}") from None


def _value(kind: FieldKind, value: Any, name: str) -> Any:
    if value is None:
        return None
    if kind is FieldKind.PAYLOAD:
        return _bytes(value, name)
    if kind is FieldKind.TIME:
        return _time(value, name)
    if kind is FieldKind.CREATION:
        if not isinstance(value, dict):
            raise ValueError(f"{name} is an object")
        return RunCreation(
            workflow_name=_text(value, "workflow_name"),
            deployment_id=str(value.get("deployment_id") or ""),
            spec_version=int(value.get("spec_version") or 1),
            input=_bytes(value.get("input"), "input"),
            attributes=_attributes(value.get("attributes")),
        )
    expected = {FieldKind.FLAG: bool, FieldKind.TEXT: str, FieldKind.NUMBER: int}[kind]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"{name} is a {expected.__name__}, not {type(value).__name__}")
    return value


def _bytes(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{name} is base64 text")
    return base64.b64decode(value.encode("ascii"), validate=True)


def _time(value: Any, name: str) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"{name} is an ISO 8601 time")
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.utcoffset() is None:
        raise ValueError(f"{name} has no timezone: {value}")
    return moment


def _text(raw: Mapping[str, Any], name: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} is a non-empty string")
    return value


def _attributes(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("attributes map strings to strings")
    return dict(value)
