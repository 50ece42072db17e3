"""Failure helpers of the scenario tests.

``failure_of``: settle a run that must fail, and the ``WorkflowFailedError`` its result
raises. ``Crash`` / ``survive_crashes``: an invocation that dies inside a World call.
``fail_producer_creates``: a dispatched step's create failing, appended or one by one.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from world_aws import RunHandle, WorkflowFailedError
from world_aws.contract.records import RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler

from .harness import Harness
from .spy import Call, Fault


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


def fail_producer_creates(
    harness: Harness, error: Exception, match: Callable[[Call], bool], *, times: int = 1
) -> list[Fault]:
    """Make the producer's create of the matching step fail, whichever way it is written.

    A pass of nothing but creates appends them (``events.append_after``, ARCHITECTURE §5)
    and writes what did not land one by one (``events.create``): both fail.
    """
    return [
        harness.spy.inject("events.append_after", error, match=match, times=times),
        harness.spy.inject("events.create", error, match=match, times=times),
    ]
