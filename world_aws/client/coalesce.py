"""Gated starts: debounce, batch and singleton workflows (``workflow/coalesce.py``, README "Flow control").

Every caller gets a handle on the one run its start leads to:

- **Debounce.** The key's open window gives its run id to every start within it; each
  start replaces the window's arguments and moves its time. Once quiet, the window's
  due message starts that run with the last arguments (``worker/gates.py``).
- **Batch.** Each start appends its item to the key's open batch and gets the batch's
  run id; the batch starts at ``max_size`` (its filler sends the due message at once)
  or ``max_wait`` after its first item.
- **Singleton.** A start claims the key for a new run unless a live run holds it: then
  it gets that run (``on_conflict="return"``) or ``Conflict`` (``"refuse"``). A holder
  found ended (in any way) or never created loses the key to the claim.

A start that opens a window or batch publishes its due message *before* recording the
window, so that no recorded window lacks one; its item id makes a write repeated after
a lost answer land once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from world_aws.client.handle import RunHandle
from world_aws.contract.coalesce import MAX_ITEM_BYTES, Gate, Item, append, claim, debounce, free
from world_aws.contract.limits import SQS_MAX_DELAY_SECONDS
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import ResolveData
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import QueueName, World
from world_aws.engine import ids
from world_aws.errors import BadInput, Conflict, NotFound
from world_aws.serde.limits import Payload
from world_aws.workflow.coalesce import StartGate, gate_scope
from world_aws.workflow.flow import key_of
from world_aws.workflow.registry import WorkflowFunction, Workflows
from world_aws.workflow.retry import retry_in_process

# Tries of a gate write that failed transiently (each is idempotent) before the caller sees the error.
GATE_ATTEMPTS = 5
# A singleton holder not found this long after its claim never got created (its starter died).
CLAIM_GRACE_SECONDS = 60.0
# Rounds of a singleton start that found its holder ended and lost the claim to another start.
CLAIM_ROUNDS = 5

# (run id, workflow, args, kwargs, idempotency key, attributes) -> the started run's handle.
Starter = Callable[
    [str, WorkflowFunction[Any, Any], tuple[Any, ...], dict[str, Any], str | None, dict[str, str] | None],
    RunHandle,
]


def publish_due(world: World, scope: str, run_id: str, *, delay_seconds: float, key: str) -> str:
    """Send the due message of ``scope``'s window or batch ``run_id`` (at most SQS's delay; it comes back)."""
    body = encode_payload(InvokePayload(run_id=run_id, flush=scope, requested_at=world.clock.now()))
    delay = max(0.0, min(delay_seconds, SQS_MAX_DELAY_SECONDS))
    return world.queue.publish(QueueName.WORKFLOW, body, delay_seconds=delay, idempotency_key=key)


class GatedStarts:
    """The start path of a workflow declared with ``debounce``, ``batch`` or ``singleton``."""

    def __init__(self, world: World, app: Workflows, starter: Starter) -> None:
        self.world = world
        self.app = app
        self._starter = starter

    def start(
        self,
        wf: WorkflowFunction[Any, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        idempotency_key: str | None,
        attributes: dict[str, str] | None,
    ) -> RunHandle:
        """Start ``wf`` through its gate; a handle on the run this start leads to.

        Raises:
            BadInput: as ``Client.start``; for debounce and batch also attributes (the run
                is shared), an input above 64 KiB, and for a batch anything but one
                positional argument. (An ``idempotency_key`` names the start's item: a retry
                under it joins its window or batch once, while the gate remembers it.)
            Conflict: a singleton with ``on_conflict="refuse"`` whose key a live run holds.
        """
        gate = wf.gate
        assert gate is not None
        if gate.singleton is not None:
            return self._singleton(wf, gate, args, kwargs, idempotency_key, attributes)
        if attributes:
            raise BadInput(
                f"workflow {wf.name!r} is {gate.kind}d: its run is shared by many starts, "
                "so a start takes no attributes"
            )
        if gate.batch is not None:
            if len(args) != 1 or kwargs:
                raise BadInput(
                    f"workflow {wf.name!r} is batched: start it with one positional argument, "
                    "its item (the run gets the list of the batch's items)"
                )
            wf.bind(([args[0]],), {})
        else:
            wf.bind(args, kwargs)
        data = self.app.serializer.dumps(
            {"args": list(args), "kwargs": kwargs},
            context=f"arguments of workflow {wf.name!r}",
            payload=Payload.STEP_INPUT,
        )
        if len(data) > MAX_ITEM_BYTES:
            raise BadInput(
                f"workflow {wf.name!r}: a {gate.kind}d start's input is {len(data)} bytes, above "
                f"{MAX_ITEM_BYTES}; pass a reference (an S3 key, an id) instead"
            )
        scope = gate_scope(gate.kind, wf.name, key_of(gate.key, args, kwargs))
        # The item's id: a retry under the caller's idempotency key joins once (contract.coalesce).
        item_id = f"key_{_digest(idempotency_key)}" if idempotency_key else f"item_{ids.new_ulid()}"
        return self._gather(scope, gate, Item(item_id, data))

    def _gather(self, scope: str, gate: StartGate, item: Item) -> RunHandle:
        """Join the open window or batch, or publish a due message and open one."""
        candidate = ids.new_run_id()
        answer = self._join(scope, gate, item, candidate, may_open=False)
        if answer is None:  # opening one: its due message goes first
            self._retry(
                lambda: publish_due(
                    self.world, scope, candidate, delay_seconds=gate.seconds, key=f"{candidate}:due"
                )
            )
            answer = self._join(scope, gate, item, candidate, may_open=True)
        assert answer is not None
        run_id, full = answer
        if full:  # this item filled the batch: start it now (its max_wait message would too)
            self._retry(lambda: publish_due(self.world, scope, run_id, delay_seconds=0, key=f"{run_id}:full"))
        return RunHandle(self.world, self.app.serializer, run_id, started=True)

    def _join(
        self, scope: str, gate: StartGate, item: Item, candidate: str, *, may_open: bool
    ) -> tuple[str, bool] | None:
        """(run id, batch full) of the window or batch ``item`` joined; None: it would open one."""
        wait = timedelta(seconds=gate.seconds)
        batch = gate.batch

        def rule(record: Gate, now: datetime) -> tuple[Gate, tuple[str, bool] | None]:
            if record.open is None and record.run_of(item.id) is None and not may_open:
                return record, None
            if batch is not None:
                new, run_id, full = append(
                    record, run_id=candidate, item=item, max_size=batch.max_size, max_wait=wait, now=now
                )
                return new, (run_id, full)
            new, run_id = debounce(record, run_id=candidate, item=item, window=wait, now=now)
            return new, (run_id, False)

        answer: tuple[str, bool] | None = self._retry(lambda: self.world.gates.change(scope, rule))
        return answer

    def _singleton(
        self,
        wf: WorkflowFunction[Any, Any],
        gate: StartGate,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        idempotency_key: str | None,
        attributes: dict[str, str] | None,
    ) -> RunHandle:
        assert gate.singleton is not None
        wf.bind(args, kwargs)
        scope = gate_scope("singleton", wf.name, key_of(gate.key, args, kwargs))
        run_id = ids.run_id_for_key(idempotency_key) if idempotency_key else ids.new_run_id()
        for _ in range(CLAIM_ROUNDS):
            record = self._retry(lambda: self.world.gates.get(scope))
            dead = ""
            if record.live and record.live != run_id:
                if self._alive(record):
                    if gate.singleton.on_conflict == "refuse":
                        raise Conflict(
                            f"workflow {wf.name!r} is a singleton and run {record.live} holds its key "
                            f"{scope.split(':', 2)[2]!r}; it ends before another starts"
                        )
                    return RunHandle(self.world, self.app.serializer, record.live, started=True)
                dead = record.live

            def rule(record: Gate, now: datetime, dead: str = dead) -> tuple[Gate, str]:
                return claim(record, run_id=run_id, dead=dead, now=now)

            if self._retry(lambda: self.world.gates.change(scope, rule)) != run_id:
                continue  # another start claimed it meanwhile: look at its holder
            try:
                return self._starter(run_id, wf, args, kwargs, idempotency_key, attributes)
            except BaseException:
                self._free_if_missing(scope, run_id)
                raise
        raise Conflict(f"workflow {wf.name!r}: the singleton key {scope!r} kept changing hands; try again")

    def _free_if_missing(self, scope: str, run_id: str) -> None:
        """After a failed start: let the key go unless the run was created (the reconciler starts it).

        A run whose ``run_created`` landed holds the key (the next start finds it live); one
        not created frees it now. Not knowing, the key stays claimed until the claim's grace.
        """
        try:
            self._retry(lambda: self.world.runs.get(run_id, resolve_data=ResolveData.NONE))
        except NotFound:
            self._retry(lambda: self.world.gates.change(scope, lambda g, _: free(g, run_id=run_id)))
        except Exception:  # the start's own error is the one to raise
            return

    def _alive(self, record: Gate) -> bool:
        """Whether the key's holder lives: not ended, or not created yet within the claim's grace."""
        try:
            return not self.world.runs.get(record.live, resolve_data=ResolveData.NONE).status.terminal
        except NotFound:
            since = record.live_since or self.world.clock.now()
            return self.world.clock.now() - since < timedelta(seconds=CLAIM_GRACE_SECONDS)

    def _retry(self, call: Callable[[], Any]) -> Any:
        return retry_in_process(call, attempts=GATE_ATTEMPTS, clock=self.world.clock, max_pause=1.0)


def _digest(key: str) -> str:
    """A caller's idempotency key as a short item id (the record keeps hundreds of them)."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]
