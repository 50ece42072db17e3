"""Admission of a step attempt under flow control (``Concurrency``, ``RateLimit``), before its claim.

The step consumer asks ``AdmissionGate.admit`` before it writes ``step_started``:

1. the step's key, from its arguments (the message's input or the step's record);
2. a concurrency slot of ``step:<name>:<key>`` (``world.admission.acquire``). Refused,
   the step is in line, and this delivery ends (acked: nothing sleeps in a consumer).
   Its message waits in the line's record: the holder that releases a slot publishes
   the woken waiters' messages. A fallback copy of the message comes back after
   ``ADMISSION_RECHECK_SECONDS`` in case a wake is lost (a releaser that died);
3. a token of the rate window (``world.admission.take``). Refused, the slot is given
   back and a copy of the message comes back when the next token is due.

The slot is held by ``run_id/step_id`` under the delivery's message id (its ticket): a
redelivery of that message after its handler died renews it, any other copy is dropped
(the holder's own delivery runs the attempt). ``release`` gives it back after the
attempt's outcome (or retry) is recorded and publishes the wakes. A holder that dies
without releasing loses the slot at its lease's end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from world_aws.contract.admission import ADMISSION_RECHECK_SECONDS, Verdict
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import ResolveData
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver, World
from world_aws.errors import BadInput, NotFound
from world_aws.observe import telemetry
from world_aws.worker.dispatch import StepDispatcher, resolve_step_input
from world_aws.workflow.flow import key_of
from world_aws.workflow.registry import StepFunction, Workflows


@dataclass(slots=True)
class Held:
    """A slot this delivery holds, until ``release``."""

    scope: str
    holder: str
    ticket: str
    released: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """Not admitted now: answer ``result`` (``outcome`` names why, for the step's log line)."""

    result: HandlerResult
    outcome: str


def step_scope(step_name: str, key: str) -> str:
    """The scope of a step's flow-control records: one per step name and key."""
    return f"step:{step_name}:{key}"


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
        held = None
        concurrency = fn.options.concurrency
        if concurrency is not None:
            holder = f"{payload.run_id}/{payload.step_id}"
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
            due = self._world.admission.take(scope, limit=rate.limit, period_seconds=rate.period_seconds)
            if due is not None:
                if held is not None:
                    self.release(held)
                # Spread the copies over a tenth of the period: the waiters do not all come back
                # at the instant the next token is due, to contend for it on one record.
                seconds = (due - self._world.clock.now()).total_seconds()
                seconds = max(0.0, seconds) + random.uniform(0, rate.period_seconds / 10)
                return self._come_back(payload, seconds, None, "rate_limited")
        return held

    def release(self, held: Held | None) -> None:
        """Give ``held``'s slot back (once) and publish the messages of the waiters it wakes.

        Best effort: a release that fails leaves the slot to its lease, and its waiters
        to their recheck.
        """
        if held is None or held.released:
            return
        held.released = True
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
        value = self._app.serializer.loads(data)
        args, kwargs = tuple(value.get("args", ())), dict(value.get("kwargs", {}))
        try:
            return key_of(self._key_fn(fn), args, kwargs)
        except BadInput:
            # The step's own attempt would fail the same way; under one shared key it runs and
            # fails there, where its error is recorded, rather than never running at all.
            telemetry.LOG.warning(
                "flow-control key function raised; using the key '!error'",
                exc_info=True,
                extra={"run_id": payload.run_id, "step_id": payload.step_id},
            )
            return "!error"

    @staticmethod
    def _key_fn(fn: StepFunction[Any, Any]) -> Any:
        options = fn.options
        if options.concurrency is not None and options.concurrency.key is not None:
            return options.concurrency.key
        return options.rate_limit.key if options.rate_limit is not None else None

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

    def _come_back(self, payload: InvokePayload, seconds: float, key: str | None, outcome: str) -> Refused:
        """Ack this delivery and publish a copy due in ``seconds`` (or be redelivered then)."""
        copy = payload.model_copy(update={"requested_at": self._world.clock.now()})
        try:
            self._dispatcher.republish(copy, delay_seconds=seconds, idempotency_key=key)
        except Exception:
            telemetry.LOG.warning(
                "could not publish an admission recheck; redelivering instead",
                exc_info=True,
                extra={"run_id": payload.run_id, "step_id": payload.step_id},
            )
            return Refused(Redeliver(max(1.0, seconds)), outcome)
        return Refused(Ack(), outcome)
