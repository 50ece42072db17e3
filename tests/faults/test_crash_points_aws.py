"""A crash point of every kind of call, on the AWS World (moto).

``harness/chaos/crash_points_aws.py`` records the botocore calls of the reference run's fault-free run
on moto and names each by its operation and side; one case per kind of call made inside a
delivery fires one fault (crash before, crash after, transient error, in turn) at its middle
call. Each run must end with the fault-free result, keep the chaos suite's invariants and need
no reconciler wake. The whole of every call index runs on the in-memory World
(``test_crash_points.py``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from harness.chaos.crash_points import Point, broken
from harness.chaos.crash_points_aws import case_id, record, run_case, subset

POINTS, REFERENCE = record()
CASES = subset(POINTS)


@pytest.fixture(autouse=True)
def _quiet_runtime_logs() -> Iterator[None]:
    logging.disable(logging.ERROR)  # the runtime logs every injected failure it survives
    yield
    logging.disable(logging.NOTSET)


def test_the_reference_run_on_moto_is_sound_and_makes_every_kind_of_call() -> None:
    # GIVEN the fault-free reference run on the AWS World
    names = {point.name for point in POINTS if point.delivering}
    # THEN it ended soundly, and its deliveries wrote transactions and items, read, published and offloaded
    assert not broken(REFERENCE) and REFERENCE["reconciled"] == 0
    for name in ("TransactWriteItems", "Query", "GetItem", "sqs.SendMessage", "s3.PutObject"):
        assert any(name in n for n in names), name
    # AND each kind of call gets one case, the three faults in turn
    assert len(CASES) == len(names) and {kind for kind, _ in CASES} == {
        "crash-before",
        "crash-after",
        "transient",
    }


@pytest.mark.parametrize(("kind", "point"), [pytest.param(k, p, id=case_id(k, p)) for k, p in CASES])
def test_the_run_on_moto_ends_with_its_fault_free_result(kind: str, point: Point) -> None:
    # GIVEN the reference run on moto with one fault at one call of one kind
    # WHEN it is pumped until its queues settle
    hit, row = run_case(kind, point)
    # THEN the fault fired there, and the run ended soundly with the fault-free result, on time
    assert hit, f"{kind} never reached {point}"
    assert not broken(row), json.dumps(broken(row), indent=1)[:4000]
    assert row["reconciled"] == 0, row["reconciled_details"]
