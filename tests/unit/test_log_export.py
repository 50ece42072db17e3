"""The run export format (``contract.log_export``): every type round-trips exactly; bad files are named."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from world_aws.contract import log_export
from world_aws.contract.records import (
    DATA_RECORDS,
    Event,
    EventType,
    FieldKind,
    Run,
    RunCreation,
    RunStatus,
    field_kinds,
)
from world_aws.errors import BadInput

AT = datetime(2026, 12, 7, 17, 0, tzinfo=UTC)
SAMPLES: dict[FieldKind, Any] = {
    FieldKind.PAYLOAD: b"\x00\xff\xa1payload",
    FieldKind.TIME: datetime(2026, 12, 8, 9, 30, tzinfo=timezone(timedelta(hours=2))),
    FieldKind.CREATION: RunCreation("wf", "dpl-1", 1, b"\x82\x00input", {"$root_run_id": "wrun_X"}),
    FieldKind.FLAG: True,
    FieldKind.TEXT: "text-1",
    FieldKind.NUMBER: 3,
}


def _event(etype: EventType, position: int = 2) -> Event:
    record = DATA_RECORDS[etype]
    data = record(**{name: SAMPLES[kind] for name, kind in field_kinds(record).items()})
    cid = None if etype.is_run_event else f"cid_{etype.value}"
    return Event("wrun_X", position, etype, cid, AT + timedelta(seconds=position), data)


@pytest.mark.parametrize("etype", sorted(EventType), ids=str)
def test_every_event_type_round_trips_byte_for_byte(etype: EventType) -> None:
    # GIVEN an event with every field set WHEN written as JSON text and read back THEN it is equal
    event = _event(etype)
    text = json.dumps(log_export.event_json(event))
    assert log_export.read_event("wrun_X", json.loads(text)) == event


def _document(*events: Event, version: int = 1) -> dict[str, Any]:
    run = Run("wrun_X", "wf", RunStatus.RUNNING, "dpl-1", 1, None, AT, AT, started_at=AT)
    doc = log_export.document([log_export.run_json(run, [log_export.event_json(e) for e in events])])
    doc["version"] = version
    return doc


def test_a_document_reads_back_its_runs_header_and_log() -> None:
    created, started = _event(EventType.RUN_CREATED, 1), _event(EventType.RUN_STARTED, 2)
    (run,) = log_export.read_document(json.loads(json.dumps(_document(created, started))))
    assert (run.run.run_id, run.run.status, run.run.started_at, run.run.input) == (
        "wrun_X",
        RunStatus.RUNNING,
        AT,
        None,  # the replay takes the input from run_created
    )
    assert run.events == [created, started]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(version=2), "version 2 is not supported"),
        (lambda d: d.update(format="x"), "not a world-aws run export"),
        (lambda d: d["runs"][0]["events"][0].update(type="run_started"), "does not begin with run_created"),
        (lambda d: d["runs"][0]["events"][1].update(position=5), "not dense from position 1"),
        (
            lambda d: d["runs"][0]["events"][1].update(type="step_exploded"),
            "position 2: the event does not read",
        ),
        (lambda d: d["runs"][0]["events"][1]["data"].update(extra=1), "has no field 'extra'"),
        (lambda d: d["runs"][0]["events"][1].update(created_at="2026-12-07T17:00:00"), "has no timezone"),
        (lambda d: d["runs"][0]["run"].update(status="sleeping"), "the run header does not read"),
    ],
)
def test_a_bad_document_is_refused_naming_what_is_wrong(change: Any, message: str) -> None:
    doc = _document(_event(EventType.RUN_CREATED, 1), _event(EventType.RUN_STARTED, 2))
    change(doc)
    with pytest.raises(BadInput, match=message):
        log_export.read_document(doc)


def test_a_payload_that_is_not_base64_is_refused() -> None:
    doc = _document(_event(EventType.RUN_CREATED, 1), _event(EventType.RUN_COMPLETED, 2))
    doc["runs"][0]["events"][1]["data"]["output"] = "not base64!"
    with pytest.raises(BadInput, match="position 2: the event does not read"):
        log_export.read_document(doc)
