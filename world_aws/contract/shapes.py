"""Whether a request's data is its type's record, complete and well typed (contract §3's table).

Each event type's data is one record with exactly its fields
(``records.DATA_RECORDS``). ``validate_request`` (``rules``) checks a request
against it before anything is read or written, so a field a type does not take
cannot be given, and what is wrong is named: another type's record, a required
field missing (``None``, or an empty name or token), a field of the wrong type, or a
time without a timezone (a World stores and compares times as UTC instants). A run's
creation data (``RunCreation``, on ``run_created`` or a creating ``run_started``) is
checked field by field too: it becomes the run, which every World must read back alike.
"""

from __future__ import annotations

from datetime import datetime

from world_aws.contract.records import (
    DATA_RECORDS,
    EventData,
    EventType,
    RunCreation,
    data_fields,
    field_types,
    required_fields,
)


def record_name(record: type[EventData]) -> str:
    """``StepCreatedData(step_name, input, via_step_dispatch, owner)``: a record and its fields."""
    return f"{record.__name__}({', '.join(data_fields(record))})"


def shape_errors(etype: EventType, data: object) -> list[str]:
    """What is wrong with ``data`` as ``etype``'s data; empty when nothing is."""
    record = DATA_RECORDS[etype]
    if type(data) is not record:
        return [f"{etype.value} takes {record_name(record)}, not {type(data).__name__}"]
    errors = [
        f"{etype.value} needs {name}" for name in required_fields(record) if getattr(data, name) in (None, "")
    ]
    for name, expected in field_types(record).items():
        value = getattr(data, name)
        if value is not None and not isinstance(value, expected):
            wanted = " or ".join(t.__name__ for t in expected)
            errors.append(f"{etype.value}'s {name} is a {wanted}, not {type(value).__name__}")
        elif isinstance(value, datetime) and value.utcoffset() is None:
            errors.append(f"{etype.value}'s {name} has no timezone: {value.isoformat()}")
        elif isinstance(value, RunCreation):
            errors += _creation_errors(f"{etype.value}'s {name}", value)
    return errors


def _creation_errors(where: str, creation: RunCreation) -> list[str]:
    """What is wrong with a run's creation data: names, version, input bytes, a str-to-str map."""
    errors = [
        f"{where} needs {name}"
        for name in ("workflow_name", "deployment_id")
        if not isinstance(getattr(creation, name), str) or not getattr(creation, name)
    ]
    version = creation.spec_version
    if not isinstance(version, int) or isinstance(version, bool):
        errors.append(f"{where}'s spec_version is an int, not {type(version).__name__}")
    if not isinstance(creation.input, bytes):
        errors.append(f"{where}'s input is bytes, not {type(creation.input).__name__}")
    attributes = creation.attributes
    if not isinstance(attributes, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in attributes.items()
    ):
        errors.append(f"{where}'s attributes map str to str: {attributes!r}")
    return errors
