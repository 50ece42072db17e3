"""Schedule expressions (EventBridge syntax, UTC): what parses, what is refused, and the next ticks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from world_aws.errors import BadInput
from world_aws.workflow.schedule_expr import iso_tick, parse_schedule, ticks_between


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def next_ticks(expression: str, after: str, n: int = 3) -> list[str]:
    schedule = parse_schedule(expression)
    found = list(ticks_between(schedule, at(after), at("2199-12-31T23:59"), limit=n))
    return [iso_tick(t) for t in found]


def test_a_rate_ticks_at_multiples_of_its_period_since_the_epoch() -> None:
    assert next_ticks("rate(5 minutes)", "2026-03-01T10:03:20") == [
        "2026-03-01T10:05:00Z",
        "2026-03-01T10:10:00Z",
        "2026-03-01T10:15:00Z",
    ]
    assert next_ticks("rate(1 day)", "2026-03-01T10:03", 2) == [
        "2026-03-02T00:00:00Z",
        "2026-03-03T00:00:00Z",
    ]
    assert next_ticks("rate(2 hours)", "2026-03-01T10:00", 1) == ["2026-03-01T12:00:00Z"]


def test_a_tick_is_strictly_after_the_moment_given() -> None:
    assert next_ticks("rate(1 minute)", "2026-03-01T10:05:00", 1) == ["2026-03-01T10:06:00Z"]
    assert next_ticks("cron(0 12 * * ? *)", "2026-03-01T12:00:00", 1) == ["2026-03-02T12:00:00Z"]


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("cron(0 12 * * ? *)", "2026-03-01T12:30", ["2026-03-02T12:00:00Z", "2026-03-03T12:00:00Z"]),
        ("cron(0/15 * * * ? *)", "2026-03-01T10:01", ["2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z"]),
        ("cron(1/10 8 * * ? *)", "2026-03-01T08:00", ["2026-03-01T08:01:00Z", "2026-03-01T08:11:00Z"]),
        # 2026-03-06 is a Friday: MON-FRI skips the weekend
        ("cron(0 18 ? * MON-FRI *)", "2026-03-06T19:00", ["2026-03-09T18:00:00Z", "2026-03-10T18:00:00Z"]),
        ("cron(0 8 1 * ? *)", "2026-03-02T00:00", ["2026-04-01T08:00:00Z", "2026-05-01T08:00:00Z"]),
        ("cron(0 0 L * ? *)", "2026-02-01T00:00", ["2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"]),
        # last weekday: 2026-05-31 is a Sunday, so Friday 29th
        ("cron(0 0 LW * ? *)", "2026-05-01T00:00", ["2026-05-29T00:00:00Z", "2026-06-30T00:00:00Z"]),
        # nearest weekday to the 1st: 2026-08-01 is a Saturday, so Monday 3rd (never July)
        ("cron(0 0 1W * ? *)", "2026-07-15T00:00", ["2026-08-03T00:00:00Z", "2026-09-01T00:00:00Z"]),
        # second Tuesday (3 = TUE)
        ("cron(0 9 ? * 3#2 *)", "2026-03-01T00:00", ["2026-03-10T09:00:00Z", "2026-04-14T09:00:00Z"]),
        # last Friday (6L)
        ("cron(0 9 ? * 6L *)", "2026-03-01T00:00", ["2026-03-27T09:00:00Z", "2026-04-24T09:00:00Z"]),
        ("cron(30 6 ? * SAT-SUN *)", "2026-03-06T00:00", ["2026-03-07T06:30:00Z", "2026-03-08T06:30:00Z"]),
        ("cron(0 0 29 FEB ? *)", "2026-01-01T00:00", ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"]),
        ("cron(0 0 1 JAN ? 2027-2028)", "2026-06-01T00:00", ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]),
        ("cron(0 10,15 ? * 2,4 *)", "2026-03-02T11:00", ["2026-03-02T15:00:00Z", "2026-03-04T10:00:00Z"]),
    ],
)
def test_cron_next_ticks(expression: str, after: str, expected: list[str]) -> None:
    assert next_ticks(expression, after, len(expected)) == expected


def test_a_cron_that_never_ticks_again_has_no_next_tick() -> None:
    assert next_ticks("cron(0 0 1 JAN ? 2027)", "2027-06-01T00:00", 1) == []
    assert parse_schedule("cron(0 0 30 FEB ? *)").next_after(at("2026-01-01T00:00")) is None


@pytest.mark.parametrize(
    ("expression", "complaint"),
    [
        ("every 5 minutes", "neither"),
        ("rate(5 minute)", "rate(5 minutes)"),
        ("rate(1 minutes)", "rate(1 minute)"),
        ("rate(0 minutes)", "positive"),
        ("rate(5 weeks)", "unit"),
        ("cron(0 12 * * *)", "6 fields"),
        ("cron(0 12 * * * *)", "exactly one"),
        ("cron(0 12 ? * ? *)", "exactly one"),
        ("cron(60 12 * * ? *)", "minutes: 60 is outside 0-59"),
        ("cron(0 24 * * ? *)", "hours"),
        ("cron(0 12 * FOO ? *)", "month"),
        ("cron(0 12 ? * MON/2 *)", "'/' is not allowed"),
        ("cron(0 12 * * ? 2200)", "year"),
    ],
)
def test_invalid_expressions_are_bad_input_naming_the_problem(expression: str, complaint: str) -> None:
    with pytest.raises(BadInput, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        parse_schedule(expression)
