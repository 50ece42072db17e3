"""The timeline the CLI prints: attempts from step_started counts, durations, hook tokens."""

from __future__ import annotations

import io
from typing import Any

from world_aws.cli.render import print_rows_timeline, timeline_rows


def _row(position: int, kind: str, cid: str | None, second: float, **extra: Any) -> dict[str, Any]:
    return {
        "position": position,
        "type": kind,
        "correlation_id": cid,
        "created_at": f"2026-01-01T00:00:{second:06.3f}Z",
        **extra,
    }


ROWS = [
    _row(1, "run_created", None, 0),
    _row(2, "run_started", None, 0.5),
    _row(3, "step_created", "step_1", 0.6, step_name="shop.charge"),
    _row(4, "step_started", "step_1", 1.0, step_name="shop.charge"),
    _row(5, "step_retrying", "step_1", 1.25),
    _row(6, "step_started", "step_1", 3.0, step_name="shop.charge"),
    _row(7, "step_completed", "step_1", 3.1),
    _row(8, "hook_created", "hook_1", 3.2, token="approve:o-1"),
    _row(9, "hook_received", "hook_1", 9.2, token="approve:o-1"),
    _row(10, "some_future_event", None, 9.3),
    _row(11, "run_completed", None, 10.5),
]


def test_attempts_count_the_step_started_events_of_each_step() -> None:
    rows = timeline_rows(ROWS)
    attempts = {row["position"]: row["attempt"] for row in rows}
    assert (attempts[4], attempts[5], attempts[6], attempts[7]) == (1, 1, 2, 2)
    assert attempts[3] is None and attempts[8] is None


def test_durations_run_from_the_start_of_what_ends() -> None:
    durations = {row["position"]: row["duration_s"] for row in timeline_rows(ROWS)}
    assert durations[5] == 0.25  # first attempt: started 1.0, retrying 1.25
    assert round(durations[7], 3) == 0.1  # second attempt: started 3.0, completed 3.1
    assert round(durations[9], 3) == 6.0  # the wait for the hook's payload
    assert durations[11] == 10.0  # the run: started 0.5, completed 10.5
    assert durations[10] is None and durations[3] is None


def test_the_step_column_shows_the_short_step_name_or_the_hook_token() -> None:
    steps = {row["position"]: row["step"] for row in timeline_rows(ROWS)}
    assert steps[4] == "charge" and steps[8] == "approve:o-1" and steps[1] == ""


def test_the_printed_table_has_an_attempt_column() -> None:
    out = io.StringIO()
    print_rows_timeline(ROWS, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["pos", "event", "step", "attempt", "duration"]
    assert lines[6].split() == ["6", "step_started", "charge", "2"]
    assert lines[7].split() == ["7", "step_completed", "charge", "2", "100", "ms"]
    assert lines[11].split() == ["11", "run_completed", "10.0", "s"]


def test_a_hooks_next_payload_is_timed_from_the_previous_one_as_the_readme_says() -> None:
    # GIVEN a hook created at 1.0 that receives payloads at 4.0 and 4.5
    rows = [
        _row(1, "hook_created", "hook_1", 1.0, token="t"),
        _row(2, "hook_received", "hook_1", 4.0, token="t"),
        _row(3, "hook_received", "hook_1", 4.5, token="t"),
    ]
    durations = [row["duration_s"] for row in timeline_rows(rows)]
    # THEN the first is timed from the creation, the next from the previous payload
    assert durations[1:] == [3.0, 0.5]


def test_an_inline_steps_created_event_starts_its_first_attempt() -> None:
    # GIVEN an inline step: created already running (attempt 1), retried, then dispatched (attempt 2)
    rows = [
        _row(1, "step_created", "step_1", 1.0, step_name="shop.charge", owner="msg-1#1"),
        _row(2, "step_retrying", "step_1", 1.5),
        _row(3, "step_started", "step_1", 3.0, step_name="shop.charge"),
        _row(4, "step_completed", "step_1", 3.25),
    ]
    shown = [(row["attempt"], row["duration_s"]) for row in timeline_rows(rows)]
    # THEN the attempts are 1 then 2, each timed from its own start
    assert shown == [(1, None), (1, 0.5), (2, None), (2, 0.25)]


def test_a_table_that_skips_positions_says_why_under_it() -> None:
    # GIVEN a log whose positions skip 4 and 5 (refused writes, sealed with noops the list leaves out)
    rows = [ROWS[0], ROWS[1], ROWS[2], {**ROWS[5], "position": 6}]
    out = io.StringIO()
    print_rows_timeline(rows, out)
    *_, note = out.getvalue().splitlines()
    assert note.startswith("  (no event at 4, 5: a refused write had reserved it")
    # and a table without gaps has no such line
    out = io.StringIO()
    print_rows_timeline(ROWS, out)
    assert "no event at" not in out.getvalue()
