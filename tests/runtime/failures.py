"""``failure_of``: settle a run that must fail, and the ``WorkflowFailedError`` its result raises."""

from __future__ import annotations

import pytest

from world_aws import RunHandle, WorkflowFailedError
from world_aws.contract.records import RunStatus

from .harness import Harness


def failure_of(harness: Harness, handle: RunHandle) -> WorkflowFailedError:
    assert harness.settle(handle) is RunStatus.FAILED
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    return failed.value
