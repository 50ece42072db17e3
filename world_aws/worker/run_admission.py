"""Admission of a run under its workflow's flow control, before its first execution (``run_started``).

The workflow consumer asks ``RunGate.admit`` when a delivery finds its run pending (or
not there yet). Against the records of ``workflow:<name>:<key>`` (``world.admission``):

1. a concurrency slot, held by the run (holder and ticket: its run id, so any delivery of
   it is the holder) from its start until its end (``client/run_slots.py`` releases it).
   Refused, the run stays pending in the key's line, higher priority first, then first
   come first served. This delivery ends (acked); its message waits in the line's record
   and the run that frees a slot publishes it, and a fallback copy comes back every
   ``ADMISSION_RECHECK_SECONDS`` in case a wake is lost;
2. a token of the rate window. Refused, the slot is given back and a copy of the message
   comes back when the reserved token is due, under the key ``rate:<run_id>:<due>``: every
   copy refused for one reservation (dropped deletes, lost answers) publishes under one key,
   so they do not multiply, each taking a token of its own. The token is settled once the
   run has started.

A run's slot is not leased out by time as a step attempt's is: a run lives for days
(sleeps, hooks) without a delivery to renew anything. The scope is *audited* instead
(``contract/admission.py``): a holder whose lease has passed is named to the next run
refused, which reads the holder's run: ended (its release lost to a crash) or missing,
the slot is released; still live, its lease is renewed. So no slot outlives its run by
more than a lease, and no live run loses its slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from world_aws.client.run_slots import release_run_slot, release_scope
from world_aws.contract.admission import ADMISSION_RECHECK_SECONDS, Admission, Verdict
from world_aws.contract.limits import SQS_MAX_DELAY_SECONDS
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import ResolveData, Run, RunStatus
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, BlobRef, Delivery, HandlerResult, QueueName, Redeliver, World
from world_aws.errors import NotFound, UnknownWorkflow
from world_aws.observe import telemetry
from world_aws.workflow.registry import Workflows
from world_aws.workflow.run_flow import RunFlow, run_scope


@dataclass(slots=True)
class HeldRun:
    """What a run was admitted with: its slot (if limited), a rate token to settle once it started."""

    scope: str
    run_id: str
    slot: bool
    token_period: float | None = None


@dataclass(frozen=True, slots=True)
class RunRefused:
    """Not admitted now: answer ``result``; the run stays pending (``outcome`` names why)."""

    result: HandlerResult
    outcome: str


class RunGate:
    """Admits runs under their workflow's flow control."""

    def __init__(self, world: World, app: Workflows) -> None:
        self._world = world
        self._app = app

    def admit(
        self, payload: InvokePayload, seen: Run | None, delivery: Delivery
    ) -> HeldRun | RunRefused | None:
        """Admit the pending run of this delivery: what it holds (None: nothing), or the refusal."""
        found = self._subject(payload, seen)
        if found is None:
            return None
        flow, name, data, attributes = found
        scope = run_scope(name, flow.key(self._app.serializer.loads, data, where=payload.run_id))
        run_id = payload.run_id
        held = HeldRun(scope, run_id, slot=False)
        concurrency = flow.concurrency
        if concurrency is not None:
            admission = self._acquire(scope, run_id, flow, attributes, delivery)
            freed = self._audit(scope, admission, concurrency.lease_seconds)
            if admission.verdict is Verdict.WAITING and freed:
                admission = self._acquire(scope, run_id, flow, attributes, delivery)
            if admission.verdict is Verdict.WAITING:
                return self._wait_for_slot(payload, scope, delivery)
            held.slot = True
        rate = flow.rate_limit
        if rate is not None:
            due = self._world.admission.take(
                scope, holder=run_id, limit=rate.limit, period_seconds=rate.period_seconds
            )
            if due is not None:
                self.release(held)
                return self._come_back(payload, due, f"rate:{run_id}:{due.isoformat()}", delivery)
            held.token_period = rate.period_seconds
        return held

    def started(self, held: HeldRun | None, *, ran: bool) -> None:
        """After the delivery: settle the run's token (now, no earlier than its ``run_started``), or
        give the slot and token back if the run did not start (``ran`` False: it had ended)."""
        if held is None:
            return
        if held.token_period is not None:
            try:
                self._world.admission.settle(
                    held.scope,
                    holder=held.run_id,
                    started_at=self._world.clock.now() if ran else None,
                    period_seconds=held.token_period,
                )
            except Exception:
                telemetry.LOG.warning("could not settle a run's rate token; it counts until it expires")
        if not ran:
            self.release(held)

    def release(self, held: HeldRun) -> None:
        """Give ``held``'s slot back (best effort: the audit frees it otherwise)."""
        if not held.slot:
            return
        held.slot = False
        try:
            release_scope(self._world, held.scope, held.run_id)
        except Exception:
            telemetry.LOG.warning(
                "could not release a run's slot", exc_info=True, extra={"run_id": held.run_id}
            )

    def _subject(
        self, payload: InvokePayload, seen: Run | None
    ) -> tuple[RunFlow, str, bytes, dict[str, str]] | None:
        """The pending run's flow control, workflow, input and attributes (None: nothing to admit)."""
        if not any(self._app.get_workflow(n).flow.controlled for n in self._app.workflow_names):
            return None  # no workflow of the app has flow control: no read, nothing to admit
        first = payload.run_input
        name = first.workflow_name if first is not None else seen.workflow_name if seen is not None else None
        if name is None:  # a wake of a run not read yet (inline execution off), or of an ended run
            seen = self._read_status(payload.run_id)
            if seen is None:
                return None
            name = seen.workflow_name
        try:
            flow = self._app.get_workflow(name).flow
        except UnknownWorkflow:
            return None
        if not flow.controlled:
            return None
        if first is not None:
            if seen is None:
                # Not seen: missing (its first message creates it), pending, or ended. A copy of
                # an ended run's message must not take a slot: nothing would start to give it back.
                status = self._read_status(payload.run_id)
                if status is not None and status.status is not RunStatus.PENDING:
                    self._fence(status)
                    return None
            data = first.input
            if data is None and first.input_ref is not None:
                ref = first.input_ref
                data = self._world.blobs.get(BlobRef(key=ref.ref, size=ref.size, sha256=ref.sha256))
            return flow, name, data or b"", dict(first.attributes)
        if seen is not None and seen.input is None:
            seen = self._read(payload.run_id)
        if seen is None or seen.status is not RunStatus.PENDING:
            self._fence(seen)
            return None  # running (admitted before) or ended: the usual path answers
        return flow, name, seen.input or b"", dict(seen.attributes)

    def _fence(self, run: Run | None) -> None:
        """A message of an ended run (the terminal fence refuses it): its slot, if still held, is
        given back. Its end's release may have been lost with the end's answer (a redo then
        finds the run ended and never ends it again)."""
        if run is not None and run.status.terminal:
            release_run_slot(self._world, self._app, run)

    def _read(self, run_id: str) -> Run | None:
        try:
            return self._world.runs.get(run_id, resolve_data=ResolveData.ALL)
        except NotFound:
            return None

    def _acquire(
        self, scope: str, run_id: str, flow: RunFlow, attributes: dict[str, str], delivery: Delivery
    ) -> Admission:
        assert flow.concurrency is not None
        return self._world.admission.acquire(
            scope,
            holder=run_id,
            ticket=run_id,
            limit=flow.concurrency.limit,
            lease_seconds=flow.concurrency.lease_seconds,
            wake=delivery.body,
            priority=flow.priority_of(attributes),
            audit=True,
        )

    def _audit(self, scope: str, admission: Admission, lease_seconds: float) -> bool:
        """Check the holders whose lease passed: release the ended ones (True if any), renew the live.

        Best effort: a check that fails is made again by the next arrival.
        """
        freed = False
        for holder in admission.lapsed:
            try:
                run = self._read_status(holder)
                if run is None or run.status.terminal:
                    release_scope(self._world, scope, holder)
                    freed = True
                else:
                    self._world.admission.renew(scope, holder=holder, lease_seconds=lease_seconds)
            except Exception:
                telemetry.LOG.warning("could not audit a run's slot", exc_info=True, extra={"run_id": holder})
        return freed

    def _read_status(self, run_id: str) -> Run | None:
        try:
            return self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
        except NotFound:
            return None

    def _wait_for_slot(self, payload: InvokePayload, scope: str, delivery: Delivery) -> RunRefused:
        """In line: leave it (and wake the next) if the run ended, else arrange the recheck."""
        run = self._read_status(payload.run_id)
        if (run is None and payload.run_input is None) or (run is not None and run.status.terminal):
            release_scope(self._world, scope, payload.run_id)
            return RunRefused(Ack(), "gone")
        now = self._world.clock.now()
        epoch = int(now.timestamp() // ADMISSION_RECHECK_SECONDS)
        due = now + timedelta(seconds=ADMISSION_RECHECK_SECONDS)
        key = f"admit:{payload.run_id}:{epoch}"
        return self._come_back(payload, due, key, delivery, outcome="waiting_for_slot")

    def _come_back(
        self,
        payload: InvokePayload,
        due: datetime,
        key: str,
        delivery: Delivery,
        *,
        outcome: str = "rate_limited",
    ) -> RunRefused:
        """Ack this delivery and publish a copy of its message due at ``due`` (or be redelivered then).

        If ``key`` is this delivery's own (it is the copy, come early by a clock's skew or the
        queue's longest delay), publishing is a no-op: it is redelivered instead, or it would be lost.
        """
        seconds = max(0.0, (due - self._world.clock.now()).total_seconds())
        copy = payload.model_copy(update={"requested_at": self._world.clock.now()})
        try:
            sent = self._world.queue.publish(
                QueueName.WORKFLOW,
                encode_payload(copy),
                delay_seconds=min(seconds, SQS_MAX_DELAY_SECONDS),
                idempotency_key=key,
            )
        except Exception:
            telemetry.LOG.warning(
                "could not publish a run's admission recheck; redelivering instead",
                exc_info=True,
                extra={"run_id": payload.run_id},
            )
            return RunRefused(Redeliver(max(1.0, seconds)), outcome)
        if sent == delivery.message_id:
            return RunRefused(Redeliver(max(1.0, seconds)), outcome)
        return RunRefused(Ack(), outcome)
