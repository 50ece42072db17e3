"""``CallRecorder``: counts the AWS calls of a World by kind and injects per-call latency.

It hooks botocore's events on the World's own clients: ``provide-client-params`` counts the
call (a ``GetItem`` of the run item apart); ``before-call`` sleeps the injected latency on the
calling thread (concurrent calls overlap their round trips, as on AWS), then, with
``serialize_calls``, takes the call lock until ``after-call``: in-process moto shares the GIL
with every thread building a request, and without the lock a fan-out measures a lock convoy,
not the runtime; ``after-call.sqs.ReceiveMessage`` tells receives from empty polls.

Per thread it knows whether a step delivery has not yet entered its claim (a run-item read
then is a *run read before the claim*, contract §5.1) and which World op it is in
(``op(key)``, entered by ``bench.world.OpProxy``): every call is attributed to that op, or to
``EVENT_SOURCE`` outside any (the pump's receives, deletes, visibility changes). The model pass
makes no AWS calls: it counts its ops the same way and its modeled SQS calls by ``record_call``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from world_aws.aws.clients import AwsClients

# Kinds reported per step, and the operations that fall into each.
KINDS: dict[str, tuple[str, ...]] = {
    "ddb_read": ("dynamodb.GetItem", "dynamodb.BatchGetItem", "dynamodb.Query"),
    "ddb_write": ("dynamodb.PutItem", "dynamodb.UpdateItem", "dynamodb.DeleteItem"),
    "ddb_txn": ("dynamodb.TransactWriteItems",),
    "sqs_send": ("sqs.SendMessage", "sqs.SendMessageBatch"),
    "sqs_receive": ("sqs.ReceiveMessage",),
    "sqs_delete": ("sqs.DeleteMessage", "sqs.DeleteMessageBatch"),
    "sqs_visibility": ("sqs.ChangeMessageVisibility", "sqs.ChangeMessageVisibilityBatch"),
}
# Empty long polls are an artefact of local pollers (Lambda's pollers cost the
# function nothing): counted apart from the receives that brought messages.
RECEIVE = "sqs.ReceiveMessage"
EMPTY_RECEIVE = "sqs.ReceiveMessage(empty)"
RUN_READ = "dynamodb.run_item_read"
RUN_SK = "run"
# Calls made outside any World operation: the event source's (receive, delete, visibility).
EVENT_SOURCE = "event_source"


def kind_of(operation: str) -> str:
    """The reporting kind of ``service.Operation`` (``s3`` for any S3 call, else ``other``)."""
    for kind, operations in KINDS.items():
        if operation in operations:
            return kind
    return "s3" if operation.startswith("s3.") else "other"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Counters of a recorder at one moment; ``after - before`` is what happened in between.

    Attributes:
        calls: calls per ``service.Operation`` (plus ``RUN_READ`` and ``EMPTY_RECEIVE``).
        busy: seconds the emulator spent per operation (the call lock held), when serialised.
        pre_claim_run_reads: run-item reads by step deliveries before their claim.
        ops: World operation invocations per op key (``bench.world.op_key``).
        op_calls: calls per (op key or ``EVENT_SOURCE``, ``service.Operation``).
        pre_claim_ops: op invocations by step deliveries before their claim.
    """

    calls: Counter[str]
    busy: dict[str, float]
    pre_claim_run_reads: int
    ops: Counter[str] = field(default_factory=Counter)
    op_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    pre_claim_ops: Counter[str] = field(default_factory=Counter)

    def __sub__(self, before: Snapshot) -> Snapshot:
        busy = {k: v - before.busy.get(k, 0.0) for k, v in self.busy.items() if v > before.busy.get(k, 0.0)}
        return Snapshot(
            self.calls - before.calls,  # Counter subtraction keeps positive counts only
            busy,
            self.pre_claim_run_reads - before.pre_claim_run_reads,
            self.ops - before.ops,
            self.op_calls - before.op_calls,
            self.pre_claim_ops - before.pre_claim_ops,
        )


@dataclass(frozen=True, slots=True)
class Latency:
    """Injected round-trip time per call, in seconds, by service."""

    dynamodb: float = 0.005
    sqs: float = 0.010
    s3: float = 0.010

    def of(self, service: str) -> float:
        return float(getattr(self, service, 0.0))


class _ThreadState(threading.local):
    muted: bool = False
    before_claim: bool = False
    operation: str = ""
    since: float = 0.0
    op: str = ""  # the World operation this thread is in, "" outside any


