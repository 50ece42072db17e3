"""The chaos checks of a run's child workflows (``chaos.child``, two per ``chaos.mix`` run).

A parent's children are found from its run id (their ids are derived from it and the
call ids, ``engine/children.py``), so a child that was started but never recorded in
the parent's log is checked too. Each child that exists must be terminal, with a sound
log and steps (the parent's checks), and the outcome its parent's end implies: completed
with its result when the parent completed or failed on purpose (after its children),
completed or cancelled when the parent was cancelled. The parent's log holds at most
one outcome per child call, and exactly one per child when it completed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from harness.chaos.workload import child_inputs, expected_child_output
from world_aws.contract.records import Event, EventType, ResolveData, Run, RunStatus
from world_aws.contract.world import World
from world_aws.engine import ids
from world_aws.engine.children import child_run_id
from world_aws.errors import NotFound
from world_aws.serde.codec import Serializer

Violations = list[tuple[str, str]]


def check_children(
    world: World,
    serializer: Serializer,
    spec: dict[str, Any],
    parent: Run,
    events: list[Event],
    soundness: Callable[[Run, list[Event]], Violations],
) -> Violations:
    """The violations of ``parent``'s children: ("child_run", ...) and ("child_outcome", ...) pairs.

    ``soundness`` is the log and step checks of a run, applied to each child.
    """
    found: list[tuple[str, str]] = []
    outcomes = Counter(
        e.correlation_id
        for e in events
        if e.type is EventType.HOOK_RECEIVED and (e.correlation_id or "").startswith("child_")
    )
    found += [("child_outcome", f"{cid}: {n} outcomes in the parent") for cid, n in outcomes.items() if n > 1]
    for number, n in enumerate(child_inputs(spec), start=1):
        call_id = ids.correlation_id("child", parent.run_id, number)
        try:
            child = world.runs.get(child_run_id(parent.run_id, call_id))
        except NotFound:
            if parent.status is not RunStatus.CANCELLED:
                found.append(("child_run", f"{call_id}: no child run, parent {parent.status.value}"))
            continue
        child_events = world.events.list(child.run_id, resolve_data=ResolveData.NONE)
        problems = soundness(child, child_events)
        problems += _child_outcome(child, parent, serializer, n)
        found += [("child_run", f"{child.run_id} ({call_id}): {kind}: {detail}") for kind, detail in problems]
        if parent.status is RunStatus.COMPLETED and outcomes[call_id] != 1:
            found.append(("child_outcome", f"{call_id}: {outcomes[call_id]} outcomes in a completed parent"))
    return found


def _child_outcome(child: Run, parent: Run, serializer: Serializer, n: int) -> list[tuple[str, str]]:
    if not child.status.terminal:
        return [("stuck", f"{child.status.value}, parent {parent.status.value}")]
    if child.status is RunStatus.CANCELLED:
        ok = parent.status is RunStatus.CANCELLED
        return [] if ok else [("wrong_outcome", f"cancelled, parent {parent.status.value}")]
    if child.status is RunStatus.FAILED:
        return [("wrong_outcome", f"failed ({child.error_code})")]
    output = serializer.loads(child.output or b"")
    if output != expected_child_output(n):
        return [("wrong_outcome", f"output {output!r}, expected {expected_child_output(n)}")]
    return []
