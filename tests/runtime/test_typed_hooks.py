"""Issue 16 item 3: typed hooks (every World).

A hook declared as a ``world_aws.Hook`` subclass (a dataclass, or a pydantic model)
validates each resume against its fields (``BadInput`` naming the field, nothing
recorded) and hands the workflow an instance of its class.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, ConfigDict

from harness.harness import Harness
from tests.api.conftest import http_event
from world_aws import BadInput, Hook, Workflows
from world_aws.api.app import handle_http
from world_aws.contract.records import EventType, HookReceivedData, RunStatus
from world_aws.workflow.typed_hooks import validate


class Approval(Hook):
    approved: bool
    by: str = "someone"


class Review(Hook, BaseModel):
    score: int
    note: str | None = None


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Escalation(Hook):
    level: Level
    at: datetime
    tags: list[str]


@dataclass
class Decision:
    approved: bool
    by: str
    kind: str


def typed_app() -> Workflows:
    app = Workflows()

    @app.workflow
    async def approve(order: str) -> Decision:
        decision = await Approval.wait(token=f"approve:{order}", metadata={"order": order})
        return Decision(decision.approved, decision.by, type(decision).__name__)

    @app.workflow
    async def collect(doc: str, want: int) -> list[int]:
        scores: list[int] = []
        async for review in Review.create(token=f"review:{doc}"):
            scores.append(review.score)
            if len(scores) == want:
                break
        return scores

    @app.workflow
    async def escalate() -> list[object]:
        got = await Escalation.wait(token="escalate")
        return [got.level is Level.HIGH, got.at, got.tags]

    return app


def test_a_dataclass_hook_gives_the_workflow_an_instance(harness: Harness) -> None:
    # GIVEN a run waiting on an Approval hook
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("approve", "o-1")
    harness.drain()
    # WHEN it is resumed with an instance of the class
    runtime.resume_hook("approve:o-1", Approval(approved=True, by="ada"))
    # THEN the workflow received an Approval, and the hook's token is free again
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == Decision(True, "ada", "Approval")
    assert harness.world.hooks.list(handle.run_id) == []


def test_a_mapping_payload_is_validated_and_converted(harness: Harness) -> None:
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("approve", "o-2")
    harness.drain()
    runtime.resume_hook("approve:o-2", {"approved": True})
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == Decision(True, "someone", "Approval")


def test_a_payload_that_does_not_fit_is_refused_naming_the_field_and_nothing_is_recorded(
    harness: Harness,
) -> None:
    # GIVEN a run waiting on an Approval hook
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("approve", "o-3")
    harness.drain()
    # WHEN resumes come with a bad field, a missing field, the wrong type of hook
    with pytest.raises(BadInput, match="field 'approved'"):
        runtime.resume_hook("approve:o-3", {"approved": "perhaps"})
    with pytest.raises(BadInput, match="field 'approved': Field required"):
        runtime.resume_hook("approve:o-3", {"by": "ada"})
    with pytest.raises(BadInput, match="field 'score': not a field of Approval"):
        runtime.resume_hook("approve:o-3", Review(score=3))
    # THEN nothing reached the run, which still waits, and a good resume then completes it
    assert EventType.HOOK_RECEIVED not in harness.event_types(handle.run_id)
    assert handle.status() is RunStatus.RUNNING
    Approval.resume("approve:o-3", Approval(approved=False, by="bob"), runtime=runtime)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == Decision(False, "bob", "Approval")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"approved": "yes"}, "field 'approved': Input should be a valid boolean"),
        ({"approved": 1}, "field 'approved': Input should be a valid boolean"),
        ({"approved": "true"}, "field 'approved': Input should be a valid boolean"),
        ({"approved": True, "by": 7}, "field 'by': Input should be a valid string"),
        ({"approved": True, "approver": "ada"}, "field 'approver': not a field of Approval"),
    ],
)
def test_typed_hooks_are_strict_over_http_a_wrong_type_or_an_unknown_field_is_a_400_naming_it(
    harness: Harness, payload: dict[str, object], message: str
) -> None:
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("approve", "o-strict")
    harness.drain()
    response = handle_http(
        http_event("POST", "/hooks/approve:o-strict/resume", body={"payload": payload}), runtime
    )
    error = json.loads(response["body"])["error"]
    assert (response["statusCode"], error["kind"]) == (400, "BadInput")
    assert error["message"].startswith(f"hook payload for Approval: {message}")
    with pytest.raises(BadInput, match=message):
        Approval.resume("approve:o-strict", payload, runtime=runtime)
    assert EventType.HOOK_RECEIVED not in harness.event_types(handle.run_id)


def test_a_pydantic_hook_that_allows_extra_fields_keeps_its_choice() -> None:
    class Open(Hook, BaseModel):
        model_config = ConfigDict(extra="allow")
        score: int

    assert validate(Open, {"score": 1, "more": "x"}).score == 1
    with pytest.raises(BadInput, match="field 'score': Input should be a valid integer"):
        validate(Open, {"score": "1"})


def test_a_pydantic_hook_yields_each_payload_as_a_model(harness: Harness) -> None:
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("collect", "d-1", 2)
    harness.drain()
    Review.resume("review:d-1", Review(score=4, note="fine"), runtime=runtime)
    with pytest.raises(BadInput, match="field 'score'"):
        Review.resume("review:d-1", {"score": "high"}, runtime=runtime)
    with pytest.raises(BadInput, match="field 'score': Input should be a valid integer"):
        runtime.resume_hook("review:d-1", {"score": "5"})  # strict: "5" is not an int
    runtime.resume_hook("review:d-1", {"score": 5})
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [4, 5]
    received = [e for e in harness.events(handle.run_id) if e.type is EventType.HOOK_RECEIVED]
    assert [runtime.app.serializer.loads(e.data_as(HookReceivedData).payload or b"") for e in received] == [
        {"score": 4, "note": "fine"},
        {"score": 5, "note": None},
    ]


def test_the_workflow_declaring_a_hook_type_registers_it_by_name() -> None:
    app = typed_app()
    assert app.hook_type(Approval.hook_type_name()) is Approval
    assert app.hook_type(Review.hook_type_name()) is Review
    assert Workflows().hook_type(Approval.hook_type_name()) is None


def test_an_app_that_does_not_know_the_hook_type_refuses_a_resume(harness: Harness) -> None:
    # GIVEN a run of the typed app waiting on its hook, and a client app without the class
    stranger = harness.runtime_for(Workflows())
    runtime = harness.runtime_for(typed_app())  # the latest runtime handles the deliveries
    handle = runtime.start("approve", "o-4")
    harness.drain()
    # WHEN the client resumes with a plain mapping THEN it cannot validate it, and says so
    with pytest.raises(BadInput, match="does not know that type"):
        stranger.resume_hook("approve:o-4", {"approved": True})
    # WHEN it resumes through the class THEN the class is the type, and the run completes
    Approval.resume("approve:o-4", {"approved": True, "by": "eve"}, runtime=stranger)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == Decision(True, "eve", "Approval")


def test_a_plain_subclass_is_a_dataclass_and_keeps_defaults() -> None:
    assert Approval(approved=True) == Approval(True, "someone")
    with pytest.raises(TypeError):
        Approval()  # type: ignore[call-arg]


def test_enum_and_datetime_fields_are_recorded_as_plain_data_and_come_back_typed(harness: Harness) -> None:
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("escalate")
    harness.drain()
    at = datetime(2026, 3, 4, 5, 6, tzinfo=UTC)
    runtime.resume_hook("escalate", Escalation(level=Level.HIGH, at=at, tags=["a"]))
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [True, at, ["a"]]
    [received] = [e for e in harness.events(handle.run_id) if e.type is EventType.HOOK_RECEIVED]
    assert Workflows().serializer.loads(received.data_as(HookReceivedData).payload or b"") == {
        "level": "high",
        "at": at,
        "tags": ["a"],
    }


def test_a_datetime_field_sent_as_iso_text_is_recorded_and_typed(harness: Harness) -> None:
    runtime = harness.runtime_for(typed_app())
    handle = runtime.start("escalate")
    harness.drain()
    runtime.resume_hook("escalate", {"level": "low", "at": "2026-03-04T05:06:00+02:00", "tags": []})
    assert harness.settle(handle) is RunStatus.COMPLETED
    [is_high, at, tags] = handle.result(timeout=0)
    assert (is_high, tags) == (False, [])
    assert at == datetime(2026, 3, 4, 3, 6, tzinfo=UTC)
