"""``MemoryEventStore``: ``events.create`` and ``events.list`` of the in-memory World.

This is the reference model of contract §3: every decision is one of the pure
``judge_*`` / ``apply_*`` / ``new_*`` rules of :mod:`world_aws.contract.rules`,
taken under the state lock together with the entity change and the append, so
the log gets dense positions 1..n and the terminal-run fence is exact.

What only a World does, and therefore lives here rather than in the rules:
* a creating ``run_started`` on a missing run writes ``run_created`` (position
  1) before itself (contract §6.1); its creation data is bootstrap-only and is not
  kept on the logged ``run_started``;
* ``hook_created`` on a token held by another live hook appends a
  ``hook_conflict`` event instead of failing (contract §3);
* ``hook_received`` is deduplicated on (run, ``resume_id``): a repeat returns the
  first event and appends nothing (contract §6.2). The repeat is recognised before
  the hook is looked up, so a retried resume stays idempotent even after the
  hook was disposed;
* a run that becomes terminal loses its live hooks, and their tokens are freed.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime

from world_aws.contract import rules
from world_aws.contract.clock import Clock
from world_aws.contract.records import (
    Event,
    EventData,
    EventRequest,
    EventResult,
    EventType,
    HookConflictData,
    HookCreatedData,
    HookReceivedData,
    ResolveData,
    RunLog,
    Step,
)
from world_aws.contract.world import RunEnds
from world_aws.errors import BadInput, Conflict, NotFound, RunErased, RunExpired, TooEarly
from world_aws.local.memory_state import MemoryState, RunRecord, event_out, own_data, run_out
from world_aws.local.memory_stats import Stat, WorldStats


class MemoryEventStore:
    """The event log of every run, with the entity changes each event makes."""

    def __init__(
        self, state: MemoryState, clock: Clock, stats: WorldStats, ends: RunEnds | None = None
    ) -> None:
        self._state = state
        self._clock = clock
        self._stats = stats
        self.ends = ends or RunEnds()

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        """Append one event and apply its entity change atomically (contract §3).

        Raises:
            NotFound, Conflict, RunExpired, TooEarly, BadInput: as the rules say.
        """
        result = self._create(run_id, request)
        if request.type.ends_run:
            self.ends.notify(run_id)
        return result

    def _create(self, run_id: str, request: EventRequest) -> EventResult:
        self._stats.incr(Stat.EVENTS_CREATED)
        rules.validate_request(request)
        etype = request.type
        with self._state.lock:
            now = self._clock.now()
            record = self._state.runs.get(run_id)
            if run_id in self._state.erased:  # its tombstone: no message of it creates it again
                raise RunErased(f"run {run_id} was erased")
            if etype.is_run_event:
                return self._run_event(run_id, record, request, now)
            if record is None:
                rules.judge_on_missing_run(request, now)  # every non-run event needs the run
            if etype.is_step_event:
                return self._step_event(record, request, now)
            if etype.is_hook_event:
                return self._hook_event(record, request, now)
            if etype.is_wait_event:
                return self._wait_event(record, request, now)
            rules.judge_log_event(request, record.run)  # patch_applied: the log alone
            return EventResult(event=self._append_request(record, request, now))

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> builtins.list[EventResult] | None:
        """Append owned step writes (and patch markers), then maybe the run's end, after ``after``
        iff the log ends there.

        Every request is judged before any is applied (each names its own step, so
        judging them against the state before the batch is judging them in order).
        """
        results = self._append_after(run_id, after, requests, at)
        if results is not None and rules.split_batch(requests).end is not None:
            self.ends.notify(run_id)
        return results

    def _append_after(
        self, run_id: str, after: int, requests: Sequence[EventRequest], at: datetime
    ) -> builtins.list[EventResult] | None:
        self._stats.incr(Stat.EVENTS_CREATED, len(requests))
        rules.validate_batch(requests)
        with self._state.lock:
            rules.validate_stamp(at, self._clock.now())
            record = self._state.runs.get(run_id)
            if record is None or len(record.events) != after or record.run.status.terminal:
                return None
            start, steps, end = rules.split_batch(requests)
            try:
                # The start first (an accepted no-op does not append: then nothing does);
                # step writes leave the run's status as it is, so judging the end against
                # it now is judging it after them.
                for run_event in (start, end):
                    if run_event is not None and not rules.judge_run_event(run_event, record.run):
                        return None
                before = record.run
                if start is not None:  # the steps are judged against the run as it started
                    record.run = rules.apply_run_event(start, record.run, at)
                try:
                    for request in steps:
                        if request.type is EventType.PATCH_APPLIED:
                            rules.judge_log_event(request, record.run)
                        else:
                            _judge_step_event(record, request, at)
                finally:
                    record.run = before
            except (Conflict, NotFound, RunExpired, TooEarly):
                return None
            results = [self._run_event(run_id, record, start, at)] if start is not None else []
            results += [
                EventResult(event=self._append_request(record, request, at))
                if request.type is EventType.PATCH_APPLIED
                else self._step_event(record, request, at)
                for request in steps
            ]
            if end is not None:
                results.append(self._run_event(run_id, record, end, at))
            return results

    def flush(self, run_id: str) -> None:
        """Nothing to finish: an append here is whole when it answers."""

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> builtins.list[Event]:
        """The run's log from position ``after + 1`` on; an unknown run gives ``[]``."""
        self._stats.incr(Stat.EVENT_LISTS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            stored = record.events[max(0, after) :] if record is not None else []
            events = [event_out(event, resolve_data) for event in stored]
        self._stats.incr(Stat.EVENT_ITEMS_READ, len(events))
        return events

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        """The run and (not terminal) its log after ``after``, under one lock. Raises NotFound."""
        self._stats.incr(Stat.RUN_READS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is None:
                raise NotFound(f"run {run_id} not found")
            run = run_out(record.run, ResolveData.NONE)
            if run.status.terminal:
                return RunLog(run, None)
            events = [event_out(event, resolve_data) for event in record.events[max(0, after) :]]
        self._stats.incr(Stat.EVENT_LISTS)
        self._stats.incr(Stat.EVENT_ITEMS_READ, len(events))
        return RunLog(run, events)

    # ------------------------------------------------------------------------- internals

    def _append(
        self, record: RunRecord, etype: EventType, correlation_id: str | None, data: EventData, now: datetime
    ) -> Event:
        event = Event(
            run_id=record.run.run_id,
            position=len(record.events) + 1,
            type=etype,
            correlation_id=correlation_id,
            created_at=now,
            data=own_data(data),
        )
        record.events.append(event)
        if record.mark is not None and record.mark > now:
            record.mark = now  # a reconcile mark past the run's progress comes back to it
        self._stats.incr(Stat.EVENTS_APPENDED)
        return event

    def _append_request(self, record: RunRecord, request: EventRequest, now: datetime) -> Event:
        return self._append(record, request.type, request.correlation_id, request.data, now)

    def _run_event(
        self, run_id: str, record: RunRecord | None, request: EventRequest, now: datetime
    ) -> EventResult:
        run = record.run if record is not None else None
        if not rules.judge_run_event(request, run):
            assert run is not None
            return EventResult(event=None, run=run_out(run))
        if record is None:
            # run_created, or run_started carrying creation data on a missing run (contract §6.1).
            record = RunRecord(run=rules.new_run(run_id, request, now))
            self._state.runs[run_id] = record
            created = self._append(record, EventType.RUN_CREATED, None, rules.created_data(request), now)
            if request.type is EventType.RUN_CREATED:
                return EventResult(event=created, run=run_out(record.run))
        record.run = rules.apply_run_event(request, record.run, now)
        event = self._append(record, request.type, None, rules.logged_data(request), now)
        if record.run.status.terminal:
            record.mark = None  # out of the live index in the same step that ends the run
            self._release_hooks(record)
        return EventResult(event=event, run=run_out(record.run))

    def _release_hooks(self, record: RunRecord) -> None:
        """A terminal run keeps no live hook: free every token it held (contract §3.1)."""
        for hook in record.hooks.values():
            if self._state.tokens.get(hook.token) == (hook.run_id, hook.hook_id):
                del self._state.tokens[hook.token]
        record.hooks.clear()

    def _step_event(self, record: RunRecord, request: EventRequest, now: datetime) -> EventResult:
        step_id = _correlation(request)
        step = _judge_step_event(record, request, now)
        new = rules.apply_step_event(request, record.run.run_id, step, now)
        record.steps[step_id] = new
        if new.status.terminal:
            record.pending_steps.discard(step_id)
        elif rules.counts_as_pending(request):
            record.pending_steps.add(step_id)
        return EventResult(event=self._append_request(record, request, now), step=new)

    def _hook_event(self, record: RunRecord, request: EventRequest, now: datetime) -> EventResult:
        hook_id = _correlation(request)
        hook = record.hooks.get(hook_id)
        if request.type is EventType.HOOK_CREATED:
            return self._hook_created(record, request, now)
        if request.type is EventType.HOOK_RECEIVED:
            resume_id: str | None = request.data_as(HookReceivedData).resume_id
            first = record.resumes.get(resume_id) if resume_id is not None else None
            if first is not None:
                return EventResult(event=event_out(first, ResolveData.ALL), hook=hook)
            rules.judge_hook_event(request, record.run, hook)
            event = self._append_request(record, request, now)
            if resume_id is not None:
                record.resumes[resume_id] = event
            return EventResult(event=event, hook=hook)
        if request.type is EventType.HOOK_DISPOSED:
            rules.judge_hook_event(request, record.run, hook)
            assert hook is not None
            del record.hooks[hook_id]
            if self._state.tokens.get(hook.token) == (hook.run_id, hook.hook_id):
                del self._state.tokens[hook.token]
            return EventResult(event=self._append_request(record, request, now), hook=hook)
        raise BadInput(f"{request.type.value} is not a hook event a client may write")

    def _hook_created(self, record: RunRecord, request: EventRequest, now: datetime) -> EventResult:
        hook_id = _correlation(request)
        seen = record.hooks.get(hook_id) or (hook_id if hook_id in record.hook_ids else None)
        rules.judge_child_create(request, record.run, seen)
        token: str = request.data_as(HookCreatedData).token
        holder = self._state.tokens.get(token)
        if holder is not None:
            conflict = HookConflictData(token=token, conflicting_run_id=holder[0])
            record.hook_ids.add(hook_id)  # the id is taken: a later create of it is a duplicate
            return EventResult(event=self._append(record, EventType.HOOK_CONFLICT, hook_id, conflict, now))
        hook = rules.apply_hook_event(request, record.run.run_id, None, now)
        record.hooks[hook_id] = hook
        record.hook_ids.add(hook_id)
        self._state.tokens[token] = (hook.run_id, hook_id)
        self._state.last_holders[token] = (hook.run_id, hook_id)
        return EventResult(event=self._append_request(record, request, now), hook=hook)

    def _wait_event(self, record: RunRecord, request: EventRequest, now: datetime) -> EventResult:
        wait_id = _correlation(request)
        wait = record.waits.get(wait_id)
        rules.judge_wait_event(request, record.run, wait)
        new = rules.apply_wait_event(request, record.run.run_id, wait, now)
        record.waits[wait_id] = new
        if wait is None:
            record.due_at = new.resume_at
        return EventResult(event=self._append_request(record, request, now), wait=new)


def _judge_step_event(record: RunRecord, request: EventRequest, now: datetime) -> Step | None:
    """Judge a step event against the run and its step (raising the rejection); the step as it is."""
    step = record.steps.get(_correlation(request))
    rules.judge_step_event(request, record.run, step, now)
    return step


def _correlation(request: EventRequest) -> str:
    assert request.correlation_id is not None  # validate_request guarantees it for child events
    return request.correlation_id
