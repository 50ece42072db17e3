"""``FaultyWorld``: a World whose calls fail as a network and a dying process make them fail.

It wraps any World at the protocol boundary (``ForwardingWorld``) and asks a
:class:`FaultPlan` at every call of every store:

* ``TRANSIENT``: the call is not made; the caller gets ``Throttled`` or ``Transient``;
* ``LOST``: the call is made, then the caller gets ``Transient`` (a write landed, its answer did not);
* ``REPEAT`` (writes only): the call is made twice, as a client's retry of a request
  that already committed; the caller sees the second answer (often ``Conflict``);
* ``CRASH_CALL`` (only while ``delivering``): :class:`Crash` before or after the call;
* ``DELAY`` (publishes): the message gets extra delay, so deliveries are reordered;
* ``STORM`` (while ``storm()`` says one lasts, deliveries only): every call is throttled,
  as an on-demand table throttles a burst past twice its previous peak, for minutes.

Faults fire only while ``delivering`` (the pump hands a delivery to the runtime)
or ``calling`` (a client calls the runtime: ``with world.client():``); what the
harness itself reads goes through untouched. With ``inject_calls=False`` only
delays and copies are injected here (the AWS World's calls fail in botocore
hooks instead, ``harness.chaos.aws``).

``arm_copy(calls, copy)`` runs ``copy`` (a second delivery of the message being
handled) on another thread at the ``calls``-th call from now, and waits for it:
a concurrent duplicate at a chosen point of the original, deterministically.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from harness.fault_plan import Crash, Fault, FaultPlan
from world_aws.contract.admission import AdmissionStore
from world_aws.contract.coalesce import GateStore
from world_aws.contract.records import EventRequest
from world_aws.contract.streams import StreamChunk, StreamStore
from world_aws.contract.world import (
    BlobStore,
    EventStore,
    ForwardingWorld,
    HookStore,
    Queue,
    RunStore,
    StepStore,
    WaitStore,
    World,
)
from world_aws.errors import Throttled, Transient, WorldAwsError

# Calls whose repeat changes nothing a retry could not change on AWS too.
WRITES = frozenset(
    {
        "events.create",
        "events.append_after",
        "queue.publish",
        "blobs.put",
        "runs.claim_continuation",
        "streams.append",
        "admission.acquire",
        "admission.release",
        "admission.take",
        "admission.settle",
        "gates.change",
        "admission.renew",
    }
)
# Real seconds a copy may take before the original goes on without it (a deadlock guard).
COPY_JOIN_SECONDS = 60.0


class FaultyWorld(ForwardingWorld):
    """Every store of ``inner`` behind the fault decisions of ``plan``."""

    def __init__(self, inner: World, plan: FaultPlan, *, inject_calls: bool = True) -> None:
        super().__init__(inner)
        self.plan = plan
        self.inject_calls = inject_calls
        # Set by the pump while it hands a delivery to the runtime: crashes only happen then.
        self.delivering = False
        self.calling = False
        self.copy_timeouts = 0
        # Whether a throttling storm lasts now (None: never): every call of a delivery fails.
        self.storm: Callable[[], bool] | None = None
        self._copy: tuple[int, Callable[[], object]] | None = None
        self._lock = threading.Lock()
        self.events = cast(EventStore, _FaultyStore(self, "events", inner.events))
        self.runs = cast(RunStore, _FaultyStore(self, "runs", inner.runs))
        self.steps = cast(StepStore, _FaultyStore(self, "steps", inner.steps))
        self.hooks = cast(HookStore, _FaultyStore(self, "hooks", inner.hooks))
        self.waits = cast(WaitStore, _FaultyStore(self, "waits", inner.waits))
        self.blobs = cast(BlobStore, _FaultyStore(self, "blobs", inner.blobs))
        self.queue = cast(Queue, _FaultyStore(self, "queue", inner.queue))
        self.streams = cast(StreamStore, _FaultyStore(self, "streams", inner.streams))
        self.admission = cast(AdmissionStore, _FaultyStore(self, "admission", inner.admission))
        self.gates = cast(GateStore, _FaultyStore(self, "gates", inner.gates))

    def close(self) -> None:
        """The inner World belongs to whoever built it: nothing to close here."""

    @contextmanager
    def client(self) -> Iterator[None]:
        """Calls made inside the block are a client's: transient, lost and repeated, never crashed."""
        self.calling = True
        try:
            yield
        finally:
            self.calling = False

    def arm_copy(self, calls: int, copy: Callable[[], object]) -> None:
        """Run ``copy`` on another thread just before the ``calls``-th World call from now."""
        with self._lock:
            self._copy = (max(1, calls), copy)

    def disarm_copy(self) -> None:
        with self._lock:
            self._copy = None

    def call(self, op: str, key: str, fn: Callable[[], Any]) -> Any:
        """Make one call of ``op`` (identified by ``key``) through the plan's faults."""
        self._run_copy_if_due()
        plan = self.plan
        if not self.inject_calls or not (self.delivering or self.calling):
            return fn()
        point = f"{op}|{key}"
        if self.delivering and self.storm is not None and self.storm():
            plan.record(Fault.STORM, point)
            raise Throttled(f"injected throttling storm on {op}", retry_after=0.2)
        if self.delivering and plan.fires(Fault.CRASH_CALL, point):
            if plan.choose(f"crash-side|{point}", 2) == 0:
                raise Crash(f"died before {op}")
            _swallow(fn)
            raise Crash(f"died after {op}")
        if plan.fires(Fault.TRANSIENT, point):
            kind = plan.choose(f"transient-kind|{point}", 3)
            if kind == 0:
                raise Throttled(f"injected throttling of {op}", retry_after=0.2)
            raise Transient(f"injected {'HTTP 500' if kind == 1 else 'connection reset'} on {op}")
        result = fn()
        if op in WRITES and plan.fires(Fault.REPEAT, point):
            return fn()  # the retry's answer is all the caller sees
        if plan.fires(Fault.LOST, point):
            raise Transient(f"injected: the answer to {op} was lost")
        return result

    def _run_copy_if_due(self) -> None:
        with self._lock:
            if self._copy is None:
                return
            left, copy = self._copy
            if left > 1:
                self._copy = (left - 1, copy)
                return
            self._copy = None
        thread = threading.Thread(target=copy, name="chaos-copy", daemon=True)
        thread.start()
        thread.join(COPY_JOIN_SECONDS)
        if thread.is_alive():
            self.copy_timeouts += 1


