"""``SpyWorld``: a World wrapper that journals what the runtime asks of it and injects faults.

The runtime under test is bound to a ``SpyWorld`` around the real World, so a
scenario can assert on *what the runtime did* (which reads came before a claim,
whether a step was created before its message was published) and make one
operation fail (``inject``) without touching the World itself. The journal tags
every call with the harness delivery that was running, so calls made from the
runtime's dispatch threads still belong to their delivery.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import (
    Blocked,
    Event,
    EventRequest,
    EventResult,
    ResolveData,
    Run,
    RunLog,
    Step,
)
from world_aws.contract.transport import decode_payload, encode_payload
from world_aws.contract.world import (
    ForwardingWorld,
    LiveRun,
    QueueName,
    RunPage,
    Sweep,
    World,
)


@dataclass(frozen=True)
class Publish:
    """What one ``queue.publish`` carried."""

    queue: QueueName
    payload: InvokePayload
    body: bytes
    delay_seconds: float
    idempotency_key: str | None


@dataclass
class Call:
    """One call the runtime made on the World, in the order calls started (``start``) and ended."""

    op: str  # "events.create", "events.list", "runs.get", "steps.list", "queue.publish", ...
    run_id: str | None
    detail: Any  # EventRequest for events.create, Publish for queue.publish, else None
    delivery: int | None  # index of the harness delivery that was running, if any
    start: int
    end: int = 0
    error: BaseException | None = None
    result: Any = None


@dataclass
class Fault:
    op: str
    error: Exception
    match: Callable[[Call], bool]
    times: int
    fired: int = 0
    after: bool = False  # run the call, then raise: it landed but its answer was lost


class SpyWorld(ForwardingWorld):
    """Every World protocol of ``inner``, journaled; ``deployment`` overrides ``deployment_id()``."""

    def __init__(
        self,
        inner: World,
        current_delivery: Callable[[], int | None] = lambda: None,
        deployment: str | None = None,
    ) -> None:
        super().__init__(inner)
        self.current_delivery = current_delivery
        self.deployment = deployment
        self.journal: builtins.list[Call] = []
        # Rewrites every published payload (e.g. an older producer that sends no run_context).
        self.rewrite: Callable[[QueueName, InvokePayload], InvokePayload] | None = None
        self._faults: builtins.list[Fault] = []
        self._lock = threading.Lock()
        self._seq = 0
        self.events = _SpyEvents(self)
        self.runs = _SpyRuns(self)
        self.steps = _SpySteps(self)
        self.queue = _SpyQueue(self)

    # --- World protocol -------------------------------------------------------------

    def deployment_id(self) -> str:
        return self.deployment if self.deployment is not None else self.inner.deployment_id()

    def close(self) -> None:
        """The inner World belongs to the harness: nothing to close here."""

    # --- test API -------------------------------------------------------------------

    def inject(
        self,
        op: str,
        error: Exception,
        *,
        match: Callable[[Call], bool] = lambda call: True,
        times: int = 1,
        after: bool = False,
    ) -> Fault:
        """Make the next ``times`` calls of ``op`` that ``match`` raise ``error``.

        Instead of running, or with ``after``, once they ran (a write that landed
        while its caller saw a timeout).
        """
        fault = Fault(op, error, match, times, after=after)
        with self._lock:
            self._faults.append(fault)
        return fault

    def calls(self, op: str | None = None, *, delivery: int | None = None) -> builtins.list[Call]:
        with self._lock:
            return [
                c
                for c in self.journal
                if (op is None or c.op == op) and (delivery is None or c.delivery == delivery)
            ]

    def with_deployment(self, deployment_id: str) -> SpyWorld:
        """Another spy over the same World that serves ``deployment_id`` (and keeps its own journal)."""
        return SpyWorld(self.inner, self.current_delivery, deployment_id)

    def invoke(self, op: str, run_id: str | None, detail: Any, fn: Callable[[], Any]) -> Any:
        with self._lock:
            self._seq += 1
            call = Call(op, run_id, detail, self.current_delivery(), self._seq)
            self.journal.append(call)
            fault = next(
                (f for f in self._faults if f.op == op and f.fired < f.times and f.match(call)), None
            )
            if fault is not None:
                fault.fired += 1
        try:
            if fault is not None and not fault.after:
                raise fault.error
            call.result = fn()
            if fault is not None:
                raise fault.error
            return call.result
        except BaseException as exc:
            call.error = exc
            raise
        finally:
            with self._lock:
                self._seq += 1
                call.end = self._seq


class _SpyEvents:
    def __init__(self, spy: SpyWorld) -> None:
        self._spy = spy

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        inner = self._spy.inner.events
        result: EventResult = self._spy.invoke(
            "events.create", run_id, request, lambda: inner.create(run_id, request)
        )
        return result

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> builtins.list[EventResult] | None:
        inner = self._spy.inner.events
        results: builtins.list[EventResult] | None = self._spy.invoke(
            "events.append_after",
            run_id,
            list(requests),
            lambda: inner.append_after(run_id, after, requests, at=at, flush_later=flush_later),
        )
        return results

    def flush(self, run_id: str) -> None:
        inner = self._spy.inner.events
        self._spy.invoke("events.flush", run_id, None, lambda: inner.flush(run_id))

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> builtins.list[Event]:
        inner = self._spy.inner.events
        events: builtins.list[Event] = self._spy.invoke(
            "events.list", run_id, after, lambda: inner.list(run_id, after=after, resolve_data=resolve_data)
        )
        return events

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        inner = self._spy.inner.events
        log: RunLog = self._spy.invoke(
            "events.list_with_run",
            run_id,
            after,
            lambda: inner.list_with_run(run_id, after=after, resolve_data=resolve_data),
        )
        return log


class _SpyRuns:
    def __init__(self, spy: SpyWorld) -> None:
        self._spy = spy

    def get(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        inner = self._spy.inner.runs
        run: Run = self._spy.invoke(
            "runs.get", run_id, resolve_data, lambda: inner.get(run_id, resolve_data=resolve_data)
        )
        return run

    def claim_continuation(self, run_id: str, *, after: int, claimer: str) -> Run | None:
        inner = self._spy.inner.runs
        run: Run | None = self._spy.invoke(
            "runs.claim_continuation",
            run_id,
            None,
            lambda: inner.claim_continuation(run_id, after=after, claimer=claimer),
        )
        return run

    def list(self, **kwargs: Any) -> RunPage:
        inner = self._spy.inner.runs
        page: RunPage = self._spy.invoke("runs.list", None, None, lambda: inner.list(**kwargs))
        return page

    def list_live(self, *, marked_before: datetime, limit: int) -> builtins.list[LiveRun]:
        inner = self._spy.inner.runs
        live: builtins.list[LiveRun] = self._spy.invoke(
            "runs.list_live", None, None, lambda: inner.list_live(marked_before=marked_before, limit=limit)
        )
        return live

    def mark_live(self, run_id: str, *, mark: datetime) -> bool:
        inner = self._spy.inner.runs
        marked: bool = self._spy.invoke(
            "runs.mark_live", run_id, None, lambda: inner.mark_live(run_id, mark=mark)
        )
        return marked

    def sweep_created(self, *, created_before: datetime, limit: int) -> Sweep:
        inner = self._spy.inner.runs
        swept: Sweep = self._spy.invoke(
            "runs.sweep_created",
            None,
            None,
            lambda: inner.sweep_created(created_before=created_before, limit=limit),
        )
        return swept

    def count_live(self, deployment_id: str) -> int:
        inner = self._spy.inner.runs
        count: int = self._spy.invoke("runs.count_live", None, None, lambda: inner.count_live(deployment_id))
        return count

    def hold(self, run_id: str, blocked: Blocked) -> bool:
        inner = self._spy.inner.runs
        held: bool = self._spy.invoke("runs.hold", run_id, None, lambda: inner.hold(run_id, blocked))
        return held

    def release(self, run_id: str, *, deployment_id: str) -> bool:
        inner = self._spy.inner.runs
        released: bool = self._spy.invoke(
            "runs.release", run_id, None, lambda: inner.release(run_id, deployment_id=deployment_id)
        )
        return released

    def unblock(self, run_id: str) -> None:
        inner = self._spy.inner.runs
        self._spy.invoke("runs.unblock", run_id, None, lambda: inner.unblock(run_id))

    def list_blocked(self, *, limit: int = 100) -> builtins.list[Run]:
        inner = self._spy.inner.runs
        held: builtins.list[Run] = self._spy.invoke(
            "runs.list_blocked", None, None, lambda: inner.list_blocked(limit=limit)
        )
        return held


class _SpySteps:
    def __init__(self, spy: SpyWorld) -> None:
        self._spy = spy

    def get(self, run_id: str, step_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Step:
        inner = self._spy.inner.steps
        step: Step = self._spy.invoke(
            "steps.get", run_id, step_id, lambda: inner.get(run_id, step_id, resolve_data=resolve_data)
        )
        return step

    def list(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> builtins.list[Step]:
        inner = self._spy.inner.steps
        steps: builtins.list[Step] = self._spy.invoke(
            "steps.list", run_id, None, lambda: inner.list(run_id, resolve_data=resolve_data)
        )
        return steps

    def any_pending(self, run_id: str, *, besides: str | None = None) -> bool:
        inner = self._spy.inner.steps
        pending: bool = self._spy.invoke(
            "steps.any_pending", run_id, besides, lambda: inner.any_pending(run_id, besides=besides)
        )
        return pending

    def renew_lease(self, run_id: str, owner: str, *, at: datetime) -> None:
        inner = self._spy.inner.steps
        self._spy.invoke("steps.renew_lease", run_id, owner, lambda: inner.renew_lease(run_id, owner, at=at))

    def lease(self, run_id: str, owner: str) -> datetime | None:
        inner = self._spy.inner.steps
        renewed: datetime | None = self._spy.invoke(
            "steps.lease", run_id, owner, lambda: inner.lease(run_id, owner)
        )
        return renewed


class _SpyQueue:
    def __init__(self, spy: SpyWorld) -> None:
        self._spy = spy

    def publish(
        self,
        queue: QueueName,
        body: bytes,
        *,
        delay_seconds: float = 0,
        idempotency_key: str | None = None,
    ) -> str:
        payload = decode_payload(body)
        assert isinstance(payload, InvokePayload)
        if self._spy.rewrite is not None:
            payload = self._spy.rewrite(QueueName(queue), payload)
            body = encode_payload(payload)
        detail = Publish(QueueName(queue), payload, bytes(body), delay_seconds, idempotency_key)
        inner = self._spy.inner.queue
        message_id: str = self._spy.invoke(
            "queue.publish",
            payload.run_id,
            detail,
            lambda: inner.publish(queue, body, delay_seconds=delay_seconds, idempotency_key=idempotency_key),
        )
        return message_id
