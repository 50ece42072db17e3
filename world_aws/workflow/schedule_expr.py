"""Schedule expressions in EventBridge syntax: ``rate(5 minutes)`` and ``cron(0 12 * * ? *)``.

A rate ticks at the multiples of its period since the Unix epoch (UTC), so
``rate(5 minutes)`` ticks at :00, :05, :10 ... and ``rate(1 day)`` at midnight UTC
wherever and whenever it is deployed (EventBridge counts a rate from the rule's
creation instead; fixed ticks are what make "one run per tick" checkable). As in
EventBridge, the unit is singular for 1 (``rate(1 minute)``) and plural above.
Cron expressions are in :mod:`world_aws.workflow.cron`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from world_aws.errors import BadInput
from world_aws.workflow.cron import parse_cron

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RATE_UNITS = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}
_FORM = re.compile(r"^(rate|cron)\((.*)\)$")


class ScheduleExpression(Protocol):
    """When a schedule ticks."""

    @property
    def expression(self) -> str: ...

    def next_after(self, moment: datetime) -> datetime | None:
        """The first tick strictly after ``moment``; ``None`` if it never ticks again."""
        ...


@dataclass(frozen=True, slots=True)
class RateSchedule:
    """``rate(N unit)``: ticks every ``period`` from the epoch."""

    expression: str
    period: timedelta

    def next_after(self, moment: datetime) -> datetime | None:
        elapsed = moment - EPOCH
        return EPOCH + (elapsed // self.period + 1) * self.period


def parse_schedule(text: str) -> ScheduleExpression:
    """Parse ``rate(...)`` or ``cron(...)``.

    Raises:
        BadInput: naming what is wrong (the form, a unit, a field).
    """
    expression = " ".join(text.split())
    form = _FORM.match(expression)
    if form is None:
        raise BadInput(f"schedule {text!r} is neither 'rate(N minutes|hours|days)' nor 'cron(6 fields)'")
    kind, inner = form.groups()
    if kind == "cron":
        return parse_cron(expression, inner)
    return _parse_rate(expression, inner)


def _parse_rate(expression: str, inner: str) -> RateSchedule:
    parts = inner.split()
    if len(parts) != 2 or not parts[0].isdigit() or int(parts[0]) < 1:
        raise BadInput(f"{expression!r}: a rate is 'rate(N unit)' with N a positive whole number")
    value, unit = int(parts[0]), parts[1]
    singular = unit[:-1] if unit.endswith("s") else unit
    if singular not in _RATE_UNITS:
        raise BadInput(f"{expression!r}: the unit is one of minute(s), hour(s), day(s), got {unit!r}")
    expected = singular if value == 1 else f"{singular}s"
    if unit != expected:
        raise BadInput(f"{expression!r}: write 'rate({value} {expected})' (singular for 1, as EventBridge)")
    return RateSchedule(expression, value * _RATE_UNITS[singular])


def iso_tick(tick: datetime) -> str:
    """A tick as ISO-8601 UTC text to the second (``2026-01-01T12:00:00Z``): part of its run's key."""
    return tick.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ticks_between(
    schedule: ScheduleExpression, after: datetime, until: datetime, *, limit: int
) -> Iterator[datetime]:
    """The ticks in ``(after, until]``, oldest first, at most ``limit`` of them."""
    moment = after
    for _ in range(limit):
        tick = schedule.next_after(moment)
        if tick is None or tick > until:
            return
        yield tick
        moment = tick
