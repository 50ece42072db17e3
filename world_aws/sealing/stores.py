"""The stores of a sealing World: each hands its inner store sealed payloads and returns them opened.

Only the stores that carry payloads are wrapped (events, runs, steps, hooks,
streams); waits, blobs, schedules and the queue are the inner World's. A store's
methods without payloads are handed on as they are; anything else an inner store
offers beyond its protocol (a World's own capabilities) is reached through
``__getattr__``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from world_aws.contract.records import (
    Blocked,
    Event,
    EventRequest,
    EventResult,
    EventType,
    Hook,
    ResolveData,
    Run,
    RunLog,
    RunStatus,
    Step,
    creation_of,
)
from world_aws.contract.streams import MAX_READ_CHUNKS, StreamChunk, StreamStore
from world_aws.contract.world import EventStore, HookStore, LiveRun, RunPage, RunStore, StepStore, Sweep
from world_aws.sealing.run_keys import KeyService, RunKeys
from world_aws.sealing.sealer import Sealer


class _Wrapper:
    def __init__(self, inner: Any, sealer: Sealer) -> None:
        self.inner = inner
        self._sealer = sealer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class SealedEventStore(_Wrapper):
    def _sealed(self, run_id: str, request: EventRequest) -> EventRequest:
        return replace(request, data=self._sealer.seal_data(run_id, request.data))

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        sealed = self._sealed(run_id, request)
        result: EventResult = self.inner.create(run_id, sealed)
        creation = creation_of(sealed.data)
        if request.type is EventType.RUN_CREATED and result.event is not None and creation is not None:
            # This request made the run: its key is the one this input carries (a run_started
            # that carries a creation may have met the run made already, with another).
            self._sealer.keys.note_run(run_id, creation.input)
        return self._sealer.open_result(run_id, result)

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> list[EventResult] | None:
        sealed = [self._sealed(run_id, request) for request in requests]
        results = self.inner.append_after(run_id, after, sealed, at=at, flush_later=flush_later)
        return None if results is None else [self._sealer.open_result(run_id, r) for r in results]

    def flush(self, run_id: str) -> None:
        self.inner.flush(run_id)

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> list[Event]:
        events: list[Event] = self.inner.list(run_id, after=after, resolve_data=resolve_data)
        return [self._sealer.open_event(event) for event in events]

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        log: RunLog = self.inner.list_with_run(run_id, after=after, resolve_data=resolve_data)
        run = self._sealer.open_run(log.run)
        if log.events is None:
            return replace(log, run=run)
        return RunLog(run=run, events=[self._sealer.open_event(e) for e in log.events])


class SealedRunStore(_Wrapper):
    def get(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        return self._sealer.open_run(self.inner.get(run_id, resolve_data=resolve_data))

    def list(
        self,
        *,
        status: RunStatus | None = None,
        workflow_name: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RunPage:
        page: RunPage = self.inner.list(
            status=status, workflow_name=workflow_name, limit=limit, cursor=cursor
        )
        return replace(page, runs=[self._sealer.open_run(run) for run in page.runs])

    def claim_continuation(self, run_id: str, *, after: int, claimer: str) -> Run | None:
        run: Run | None = self.inner.claim_continuation(run_id, after=after, claimer=claimer)
        return None if run is None else self._sealer.open_run(run)

    def list_live(self, *, marked_before: datetime, limit: int) -> builtins.list[LiveRun]:
        live: builtins.list[LiveRun] = self.inner.list_live(marked_before=marked_before, limit=limit)
        return live

    def mark_live(self, run_id: str, *, mark: datetime) -> bool:
        return bool(self.inner.mark_live(run_id, mark=mark))

    def count_live(self, deployment_id: str) -> int:
        return int(self.inner.count_live(deployment_id))

    def hold(self, run_id: str, blocked: Blocked) -> bool:
        return bool(self.inner.hold(run_id, blocked))

    def release(self, run_id: str, *, deployment_id: str) -> bool:
        return bool(self.inner.release(run_id, deployment_id=deployment_id))

    def unblock(self, run_id: str) -> None:
        self.inner.unblock(run_id)

    def list_blocked(self, *, limit: int = 100) -> builtins.list[Run]:
        return [self._sealer.open_run(run) for run in self.inner.list_blocked(limit=limit)]

    def sweep_created(self, *, created_before: datetime, limit: int) -> Sweep:
        sweep: Sweep = self.inner.sweep_created(created_before=created_before, limit=limit)
        return sweep


class SealedStepStore(_Wrapper):
    def get(self, run_id: str, step_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Step:
        return self._sealer.open_step(self.inner.get(run_id, step_id, resolve_data=resolve_data))

    def list(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> list[Step]:
        return [self._sealer.open_step(s) for s in self.inner.list(run_id, resolve_data=resolve_data)]

    def any_pending(self, run_id: str, *, besides: str | None = None) -> bool:
        return bool(self.inner.any_pending(run_id, besides=besides))


class SealedHookStore(_Wrapper):
    def get_by_token(self, token: str) -> Hook:
        return self._sealer.open_hook(self.inner.get_by_token(token))

    def resumed(self, token: str, resume_id: str) -> Event | None:
        event: Event | None = self.inner.resumed(token, resume_id)
        return None if event is None else self._sealer.open_event(event)

    def list(self, run_id: str) -> list[Hook]:
        return [self._sealer.open_hook(hook) for hook in self.inner.list(run_id)]


def stream_field(name: str) -> str:
    """The field a stream's values are sealed for (the run id is the other half)."""
    return f"stream:{name}"


class SealedStreamStore(_Wrapper):
    def append(self, run_id: str, name: str, chunk: StreamChunk) -> None:
        if isinstance(chunk.data, bytes):  # else the inner store refuses it (check_chunk)
            chunk = replace(chunk, data=self._sealer.seal(run_id, stream_field(name), chunk.data))
        self.inner.append(run_id, name, chunk)

    def read(
        self, run_id: str, name: str, *, after: int = -1, limit: int = MAX_READ_CHUNKS
    ) -> list[StreamChunk]:
        chunks: list[StreamChunk] = self.inner.read(run_id, name, after=after, limit=limit)
        field = stream_field(name)
        return [replace(c, data=self._sealer.open(run_id, field, c.data) or b"") for c in chunks]

    def tail(self, run_id: str, name: str) -> int:
        return int(self.inner.tail(run_id, name))


@dataclass(frozen=True, slots=True)
class SealedStores:
    """A World's payload-carrying stores, sealed, and the seal the runtime uses (``world.payloads``)."""

    events: EventStore
    runs: RunStore
    steps: StepStore
    hooks: HookStore
    streams: StreamStore
    payloads: Sealer


def seal_stores(
    *,
    events: EventStore,
    runs: RunStore,
    steps: StepStore,
    hooks: HookStore,
    streams: StreamStore,
    service: KeyService,
    encrypting: bool,
) -> SealedStores:
    """The sealing wrappers of a World's stores.

    Args:
        service: the key service (KMS).
        encrypting: whether new runs get a data key; without, sealed runs are still opened.
    """
    sealer = Sealer(RunKeys(service, runs, encrypting=encrypting))
    return SealedStores(
        events=SealedEventStore(events, sealer),
        runs=SealedRunStore(runs, sealer),
        steps=SealedStepStore(steps, sealer),
        hooks=SealedHookStore(hooks, sealer),
        streams=SealedStreamStore(streams, sealer),
        payloads=sealer,
    )
