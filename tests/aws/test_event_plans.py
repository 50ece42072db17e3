"""Issue 12 item 3: each event's round trips and write units follow from its plan (``aws.plans``).

Every event of ``harness/round_trips.py``'s scenarios runs once on moto with the
call counter and the billing meter attached; its calls (reads, writes,
transactions) and its write units (GSI upkeep apart; all items here are under
1 KB) must be what its plan computes. ARCHITECTURE §8's table is the one the
plans generate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.core import MotoWorlds
from bench.instrument import CallRecorder, Latency
from bench.invocations import InvocationMeter
from bench.meter import BillingMeter
from bench.usage import Usage
from harness.round_trips import CallCounter, Cost, cost_of, scenarios
from world_aws.aws.codec.dynamo import Cancelled, CancelReason
from world_aws.aws.world import AwsWorld
from world_aws.aws.write import plans
from world_aws.contract.clock import SystemClock
from world_aws.contract.records import EventRequest, EventType, RunStartedData, StepCreatedData
from world_aws.testing.conformance.appended import last_position, owned_create, owned_outcome
from world_aws.testing.conformance.support import STEP, create_run, new_id

ARCHITECTURE = Path(__file__).resolve().parents[2] / "ARCHITECTURE.md"

# world_ops' scenario name -> the plan row it exercises (``plans.TABLE_ROWS``' label).
SCENARIO_ROWS = {
    "run_created": "run_created",
    "run_started": "run_started",
    "run_completed (1 live hook to release)": "run_completed, 1 live hook",
    "run_failed": "run_failed",
    "run_cancelled": "run_cancelled",
    "step_created": "step_created (dispatched)",
    "step_started": "step_started",
    "step_retrying": "step_retrying",
    "step_retrying (owned: handed to its retry message)": "step_retrying (owned: to its retry message)",
    "step_completed": "step_completed (dispatched)",
    "step_failed": "step_failed (dispatched)",
    "hook_created": "hook_created",
    "hook_received": "hook_received, with a resume_id",
    "hook_disposed": "hook_disposed",
    "wait_created": "wait_created",
    "wait_completed": "wait_completed",
    "patch_applied": "patch_applied",
}
ROWS = {label: (etype, options, hooks) for label, etype, options, hooks in plans.TABLE_ROWS}


@dataclass
class Metered:
    """A fresh AWS World on moto with the call counter and the billing meter attached."""

    world: AwsWorld
    recorder: CallRecorder
    meter: BillingMeter
    counter: CallCounter

    def measure(self, name: str, operation: Callable[[], object]) -> tuple[Cost, Usage]:
        """Run ``operation`` once as op ``name``: its calls and its bill."""
        with self.recorder.op(name):
            cost = cost_of(self.counter, operation)
        return cost, self.meter.snapshot().get(name, Usage())


@pytest.fixture(scope="module")
def metered() -> Iterator[Metered]:
    recorder = CallRecorder(Latency(0.0, 0.0, 0.0))
    with MotoWorlds(recorder) as moto, moto.fresh_world() as world:
        meter = BillingMeter(recorder, InvocationMeter(lambda _: 0.0))
        meter.attach(moto.clients)
        yield Metered(world, recorder, meter, CallCounter(world))


@pytest.fixture(scope="module")
def measured(metered: Metered) -> dict[str, tuple[Cost, Usage]]:
    """Each scenario's calls and bill, run once."""
    return {
        name: metered.measure(name, operation) for name, operation in scenarios(metered.world, SystemClock())
    }


def test_every_client_event_type_has_a_plan_and_a_measured_row() -> None:
    client_types = set(EventType) - {EventType.HOOK_CONFLICT, EventType.NOOP}
    assert set(plans.PLANS) == client_types
    assert {etype for etype, _, _ in ROWS.values()} == client_types
    assert set(SCENARIO_ROWS.values()) == set(ROWS)


@pytest.mark.parametrize("scenario", sorted(SCENARIO_ROWS))
def test_an_events_calls_and_write_units_are_its_plans(
    scenario: str, measured: dict[str, tuple[Cost, Usage]]
) -> None:
    etype, options, hooks = ROWS[SCENARIO_ROWS[scenario]]
    plan = plans.PLANS[etype]
    cost, bill = measured[scenario]
    assert cost.outcome == "ok"
    trips = plan.round_trips(options, live_hooks=hooks)
    assert (cost.reads, cost.writes, cost.transactions, cost.s3) == (
        trips.reads,
        trips.writes,
        trips.transactions,
        0,
    )
    assert bill.wru == plan.write_units(options, live_hooks=hooks)


def test_an_appends_calls_and_write_units_are_its_plans(metered: Metered) -> None:
    # GIVEN a pending run, appended to as the inline runtime does (ARCHITECTURE §5, §8)
    world = metered.world
    run_id = create_run(world, started=False)
    first, second = new_id("step"), new_id("step")
    at = datetime.now(UTC)
    shapes = {
        "append_after: run_started + the first owned create": [
            EventRequest(EventType.RUN_STARTED, None, RunStartedData()),
            owned_create(first),
        ],
        "append_after: an owned outcome + the next owned create (a sequential inline step)": [
            owned_outcome(first),
            owned_create(second),
        ],
        "append_after: an owned outcome + a dispatched create": [
            owned_outcome(second),
            EventRequest(
                EventType.STEP_CREATED, new_id("step"), StepCreatedData(step_name=STEP, input=b"in")
            ),
        ],
    }
    rows = {label: (batch_items, entity_actions) for label, batch_items, entity_actions in plans.APPEND_ROWS}
    assert set(shapes) == set(rows)
    for label, requests in shapes.items():
        after = last_position(world, run_id)
        cost, bill = metered.measure(
            label,
            lambda r=requests, a=after: world.events.append_after(run_id, a, r, at=at),
        )
        # THEN each lands in the calls its plan says (a tail, or one transaction), billed as it says
        assert cost.outcome == "ok" and last_position(world, run_id) == after + len(requests), label
        batch_items, entity_actions = rows[label]
        trips = plans.APPEND.round_trips(batch_items=batch_items, entity_actions=entity_actions)
        assert (cost.reads, cost.writes, cost.transactions) == (trips.reads, trips.writes, trips.transactions)
        assert bill.wru == plans.APPEND.write_units(batch_items=batch_items, entity_actions=entity_actions), (
            label
        )


def test_architecture_states_the_plans_table() -> None:
    assert plans.round_trip_table() in ARCHITECTURE.read_text(encoding="utf-8"), (
        "ARCHITECTURE §8's table of round trips per event is not plans.round_trip_table(); "
        "paste its output there"
    )


def test_a_cancellation_is_read_by_action_name() -> None:
    cancelled = Cancelled(
        [CancelReason("None", None), CancelReason("ConditionalCheckFailed", {"sk": "step#s"})],
        names=[plans.EVENT, plans.ENTITY],
    )
    assert cancelled.refused_by(plans.ENTITY) and not cancelled.refused_by(plans.EVENT)
    assert cancelled.item_of(plans.ENTITY) == {"sk": "step#s"}
    assert cancelled.reason(plans.TOKEN) is None and not cancelled.refused_by(plans.TOKEN)
    assert plans.PLANS[EventType.STEP_STARTED].refused_item(cancelled) == {"sk": "step#s"}
