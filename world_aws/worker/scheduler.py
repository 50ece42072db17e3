"""The scheduler: one pass starts every due tick of every schedule of an app, once.

A pass (an EventBridge rule every minute on AWS, a background thread locally)
does, per schedule:

1. read its state (``world.schedules``: the last tick handled). A schedule never
   seen before is recorded as handled up to now: its first tick is the first one
   after the scheduler first saw it.
2. list the ticks due since (``(last_tick, now]``, none older than
   ``SchedulerConfig.horizon_seconds``). The ``catch_up`` most recent are handled; the older ones
   are dropped and counted as missed (a gap in the passes never floods the app).
3. handle each, oldest first. A tick's run id is derived from the key
   ``schedule:<name>:<tick ISO time>`` in the ticks' own namespace
   (``ids.schedule_run_id``: no caller's idempotency key names it), so a tick whose
   run exists was started (by an earlier pass that crashed before step 4, or by a
   concurrent one) and is not started again; otherwise, under ``overlap="skip"``,
   a tick whose previous run is pending or running is skipped; else it is started
   with ``Runtime.start_tick`` under that key (a second start of the key returns the
   same run, so even two passes racing start it once). A run under the tick's id
   that is not the tick's (another workflow, or without the tick's ``schedule`` and
   ``schedule_tick`` attributes) is not taken for it: the tick is ``refused``.
4. advance the state with a compare-and-set on the last tick read: a pass that
   lost the race writes nothing (the winner handled the same ticks).

A pass that fails for one schedule (the World refused, throttled) leaves its
state alone and goes on with the next; the next pass redoes those ticks, and
step 3 makes that safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from world_aws.client.handle import RunHandle
from world_aws.contract.records import ResolveData, Run, RunStatus
from world_aws.contract.schedules import ScheduleState
from world_aws.contract.world import World
from world_aws.engine import ids
from world_aws.engine.chain_links import last_of_chain
from world_aws.errors import Misconfigured, NotFound, WorldAwsError
from world_aws.observe.telemetry import LOG
from world_aws.worker.config import SchedulerConfig
from world_aws.workflow.registry import Workflows
from world_aws.workflow.schedule_expr import iso_tick, ticks_between
from world_aws.workflow.schedules import Overlap, Schedule

# The attributes a tick's run carries: which schedule, which tick.
SCHEDULE_ATTRIBUTE = "schedule"
TICK_ATTRIBUTE = "schedule_tick"
# A 1-minute schedule has 1,440 ticks in the default horizon: the most a pass lists.
MAX_TICKS_LISTED = 10_000


class TickOutcome(StrEnum):
    STARTED = "started"  # this pass started the tick's run
    ALREADY_STARTED = "already_started"  # the tick's run existed (an earlier or concurrent pass)
    SKIPPED = "skipped"  # overlap="skip" and the previous tick's run had not ended
    MISSED = "missed"  # dropped by the catch-up bound
    REFUSED = "refused"  # the tick's run id is held by a run that is not the tick's


@dataclass(frozen=True, slots=True)
class HandledTick:
    schedule: str
    tick: datetime
    outcome: TickOutcome
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class SchedulerReport:
    """What one pass did: the ticks it handled, and the schedules it could not handle."""

    ticks: list[HandledTick] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def count(self, outcome: TickOutcome) -> int:
        return sum(1 for t in self.ticks if t.outcome is outcome)


class TickStarter(Protocol):
    """What the scheduler starts ticks with: a ``Runtime`` or its ``Client``."""

    world: World
    app: Workflows

    def start_tick(
        self,
        workflow: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        tick_key: str,
        attributes: dict[str, str],
        again: bool = False,
    ) -> RunHandle: ...


class Scheduler:
    """Starts the due ticks of ``runtime.app``'s schedules; one ``tick()`` per pass."""

    def __init__(self, runtime: TickStarter, config: SchedulerConfig | None = None) -> None:
        self._runtime = runtime
        self._world = runtime.world
        self.config = config or SchedulerConfig()

    def tick(self) -> SchedulerReport:
        """One pass over every schedule.

        Raises:
            Misconfigured: a table or queue is missing or refused (the deployment is wrong).
        """
        now = self._world.clock.now()
        report = SchedulerReport()
        for schedule in self._runtime.app.schedules:
            try:
                report.ticks.extend(self._handle(schedule, now))
            except Misconfigured:
                raise
            except WorldAwsError as exc:
                report.failed.append(schedule.name)
                LOG.warning("scheduler could not handle schedule %s: %s", schedule.name, exc)
        return report

    def next_tick(self, schedule: Schedule, now: datetime | None = None) -> datetime | None:
        """The first tick of ``schedule`` after ``now`` (default: the World's clock)."""
        return schedule.expression.next_after(now or self._world.clock.now())

    def _handle(self, schedule: Schedule, now: datetime) -> list[HandledTick]:
        state = self._world.schedules.get(schedule.name)
        if state is None:
            self._world.schedules.advance(ScheduleState(schedule.name, last_tick=now), expected_tick=None)
            return []
        since = max(state.last_tick, now - timedelta(seconds=self.config.horizon_seconds))
        due = list(ticks_between(schedule.expression, since, now, limit=MAX_TICKS_LISTED))
        if not due:
            return []
        dropped, kept = due[: -schedule.catch_up], due[-schedule.catch_up :]
        handled = [HandledTick(schedule.name, tick, TickOutcome.MISSED) for tick in dropped]
        if dropped:
            LOG.warning(
                "scheduler dropped %d due ticks of %s (catch_up=%d), %s to %s",
                len(dropped),
                schedule.name,
                schedule.catch_up,
                iso_tick(dropped[0]),
                iso_tick(dropped[-1]),
            )
        last_run_id = state.last_run_id
        for tick in kept:
            outcome, run_id = self._start(schedule, tick, last_run_id)
            handled.append(HandledTick(schedule.name, tick, outcome, run_id))
            last_run_id = run_id or last_run_id
        started = sum(1 for h in handled if h.outcome in (TickOutcome.STARTED, TickOutcome.ALREADY_STARTED))
        new_state = replace(
            state,
            last_tick=due[-1],
            last_run_id=last_run_id,
            started=state.started + started,
            skipped=state.skipped + sum(1 for h in handled if h.outcome is TickOutcome.SKIPPED),
            missed=state.missed + len(dropped),
        )
        if not self._world.schedules.advance(new_state, expected_tick=state.last_tick):
            LOG.info("another scheduler pass advanced schedule %s first", schedule.name)
        return handled

    def _start(
        self, schedule: Schedule, tick: datetime, previous_run_id: str | None
    ) -> tuple[TickOutcome, str | None]:
        tick_iso = iso_tick(tick)
        key = schedule.idempotency_key(tick_iso)
        run_id = ids.schedule_run_id(key)
        existing = self._existing(run_id)
        if existing is not None and not _is_tick_run(existing, schedule, tick_iso):
            LOG.error(
                "scheduler refused a tick of %s: its run id is held by a run of %s that is not the tick's",
                schedule.name,
                existing.workflow_name,
                extra={"run_id": run_id, "tick": tick_iso},
            )
            return TickOutcome.REFUSED, None
        if existing is not None and existing.status is not RunStatus.PENDING:
            return TickOutcome.ALREADY_STARTED, run_id
        if existing is not None:
            # Pending: its start may have failed after run_created landed (its first message
            # never sent). Start it again under its key: the create is refused, the publish
            # is absorbed if the message did go.
            self._start_run(schedule, key, tick_iso, again=True)
            return TickOutcome.ALREADY_STARTED, run_id
        if schedule.overlap is Overlap.SKIP and previous_run_id is not None and self._live(previous_run_id):
            LOG.info(
                "scheduler skipped a tick of %s: the previous run is still going",
                schedule.name,
                extra={"run_id": previous_run_id, "tick": tick_iso},
            )
            return TickOutcome.SKIPPED, None
        run_id = self._start_run(schedule, key, tick_iso)
        LOG.info("scheduler started a tick of %s", schedule.name, extra={"run_id": run_id})
        return TickOutcome.STARTED, run_id

    def _start_run(self, schedule: Schedule, key: str, tick_iso: str, *, again: bool = False) -> str:
        handle = self._runtime.start_tick(
            schedule.workflow_name,
            tuple(schedule.args),
            dict(schedule.kwargs),
            tick_key=key,
            attributes={SCHEDULE_ATTRIBUTE: schedule.name, TICK_ATTRIBUTE: tick_iso},
            again=again,
        )
        return handle.run_id

    def _existing(self, run_id: str) -> Run | None:
        try:
            return self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
        except NotFound:
            return None

    def _live(self, run_id: str) -> bool:
        """Whether the run, or the ``continue_as_new`` chain it began, is still going."""
        last = last_of_chain(self._world, run_id)
        return last is not None and not last.status.terminal


def _is_tick_run(run: Run, schedule: Schedule, tick_iso: str) -> bool:
    """Whether ``run`` is the run a start of this tick made (and not one that took its id)."""
    return (
        run.workflow_name == schedule.workflow_name
        and run.attributes.get(SCHEDULE_ATTRIBUTE) == schedule.name
        and run.attributes.get(TICK_ATTRIBUTE) == tick_iso
    )
