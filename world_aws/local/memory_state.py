"""The state behind the in-memory World: one lock, the runs, their logs and entities.

Every store of ``MemoryWorld`` shares one :class:`MemoryState` and takes its
lock for each operation, so every ``events.create`` is one atomic step: the
judgement, the entity change and the append happen together or not at all,
which makes the terminal-run fence and the dense positions exact under threads.

Records handed out are frozen dataclasses; the few mutable parts (attribute
dicts) are copied on the way in and out, so a caller can never change the store
by mutating what it got back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import datetime

from world_aws.contract.records import (
    Event,
    EventData,
    Hook,
    ResolveData,
    Run,
    Step,
    Wait,
    creation_of,
    without_payloads,
)


@dataclass(eq=False)
class RunRecord:
    """One run and everything that hangs off it. Mutated only under ``MemoryState.lock``."""

    run: Run
    events: list[Event] = field(default_factory=list)
    steps: dict[str, Step] = field(default_factory=dict)
    # Ids of the steps without an outcome (steps.any_pending in O(1), as the pend# markers).
    pending_steps: set[str] = field(default_factory=set)
    hooks: dict[str, Hook] = field(default_factory=dict)  # live hooks by hook_id
    # Every hook id ever created in this run (live or disposed): a second
    # hook_created of the same id is a duplicate create (Conflict), not a revival.
    hook_ids: set[str] = field(default_factory=set)
    waits: dict[str, Wait] = field(default_factory=dict)
    # hook_received deduplication (contract §6.2): resume_id -> the first event.
    resumes: dict[str, Event] = field(default_factory=dict)
    # The last continuation claim (runs.claim_continuation): (position covered, claimer).
    continuation: tuple[int, str] | None = None
    # The reconcile mark once the run is in the live index (runs.mark_live); None before
    # and once it ended.
    mark: datetime | None = None
    # When the wait it created last is due (LiveRun.due_at).
    due_at: datetime | None = None
    # Inline owners' lease renewals (steps.renew_lease): owner tag -> when.
    leases: dict[str, datetime] = field(default_factory=dict)


class MemoryState:
    """The shared, lock-guarded state of one in-memory World."""

    def __init__(self) -> None:
        # Re-entrant so a store method may call a helper that also takes the lock.
        self.lock = threading.RLock()
        self.runs: dict[str, RunRecord] = {}
        # token -> (run_id, hook_id) of the live hook holding it (contract §2.3).
        self.tokens: dict[str, tuple[str, str]] = {}
        # token -> (run_id, hook_id) of the hook that claimed it last, kept after its release
        # (hooks.resumed).
        self.last_holders: dict[str, tuple[str, str]] = {}
        # The last run a sweep read (runs.sweep_created): (created_at, run_id).
        self.sweep_cursor: tuple[datetime, str] | None = None
        # Erased runs (their tombstones, contract §3.4): no event may create one again.
        self.erased: set[str] = set()


# ----------------------------------------------------------------------------- copies


def own_data(data: EventData) -> EventData:
    """``data`` with its mutable parts copied, safe to keep or hand out."""
    creation = creation_of(data)
    if creation is None:
        return data
    return replace(data, creation=replace(creation, attributes=dict(creation.attributes)))  # type: ignore[arg-type]


def event_out(event: Event, resolve_data: ResolveData) -> Event:
    """A detached copy of a stored event, payloads left out for ``ResolveData.NONE``."""
    data = without_payloads(event.data) if resolve_data is ResolveData.NONE else event.data
    return replace(event, data=own_data(data))


def run_out(run: Run, resolve_data: ResolveData = ResolveData.ALL) -> Run:
    """A detached copy of a stored run, payloads left out for ``ResolveData.NONE``."""
    if resolve_data is ResolveData.NONE:
        return replace(run, input=None, output=None, error=None, attributes=dict(run.attributes))
    return replace(run, attributes=dict(run.attributes))


def step_out(step: Step, resolve_data: ResolveData = ResolveData.ALL) -> Step:
    """A stored step, payloads left out for ``ResolveData.NONE`` (steps hold nothing mutable)."""
    if resolve_data is ResolveData.NONE:
        return replace(step, input=None, output=None, error=None)
    return step
