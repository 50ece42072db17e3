"""The invariants a chaos run checks per run once the queues settle.

:func:`check_run` reads one run back (its item, its whole log, its steps) and
returns the violations it finds, by kind (``VIOLATIONS``); step bodies that
ran again after their step was done are counted by
``Executions.duplicates`` (allowed: delivery is at least once, so a rate).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.chaos.children import check_children
from harness.chaos.workload import FAIL_MESSAGE, PATCH, STREAM, WORKFLOW, expected_output, narrated
from world_aws.client.stream_reader import StreamCursor
from world_aws.contract.records import (
    Event,
    EventType,
    PatchAppliedData,
    ResolveData,
    Run,
    RunStatus,
    StepCreatedData,
    StepStatus,
)
from world_aws.contract.world import World
from world_aws.serde.codec import Serializer, decode_error

VIOLATIONS = (
    "stuck",  # not terminal once nothing is queued (or after the simulated-time bound)
    "wrong_outcome",  # terminal, but not with the fault-free result / expected error / cancellation
    "log_gap",  # positions not strictly increasing from 1, or a second read differs from the first
    "run_created",  # not exactly one run_created
    "terminal_event",  # a terminal run without exactly one terminal event
    "terminal_mismatch",  # the terminal event does not match the run item's status
    "after_terminal",  # an event after the terminal one that contract §3.1 does not allow
    "step_created",  # a step with other than one step_created
    "step_outcomes",  # a step with more than one outcome
    "step_started_twice",  # a step's attempt counter is not its number of starts (owned creates count)
    "hook_payload",  # a resumed hook's payload not received exactly once (or received unasked)
    "child_run",  # a child workflow run not terminal, unsound, or not with the outcome its parent implies
    "child_outcome",  # a child's outcome recorded in its parent other than once
    "stream",  # a reader of the run's stream does not see each value exactly once, in order
    "deployment",  # a run not pinned to the deployment it started on, or a step of another's code
    "dead_letter",  # a message in a dead-letter queue
    "handler_error",  # a non-domain exception out of the queue handler
    "patch_marker",  # the run's patched() decision is not in its log before the step it chose
)
_TERMINAL = {
    EventType.RUN_COMPLETED: RunStatus.COMPLETED,
    EventType.RUN_FAILED: RunStatus.FAILED,
    EventType.RUN_CANCELLED: RunStatus.CANCELLED,
}
_OUTCOMES = (EventType.STEP_COMPLETED, EventType.STEP_FAILED)


@dataclass
class CallerView:
    """What the driver (the caller outside the runtime) did to one run."""

    spec: dict[str, Any]
    run_id: str
    resumed: bool = False  # some resume_hook call returned
    resume_calls: int = 0
    cancel_answer: bool | None = None  # what the cancel that returned answered
    notes: list[str] = field(default_factory=list)
    # With a deploy in the run (bench/chaos.py): the deployment it started on, and the step
    # names' prefix of that deployment's code.
    deployment: str | None = None
    step_prefix: str | None = None


def check_run(world: World, serializer: Serializer, caller: CallerView) -> list[tuple[str, str]]:
    """The violations of one run: (kind, detail) pairs, empty when it is sound."""
    found: list[tuple[str, str]] = []
    run = world.runs.get(caller.run_id)
    events = world.events.list(caller.run_id, resolve_data=ResolveData.NONE)
    if not run.status.terminal:
        last = events[-1].type.value if events else "nothing"
        found.append(("stuck", f"{run.status.value}; last event {last} at {len(events)}"))
    else:
        found += _outcome(run, serializer, caller)
    again = world.events.list(caller.run_id, resolve_data=ResolveData.NONE)
    if [(e.position, e.type) for e in again] != [(e.position, e.type) for e in events]:
        found.append(("log_gap", f"a second read returned {len(again)} events, the first {len(events)}"))
    found += log_shape(run, events)
    found += step_checks(world, caller.run_id, events)
    found += check_children(world, serializer, caller.spec, run, events, lambda r, es: _sound(world, r, es))
    received = sum(
        1
        for e in events
        if e.type is EventType.HOOK_RECEIVED and not (e.correlation_id or "").startswith("child_")
    )
    if received > 1 or (caller.resumed and received != 1 and run.status is RunStatus.COMPLETED):
        found.append(("hook_payload", f"{received} hook_received after {caller.resume_calls} resume call(s)"))
    found += _stream(world, serializer, run, caller)
    found += _deployment(world, run, caller)
    return found


def _deployment(world: World, run: Run, caller: CallerView) -> list[tuple[str, str]]:
    """The run stayed on the deployment that started it: its pin, and only its code's steps ran."""
    if caller.deployment is None or caller.step_prefix is None:
        return []
    if run.deployment_id != caller.deployment:
        return [("deployment", f"pinned to {run.deployment_id}, started on {caller.deployment}")]
    foreign = sorted(
        {
            s.step_name
            for s in world.steps.list(run.run_id, resolve_data=ResolveData.NONE)
            if not s.step_name.startswith(caller.step_prefix)
            or s.step_name[len(caller.step_prefix) :].count(".")
        }
    )
    return [("deployment", f"steps of other code ran: {foreign}")] if foreign else []


