"""Crash points on the AWS World (moto): ``python -m bench.crash_points_aws`` (and ``tests/faults``).

The reference run of ``bench.crash_points`` made on the DynamoDB/SQS/S3 World on moto, with
its faults injected by botocore hooks on the World's own clients (``harness.chaos.aws``). A
botocore call's body holds the run's random ids, so a call is named here by its operation and
its side (``dynamodb.TransactWriteItems@delivery``: inside a delivery; ``@client``: the
caller's start, resume or read) and numbered among the calls of that name. A case per *kind*
of call (one name) is a run on moto of some seconds, so the subset is deterministic and
small: for every name of a call made inside a delivery in the fault-free run, its middle call,
under one fault kind, the three kinds in turn over the names in sorted order
(``aws-crash-before-dynamodb.Query@delivery-12``).
Every case must end with the fault-free result, keep every invariant of the chaos suite, and
need no reconciler wake, as on the in-memory World.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from harness.chaos.crash_points import ATTEMPTS, KINDS, SEED, CrashPointPlan, Point, broken, config
from harness.chaos.run import ChaosConfig, run_configuration
from harness.fault_plan import Fault


class _Side(threading.local):
    key: str | None = None
    side: str = "client"


class AwsCrashPointPlan(CrashPointPlan):
    """``CrashPointPlan`` over botocore calls: a call named by its operation and side, not its body.

    ``BotocoreFaults`` asks ``CRASH_CALL`` of a call only inside a delivery, and always first:
    a ``TRANSIENT`` ask of the same call on the same thread without one before is a client's.
    """

    def __init__(self, seed: int, target: tuple[str, Point] | None = None) -> None:
        super().__init__(seed, target)
        self._side = _Side()

    def fires(self, fault: Fault, key: str) -> bool:
        side = self._side
        if fault is Fault.CRASH_CALL:
            side.key, side.side = key, "delivery"
        elif fault is Fault.TRANSIENT:
            if side.key != key:
                side.side = "client"
            side.key = None
        return super().fires(fault, f"{key.split('|', 1)[0]}@{side.side}")


def aws_config() -> ChaosConfig:
    """The reference run of ``bench.crash_points``, on the AWS World."""
    return dataclasses.replace(config(), world="aws")


def record() -> tuple[list[Point], dict[str, Any]]:
    """The botocore calls of the fault-free reference run on moto, in the order asked, and its row."""
    plan = AwsCrashPointPlan(SEED)
    row = run_configuration(aws_config(), plan)
    return plan.points, row


def subset(points: list[Point]) -> list[tuple[str, Point]]:
    """One case per name of call made inside a delivery: its middle call, the fault kinds in turn
    over the sorted names. (A client's calls only fail or lose their answer; the in-memory suite
    covers each of them.)"""
    by_name: dict[str, list[Point]] = {}
    for point in points:
        if point.delivering:
            by_name.setdefault(point.name, []).append(point)
    cases = []
    for i, name in enumerate(sorted(by_name)):
        calls = by_name[name]
        cases.append((KINDS[i % len(KINDS)], calls[len(calls) // 2]))
    return cases


def case_id(kind: str, point: Point) -> str:
    return f"aws-{kind}-{point.name}-{point.nth}"


def run_case(kind: str, point: Point) -> tuple[bool, dict[str, Any]]:
    """The reference run on moto with one fault at ``point``: (whether it fired, the chaos row)."""
    for _ in range(ATTEMPTS):
        plan = AwsCrashPointPlan(SEED, (kind, point))
        row = run_configuration(aws_config(), plan)
        if plan.hit or broken(row) or row["reconciled"]:
            break
    return plan.hit, row
