"""The README's "Deploying changes" example does what the section says, on the memory World.

``orders.py`` (version 2, the charge in euros behind ``patched()``) is the README's
block, imported as the module ``orders``; version 1 is the same workflow before the
change, its step named as the module's would be. Runs start on version 1; version 2
is deployed (a new runtime takes the deliveries) with one run waiting for its
approval and one charged and waiting to be shipped. The replay gate passes version
2 on the runs exported before the deploy, and every log replays cold on it.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.harness import Harness, memory_harness
from world_aws import Workflows, create_hook
from world_aws.contract.log_export import export_runs
from world_aws.contract.records import RunStatus
from world_aws.testing.kit import WorkflowKit, check_replay

from .readme import named_blocks, section


@pytest.fixture
def orders() -> Iterator[types.ModuleType]:
    """The README's ``orders.py``, imported as ``orders``."""
    module = types.ModuleType("orders")
    sys.modules["orders"] = module
    try:
        exec(named_blocks(section("Deploying changes"))["orders.py"], module.__dict__)
        yield module
    finally:
        del sys.modules["orders"]


def _version_1() -> Workflows:
    app = Workflows()

    @app.step(name="orders.charge")
    def charge(order_id: str, cents: int) -> str:
        return f"charged {cents} USD for {order_id}"

    @app.workflow(name="order")
    async def order(order_id: str) -> dict[str, object]:
        approval = await create_hook(token=f"approve:{order_id}")
        receipt = await charge(order_id, 500)
        shipped = await create_hook(token=f"ship:{order_id}")
        return {"approval": approval, "receipt": receipt, "shipped": shipped}

    return app


def _resume(h: Harness, token: str, payload: str) -> None:
    h.runtime.resume_hook(token, payload)
    h.drain()


def test_the_charge_change_moves_waiting_runs_and_keeps_charged_ones(
    orders: types.ModuleType, tmp_path: Path
) -> None:
    with memory_harness() as h:
        # GIVEN on version 1: a run waiting for approval, and one charged and waiting to ship
        v1 = h.runtime_for(_version_1())
        waiting = v1.start("order", "o-1")
        charged = v1.start("order", "o-2")
        h.drain()
        _resume(h, "approve:o-2", "yes")
        assert h.status(charged.run_id) is RunStatus.RUNNING
        path = tmp_path / "runs.json"
        path.write_text(json.dumps(export_runs(h.world, [waiting.run_id, charged.run_id])))
        # WHEN the gate checks version 2 on them, and version 2 is deployed and the runs go on
        assert all(v.ok for v in WorkflowKit(orders.app).replay(path))
        v2 = h.runtime_for(orders.app)
        _resume(h, "approve:o-1", "yes")
        for order_id in ("o-1", "o-2"):
            _resume(h, f"ship:{order_id}", "shipped")
        fresh = v2.start("order", "o-3")
        h.drain()
        _resume(h, "approve:o-3", "yes")
        _resume(h, "ship:o-3", "shipped")
        # THEN the waiting run and the new one charged in euros, the charged one kept its dollars
        receipts = {run.run_id: run.result(timeout=0)["receipt"] for run in (waiting, charged, fresh)}
        assert receipts == {
            waiting.run_id: "charged 460 EUR for o-1",
            charged.run_id: "charged 500 USD for o-2",
            fresh.run_id: "charged 460 EUR for o-3",
        }
        for run in (waiting, charged, fresh):
            check_replay(orders.app, h.world, run.run_id)
