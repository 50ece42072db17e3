"""The test kit with the streaming and typed-approval examples: ``run.stream()``, a typed resume."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from examples.streaming import app as streaming_app
from examples.streaming import summarize
from examples.typed_approval import app as typed_app
from examples.typed_approval import refund
from world_aws import BadInput
from world_aws.testing.kit import WorkflowKit

KitFactory = Callable[..., WorkflowKit]


def test_run_stream_gives_what_the_steps_wrote(workflow_kit: KitFactory) -> None:
    run = workflow_kit(streaming_app).run(summarize, ["one two"])
    assert run.result == {"counts": [2], "summary": "2 words"}
    assert run.stream() == [
        {"doc": "one two", "status": "reading"},
        {"doc": "one two", "status": "counted", "words": 2},
        {"status": "done", "words": 2},
    ]
    assert run.stream("other") == []


def test_a_typed_hook_resumed_through_the_kit_is_validated(workflow_kit: KitFactory) -> None:
    kit = workflow_kit(typed_app)
    run = kit.start(refund, "order-5", 700, 3600.0)
    assert run.waiting_hooks() == ["refund:order-5"]
    with pytest.raises(BadInput, match="field 'approved'"):
        kit.resume_hook("refund:order-5", {"approved": []})
    kit.resume_hook("refund:order-5", {"approved": False, "by": "bob"})
    assert kit.finish(run).result == {"order": "order-5", "status": "refused", "by": "bob"}
