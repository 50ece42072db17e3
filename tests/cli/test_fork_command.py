"""``world-aws fork RUN_ID [--from-step NAME]`` and ``inspect``'s ``forked`` line, on the embedded stack."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from world_aws import FatalError, Workflows, create_hook
from world_aws.local.dev import start_dev_stack

from .conftest import Dev, fake_aws_environment


class Shop:
    """An app whose third step fails until ``fixed`` (what a deploy of the fix changes)."""

    def __init__(self) -> None:
        self.fixed = False
        self.bodies: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.app = Workflows()

        @self.app.step(name="reserve")
        def reserve(order: str) -> str:
            self._ran("reserve")
            return f"r:{order}"

        @self.app.step(name="charge")
        def charge(order: str) -> str:
            self._ran("charge")
            return f"c:{order}"

        @self.app.step(name="ship", max_retries=0)
        def ship(order: str) -> str:
            self._ran("ship")
            if not self.fixed:
                raise FatalError("carrier down")
            return f"s:{order}"

        @self.app.workflow(name="shop")
        async def shop(order: str) -> list[str]:
            return [await reserve(order), await charge(order), await ship(order)]

        @self.app.workflow(name="hold")
        async def hold(order: str) -> object:
            return await create_hook(token=f"hold:{order}")

    def _ran(self, name: str) -> None:
        with self._lock:
            self.bodies[name] += 1


@pytest.fixture(scope="module")
def shop() -> Shop:
    return Shop()


@pytest.fixture(scope="module")
def dev(shop: Shop) -> Iterator[Dev]:
    with pytest.MonkeyPatch.context() as patch:
        fake_aws_environment(patch)
        stack = start_dev_stack(shop.app, port=0)
        try:
            yield Dev(stack)
        finally:
            stack.stop()


def test_a_failed_run_is_forked_by_the_cli_and_inspect_shows_the_link(dev: Dev, shop: Shop) -> None:
    # GIVEN a run that failed in its third step
    run_id = dev.cli("start", "shop", "--arg", '"o-1"').out.strip()
    dev.wait_for_status(run_id, "failed")
    assert shop.bodies == Counter(reserve=1, charge=1, ship=1)
    # WHEN the fix is in and the run is forked with the CLI
    shop.fixed = True
    forked = dev.cli("fork", run_id)
    # THEN it prints the fork's id, and the fork completes, the first two steps not run again
    assert forked.code == 0, forked.err
    fork_id = forked.out.strip()
    assert fork_id.startswith("wrun_") and fork_id != run_id
    run = dev.wait_for_status(fork_id, "completed")
    assert run["result"] == ["r:o-1", "c:o-1", "s:o-1"] and run["forked_from"] == run_id
    assert shop.bodies == Counter(reserve=1, charge=1, ship=2)
    # AND inspect names the original, in text and in JSON
    inspected = dev.cli("inspect", fork_id)
    assert f"forked    from {run_id}" in inspected.out.splitlines()
    assert json.loads(dev.cli("inspect", fork_id, "--json").out)["run"]["forked_from"] == run_id


def test_fork_from_a_step_and_its_errors(dev: Dev, shop: Shop) -> None:
    shop.fixed = True
    run_id = dev.cli("start", "shop", "--arg", '"o-2"').out.strip()
    dev.wait_for_status(run_id, "completed")
    before = shop.bodies.copy()
    # a completed run needs a step; an unknown step is named
    refused = dev.cli("fork", run_id)
    assert refused.code == 2 and "name the step to fork it from" in refused.err
    unknown = dev.cli("fork", run_id, "--from-step", "refund")
    assert unknown.code == 2 and "has no step 'refund'" in unknown.err
    # WHEN it is forked from its second step, under a key, twice
    first = dev.cli("fork", run_id, "--from-step", "charge", "--idempotency-key", "k1", "--json")
    again = dev.cli("fork", run_id, "--from-step", "charge", "--idempotency-key", "k1")
    assert first.code == again.code == 0, first.err
    answer = json.loads(first.out)
    assert answer["forked_from"] == run_id and again.out.strip() == answer["run_id"]
    # THEN one fork ran the second and third steps again, not the first
    dev.wait_for_status(answer["run_id"], "completed")
    assert shop.bodies - before == Counter(charge=1, ship=1)


def test_forking_a_running_run_exits_1(dev: Dev) -> None:
    running = dev.cli("start", "hold", "--arg", '"o-3"').out.strip()
    dev.wait_for_event(running, "hook_created")
    refused = dev.cli("fork", running)
    assert refused.code == 1
    assert "is running: only an ended run can be forked (cancel it first" in refused.err
