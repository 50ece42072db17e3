"""The scheduler's role grants what a scheduler pass calls, measured on moto (moto evaluates no IAM).

A pass over every path (first sight, a start, a tick found started, an overlap
skip, the state advanced, a lost race) is run on the AWS World with every
DynamoDB, SQS and S3 request recorded; each request (each action of a
transaction) must be an action the template grants ``SchedulerFunctionRole``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from world_aws import Workflows, create_hook
from world_aws.aws.infra.template import load_template
from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import ManualClock
from world_aws.contract.world import World
from world_aws.runtime.runtime import Runtime
from world_aws.testing.aws_factory import aws_world
from world_aws.worker.scheduler import Scheduler, TickOutcome

# IAM authorises each action of a transaction as its own item action.
_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def granted_actions() -> set[str]:
    role = load_template()["Resources"]["SchedulerFunctionRole"]["Properties"]
    found: set[str] = set()
    for policy in role["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            # A conditional statement (Fn::If, the payload key's) as granted when it holds.
            for granted in statement["Fn::If"][1:] if "Fn::If" in statement else [statement]:
                actions = granted.get("Action", [])
                found.update(actions if isinstance(actions, list) else [actions])
    return found


@contextmanager
def recorded(world: AwsWorld) -> Iterator[set[str]]:
    calls: set[str] = set()

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        service = model.service_model.endpoint_prefix
        if model.name == "TransactWriteItems":
            for item in params["TransactItems"]:
                calls.update(f"dynamodb:{_TRANSACTION_ACTIONS[kind]}" for kind in item)
        else:
            calls.add(f"{service}:{model.name}")

    clients = (world.clients.dynamodb, world.clients.sqs, world.clients.s3)
    for client in clients:
        client.meta.events.register("provide-client-params.*.*", record)
    try:
        yield calls
    finally:
        for client in clients:
            client.meta.events.unregister("provide-client-params.*.*", record)


def test_a_scheduler_pass_calls_only_what_its_role_grants() -> None:
    app = Workflows()

    @app.workflow(name="perm.gated", schedule="rate(5 minutes)")
    async def gated() -> str:
        return str(await create_hook())

    clock = ManualClock()
    with aws_world(clock) as world:
        runtime = Runtime(cast(World, world), app)
        scheduler, racer = Scheduler(runtime), Scheduler(runtime)
        try:
            with recorded(world) as calls:
                scheduler.tick()  # first sight
                clock.advance(300)
                stale = world.schedules.get("perm.gated")
                started = scheduler.tick()  # a start
                world.schedules.advance(stale, expected_tick=started.ticks[0].tick)  # type: ignore[arg-type]
                again = racer.tick()  # the tick found started
                clock.advance(300)
                skipped = scheduler.tick()  # previous run still pending: skipped
        finally:
            runtime.close()
    assert [t.outcome for t in started.ticks + again.ticks + skipped.ticks] == [
        TickOutcome.STARTED,
        TickOutcome.ALREADY_STARTED,
        TickOutcome.SKIPPED,
    ]
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "sqs:SendMessage"} <= calls
    assert calls <= granted_actions(), calls - granted_actions()
