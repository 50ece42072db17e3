"""The per-type data shapes (``contract.shapes``): complete, and applied field by field."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from world_aws.contract import rules, shapes
from world_aws.contract.records import EventData, EventRequest, EventType
from world_aws.errors import BadInput

# One legal value per field, to set a field that a type does not take.
SAMPLE = {
    "creation": None,  # needs a RunCreation; covered by the run tests
    "output": b"o",
    "error": b"e",
    "error_code": "E",
    "reason": "r",
    "step_name": "s",
    "input": b"i",
    "via_step_dispatch": True,
    "retry_after": datetime(2026, 1, 1, tzinfo=UTC),
    "owner": "m#1#h",
    "token": "t",
    "metadata": b"m",
    "payload": b"p",
    "resume_id": "r1",
    "conflicting_run_id": "wrun_x",
    "resume_at": datetime(2026, 1, 1, tzinfo=UTC),
}


def test_every_type_has_a_shape_and_every_shape_names_real_fields() -> None:
    assert set(shapes.SHAPES) == set(EventType)
    assert set(SAMPLE) == set(shapes.DATA_FIELDS)
    for shape in shapes.SHAPES.values():
        assert shape.required <= shape.allowed <= set(shapes.DATA_FIELDS)


def _request(etype: EventType, **fields: object) -> EventRequest:
    cid = None if etype.is_run_event else "cid_1"
    return EventRequest(etype, cid, EventData(**fields))  # type: ignore[arg-type]


@pytest.mark.parametrize("etype", sorted(rules.CLIENT_EVENT_TYPES - {EventType.RUN_CREATED}))
def test_each_field_a_type_does_not_take_is_refused_by_name(etype: EventType) -> None:
    shape = shapes.SHAPES[etype]
    required = {name: SAMPLE[name] for name in shape.required}
    rules.validate_request(_request(etype, **required))  # its required fields alone: accepted
    for name, value in SAMPLE.items():
        if value is None:
            continue
        request = _request(etype, **{**required, name: value})
        if name in shape.allowed:
            rules.validate_request(request)
        else:
            with pytest.raises(BadInput, match=f"{etype.value} takes no {name}"):
                rules.validate_request(request)


@pytest.mark.parametrize("etype", sorted(t for t in rules.CLIENT_EVENT_TYPES if shapes.SHAPES[t].required))
def test_each_required_field_missing_is_named(etype: EventType) -> None:
    shape = shapes.SHAPES[etype]
    if "creation" in shape.required:
        pytest.skip("run_created's creation data: tests/contract runs")
    for missing in shape.required:
        fields = {name: SAMPLE[name] for name in shape.required if name != missing}
        with pytest.raises(BadInput, match=f"{etype.value} needs {missing}"):
            rules.validate_request(_request(etype, **fields))