class _FaultyStore:
    """Any store: each method call goes through ``FaultyWorld.call``."""

    def __init__(self, world: FaultyWorld, name: str, inner: object) -> None:
        self._world = world
        self._name = name
        self._inner = inner

    def __getattr__(self, method: str) -> Callable[..., Any]:
        target = getattr(self._inner, method)
        op = f"{self._name}.{method}"

        def call(*args: Any, **kwargs: Any) -> Any:
            key = call_key(args, kwargs)
            world = self._world
            if op == "queue.publish" and (world.delivering or world.calling):
                extra = world.plan.extra_delay(key)
                kwargs = {**kwargs, "delay_seconds": kwargs.get("delay_seconds", 0) + extra}
            return world.call(op, key, lambda: target(*args, **kwargs))

        return call


def call_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A stable name for a call's arguments (an event request by its type and correlation id)."""
    parts = [_part(a) for a in args] + [f"{k}={_part(v)}" for k, v in sorted(kwargs.items())]
    return "|".join(parts)


def _part(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + ",".join(_part(v) for v in value) + "]"
    if isinstance(value, EventRequest):
        return f"{value.type}:{value.correlation_id}"
    if isinstance(value, bytes):
        return _digest(value)
    if callable(value):  # a gate's rule: by its name, not its address
        return str(getattr(value, "__qualname__", type(value).__name__))
    if isinstance(value, StreamChunk):  # not its created_at: a copy's timing must not move the faults
        return f"chunk:{value.writer}:{value.attempt}:{value.seq}:{value.position}:{value.closed}"
    return str(value)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _swallow(fn: Callable[[], Any]) -> None:
    """Make the call a dying process made; its answer (or refusal) reaches nobody."""
    try:
        fn()
    except WorldAwsError:
        pass
