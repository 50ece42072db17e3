"""What ``world-aws schedules`` and ``GET /schedules`` show: each schedule, its next tick and its record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from world_aws.contract.schedules import ScheduleStore
from world_aws.workflow.registry import Workflows
from world_aws.workflow.schedule_expr import iso_tick


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """One schedule as listed. The ``last_*`` and counts are ``None``/0 until the scheduler handled it."""

    name: str
    workflow: str
    expression: str
    overlap: str
    catch_up: int
    next_tick: str | None
    last_tick: str | None = None
    last_run_id: str | None = None
    started: int = 0
    skipped: int = 0
    missed: int = 0


def describe_schedules(
    app: Workflows, now: datetime, store: ScheduleStore | None = None
) -> list[ScheduleInfo]:
    """The app's schedules by name, with the next tick after ``now`` and, given a ``store``, their record."""
    listed: list[ScheduleInfo] = []
    for schedule in app.schedules:
        state = store.get(schedule.name) if store is not None else None
        # A schedule the scheduler never saw starts with the first tick after it sees it.
        after = now if state is None else max(now, state.last_tick)
        tick = schedule.expression.next_after(after)
        listed.append(
            ScheduleInfo(
                name=schedule.name,
                workflow=schedule.workflow_name,
                expression=schedule.expression.expression,
                overlap=schedule.overlap.value,
                catch_up=schedule.catch_up,
                next_tick=None if tick is None else iso_tick(tick),
                last_tick=None if state is None else iso_tick(state.last_tick),
                last_run_id=None if state is None else state.last_run_id,
                started=0 if state is None else state.started,
                skipped=0 if state is None else state.skipped,
                missed=0 if state is None else state.missed,
            )
        )
    return listed
