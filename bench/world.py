"""``BenchWorld``: the one instrumented World of every bench, as the runtime sees it during a run.

It is the backend World (the AWS World on moto, or the in-memory World of the model pass)
with every store behind an ``OpProxy``: each call of a store method is an *op*
(``runs.get``, ``blobs.put``, ...; ``events.create:<event type>`` and
``queue.publish:keyed|unkeyed`` are keyed finer, as their cost depends on the argument) and
runs inside ``CallRecorder.op(key)``, so the AWS calls it makes are attributed to it, and,
in the model pass, first sleeps the op's measured round trips (``charge``).
Two stores are also wrapped:

* ``events``: notes the moment each step's ``step_started`` is recorded and when
  a run ends (the benchmark's clock stops there), and tells the call recorder
  when a step delivery enters its claim;
* ``queue`` (legacy prologue only): re-encodes every step message without
  ``run_context``, as a producer from before contract §5.1 sends it, so the step
  consumer takes its ``runs.get`` prologue. Nothing else of the runtime changes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, cast

from bench.instrument import CallRecorder
from world_aws.contract.coalesce import GateStore
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import Event, EventRequest, EventResult, EventType, ResolveData, RunLog
from world_aws.contract.sealing import PayloadSeal
from world_aws.contract.transport import decode_payload, encode_payload
from world_aws.contract.world import (
    BlobStore,
    Consumers,
    EventStore,
    ForwardingWorld,
    HookStore,
    MessageHandler,
    Queue,
    QueueName,
    RunStore,
    StepStore,
    WaitStore,
    World,
)

OpEnter = Callable[[str], AbstractContextManager[None]]

# Separates a method from the qualifier of its key (``events.create:step_started``).
QUALIFIER = ":"


def op_key(store: str, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """The key of one store call: ``<store>.<method>``, qualified for events.create and queue.publish.

    Args:
        store: the World attribute (``events``, ``runs``, ``queue``, ...).
        method: the method called.
        args: its positional arguments (without ``self``).
        kwargs: its keyword arguments.
    """
    name = f"{store}.{method}"
    if name == "events.create":
        request = args[1] if len(args) > 1 else kwargs["request"]
        assert isinstance(request, EventRequest)
        return f"{name}{QUALIFIER}{request.type.value}"
    if name == "queue.publish":
        keyed = kwargs.get("idempotency_key") is not None
        return f"{name}{QUALIFIER}{'keyed' if keyed else 'unkeyed'}"
    return name


def method_of(key: str) -> str:
    """``events.create:step_started`` -> ``events.create``."""
    return key.split(QUALIFIER, 1)[0]


class OpProxy:
    """One World store whose public methods each run inside ``enter(op_key(...))``.

    Typed loosely on purpose: it stands in for any store protocol (the caller casts),
    so that every method the runtime uses, now or later, is bracketed without a
    hand-written wrapper per method.

    Args:
        store: the World attribute it stands for (``events``, ``queue``, ...).
        inner: the store it forwards to.
        enter: the context to run each call in, given the call's op key.
    """

    def __init__(self, store: str, inner: object, enter: OpEnter) -> None:
        self._store = store
        self._inner = inner
        self._enter = enter

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name.startswith("_") or not callable(attribute):
            return attribute
        method: Callable[..., Any] = attribute

        def bracketed(*args: Any, **kwargs: Any) -> Any:
            with self._enter(op_key(self._store, name, args, kwargs)):
                return method(*args, **kwargs)

        return bracketed


_RUN_ENDINGS = (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED)


class RunTimeline:
    """When each step of the watched run was delivered and claimed, and whether the run ended.

    Times are ``time.perf_counter()`` seconds.

    ``expect(run_id, n, on_all_started)`` calls ``on_all_started`` on the thread that
    records the ``n``-th distinct ``step_started`` of the run (or at once, if that
    already happened).
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._started: dict[str, dict[str, float]] = {}
        self._delivered: dict[str, dict[str, float]] = {}
        self._ended: dict[str, threading.Event] = {}
        self._expected: dict[str, tuple[int, Callable[[], None]]] = {}

    def expect(self, run_id: str, count: int, on_all_started: Callable[[], None]) -> None:
        with self._lock:
            self._ended.setdefault(run_id, threading.Event())
            if len(self._started.get(run_id, {})) < count:
                self._expected[run_id] = (count, on_all_started)
                return
        on_all_started()

    def step_started(self, run_id: str, step_id: str, at: float) -> None:
        callback = None
        with self._lock:
            started = self._started.setdefault(run_id, {})
            started.setdefault(step_id, at)
            expected = self._expected.get(run_id)
            if expected is not None and len(started) >= expected[0]:
                callback = self._expected.pop(run_id)[1]
            self._lock.notify_all()
        if callback is not None:
            callback()

    def delivered(self, run_id: str, step_id: str, at: float) -> None:
        """A step message of ``run_id`` reached its consumer (the first time counts)."""
        with self._lock:
            self._delivered.setdefault(run_id, {}).setdefault(step_id, at)

    def deliveries(self, run_id: str) -> dict[str, float]:
        """First delivery time per step id of ``run_id``."""
        with self._lock:
            return dict(self._delivered.get(run_id, {}))

    def wait_started(self, run_id: str, count: int, timeout: float) -> bool:
        """Block until ``count`` steps of ``run_id`` have started; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._started.get(run_id, {})) >= count, timeout)

    def run_ended(self, run_id: str) -> None:
        with self._lock:
            ended = self._ended.setdefault(run_id, threading.Event())
        ended.set()

    def wait_ended(self, run_id: str, timeout: float) -> bool:
        with self._lock:
            ended = self._ended.setdefault(run_id, threading.Event())
        return ended.wait(timeout)

    def starts(self, run_id: str) -> dict[str, float]:
        """First ``step_started`` time per step id of ``run_id``."""
        with self._lock:
            return dict(self._started.get(run_id, {}))


class TimedEvents:
    """``EventStore`` that reports claims and run endings to the timeline and the recorder."""

    def __init__(self, inner: EventStore, timeline: RunTimeline, recorder: CallRecorder) -> None:
        self._inner = inner
        self._timeline = timeline
        self._recorder = recorder

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        if request.type is EventType.STEP_STARTED:
            self._recorder.claiming()
        result = self._inner.create(run_id, request)
        if request.type is EventType.STEP_STARTED and request.correlation_id is not None:
            self._timeline.step_started(run_id, request.correlation_id, time.perf_counter())
        elif request.type in _RUN_ENDINGS:
            self._timeline.run_ended(run_id)
        return result

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> list[EventResult] | None:
        # A batch holds owned step writes (no claim to report), maybe closed by the run's end.
        results = self._inner.append_after(run_id, after, requests, at=at, flush_later=flush_later)
        if results is not None and requests[-1].type in _RUN_ENDINGS:
            self._timeline.run_ended(run_id)
        return results

    def flush(self, run_id: str) -> None:
        self._inner.flush(run_id)

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> list[Event]:
        return self._inner.list(run_id, after=after, resolve_data=resolve_data)

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        return self._inner.list_with_run(run_id, after=after, resolve_data=resolve_data)


class LegacyProducerQueue:
    """``Queue`` that strips ``run_context`` from step messages (an older producer)."""

    def __init__(self, inner: Queue) -> None:
        self._inner = inner

    def publish(
        self,
        queue: QueueName,
        body: bytes,
        *,
        delay_seconds: float = 0,
        idempotency_key: str | None = None,
    ) -> str:
        if queue is QueueName.STEP:
            payload = decode_payload(body)
            if isinstance(payload, InvokePayload) and payload.run_context is not None:
                body = encode_payload(payload.model_copy(update={"run_context": None}))
        return self._inner.publish(queue, body, delay_seconds=delay_seconds, idempotency_key=idempotency_key)


class BenchWorld(ForwardingWorld):
    """The ``World`` protocol over a backend World: ops attributed, events timed, maybe a legacy producer.

    Args:
        inner: the backend World (closed by whoever made it).
        timeline: where claims and run endings are noted.
        recorder: attributes each op's calls, counts ops and pre-claim reads.
        legacy_producer: strip ``run_context`` from step messages.
        charge: called with each op's key before the op runs (the model pass sleeps there).
    """

    def __init__(
        self,
        inner: World,
        timeline: RunTimeline,
        recorder: CallRecorder,
        *,
        legacy_producer: bool,
        charge: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(inner)
        self._recorder = recorder
        self._charge = charge
        queue: Queue = LegacyProducerQueue(inner.queue) if legacy_producer else inner.queue
        events = cast(EventStore, OpProxy("events", inner.events, self._op))
        self.events = TimedEvents(events, timeline, recorder)
        self.runs = cast(RunStore, OpProxy("runs", inner.runs, self._op))
        self.steps = cast(StepStore, OpProxy("steps", inner.steps, self._op))
        self.hooks = cast(HookStore, OpProxy("hooks", inner.hooks, self._op))
        self.waits = cast(WaitStore, OpProxy("waits", inner.waits, self._op))
        self.blobs = cast(BlobStore, OpProxy("blobs", inner.blobs, self._op))
        self.queue = cast(Queue, OpProxy("queue", queue, self._op))
        # A sealing World's KMS calls: a new run's key (payloads.creation) and, in a store
        # op, a key unwrapped for a run this process had not met.
        self.payloads = cast(PayloadSeal, OpProxy("payloads", inner.payloads, self._op))
        # Debounce windows, batches and singleton keys (issue 41): a gated start's reads and writes.
        self.gates = cast(GateStore, OpProxy("gates", inner.gates, self._op))

    def start_consumers(self, handler: MessageHandler) -> Consumers:
        raise NotImplementedError("the benchmark drives the queues with its own pump (bench.pump)")

    def close(self) -> None:
        """The wrapped World is closed by whoever made it."""

    @contextmanager
    def _op(self, key: str) -> Iterator[None]:
        with self._recorder.op(key):
            if self._charge is not None:
                self._charge(key)
            yield
