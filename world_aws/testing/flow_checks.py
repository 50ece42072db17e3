"""Checks of flow control read back from the recorded log: attempt intervals, overlaps, start windows.

An attempt of a step runs from its ``step_started`` to the step's next event (its
outcome, its retry, or the next ``step_started`` of a redelivery): the interval the
log proves it may have run in. ``max_overlap`` is the most such intervals of one key
open at one instant; ``max_starts_in_window`` the most starts in any window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from world_aws.contract.records import EventType, ResolveData
from world_aws.contract.world import World

_STEP_EVENTS = {
    EventType.STEP_STARTED,
    EventType.STEP_COMPLETED,
    EventType.STEP_FAILED,
    EventType.STEP_RETRYING,
}


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a step as the log records it."""

    run_id: str
    step_id: str
    step_name: str
    start: datetime
    end: datetime | None  # None: nothing recorded after its start


def attempts(world: World, run_ids: Iterable[str], step_name: str) -> list[Attempt]:
    """The recorded attempts of ``step_name`` in ``run_ids``."""
    found: list[Attempt] = []
    for run_id in run_ids:
        names = {s.step_id: s.step_name for s in world.steps.list(run_id, resolve_data=ResolveData.NONE)}
        events = [
            e for e in world.events.list(run_id, resolve_data=ResolveData.NONE) if e.type in _STEP_EVENTS
        ]
        open_at: dict[str, datetime] = {}
        for event in events:
            step_id = str(event.correlation_id)
            if names.get(step_id) != step_name:
                continue
            began = open_at.pop(step_id, None)
            if began is not None:
                found.append(Attempt(run_id, step_id, step_name, began, event.created_at))
            if event.type is EventType.STEP_STARTED:
                open_at[step_id] = event.created_at
        found.extend(Attempt(run_id, s, step_name, t, None) for s, t in open_at.items())
    return found


def max_overlap(intervals: Iterable[Attempt], *, until: datetime) -> int:
    """The most attempts open at one instant (an end at t closes before a start at t opens)."""
    edges: list[tuple[datetime, int]] = []
    for a in intervals:
        edges.append((a.start, 1))
        edges.append((a.end or until, -1))
    edges.sort(key=lambda edge: (edge[0], edge[1]))
    most = current = 0
    for _, delta in edges:
        current += delta
        most = max(most, current)
    return most


def max_overlap_by_key(by_key: dict[str, list[Attempt]], *, until: datetime) -> dict[str, int]:
    return {key: max_overlap(found, until=until) for key, found in by_key.items()}


def group(found: Iterable[Attempt], key_of_run: dict[str, str]) -> dict[str, list[Attempt]]:
    """Attempts grouped by their run's key."""
    grouped: dict[str, list[Attempt]] = defaultdict(list)
    for a in found:
        grouped[key_of_run[a.run_id]].append(a)
    return dict(grouped)


def max_starts_in_window(found: Iterable[Attempt], window: timedelta) -> int:
    """The most attempt starts in any half-open window ``[t, t + window)``."""
    starts = sorted(a.start for a in found)
    most = 0
    left = 0
    for right, moment in enumerate(starts):
        while starts[left] <= moment - window:
            left += 1
        most = max(most, right - left + 1)
    return most


_RUN_ENDS = {EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED}


def run_intervals(world: World, run_ids: Iterable[str]) -> list[Attempt]:
    """Each run's life as its log records it: from ``run_started`` to its end (None: still live).

    A run that never started (cancelled while it waited for a slot) has no interval.
    """
    found: list[Attempt] = []
    for run_id in run_ids:
        events = world.events.list(run_id, resolve_data=ResolveData.NONE)
        start = next((e.created_at for e in events if e.type is EventType.RUN_STARTED), None)
        if start is None:
            continue
        end = next((e.created_at for e in events if e.type in _RUN_ENDS), None)
        found.append(Attempt(run_id, "", "", start, end))
    return found


def max_run_overlap(intervals: Iterable[Attempt], *, until: datetime | None = None) -> int:
    """The most runs live at one instant (``max_overlap``; a live run is open until ``until``)."""
    found = list(intervals)
    last = max([a.start for a in found] + [a.end for a in found if a.end is not None], default=None)
    return max_overlap(found, until=until or last or datetime.max)
