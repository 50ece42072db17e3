"""Golden event logs: store a run's log as JSON, load it back, and replay it against workflow code.

A golden log is the guard against accidental non-determinism (STYLE.md, after
Temporal's replayer): the stored history of a real run is replayed against the
current code, which must reach the same outcome; code whose calls no longer
match the history must fail with a ``NonDeterminismError``.

Format: ``{"run": {...}, "events": [...]}`` with bytes as ``{"$bytes": base64}``,
datetimes as ``{"$datetime": iso}`` and creation data as ``{"$creation": {...}}``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from world_aws.contract.records import (
    DATA_RECORDS,
    Event,
    EventType,
    Run,
    RunCreatedData,
    RunCreation,
    RunStatus,
    empty_data,
)
from world_aws.engine.replay import Outcome, Replay
from world_aws.workflow.registry import Workflows

GOLDEN_DIR = Path(__file__).parent / "golden"


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, RunCreation):
        return {"$creation": {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "$bytes" in value:
            return base64.b64decode(value["$bytes"])
        if "$datetime" in value:
            return datetime.fromisoformat(value["$datetime"])
        if "$creation" in value:
            return RunCreation(**{k: _decode(v) for k, v in value["$creation"].items()})
        return {k: _decode(v) for k, v in value.items()}
    return value


def event_to_json(event: Event) -> dict[str, Any]:
    defaults = empty_data(event.type)
    data = {
        f.name: _encode(getattr(event.data, f.name))
        for f in dataclasses.fields(event.data)
        if getattr(event.data, f.name) != getattr(defaults, f.name)
    }
    return {
        "position": event.position,
        "type": event.type.value,
        "correlation_id": event.correlation_id,
        "created_at": event.created_at.isoformat(),
        "data": data,
    }


def event_from_json(run_id: str, raw: dict[str, Any]) -> Event:
    return Event(
        run_id=run_id,
        position=int(raw["position"]),
        type=EventType(raw["type"]),
        correlation_id=raw["correlation_id"],
        created_at=datetime.fromisoformat(raw["created_at"]),
        data=DATA_RECORDS[EventType(raw["type"])](**{k: _decode(v) for k, v in raw["data"].items()}),
    )


def save_log(path: Path, run: Run, events: list[Event]) -> None:
    document = {
        "run": {"run_id": run.run_id, "workflow_name": run.workflow_name},
        "events": [event_to_json(e) for e in events],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n")


def load_log(path: Path) -> tuple[Run, list[Event]]:
    """The run (rebuilt from its ``run_created`` / ``run_started`` events) and its log."""
    document = json.loads(path.read_text())
    run_id = document["run"]["run_id"]
    events = [event_from_json(run_id, raw) for raw in document["events"]]
    return run_from_log(run_id, events), events


def run_from_log(run_id: str, events: list[Event]) -> Run:
    created = next(e for e in events if e.type is EventType.RUN_CREATED)
    started = next((e for e in events if e.type is EventType.RUN_STARTED), None)
    creation = created.data_as(RunCreatedData).creation
    assert creation is not None, "run_created without its creation data"
    return Run(
        run_id=run_id,
        workflow_name=creation.workflow_name,
        status=RunStatus.RUNNING,
        deployment_id=creation.deployment_id,
        spec_version=creation.spec_version,
        input=creation.input,
        created_at=created.created_at,
        updated_at=created.created_at,
        attributes=dict(creation.attributes),
        started_at=started.created_at if started is not None else None,
    )


def replay(app: Workflows, run: Run, events: list[Event], *, one_by_one: bool = False) -> Outcome:
    """Replay ``events`` against ``app``'s workflow of ``run`` in a fresh ``Replay``; its outcome."""
    engine = Replay(run, app.get_workflow(run.workflow_name), app.serializer)
    try:
        if one_by_one:
            for event in events:
                engine.feed([event])
        else:
            engine.feed(events)
        return engine.outcome()
    finally:
        engine.close()


def renumbered(events: list[Event]) -> list[Event]:
    """``events`` with positions 1..n in list order (to build a reordered log)."""
    return [dataclasses.replace(e, position=i) for i, e in enumerate(events, start=1)]
