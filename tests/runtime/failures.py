"""Failure helpers of the scenario tests.

``failure_of``: settle a run that must fail, and the ``WorkflowFailedError`` its result
raises. ``Crash`` / ``survive_crashes``: an invocation that dies inside a World call.
"""

from __future__ import annotations

import pytest

from world_aws import RunHandle, WorkflowFailedError
from world_aws.contract.records import RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler

from .harness import Harness


def failure_of(harness: Harness, handle: RunHandle) -> WorkflowFailedError:
    assert harness.settle(handle) is RunStatus.FAILED
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    return failed.value


class Crash(BaseException):
    """The invocation died inside a World call (no ``except Exception`` of the runtime runs)."""


def survive_crashes(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
    """Turn a crashed invocation into a failed delivery (the message is redelivered)."""
    try:
        return handle(delivery)
    except Crash as crash:
        raise RuntimeError("the invocation crashed") from crash
