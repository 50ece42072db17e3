"""Every crash point of a reference run: ``python -m bench.crash_points`` (and ``tests/faults``).

The reference run is the chaos workload's ``chaos.mix`` at one fixed spec (seed 1, run 0:
two sequential steps, a streaming step retried once, a 5-way fan-out, wider than the
inline width of 3, whose other branches go by message, two child workflows, a step retried
on ``RetryableError``, a step that fails, a 150 KiB input, a durable sleep and a hook the
caller resumes from outside). Its fault-free run is recorded: every World and queue call,
named as the fault plan names it (the call's operation and arguments: an event by type and
correlation id, never a random id) and numbered per name. Then, for every recorded call
``i``, the run is made again three ways:

* ``crash-before-i``: the invocation dies just before the call (a client's call, made outside
  any delivery, fails instead: its caller retries);
* ``crash-after-i``: the call is made and the invocation dies before it sees the answer (a
  client's call loses its answer instead);
* ``transient-i``: the call fails with a transient error (throttled, HTTP 500 or a reset).

Each case fires exactly its one fault at the call of that name and number, whatever order
the runtime's threads make their calls in; everything else (the pump, the clock, the
caller's actions, what a crash leaves) is the chaos driver's, on a ``ManualClock``, so a case
is reproduced from its id. Every run must end with the fault-free result and keep every
invariant the chaos suite checks (``harness/chaos/checks.py``); a run the reconciler had to wake
is counted (late, not lost).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.chaos.run import ChaosConfig, run_configuration
from harness.fault_plan import Fault, FaultPlan

SEED = 1  # spec_for(seed 1, run 0) is a run of mode "complete"
FANOUT = 5  # wider than WORKFLOW_MAX_INLINE_STEPS (3)
KINDS = ("crash-before", "crash-after", "transient")


@dataclass(frozen=True)
class Point:
    """One recorded call: its name (``op|arguments``), its number among calls of that name, its side."""

    name: str
    nth: int
    delivering: bool  # made inside a delivery (else by the caller: start, resume, cancel)


class CrashPointPlan(FaultPlan):
    """A plan that records every call (``target`` None) or fires one fault at one call.

    ``FaultyWorld.call`` asks ``CRASH_CALL`` (inside a delivery), then ``TRANSIENT``, then
    ``LOST`` of each call; the answers here depend only on the call's name and how many
    calls of that name were asked before, never on the order threads ask in.
    """

    def __init__(self, seed: int, target: tuple[str, Point] | None = None) -> None:
        super().__init__(seed)
        self.target = target
        self.points: list[Point] = []
        self._seen: Counter[tuple[Fault, str]] = Counter()
        self.hit = False

    def fires(self, fault: Fault, key: str) -> bool:
        key = canonical(key)
        with self._lock:
            nth = self._seen[(fault, key)]
            self._seen[(fault, key)] += 1
            if fault is Fault.TRANSIENT and self.target is None:
                delivering = self._seen[(Fault.CRASH_CALL, key)] > nth
                self.points.append(Point(key, nth, delivering))
            if self.target is None or self.hit:
                return False
            kind, point = self.target
            if key != point.name or nth != point.nth or fault is not _fault_of(kind, point):
                return False
            self.hit = True
            self.fired[fault] += 1
            self.journal.append(f"{fault} {key}")
            return True

    def choose(self, key: str, options: int) -> int:
        if key.startswith("crash-side|") and self.target is not None:
            return 0 if self.target[0] == "crash-before" else 1
        return super().choose(key, options)


def canonical(key: str) -> str:
    """A call's name with the events of a batch in sorted order and without log positions.

    An outcome batch holds the bodies that finished within its linger (50 ms of real time),
    in the order they finished, which the pool's threads decide; a batch split differently
    moves the positions after it. The number of a call among calls of its name tells
    apart the calls a position named.
    """
    key = _LIST.sub(lambda m: "[" + ",".join(sorted(m.group(1).split(","))) + "]", key)
    key = _AFTER.sub("after=*", key)
    return _APPEND_AT.sub(r"\1|*|", key)


_LIST = re.compile(r"\[([^\[\]]*)\]")
_AFTER = re.compile(r"after=\d+")
_APPEND_AT = re.compile(r"^(events\.append_after\|[^|]+)\|\d+\|")
# A case whose call is not met (a batch split otherwise on a loaded machine) is made again.
ATTEMPTS = 3


def _fault_of(kind: str, point: Point) -> Fault:
    if kind == "transient":
        return Fault.TRANSIENT
    if point.delivering:
        return Fault.CRASH_CALL
    # A client's process has no delivery to lose: its call fails, or its answer is lost.
    return Fault.TRANSIENT if kind == "crash-before" else Fault.LOST


def config() -> ChaosConfig:
    """The reference run: one run, fan-out 5, branches past the inline width dispatched at once.

    ``inline_fast_seconds=0`` keeps a fan-out's branches off the fast rounds' watcher, which
    times bodies in real time: the calls of a run are then the same from one run to the next.
    """
    return ChaosConfig("none", runs=1, seed=SEED, batch=1, fanout=(FANOUT, FANOUT), inline_fast_seconds=0.0)


def record() -> tuple[list[Point], dict[str, Any]]:
    """The calls of the fault-free reference run, in the order they were asked, and its row."""
    plan = CrashPointPlan(SEED)
    row = run_configuration(config(), plan)
    return plan.points, row


def run_case(kind: str, point: Point) -> tuple[bool, dict[str, Any]]:
    """The reference run with one fault at ``point``: (whether the fault fired, the chaos row).

    Every attempt's run must be sound; one that did not meet the call (its outcome batches
    split otherwise, by real time) is made again, up to ``ATTEMPTS`` times.
    """
    for _ in range(ATTEMPTS):
        plan = CrashPointPlan(SEED, (kind, point))
        row = run_configuration(config(), plan)
        if plan.hit or broken(row) or row["reconciled"]:
            break
    return plan.hit, row


def broken(row: dict[str, Any]) -> dict[str, Any]:
    """What is wrong with a row (empty when the run ended soundly)."""
    found = {kind: n for kind, n in row["violations"].items() if n}
    if row["stuck"]:
        found["stuck"] = row["stuck"]
    if row["same_attempt_executions"]:
        found["same_attempt_executions"] = row["same_attempt_executions"]
    if found:
        found["examples"] = row["examples"]
        found["broken_runs"] = row["broken_runs"]
    return found