def _sound(world: World, run: Run, events: list[Event]) -> list[tuple[str, str]]:
    return log_shape(run, events) + step_checks(world, run.run_id, events)


def _stream(world: World, serializer: Serializer, run: Run, caller: CallerView) -> list[tuple[str, str]]:
    """Every value once and in order, from index 0 and from a resumed index; all once the step completed."""
    want = narrated(caller.spec)
    whole = StreamCursor(world, serializer, run.run_id, STREAM)
    seen = [value for _, value in whole.poll()]
    resumed = StreamCursor(world, serializer, run.run_id, STREAM, start_index=2)
    again = [value for _, value in resumed.poll()]
    narrate_done = any(
        s.step_name.endswith(".narrate") and s.status is StepStatus.COMPLETED
        for s in world.steps.list(run.run_id, resolve_data=ResolveData.NONE)
    )
    if seen != want[: len(seen)] or again != seen[2:]:
        return [("stream", f"read {seen!r}, from index 2 {again!r}")]
    if narrate_done and (seen != want or not whole.closed):
        return [("stream", f"the step finished but the stream holds {len(seen)} of {len(want)} values")]
    return []


def explain(world: World, run_id: str, journal: list[str], tail: int = 10) -> list[str]:
    """A broken run's last events and the faults fired on its calls and deliveries, for the report."""
    events = world.events.list(run_id, resolve_data=ResolveData.NONE)
    lines = [f"{e.position} {e.type.value} {e.correlation_id or ''}".rstrip() for e in events[-tail:]]
    ulid = run_id.removeprefix("wrun_")
    return lines + [f"fault {point}" for point in journal if ulid in point]


def _outcome(run: Run, serializer: Serializer, caller: CallerView) -> list[tuple[str, str]]:
    mode = caller.spec["mode"]
    if run.status is RunStatus.CANCELLED:
        return [] if mode == "cancel" else [("wrong_outcome", "cancelled without a cancel")]
    if caller.cancel_answer is True:
        return [("wrong_outcome", f"{run.status.value} after cancel() answered True")]
    if run.status is RunStatus.FAILED:
        info = decode_error(run.error or b"")
        if mode == "fail" and info.type == "ValueError" and FAIL_MESSAGE in info.message:
            return []
        return [("wrong_outcome", f"failed: {info.type}: {info.message[:120]} ({run.error_code})")]
    if mode == "fail":
        return [("wrong_outcome", "completed although the workflow raises")]
    output = serializer.loads(run.output or b"")
    if output != expected_output(caller.spec):
        return [("wrong_outcome", f"output {output!r}")]
    return []


