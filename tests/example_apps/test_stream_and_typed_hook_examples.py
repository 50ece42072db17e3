"""examples/streaming.py and examples/typed_approval.py: run by ``world-aws run``, and driven by hand.

``world-aws run`` completes both (the typed approval by its timeout, since nobody
resumes it); on a ``ManualClock`` the typed approval is resumed through the
Runtime, and the streaming run's progress is read back in order.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from examples.streaming import app as streaming_app
from examples.typed_approval import Approval
from examples.typed_approval import app as typed_app
from harness.harness import Harness, memory_harness
from world_aws import BadInput
from world_aws.cli.main import main
from world_aws.contract.records import RunStatus


@pytest.fixture
def harness() -> Iterator[Harness]:
    with memory_harness() as built:
        yield built


def run_example(module: str, workflow: str, *args: Any) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", f"examples.{module}:app", workflow]
    for arg in args:
        argv += ["--arg", json.dumps(arg)]
    code = main([*argv, "--json", "--world", "memory", "--timeout", "60"], out=out, err=err)
    document: dict[str, Any] = json.loads(out.getvalue())
    assert code == 0, (err.getvalue(), document.get("error"))
    return document


def test_world_aws_run_completes_the_streaming_example() -> None:
    document = run_example("streaming", "summarize", ["the quick brown fox", "jumps over"])
    assert document["status"] == "completed"
    assert document["result"] == {"counts": [4, 2], "summary": "6 words"}


def test_world_aws_run_completes_the_typed_approval_example_by_its_timeout() -> None:
    document = run_example("typed_approval", "refund", "order-1", 100, 0.2)
    assert (document["status"], document["result"]) == (
        "completed",
        {"order": "order-1", "status": "expired"},
    )


def test_the_streaming_example_reports_each_step_in_order(harness: Harness) -> None:
    runtime = harness.runtime_for(streaming_app)
    handle = runtime.start("summarize", ["a b c", "d"])
    assert harness.settle(handle) is RunStatus.COMPLETED

    async def updates() -> list[Any]:
        return [update async for update in handle.readable()]

    assert asyncio.run(updates()) == [
        {"doc": "a b c", "status": "reading"},
        {"doc": "a b c", "status": "counted", "words": 3},
        {"doc": "d", "status": "reading"},
        {"doc": "d", "status": "counted", "words": 1},
        {"status": "done", "words": 4},
    ]


def test_the_typed_approval_refuses_a_bad_payload_then_refunds(harness: Harness) -> None:
    runtime = harness.runtime_for(typed_app)
    handle = runtime.start("refund", "order-2", 2500, 600.0)
    harness.drain()
    with pytest.raises(BadInput, match="field 'approved'"):
        runtime.resume_hook("refund:order-2", {"approved": "maybe"})
    Approval.resume("refund:order-2", Approval(approved=True, by="ada"), runtime=runtime)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == {
        "order": "order-2",
        "status": "refunded",
        "notice": "refunded 2500 cents on order-2 (approved by ada)",
    }
