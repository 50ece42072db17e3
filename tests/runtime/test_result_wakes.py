"""``result()`` returns when the run ends in this process, not at the handle's next poll.

The World notifies ``World.ends`` when one of its writes ends a run; ``RunHandle.wait``
waits on it between reads. Shown without timing anything: the poll interval is made a
minute, so a handle that still slept between reads would run into its timeout.
"""

from __future__ import annotations

import pytest

from world_aws import Workflows
from world_aws.client import handle
from world_aws.contract.world import RunEnds
from world_aws.local.stack import local_stack

app = Workflows()


@app.step()
async def double(x: int) -> int:
    return 2 * x


@app.workflow()
async def twice(x: int) -> int:
    return await double(await double(x))


@pytest.fixture
def minute_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handle, "POLL_MIN_SECONDS", 60.0)
    monkeypatch.setattr(handle, "POLL_MAX_SECONDS", 60.0)


@pytest.mark.usefixtures("minute_polls")
@pytest.mark.parametrize("kind", ["memory", "embedded"])
def test_result_is_woken_by_the_runs_end_in_this_process(kind: str) -> None:
    # GIVEN a local stack whose consumers run in this process, and minute-long polls
    with local_stack(app, kind=kind) as stack:
        # WHEN a run is started and its result awaited (with less time than one poll)
        run = stack.runtime.start(twice, 5)
        # THEN the result comes: the end woke the handle
        assert run.result(timeout=30) == 20


def test_a_run_ended_elsewhere_is_seen_by_the_next_read() -> None:
    # GIVEN no notification (the run ends in another process): wait gives up after its timeout
    ends = RunEnds()
    assert ends.wait("run_x", 0.01) is False
    # WHEN this process records the end, a waiter that comes later sees it at once
    ends.notify("run_x")
    assert ends.wait("run_x", 60.0) is True


def test_the_ends_kept_are_bounded() -> None:
    ends = RunEnds(keep=2)
    for run_id in ("a", "b", "c"):
        ends.notify(run_id)
    assert ends.wait("a", 0.0) is False and ends.wait("c", 0.0) is True
