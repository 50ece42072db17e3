"""Schedules: a workflow started once per tick of a ``rate(...)`` or ``cron(...)`` expression.

Declared with ``@app.workflow(schedule="rate(5 minutes)")`` or
``app.schedule(workflow, "cron(0 12 * * ? *)", ...)``; started by the scheduler
(:mod:`world_aws.worker.scheduler`). Two policies are part of a schedule:

* ``overlap``: what a tick does while the run of the previous tick started is
  still pending or running. ``"skip"`` (the default) does not start it (counted
  as skipped, never started later); ``"allow"`` starts it anyway.
* ``catch_up``: after a gap in the scheduler's passes (downtime, a failing
  deployment), how many of the due ticks one pass starts: the ``catch_up`` most
  recent (default 1); the older ones are dropped and counted as missed. Ticks
  more than a day old are never started (``SchedulerConfig.horizon_seconds``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from world_aws.errors import BadInput
from world_aws.workflow.schedule_expr import ScheduleExpression, parse_schedule

MAX_SCHEDULE_NAME_CHARS = 100
MAX_CATCH_UP = 100
# Kept inline in every item (the entity inline limit is 64 KiB): the scheduler function may
# then start runs without any access to the payload bucket.
MAX_SCHEDULE_ARGS_BYTES = 32_768


class Overlap(StrEnum):
    """What a tick does while the previous tick's run has not ended."""

    SKIP = "skip"
    ALLOW = "allow"


@dataclass(frozen=True, slots=True)
class Schedule:
    """One schedule of an app: which workflow, when, with which arguments, and its policies."""

    name: str
    workflow_name: str
    expression: ScheduleExpression
    overlap: Overlap = Overlap.SKIP
    catch_up: int = 1
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def idempotency_key(self, tick_iso: str) -> str:
        """The start key of a tick: the same schedule and tick always name the same run."""
        return f"schedule:{self.name}:{tick_iso}"


def make_schedule(
    workflow_name: str,
    expression: str,
    *,
    name: str | None = None,
    overlap: Overlap | str = Overlap.SKIP,
    catch_up: int = 1,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
) -> Schedule:
    """A validated :class:`Schedule` (the registry checks the arguments against the workflow).

    Raises:
        BadInput: an expression, name, overlap policy or catch-up count that is not valid.
    """
    schedule_name = name or workflow_name
    if (
        not schedule_name
        or len(schedule_name) > MAX_SCHEDULE_NAME_CHARS
        or not schedule_name.isprintable()
        or " " in schedule_name
    ):
        raise BadInput(
            f"schedule name must be 1-{MAX_SCHEDULE_NAME_CHARS} printable characters without spaces, "
            f"got {schedule_name[:40]!r}"
        )
    try:
        policy = Overlap(overlap)
    except ValueError:
        raise BadInput(f"overlap must be 'skip' or 'allow', got {overlap!r}") from None
    if not 1 <= catch_up <= MAX_CATCH_UP:
        raise BadInput(f"catch_up must be 1-{MAX_CATCH_UP}, got {catch_up}")
    return Schedule(
        name=schedule_name,
        workflow_name=workflow_name,
        expression=parse_schedule(expression),
        overlap=policy,
        catch_up=catch_up,
        args=tuple(args),
        kwargs=dict(kwargs or {}),
    )
