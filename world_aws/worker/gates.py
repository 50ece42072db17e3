"""The due message of a debounce window or a batch: start its run once its time has come.

A gated start (``client/coalesce.py``) sends a delayed workflow message carrying the
gate's scope (``InvokePayload.flush``) and the window's run id. Handled here:

1. The window is closed if due (``contract.coalesce.close_due``); a window a later start
   moved is due again later, and this publishes its next due message (nothing sleeps).
2. Its run is started (``run_created`` and the first message, keyed by the run id) with
   the last arguments, or a batch's list of items.
3. Only then is the window forgotten (``confirm``). A crash before that leaves it
   closed: the redelivery starts it again under the same run id, absorbed as a redone start.

A message that finds no window is from a start that lost the race to open one, or whose
write has not landed yet: it comes back for a grace, then is dropped.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from datetime import datetime, timedelta

from world_aws.client.coalesce import publish_due
from world_aws.client.starting import start_run
from world_aws.contract.coalesce import Decision, Due, Gate, Pending, close_due, confirm
from world_aws.contract.limits import SQS_MAX_DELAY_SECONDS
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import RunCreation
from world_aws.contract.world import SPEC_VERSION_CURRENT, Ack, HandlerResult, Redeliver, World
from world_aws.errors import UnknownWorkflow
from world_aws.serde.limits import Payload
from world_aws.workflow.coalesce import parse_scope
from world_aws.workflow.registry import Workflows

LOG = logging.getLogger("world_aws.flow")

# How long after its due time a message that found no window comes back (its start's write may lag).
UNKNOWN_GRACE_SECONDS = 60.0
UNKNOWN_RETRY_SECONDS = 20.0
# The run attribute naming the gate a run came from, and a batch's item count (``inspect`` shows them).
GATE_ATTRIBUTE = "$gate"
BATCH_ITEMS_ATTRIBUTE = "$batch_items"


class GateFlushes:
    """Handles gate due messages of ``app``'s workflows."""

    def __init__(self, world: World, app: Workflows, pool: Executor) -> None:
        self.world = world
        self.app = app
        self._pool = pool

    def handle(self, payload: InvokePayload) -> HandlerResult:
        scope, run_id = payload.flush, payload.run_id
        assert scope is not None
        kind, workflow, _ = parse_scope(scope)

        def close(gate: Gate, now: datetime) -> tuple[Gate, Decision]:
            return close_due(gate, run_id=run_id, now=now)

        decision = self.world.gates.change(scope, close)
        now = self.world.clock.now()
        if decision.due is Due.LATER:
            assert decision.at is not None
            left = (decision.at - now).total_seconds()
            publish_due(
                self.world,
                scope,
                run_id,
                delay_seconds=left,
                key=f"{run_id}:due:{decision.at.timestamp():.6f}",
            )
            return Ack()
        if decision.due is Due.DONE:
            return Ack()
        if decision.due is Due.UNKNOWN:
            return self._unknown(payload, workflow, now)
        assert decision.pending is not None
        self._start(kind, workflow, scope, decision.pending)
        self.world.gates.change(scope, lambda gate, _: confirm(gate, run_id=run_id))
        return Ack()

    def _start(self, kind: str, workflow: str, scope: str, pending: Pending) -> None:
        attributes = {GATE_ATTRIBUTE: scope, **self.app.retention_attributes(workflow)}
        if kind == "batch":
            serializer = self.app.serializer
            values = [serializer.loads(item.data)["args"][0] for item in pending.items]
            data = serializer.dumps(
                {"args": [values], "kwargs": {}},
                context=f"the batch of workflow {workflow!r}",
                payload=Payload.STEP_INPUT,
            )
            attributes[BATCH_ITEMS_ATTRIBUTE] = str(len(values))
        else:
            data = pending.items[-1].data
        creation = RunCreation(
            workflow_name=workflow,
            deployment_id=self.world.deployment_id(),
            spec_version=SPEC_VERSION_CURRENT,
            input=data,
            attributes=attributes,
        )
        start_run(self.world, self._pool, pending.run_id, creation, keyed=True)

    def _unknown(self, payload: InvokePayload, workflow: str, now: datetime) -> HandlerResult:
        try:
            gate = self.app.get_workflow(workflow).gate
        except UnknownWorkflow:
            gate = None
        sent = payload.requested_at or now
        # It came after the delay it was sent with, at most SQS's; the start's write came right after.
        wait = min(gate.seconds, SQS_MAX_DELAY_SECONDS) if gate is not None else 0.0
        if now < sent + timedelta(seconds=wait + UNKNOWN_GRACE_SECONDS):
            return Redeliver(UNKNOWN_RETRY_SECONDS)
        LOG.info("gate %s: no window of run %s; its due message is dropped", payload.flush, payload.run_id)
        return Ack()