def log_shape(run: Run, events: list[Event]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    # Strictly increasing: the AWS World leaves sealed holes (noops) out of a read,
    # so numbers may be skipped there (contract §3.2), but never repeated or reordered.
    positions = [e.position for e in events]
    if positions != sorted(set(positions)) or (positions and positions[0] != 1):
        found.append(("log_gap", f"positions {positions[:3]}..{positions[-3:]} of {len(events)}"))
    created = sum(1 for e in events if e.type is EventType.RUN_CREATED)
    if created != 1:
        found.append(("run_created", f"{created} run_created"))
    terminal = [e for e in events if e.type in _TERMINAL]
    if run.status.terminal and len(terminal) != 1:
        found.append(("terminal_event", f"{run.status.value} with {len(terminal)} terminal event(s)"))
    if not run.status.terminal and terminal:
        found.append(("terminal_event", f"{run.status.value} with a {terminal[0].type.value} event"))
    if terminal and _TERMINAL[terminal[0].type] is not run.status:
        found.append(("terminal_mismatch", f"{terminal[0].type.value} but status {run.status.value}"))
    if terminal:
        found += _after_terminal(events, terminal[0].position)
    return found + _patch_marker(run, events)


def _patch_marker(run: Run, events: list[Event]) -> list[tuple[str, str]]:
    """``mix`` decides ``patched(PATCH)`` before its second step: the marker must precede that step."""
    if run.workflow_name != WORKFLOW:
        return []
    chosen = next(
        (e for e in events if e.type is EventType.STEP_CREATED and (e.correlation_id or "").endswith("_2")),
        None,
    )
    if chosen is None:
        return []
    marks = [e.position for e in events if isinstance(e.data, PatchAppliedData) and e.data.change_id == PATCH]
    if not marks or marks[0] > chosen.position:
        return [("patch_marker", f"markers at {marks}, the step it chose at {chosen.position}")]
    return []


def _after_terminal(events: list[Event], end: int) -> list[tuple[str, str]]:
    """Only outcomes of steps that were running at the end may follow it (contract §3.1)."""
    running: set[str | None] = set()
    found: list[tuple[str, str]] = []
    for event in events:
        if event.position < end:
            if event.type is EventType.STEP_STARTED or _owned_create(event):
                running.add(event.correlation_id)
            elif event.type in _OUTCOMES or event.type is EventType.STEP_RETRYING:
                running.discard(event.correlation_id)
        elif event.position > end:
            if event.type in _OUTCOMES and event.correlation_id in running:
                running.discard(event.correlation_id)
                continue
            found.append(("after_terminal", f"{event.type.value} {event.correlation_id} at {event.position}"))
    return found


def _owned_create(event: Event) -> bool:
    return isinstance(event.data, StepCreatedData) and event.data.owner is not None


def step_checks(world: World, run_id: str, events: list[Event]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    created = Counter(e.correlation_id for e in events if e.type is EventType.STEP_CREATED)
    outcomes = Counter(e.correlation_id for e in events if e.type in _OUTCOMES)
    # An owned (inline) step_created is also its step's first start.
    started = Counter(
        e.correlation_id for e in events if e.type is EventType.STEP_STARTED or _owned_create(e)
    )
    found += [("step_created", f"{s}: {n} step_created") for s, n in created.items() if n != 1]
    found += [("step_outcomes", f"{s}: {n} outcomes") for s, n in outcomes.items() if n > 1]
    found += [("step_created", f"{s}: outcome without step_created") for s in outcomes if s not in created]
    for step in world.steps.list(run_id, resolve_data=ResolveData.NONE):
        if step.attempt != started[step.step_id]:
            found.append(
                (
                    "step_started_twice",
                    f"{step.step_id}: attempt {step.attempt}, {started[step.step_id]} step_started",
                )
            )
    return found
