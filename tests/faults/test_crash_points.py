"""Every crash point of the reference run: a crash before, a crash after, a transient error, at every call.

``harness/chaos/crash_points.py`` records the World and queue calls of the fault-free reference run
(the chaos workload at one fixed spec: sequential steps, a fan-out wider than the inline
width, retries, a sleep, a hook resumed from outside, two children). Each case here fires its
one fault at the call its id names (``crash-before-37``: the 38th recorded call) and checks
the run with the chaos suite's invariants: it ends with the fault-free result, and nothing
needed the reconciler.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from harness.chaos.crash_points import KINDS, Point, broken, record, run_case

POINTS, REFERENCE = record()


@pytest.fixture(autouse=True)
def _quiet_runtime_logs() -> Iterator[None]:
    logging.disable(logging.ERROR)  # the runtime logs every injected failure it survives
    yield
    logging.disable(logging.NOTSET)


def test_the_reference_run_is_sound_and_covers_every_feature() -> None:
    # GIVEN the fault-free reference run
    ops = {point.name.split("|", 1)[0] for point in POINTS}
    names = " ".join(point.name for point in POINTS)
    # THEN it ended soundly, with no reconciler wake
    assert not broken(REFERENCE) and REFERENCE["reconciled"] == 0
    # AND its calls include a fan-out's messages, a retry, a sleep, a hook resumed by the caller,
    # children started and told, and a stream
    assert {"events.create", "events.append_after", "queue.publish", "streams.append"} <= ops
    for made in ("step_retrying", "wait_created", "hook_received", "run_completed", ":start"):
        assert made in names, made
    assert any(not point.delivering for point in POINTS if "hook_received" in point.name)
    assert len(POINTS) > 80


def _cases() -> Iterator[object]:
    for index, point in enumerate(POINTS):
        for kind in KINDS:
            yield pytest.param(kind, point, id=f"{kind}-{index}")


@pytest.mark.parametrize(("kind", "point"), list(_cases()))
def test_the_run_ends_with_its_fault_free_result(kind: str, point: Point) -> None:
    # GIVEN the reference run with one fault at one recorded call
    # WHEN it is pumped until its queues settle
    hit, row = run_case(kind, point)
    # THEN the fault fired there, and the run ended soundly with the fault-free result, on time
    assert hit, f"{kind} never reached {point}"
    assert not broken(row), json.dumps(broken(row), indent=1)[:4000]
    assert row["reconciled"] == 0, row["reconciled_details"]
