"""Admission of a step attempt under flow control (``Concurrency``, ``RateLimit``), before its claim.

The step consumer asks ``AdmissionGate.admit`` before it writes ``step_started``:

1. the step's key, from its arguments (the message's input or the step's record);
2. a concurrency slot of ``step:<name>:<key>`` (``world.admission.acquire``). Refused,
   the step is in line, and this delivery ends (acked: nothing sleeps in a consumer).
   Its message waits in the line's record: the holder that releases a slot publishes
   the woken waiters' messages. A fallback copy of the message comes back after
   ``ADMISSION_RECHECK_SECONDS`` in case a wake is lost (a releaser that died);
3. a token of the rate window (``world.admission.take``). Due in under a second, the
   consumer sleeps until then (a queue's delays are whole seconds). Due later, the slot
   is given back and a copy of the message comes back in the second before the token
   is due, and sleeps the rest.

The slot is held by ``run_id/step_id`` under the delivery's message id (its ticket): a
redelivery of that message after its handler died renews it, any other copy is dropped
(the holder's own delivery runs the attempt). ``release`` gives it back after the
attempt's outcome (or retry) is recorded and publishes the wakes. A holder that dies
without releasing loses the slot at its lease's end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from world_aws.contract.admission import ADMISSION_RECHECK_SECONDS, Verdict
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import ResolveData
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver, World
from world_aws.errors import NotFound
from world_aws.observe import telemetry
from world_aws.worker.dispatch import StepDispatcher, resolve_step_input
from world_aws.workflow.flow import call_key, step_scope
from world_aws.workflow.registry import StepFunction, Workflows

# A rate token due within this long is waited for in the consumer: a queue's delays are whole
# seconds, and a copy sent for the next second would start up to a second late, every time.
SHORT_RATE_WAIT_SECONDS = 1.0


@dataclass(slots=True)
class Held:
    """What this delivery was admitted with: a slot (until ``release``), a rate token (until ``started``)."""

    scope: str
    holder: str
    ticket: str
    slot: bool = True
    token_period: float | None = None  # the rate's period if a token was taken (settled by ``started``)
    released: bool = False
    settled: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """Not admitted now: answer ``result`` (``outcome`` names why, for the step's log line)."""

    result: HandlerResult
    outcome: str


class AdmissionGate:
    """Admits step attempts under their step's flow control; releases their slots."""

    def __init__(self, world: World, app: Workflows, dispatcher: StepDispatcher) -> None:
        self._world = world
        self._app = app
        self._dispatcher = dispatcher

    def admit(self, payload: InvokePayload, delivery: Delivery) -> Held | Refused | None:
        """Admit this delivery's attempt: the slot it holds (None: no slot to hold), or the refusal."""
        fn = self._app.get_step(payload.step_name or "")
        if fn is None or not fn.options.flow_controlled:
            return None
        assert payload.step_id is not None
        key = self._key(fn, payload)
        if key is None:
            return None  # the step ended (or is missing): the claim answers this delivery
        scope = step_scope(fn.name, key)
        holder = f"{payload.run_id}/{payload.step_id}"
        held = None
        concurrency = fn.options.concurrency
        if concurrency is not None:
            admission = self._world.admission.acquire(
                scope,
                holder=holder,
                ticket=delivery.message_id,
                limit=concurrency.limit,
                lease_seconds=concurrency.lease_seconds,
                wake=encode_payload(payload),
            )
            if admission.verdict is Verdict.HELD_ELSEWHERE:
                return Refused(Ack(), "admission_held_elsewhere")
            if admission.verdict is Verdict.WAITING:
                return self._wait_for_slot(payload, scope, holder)
            held = Held(scope, holder, delivery.message_id)
        rate = fn.options.rate_limit
        if rate is not None:
            due = self._take(scope, holder, rate.limit, rate.period_seconds)
            if due is not None:
                if held is not None:
                    self.release(held)
                # The token reserved for it frees then: its copy comes back once, in the second
                # before (a queue delays by whole seconds) and waits out the rest here.
                # Every copy of this step refused for one reservation publishes under one key, so
                # copies made by dropped deletes and lost answers do not multiply (each would
                # take a token of its own).
                seconds = max(0.0, (due - self._world.clock.now()).total_seconds())
                key = f"rate:{holder}:{due.isoformat()}"
                return self._come_back(payload, math.floor(seconds), key, "rate_limited", delivery)
            held = held or Held(scope, holder, delivery.message_id, slot=False)
            held.token_period = rate.period_seconds
        return held

    def _take(self, scope: str, holder: str, limit: int, period_seconds: float) -> datetime | None:
        """A rate token now, or after a wait of under ``SHORT_RATE_WAIT_SECONDS`` slept here; else its due."""
        due = self._world.admission.take(scope, holder=holder, limit=limit, period_seconds=period_seconds)
        if due is None:
            return None
        wait = (due - self._world.clock.now()).total_seconds()
        if wait >= SHORT_RATE_WAIT_SECONDS:
            return due
        self._world.clock.sleep(wait)
        return self._world.admission.take(scope, holder=holder, limit=limit, period_seconds=period_seconds)

    def started(self, held: Held | None) -> None:
        """The attempt started (its ``step_started`` is written): settle its token at the time now.

        Later than the recorded start, never earlier: the token then counts at least as long
        as the recorded start's window. Best effort: an unsettled token counts until it expires.
        """
        if held is None or held.token_period is None or held.settled:
            return
        held.settled = True
        self._settle(held, self._world.clock.now())

    def _settle(self, held: Held, started_at: datetime | None) -> None:
        assert held.token_period is not None
        try:
            self._world.admission.settle(
                held.scope, holder=held.holder, started_at=started_at, period_seconds=held.token_period
            )
        except Exception:
            telemetry.LOG.warning(
                "could not settle a rate token; it counts until it expires",
                exc_info=True,
                extra={"scope": held.scope, "holder": held.holder},
            )

    def release(self, held: Held | None) -> None:
        """Give ``held``'s slot back (once) and publish the messages of the waiters it wakes.

        Best effort: a release that fails leaves the slot to its lease, and its waiters
        to their recheck.
        """
        if held is None or held.released:
            return
        held.released = True
        if held.token_period is not None and not held.settled:
            held.settled = True
            self._settle(held, None)  # no attempt started: the token is given back
        if not held.slot:
            return
        try:
            wakes = self._world.admission.release(held.scope, holder=held.holder, ticket=held.ticket)
            for body in wakes:
                self._world.queue.publish(QueueName.STEP, body)
        except Exception:
            telemetry.LOG.warning(
                "could not release a concurrency slot; its lease frees it",
                exc_info=True,
                extra={"scope": held.scope, "holder": held.holder},
            )

    def _key(self, fn: StepFunction[Any, Any], payload: InvokePayload) -> str | None:
        """The key of the step's call, from its input; None if the step ended (or is missing)."""
        assert payload.step_id is not None
        try:
            step = self._world.steps.get(payload.run_id, payload.step_id)
        except NotFound:
            if payload.step_input is None:
                return None
            data = resolve_step_input(self._world, payload.step_input)
        else:
            if step.status.terminal:
                return None
            data = step.input or b""
        return call_key(
            self._app.serializer.loads,
            fn.options.concurrency,
            fn.options.rate_limit,
            data,
            where=f"{payload.run_id}/{payload.step_id}",
        )

    def _wait_for_slot(self, payload: InvokePayload, scope: str, holder: str) -> Refused:
        """In line: leave (and wake the next) if the run ended, else arrange the recheck."""
        try:
            run = self._world.runs.get(payload.run_id, resolve_data=ResolveData.NONE)
            ended = run.status.terminal
        except NotFound:
            ended = True
        if ended:
            self.release(Held(scope, holder, ticket=""))
            return Refused(Ack(), "gone")
        epoch = int(self._world.clock.now().timestamp() // ADMISSION_RECHECK_SECONDS)
        return self._come_back(
            payload, ADMISSION_RECHECK_SECONDS, f"admit:{holder}:{epoch}", "waiting_for_slot"
        )

    def _come_back(
        self,
        payload: InvokePayload,
        seconds: float,
        key: str | None,
        outcome: str,
        delivery: Delivery | None = None,
    ) -> Refused:
        """Ack this delivery and publish a copy due in ``seconds`` (or be redelivered then).

        If ``key`` is already this delivery's own (it is the copy, come before its time by a
        clock's skew), publishing is a no-op: it is redelivered then instead, or it would be lost.
        """
        copy = payload.model_copy(update={"requested_at": self._world.clock.now()})
        try:
            sent = self._dispatcher.republish(copy, delay_seconds=seconds, idempotency_key=key)
            if delivery is not None and sent == delivery.message_id:
                return Refused(Redeliver(max(1.0, seconds)), outcome)
        except Exception:
            telemetry.LOG.warning(
                "could not publish an admission recheck; redelivering instead",
                exc_info=True,
                extra={"run_id": payload.run_id, "step_id": payload.step_id},
            )
            return Refused(Redeliver(max(1.0, seconds)), outcome)
        return Refused(Ack(), outcome)
