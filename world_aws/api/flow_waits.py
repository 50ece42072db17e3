"""What a pending step under flow control waits for, in words: ``GET /runs/{run_id}/steps``' ``waiting``.

"waiting for a concurrency slot of `charge` key `cust-7` (2 ahead, 3 of 3 held)" or
"rate limited until 12:00:03" (UTC), read from the World's admission records.
"""

from __future__ import annotations

from datetime import timedelta

from world_aws.contract.records import ResolveData, Run, Step, StepStatus
from world_aws.contract.world import World
from world_aws.errors import NotFound
from world_aws.workflow.flow import call_key, step_scope
from world_aws.workflow.registry import Workflows


def flow_waits(world: World, app: Workflows, run: Run, steps: list[Step]) -> dict[str, str]:
    """What each pending step of a live ``run`` waits for, by step id (steps waiting for nothing left out)."""
    if run.status.terminal:
        return {}
    waits = {step.step_id: flow_wait(world, app, step) for step in steps}
    return {step_id: wait for step_id, wait in waits.items() if wait is not None}


def may_wait(app: Workflows, step_name: str, status: str) -> bool:
    """Whether a step of ``step_name`` in ``status`` can be waiting under flow control."""
    fn = app.get_step(step_name)
    return status == StepStatus.PENDING.value and fn is not None and fn.options.flow_controlled


def flow_wait(world: World, app: Workflows, step: Step) -> str | None:
    """What ``step`` waits for under its flow control (None: it is not pending, or waits for nothing)."""
    fn = app.get_step(step.step_name)
    if fn is None or not may_wait(app, step.step_name, step.status.value):
        return None
    try:
        data = world.steps.get(step.run_id, step.step_id, resolve_data=ResolveData.ALL).input or b""
    except NotFound:
        return None
    key = call_key(
        app.serializer.loads,
        fn.options.concurrency,
        fn.options.rate_limit,
        data,
        where=f"{step.run_id}/{step.step_id}",
    )
    scope = step_scope(fn.name, key)
    name = fn.name.rsplit(".", 1)[-1]
    concurrency, rate = fn.options.concurrency, fn.options.rate_limit
    if concurrency is not None:
        slots = world.admission.slots(scope)
        position = slots.position(f"{step.run_id}/{step.step_id}")
        if position is not None:
            held = f"{len(slots.holders)} of {concurrency.limit} held"
            return f"waiting for a concurrency slot of `{name}` key `{key}` ({position} ahead, {held})"
    if rate is not None:
        now = world.clock.now()
        due = world.admission.window(scope).next_due(rate.limit, timedelta(seconds=rate.period_seconds), now)
        if due is not None:
            return f"rate limited until {due:%H:%M:%S}"
    return None