class CallRecorder:
    """Counts calls (``service.Operation``) made through the clients it is attached to."""

    def __init__(self, latency: Latency | None = None, *, serialize_calls: bool = True) -> None:
        self.latency = latency or Latency()
        self._serialize = serialize_calls
        self._call_lock = threading.Lock()
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._busy: dict[str, float] = {}
        self._pre_claim_run_reads = 0
        self._ops: Counter[str] = Counter()
        self._op_calls: Counter[tuple[str, str]] = Counter()
        self._pre_claim_ops: Counter[str] = Counter()
        self._local = _ThreadState()

    def attach(self, clients: AwsClients) -> None:
        """Hook the World's three clients."""
        for client in (clients.dynamodb, clients.sqs, clients.s3, clients.kms):
            if client is None:
                continue
            events = client.meta.events
            events.register("provide-client-params.*.*", self._on_params)
            events.register("before-call.*.*", self._on_before_call)
            if self._serialize:
                events.register("after-call.*.*", self._on_call_done)
                events.register("after-call-error.*.*", self._on_call_done)
        clients.sqs.meta.events.register("after-call.sqs.ReceiveMessage", self._on_receive)

    # ---------------------------------------------------------------- what the bench reads

    def snapshot(self) -> Snapshot:
        """The counts so far."""
        with self._lock:
            return Snapshot(
                Counter(self._counts),
                dict(self._busy),
                self._pre_claim_run_reads,
                Counter(self._ops),
                Counter(self._op_calls),
                Counter(self._pre_claim_ops),
            )

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Calls made by this thread inside the block are not counted (the bench's own polling)."""
        self._local.muted = True
        try:
            yield
        finally:
            self._local.muted = False

    @contextmanager
    def step_delivery(self) -> Iterator[None]:
        """This thread handles a step message: run reads count as pre-claim until the claim."""
        self._local.before_claim = True
        try:
            yield
        finally:
            self._local.before_claim = False

    def claiming(self) -> None:
        """This thread enters ``step_started``: what the claim itself reads is not pre-claim."""
        self._local.before_claim = False

    @contextmanager
    def op(self, key: str) -> Iterator[None]:
        """This thread runs the World operation ``key``: count it, attribute its calls to it.

        An op entered inside another is not counted: the outer op owns every call made
        until it returns (on AWS those calls are part of the outer op's round trips).
        """
        local = self._local
        if local.muted or local.op:
            yield
            return
        local.op = key
        with self._lock:
            self._ops[key] += 1
            if local.before_claim:
                self._pre_claim_ops[key] += 1
        try:
            yield
        finally:
            local.op = ""

    def current_op(self) -> str:
        """The World operation this thread is in, or ``EVENT_SOURCE`` outside any (``bench.meter``)."""
        return self._local.op or EVENT_SOURCE

    def is_muted(self) -> bool:
        """Whether this thread's calls are the bench's own (inside ``muted()``)."""
        return self._local.muted

    def record_call(self, operation: str) -> None:
        """Count a call nobody made through a client (the model pass's event source)."""
        if self._local.muted:
            return
        with self._lock:
            self._counts[operation] += 1
            self._op_calls[(self._local.op or EVENT_SOURCE, operation)] += 1

    # ---------------------------------------------------------------- botocore handlers

    def _on_params(self, params: Mapping[str, Any], event_name: str, **_: Any) -> None:
        if self._local.muted:
            return None
        operation = _operation(event_name)
        if operation == RECEIVE:
            return None  # counted when it returns, as a receive or an empty poll
        run_read = operation in ("dynamodb.GetItem", "dynamodb.BatchGetItem") and _reads_run_item(params)
        with self._lock:
            self._counts[operation] += 1
            self._op_calls[(self._local.op or EVENT_SOURCE, operation)] += 1
            if run_read:
                self._counts[RUN_READ] += 1
                if self._local.before_claim:
                    self._pre_claim_run_reads += 1
        return None  # keep the parameters as they are

    def _on_before_call(self, event_name: str, **_: Any) -> None:
        delay = self.latency.of(_operation(event_name).split(".", 1)[0])
        if delay > 0:
            time.sleep(delay)  # this thread's round trip; other threads proceed
        if self._serialize:
            self._call_lock.acquire()
            self._local.operation = _operation(event_name)
            self._local.since = time.perf_counter()
        return None

    def _on_call_done(self, **_: Any) -> None:
        busy = time.perf_counter() - self._local.since
        self._call_lock.release()
        if not self._local.muted:
            with self._lock:
                operation = self._local.operation
                self._busy[operation] = self._busy.get(operation, 0.0) + busy

    def _on_receive(self, parsed: Mapping[str, Any], **_: Any) -> None:
        # Counted on return (not in provide-client-params): a poll in flight when a
        # snapshot is taken must not be counted before we know whether it was empty.
        if self._local.muted:
            return
        operation = RECEIVE if parsed.get("Messages") else EMPTY_RECEIVE
        with self._lock:
            self._counts[operation] += 1
            self._op_calls[(self._local.op or EVENT_SOURCE, operation)] += 1


def _operation(event_name: str) -> str:
    """``provide-client-params.dynamodb.GetItem`` -> ``dynamodb.GetItem``."""
    _, service, operation = event_name.split(".", 2)
    return f"{service}.{operation}"


def _reads_run_item(params: Mapping[str, Any]) -> bool:
    keys: list[Mapping[str, Any]] = []
    if "Key" in params:
        keys.append(params["Key"])
    for request in dict(params.get("RequestItems") or {}).values():
        keys.extend(request.get("Keys", []))
    return any(key.get("sk", {}).get("S") == RUN_SK for key in keys)
