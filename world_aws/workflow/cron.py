"""EventBridge cron expressions: ``cron(minutes hours day-of-month month day-of-week year)``.

The syntax is EventBridge's (docs.aws.amazon.com/eventbridge/latest/userguide/
eb-cron-expressions.html), evaluated in UTC at minute resolution:

* every field takes ``,`` lists, ``-`` ranges (a range may wrap: ``FRI-MON``), ``*``
  and ``/`` steps (``0/15`` = 0, 15, 30, 45; ``*/10``), except day-of-week, which
  takes no steps;
* months are 1-12 or JAN-DEC, days of the week 1-7 or SUN-SAT (1 = Sunday), years
  1970-2199;
* exactly one of day-of-month and day-of-week is ``?`` (any);
* day-of-month also takes ``L`` (the last day), ``LW`` (the last weekday) and ``nW``
  (the weekday nearest day n, within the month); day-of-week takes ``L`` (Saturday,
  the last day of the week), ``nL`` (the last day n of the month) and ``n#k`` (the
  k-th day n of the month, alone in its field).

:meth:`CronSchedule.next_after` walks the calendar day by day, skipping whole
years and months that cannot match, so a tick far away costs a few hundred
day checks, not minutes.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from world_aws.errors import BadInput

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
MIN_YEAR, MAX_YEAR = 1970, 2199

DayTest = Callable[[date], bool]


def aws_weekday(day: date) -> int:
    """EventBridge's day-of-week number of ``day``: 1 = Sunday ... 7 = Saturday."""
    return (day.weekday() + 1) % 7 + 1


def _number(token: str, low: int, high: int, names: tuple[str, ...], what: str) -> int:
    upper = token.upper()
    if names and upper in names:
        return names.index(upper) + low
    if not token.isdigit():
        raise BadInput(f"cron {what}: {token!r} is not a number{' or a name' if names else ''}")
    value = int(token)
    if not low <= value <= high:
        raise BadInput(f"cron {what}: {value} is outside {low}-{high}")
    return value


def _values(
    field: str, low: int, high: int, what: str, *, names: tuple[str, ...] = (), steps: bool = True
) -> frozenset[int]:
    """The values a plain field (lists, ranges, ``*``, steps) selects."""
    selected: set[int] = set()
    for item in field.split(","):
        base, slash, step_text = item.partition("/")
        if slash and not steps:
            raise BadInput(f"cron {what}: '/' is not allowed in this field")
        step = _number(step_text, 1, high, (), what) if slash else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _number(first, low, high, names, what), _number(last, low, high, names, what)
        else:
            start = _number(base, low, high, names, what)
            end = high if slash else start
        span = (end - start) % (high - low + 1)  # a wrapping range (FRI-MON) goes through high
        selected.update(low + (start - low + k) % (high - low + 1) for k in range(0, span + 1, step))
    return frozenset(selected)


def _last_day(day: date) -> int:
    return calendar.monthrange(day.year, day.month)[1]


def _nearest_weekday(year: int, month: int, wanted: int) -> int:
    """The weekday (Mon-Fri) nearest day ``wanted`` of the month, never leaving the month."""
    last = calendar.monthrange(year, month)[1]
    target = min(wanted, last)
    weekday = date(year, month, target).weekday()
    if weekday == 5:  # Saturday: the Friday before, or the Monday after on the 1st
        return target - 1 if target > 1 else target + 2
    if weekday == 6:  # Sunday: the Monday after, or the Friday before on the last day
        return target + 1 if target < last else target - 2
    return target


def _day_of_month(field: str) -> DayTest:
    if field == "L":
        return lambda d: d.day == _last_day(d)
    if field == "LW":
        return lambda d: d.day == _nearest_weekday(d.year, d.month, _last_day(d))
    if field.endswith("W"):
        wanted = _number(field[:-1], 1, 31, (), "day-of-month")
        return lambda d: d.day == _nearest_weekday(d.year, d.month, wanted)
    days = _values(field, 1, 31, "day-of-month")
    return lambda d: d.day in days


def _day_of_week(field: str) -> DayTest:
    if "#" in field:
        weekday_text, _, nth_text = field.partition("#")
        weekday = _number(weekday_text, 1, 7, WEEKDAYS, "day-of-week")
        nth = _number(nth_text, 1, 5, (), "day-of-week")
        return lambda d: aws_weekday(d) == weekday and (d.day - 1) // 7 + 1 == nth
    if field == "L":
        return lambda d: aws_weekday(d) == 7
    if field.endswith("L"):
        weekday = _number(field[:-1], 1, 7, WEEKDAYS, "day-of-week")
        return lambda d: aws_weekday(d) == weekday and d.day + 7 > _last_day(d)
    weekdays = _values(field, 1, 7, "day-of-week", names=WEEKDAYS, steps=False)
    return lambda d: aws_weekday(d) in weekdays


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed ``cron(...)`` expression. Build it with :func:`parse_cron`."""

    expression: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: frozenset[int]
    years: frozenset[int]
    day: DayTest

    def next_after(self, moment: datetime) -> datetime | None:
        """The first tick strictly after ``moment`` (UTC), or ``None`` if there is none before 2200."""
        start = moment.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        day, earliest = start.date(), start.time()
        while day.year <= MAX_YEAR:
            if day.year not in self.years:
                day, earliest = date(day.year + 1, 1, 1), time(0, 0)
            elif day.month not in self.months:
                day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
                earliest = time(0, 0)
            elif not self.day(day):
                day, earliest = day + timedelta(days=1), time(0, 0)
            else:
                for hour in self.hours:
                    for minute in self.minutes:
                        if time(hour, minute) >= earliest:
                            return datetime.combine(day, time(hour, minute), tzinfo=UTC)
                day, earliest = day + timedelta(days=1), time(0, 0)
        return None


def parse_cron(expression: str, fields_text: str) -> CronSchedule:
    """Parse the six fields of ``cron(...)``.

    Args:
        expression: the whole expression, kept for messages and listings.
        fields_text: what is between the parentheses.

    Raises:
        BadInput: naming the field and what is wrong with it.
    """
    fields = fields_text.split()
    if len(fields) != 6:
        raise BadInput(
            f"{expression!r}: cron takes 6 fields (minutes hours day-of-month month day-of-week year), "
            f"got {len(fields)}"
        )
    minutes, hours, dom, month, dow, year = fields
    if (dom == "?") == (dow == "?"):
        raise BadInput(f"{expression!r}: exactly one of day-of-month and day-of-week must be '?'")
    day = _day_of_week(dow) if dom == "?" else _day_of_month(dom)
    return CronSchedule(
        expression=expression,
        minutes=tuple(sorted(_values(minutes, 0, 59, "minutes"))),
        hours=tuple(sorted(_values(hours, 0, 23, "hours"))),
        months=_values(month, 1, 12, "month", names=MONTHS),
        years=_values(year, MIN_YEAR, MAX_YEAR, "year"),
        day=day,
    )
