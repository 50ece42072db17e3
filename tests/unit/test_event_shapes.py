"""The per-type data records (``records.DATA_RECORDS``) and their check (``contract.shapes``)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from world_aws.contract import rules
from world_aws.contract.records import (
    DATA_RECORDS,
    RUN_TRANSITIONS,
    STEP_STATUS_AFTER,
    EventData,
    EventRequest,
    EventType,
    PatchAppliedData,
    Run,
    RunCreation,
    RunStatus,
    Step,
    StepCompletedData,
    StepCreatedData,
    StepStatus,
    data_as,
    data_fields,
    empty_data,
    owner_of,
    patch_correlation_id,
    required_fields,
    without_payloads,
)
from world_aws.errors import BadInput, Conflict

CREATION = RunCreation(workflow_name="wf", deployment_id="dpl", spec_version=1, input=b"in")
# One legal value per field name any record has.
SAMPLE: dict[str, Any] = {
    "creation": CREATION,
    "output": b"o",
    "error": b"e",
    "error_code": "E",
    "reason": "r",
    "step_name": "s",
    "input": b"i",
    "via_step_dispatch": True,
    "retry_after": datetime(2026, 1, 1, tzinfo=UTC),
    "owner": "m#1#h",
    "takes_over": 1,
    "token": "t",
    "metadata": b"m",
    "payload": b"p",
    "resume_id": "r1",
    "conflicting_run_id": "wrun_x",
    "resume_at": datetime(2026, 1, 1, tzinfo=UTC),
    "change_id": "change-1",
    "actor": "arn:aws:iam::123456789012:user/alice",
}


def _full(etype: EventType) -> EventData:
    record = DATA_RECORDS[etype]
    return record(**{name: SAMPLE[name] for name in data_fields(record)})


def _request(etype: EventType, data: EventData | None = None) -> EventRequest:
    cid = None if etype.is_run_event else "cid_1"
    if etype is EventType.PATCH_APPLIED:
        cid = patch_correlation_id(SAMPLE["change_id"])
    return EventRequest(etype, cid) if data is None else EventRequest(etype, cid, data)


def test_every_type_has_one_record_named_by_it_with_sampled_fields() -> None:
    assert set(DATA_RECORDS) == set(EventType)
    assert len(set(DATA_RECORDS.values())) == len(EventType)
    for etype, record in DATA_RECORDS.items():
        assert record.TYPE is etype
        assert set(data_fields(record)) <= set(SAMPLE)


def test_each_record_defines_its_type_and_a_clients_carries_its_rule() -> None:
    # GIVEN every type's record WHEN asked what it is THEN it says, and a client's judges and applies
    assert set(EventType) - {EventType.HOOK_CONFLICT, EventType.NOOP} == rules.CLIENT_EVENT_TYPES
    for etype, record in DATA_RECORDS.items():
        assert etype.record is record and etype.entity is record.ENTITY
        carries_rule = callable(getattr(record, "judge", None)) and callable(getattr(record, "apply", None))
        assert carries_rule == record.CLIENT, etype
    assert {t for t in EventType if t.record.CREATES} == {
        EventType.STEP_CREATED,
        EventType.HOOK_CREATED,
        EventType.WAIT_CREATED,
    }
    assert {t for t in EventType if t.terminates_run} == {
        EventType.RUN_COMPLETED,
        EventType.RUN_FAILED,
        EventType.RUN_CANCELLED,
    }
    # contract §3.1: the fence refuses what starts or creates work; a step's report is not refused
    assert {t for t in EventType if t.record.FENCED} == {
        EventType.STEP_CREATED,
        EventType.STEP_STARTED,
        EventType.HOOK_CREATED,
        EventType.HOOK_RECEIVED,
        EventType.HOOK_DISPOSED,
        EventType.WAIT_CREATED,
        EventType.WAIT_COMPLETED,
        EventType.PATCH_APPLIED,
    }


@pytest.mark.parametrize("etype", sorted(STEP_STATUS_AFTER), ids=str)
def test_a_step_transition_applies_the_status_its_record_names(etype: EventType) -> None:
    # GIVEN a running step (a pending one for its start) WHEN the transition applies
    # THEN the step takes the record's STATUS, the one the AWS World writes without a read
    now = datetime(2026, 1, 1, tzinfo=UTC)
    before = StepStatus.PENDING if etype is EventType.STEP_STARTED else StepStatus.RUNNING
    step = Step("wrun_1", "cid_1", "s", before, attempt=1, input=b"i", created_at=now)
    after = rules.apply_step_event(_request(etype, _full(etype)), "wrun_1", step, now)
    assert after.status is STEP_STATUS_AFTER[etype]
    assert set(STEP_STATUS_AFTER) == {t for t in EventType if t.is_step_event and not t.creates_entity}


@pytest.mark.parametrize("etype", sorted(RUN_TRANSITIONS), ids=str)
@pytest.mark.parametrize("status", list(RunStatus), ids=str)
def test_a_run_transition_leaves_the_statuses_its_record_names_for_its_status(
    etype: EventType, status: RunStatus
) -> None:
    # GIVEN a run in each status WHEN the transition is judged (and applied where accepted)
    # THEN it changes a run in FROM into STATUS (the condition the AWS World writes), refuses
    # any other with Conflict, but for run_started on a running run, the accepted no-op
    allowed, after = RUN_TRANSITIONS[etype]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    run = Run("wrun_1", "wf", status, "dpl", 1, input=b"i", created_at=now, updated_at=now)
    request = _request(etype, _full(etype))
    if status in allowed:
        assert rules.judge_run_event(request, run) is True
        assert rules.apply_run_event(request, run, now).status is after
    elif etype is EventType.RUN_STARTED and status is RunStatus.RUNNING:
        assert rules.judge_run_event(request, run) is False
    else:
        with pytest.raises(Conflict):
            rules.judge_run_event(request, run)
    assert set(RUN_TRANSITIONS) == {t for t in EventType if t.is_run_event and t is not EventType.RUN_CREATED}


def test_a_rule_is_asked_of_its_entitys_records_only() -> None:
    request = _request(EventType.WAIT_CREATED, _full(EventType.WAIT_CREATED))
    with pytest.raises(BadInput, match="wait_created is not a step event"):
        rules.judge_step_event(request, None, None, datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("etype", sorted(rules.CLIENT_EVENT_TYPES))
def test_each_type_takes_its_record_with_every_field_set(etype: EventType) -> None:
    rules.validate_request(_request(etype, _full(etype)))


@pytest.mark.parametrize("etype", sorted(rules.CLIENT_EVENT_TYPES))
def test_another_types_record_is_refused_naming_the_record_it_takes(etype: EventType) -> None:
    record = DATA_RECORDS[etype]
    for other in rules.CLIENT_EVENT_TYPES - {etype}:
        with pytest.raises(BadInput, match=rf"{etype.value} takes {record.__name__}\(.*\), not "):
            rules.validate_request(_request(etype, _full(other)))


@pytest.mark.parametrize(
    "etype", sorted(t for t in rules.CLIENT_EVENT_TYPES if required_fields(DATA_RECORDS[t]))
)
def test_each_required_field_missing_is_named(etype: EventType) -> None:
    full = _full(etype)
    for missing in required_fields(DATA_RECORDS[etype]):
        with pytest.raises(BadInput, match=f"{etype.value} needs {missing}"):
            rules.validate_request(_request(etype, replace(full, **{missing: None})))  # type: ignore[arg-type]


@pytest.mark.parametrize("etype", sorted(rules.CLIENT_EVENT_TYPES))
def test_a_request_without_data_has_its_records_defaults(etype: EventType) -> None:
    request = _request(etype)
    assert type(request.data) is DATA_RECORDS[etype]
    assert request.data == empty_data(etype)
    if required_fields(DATA_RECORDS[etype]):
        with pytest.raises(BadInput, match="needs"):
            rules.validate_request(request)
    else:
        rules.validate_request(request)


@pytest.mark.parametrize(
    ("change_id", "cid", "named"),
    [
        ("fix-1", "patch:fix-2", "takes correlation id 'patch:fix-1', not 'patch:fix-2'"),
        ("two words", "patch:two words", "printable and has no spaces"),
        ("x" * 201, "patch:" + "x" * 201, "at most 200 characters"),
    ],
)
def test_a_patch_marker_names_its_change_in_its_correlation_id(change_id: str, cid: str, named: str) -> None:
    # GIVEN a patch_applied whose change id is malformed or not its correlation id's
    # WHEN validated THEN it is refused naming what is wrong
    request = EventRequest(EventType.PATCH_APPLIED, cid, PatchAppliedData(change_id=change_id))
    with pytest.raises(BadInput, match=re.escape(named)):
        rules.validate_request(request)


def test_a_field_of_the_wrong_type_is_named() -> None:
    wrong = StepCreatedData(step_name="s", input="text, not bytes")  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="step_created's input is a bytes, not str"):
        rules.validate_request(_request(EventType.STEP_CREATED, wrong))


def test_data_as_narrows_or_names_both_types() -> None:
    data = _full(EventType.STEP_COMPLETED)
    assert data_as(data, StepCompletedData) is data
    with pytest.raises(TypeError, match="step_completed's data, not step_created's"):
        data_as(data, StepCreatedData)


def test_owner_is_a_step_events_and_without_payloads_leaves_out_every_payload() -> None:
    for etype in EventType:
        data = _full(etype)
        assert owner_of(data) == (SAMPLE["owner"] if "owner" in data_fields(type(data)) else None)
        bare = without_payloads(data)
        for name in data_fields(type(data)):
            if name in ("output", "error", "input", "metadata", "payload"):
                assert getattr(bare, name) is None
            elif name == "creation":
                assert getattr(bare, name) == replace(CREATION, input=b"")
            else:
                assert getattr(bare, name) == getattr(data, name)
