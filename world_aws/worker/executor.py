"""The step consumer (contract §5.1, §5.2, §8.2): claim, execute, record, and maybe continue.

Prologue with ``run_context`` on the message: no run read before the claim; the
World's terminal-run fence on ``step_started`` is the liveness check. Without it
(an older producer): read the run without payloads and stop unless it runs. Of
``run_context`` the consumer uses only ``deployment_id`` (the deployment guard),
which every parsed one carries, so a context without the optional ``started_at``
and ``root_run_id`` takes the same read-free path.

After a terminal outcome, a branch that finds no other step pending is a last
completer: it claims the continuation with its outcome's position (of branches
finishing together one wins), gets the run from the claim and, if the run still
runs, continues the workflow inline. A delivery that finds its step already
terminal ("skipped") makes the same check and reads the run without claiming,
so a handler that died between recording an outcome and continuing cannot
strand the run.
"""

from __future__ import annotations

import math

from opentelemetry import trace
from opentelemetry.trace import Span

from world_aws.contract.payload import InvokePayload, RunContext
from world_aws.contract.records import (
    EventRequest,
    EventType,
    ResolveData,
    Step,
    StepCreatedData,
    StepStartedData,
    StepStatus,
)
from world_aws.contract.world import Ack, Delivery, HandlerResult, Redeliver, World
from world_aws.engine import ids
from world_aws.errors import (
    Conflict,
    FatalError,
    Misconfigured,
    NotFound,
    RunExpired,
    Throttled,
    TooEarly,
)
from world_aws.observe import telemetry, tracing
from world_aws.serde.codec import encode_error
from world_aws.worker import stepbody
from world_aws.worker.admission import AdmissionGate, Held, Refused
from world_aws.worker.deployments import Handover, hand_over_or_none, pinned_elsewhere
from world_aws.worker.dispatch import StepDispatcher, resolve_step_input, run_context_of
from world_aws.worker.inline import Owner
from world_aws.worker.orchestrator import Orchestrator
from world_aws.workflow.registry import Workflows

# In-process retries of an outcome write before giving up to redelivery (contract §8.2:
# a failed record is an infrastructure error, never a step retry).
RECORD_ATTEMPTS = 4


# The longest a failed delivery waits before its next try: the queues' visibility timeout
# (template.yaml), which is how long a delivery that raised waits anyway.
REDELIVERY_MAX_SECONDS = 900.0


def redelivery_backoff(attempt: int) -> float:
    """Seconds before the next try of a delivery that failed for a cause that may last (throttling).

    1 s after the first delivery, doubling with each, up to ``REDELIVERY_MAX_SECONDS``: every
    delivery counts toward the cap (``WORKFLOW_MAX_QUEUE_DELIVERIES``, 48) past which the run
    fails, so a redelivery every second would fail a run to a throttling storm of a minute,
    while this spreads the cap over some ten hours, as the visibility timeout does.
    """
    return min(REDELIVERY_MAX_SECONDS, float(2 ** min(max(attempt, 1) - 1, 20)))


class StepExecutor:
    def __init__(
        self,
        world: World,
        app: Workflows,
        orchestrator: Orchestrator,
        dispatcher: StepDispatcher,
        max_deployment_reroutes: int,
        *,
        handover: Handover | None = None,
    ) -> None:
        self._world = world
        self._app = app
        self._orchestrator = orchestrator
        self._dispatcher = dispatcher
        self._max_reroutes = max_deployment_reroutes
        self._handover = handover
        self._gate = AdmissionGate(world, app, dispatcher)

    def handle(self, payload: InvokePayload, delivery: Delivery) -> HandlerResult:
        assert payload.step_id is not None
        attributes = {
            telemetry.RUN_ID: payload.run_id,
            telemetry.STEP_ID: payload.step_id,
            telemetry.STEP_NAME: payload.step_name or "",
        }
        with tracing.step_span(payload.trace_carrier, attributes) as span:
            result, outcome = self._handle(payload, delivery, span)
            span.set_attribute(telemetry.OUTCOME, outcome)
            telemetry.LOG.info(
                "step %s",
                outcome,
                extra={"run_id": payload.run_id, "step_id": payload.step_id, "outcome": outcome},
            )
            return result

    def _handle(self, payload: InvokePayload, delivery: Delivery, span: Span) -> tuple[HandlerResult, str]:
        run_id, step_id = payload.run_id, payload.step_id
        assert step_id is not None
        owner = Owner.of(delivery)
        # 1. prologue
        run_context = payload.run_context
        if run_context is not None:
            span.set_attribute(telemetry.DISPATCH_PROLOGUE, "run_context")
        else:
            span.set_attribute(telemetry.DISPATCH_PROLOGUE, "runs_get")
            try:
                run = self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
            except NotFound:
                return Ack(), "gone"
            if run.status.terminal or run.status.value != "running":
                return Ack(), "gone"
            run_context = run_context_of(run)
        # 2. eager re-ensure on a redelivery of a resilient message
        materialized = False
        if payload.step_input is not None and delivery.attempt > 1:
            try:
                materialized = self._materialize(payload)
            except (RunExpired, NotFound):  # NotFound: its run was erased (contract §3.4)
                return Ack(), "gone"
        # 3. deployment guard: handed to the run's own deployment, or (without a
        # hand-over) re-enqueued toward it
        pinned = run_context.deployment_id
        if pinned_elsewhere(self._world, self._handover, pinned):
            assert self._handover is not None
            routed = hand_over_or_none(self._handover, pinned, delivery)
            if routed is not None:
                return routed, "handed_over"
        elif (
            self._world.capabilities.deployment_affinity
            and run_context.deployment_id != self._world.deployment_id()
        ):
            return self._reroute(payload, run_context), "rerouted"
        # 4. admission under the step's flow control (worker/admission.py), then the claim
        admitted = self._gate.admit(payload, delivery)
        if isinstance(admitted, Refused):
            return admitted.result, admitted.outcome
        # Released once the attempt's outcome is recorded (or no attempt ran). Not when this
        # raises: the attempt may have started (its step is running in the log), and the
        # redelivery of this message renews the slot under the same ticket (else its lease ends).
        answer = self._claim_and_execute(payload, delivery, owner, span, admitted, materialized)
        self._gate.release(admitted)
        return answer

    def _claim_and_execute(
        self,
        payload: InvokePayload,
        delivery: Delivery,
        owner: Owner,
        span: Span,
        held: Held | None,
        materialized: bool,
    ) -> tuple[HandlerResult, str]:
        run_id, step_id = payload.run_id, payload.step_id
        assert step_id is not None
        try:
            step = self._claim(payload, delivery.attempt)
        except NotFound:
            if payload.step_input is None:
                if self._run_gone(run_id):
                    return Ack(), "gone"
                raise
            try:
                materialized = self._materialize(payload) or materialized
            except (RunExpired, NotFound):  # NotFound: its run was erased (contract §3.4)
                return Ack(), "gone"
            try:
                step = self._claim(payload, delivery.attempt)
            except _ClaimRefused as refused:
                self._gate.release(held)
                return self._refused(run_id, step_id, owner, refused.result, refused.outcome)
        except _ClaimRefused as refused:
            self._gate.release(held)
            return self._refused(run_id, step_id, owner, refused.result, refused.outcome)
        self._gate.started(held)
        span.set_attribute(telemetry.MATERIALIZED, materialized)
        span.set_attribute(telemetry.STEP_ATTEMPT, step.attempt)
        # 5. execute
        return self._execute(payload, step, owner, held)

    def _claim(self, payload: InvokePayload, attempt: int) -> Step:
        assert payload.step_id is not None
        request = EventRequest(
            EventType.STEP_STARTED, payload.step_id, StepStartedData(step_name=payload.step_name)
        )
        try:
            result = self._world.events.create(payload.run_id, request)
        except RunExpired as exc:
            raise _ClaimRefused(Ack(), "gone") from exc
        except Conflict as exc:
            raise _ClaimRefused(Ack(), "skipped") from exc
        except TooEarly as exc:
            raise _ClaimRefused(Redeliver(max(1.0, exc.retry_after)), "too_early") from exc
        except Throttled as exc:
            raise _ClaimRefused(
                Redeliver(max(redelivery_backoff(attempt), exc.retry_after)), "throttled"
            ) from exc
        assert result.step is not None
        return result.step

    def _run_gone(self, run_id: str) -> bool:
        """Whether the run is missing: erased (contract §3.4), so its step messages are moot."""
        try:
            self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
        except NotFound:
            return True
        return False

    def _materialize(self, payload: InvokePayload) -> bool:
        """Ensure ``step_created`` from the message; True if this call created it."""
        assert payload.step_id is not None and payload.step_input is not None and payload.step_name
        data = resolve_step_input(self._world, payload.step_input)
        request = EventRequest(
            EventType.STEP_CREATED,
            payload.step_id,
            StepCreatedData(step_name=payload.step_name, input=data, via_step_dispatch=True),
        )
        try:
            self._world.events.create(payload.run_id, request)
        except Conflict:
            return False
        return True

    def _execute(
        self, payload: InvokePayload, step: Step, owner: Owner, held: Held | None
    ) -> tuple[HandlerResult, str]:
        outcome = stepbody.run_step_body(self._world, self._app, step, deadline=owner.deadline)
        if outcome.etype is EventType.STEP_RETRYING:
            return self._retry(payload, step, outcome, owner, held)
        request = stepbody.outcome_request(step, outcome, owner=None)
        recorded = stepbody.record(self._world, payload.run_id, request)
        self._gate.release(held)  # before the continuation, which may run long
        if isinstance(recorded, str):
            return self._refused(payload.run_id, step.step_id, owner, Ack(), recorded)
        label = "completed" if outcome.etype is EventType.STEP_COMPLETED else "failed"
        return self._maybe_continue(payload.run_id, step.step_id, owner, recorded.position), label

    def _retry(
        self,
        payload: InvokePayload,
        step: Step,
        outcome: stepbody.BodyOutcome,
        owner: Owner,
        held: Held | None,
    ) -> tuple[HandlerResult, str]:
        """Record ``step_retrying`` and hand the next attempt to a fresh delayed message.

        The delay is the error's ``retry_after`` if it gave one, else the step's
        backoff. It is recorded as the step's ``retry_after`` (an early duplicate
        delivery is TooEarly) and the next attempt gets a message of its own, keyed
        by the failed attempt, so retries never count against the delivery cap.
        """
        run_id = payload.run_id
        delay = stepbody.retry_delay(outcome, step.attempt)
        request = stepbody.retrying_request(self._world, step, outcome, delay, owner=None)
        recorded = stepbody.record(self._world, run_id, request)
        self._gate.release(held)  # the next attempt is admitted anew
        if recorded == "skipped":
            # Refused because the step is no longer running. A lost answer to our own
            # write looks the same (the write landed, the in-process retry of it is
            # refused): read the step to tell whether the retry is ours to hand on.
            current = self._world.steps.get(run_id, step.step_id, resolve_data=ResolveData.NONE)
            if current.status.terminal:
                return self._refused(run_id, step.step_id, owner, Ack(), "skipped")
            if current.status is not StepStatus.PENDING:
                return Ack(), "skipped"  # running: the delivery that claimed it since owns it
            # Pending, at our attempt or a later one: nothing runs it, and the write that
            # made it pending may be ours. A stale attempt's step_retrying lands while a
            # newer attempt runs (two deliveries of one message), whose outcome is then
            # refused: so hand the retry on. If another delivery's write it was, its retry
            # message comes too (one of them is TooEarly or starts a spare attempt).
        elif isinstance(recorded, str):
            return self._refused(run_id, step.step_id, owner, Ack(), recorded)
        seconds = max(1.0, float(math.ceil(delay)))
        retry = payload.model_copy(update={"step_input": None, "requested_at": self._world.clock.now()})
        key = ids.retry_idempotency_key(step.step_id, step.step_name, step.attempt)
        try:
            self._dispatcher.republish(retry, delay_seconds=seconds, idempotency_key=key)
        except Exception:
            # This message is then the retry: it comes back when the next attempt is due.
            telemetry.LOG.warning(
                "could not publish the retry message; redelivering instead",
                exc_info=True,
                extra={"run_id": run_id, "step_id": step.step_id},
            )
            return Redeliver(seconds), "retrying"
        return Ack(), "retrying"

    def _refused(
        self, run_id: str, step_id: str, owner: Owner, result: HandlerResult, outcome: str
    ) -> tuple[HandlerResult, str]:
        """The claim or the outcome write was refused; ``result`` is what to answer.

        "skipped" means the step is already terminal (or, rarely, that the message
        names another step than the one under its id: a stale message whose step id a
        corrected replay reused; the check below is then a harmless extra
        continuation). Whoever finished it may have
        died (or failed a read) between recording the outcome and the last-completer
        check, and the redelivery that brought us here is then the only thing left
        that can continue the run: so do the check here too, as upstream does.
        """
        if outcome == "skipped":
            return self._maybe_continue(run_id, step_id, owner), outcome
        return result, outcome

    def _maybe_continue(
        self, run_id: str, step_id: str, owner: Owner, position: int | None = None
    ) -> HandlerResult:
        """The last-completer check (contract §5.1 step 6).

        ``position`` is this branch's outcome. Branches that finish together may
        each find no other step pending: they claim the continuation, and only the
        winner gets the run and continues (one continuation per wave).

        A delivery of an already finished step (``position`` unknown: a redelivery,
        or an outcome whose answer was lost) reads the run and continues without
        asking whether other steps are pending. Its first delivery may have died
        anywhere after the outcome: before the claim, or inside its continuation
        after creating the next steps and before publishing their messages. Those
        steps are pending but have no message, so "others pending" proves nothing;
        the continuation's suspension pass re-publishes every created step that
        never started (idempotent by key). A second continuation is harmless where
        a lost one is not.
        """
        span = trace.get_current_span()
        if position is None:
            run = self._world.runs.get(run_id)
            span.set_attribute(telemetry.CONTINUATION, "read")
        else:
            if self._world.steps.any_pending(run_id, besides=step_id):
                if self._created_since(run_id, position):
                    # A continuation past our outcome created a step: it may be a twin of this
                    # very message (SQS gave it to two consumers), which our ack deletes. If it
                    # dies before publishing that step's message, nothing else would: leave a
                    # wake-up, whose pass re-publishes every created, never-started step
                    # (collapsed by key with a publish that did land). ARCHITECTURE §6.
                    self._orchestrator.wake(run_id, delay_seconds=0, key=None)
                    span.set_attribute(telemetry.CONTINUATION, "others_pending_woken")
                    return Ack()
                span.set_attribute(telemetry.CONTINUATION, "others_pending")
                return Ack()
            claimed = self._world.runs.claim_continuation(run_id, after=position, claimer=step_id)
            if claimed is None:
                # Another completer claimed it after our outcome's position. Its replay sees
                # our outcome unless it read the log before our commit, which a marker rules
                # out for every step but one whose create landed after that completer's check
                # (ARCHITECTURE §5, "Last completer"): leave a wake-up, so a continuation
                # that missed our outcome is followed by one that reads it. One message per
                # refused claim, when branches finish together.
                self._orchestrator.wake(run_id, delay_seconds=0, key=None)
                span.set_attribute(telemetry.CONTINUATION, "claimed_by_another")
                return Ack()
            run = claimed
            span.set_attribute(telemetry.CONTINUATION, "claimed")
        if run.status.terminal:
            span.set_attribute(telemetry.CONTINUATION, "run_terminal")
            return Ack()
        try:
            with tracing.workflow_span(run, None):
                return self._orchestrator.continue_run(run, owner=owner)
        except Exception as exc:
            if self._orchestrator.runs_inline:
                # Redelivered, not handed to a wake-up: inline steps this delivery started
                # are owned by it, and its next delivery takes them over (worker/inline.py).
                if isinstance(exc, Misconfigured):
                    # Not in 1 s: each redelivery meets it again, and the 49th fails the run
                    # within a minute or two. Raised, it is counted and comes back after the
                    # queue's visibility timeout, as everywhere else (aws/queue/lambda_sqs.py).
                    raise
                telemetry.LOG.exception("continuation failed; redelivering", extra={"run_id": run_id})
                return Redeliver(redelivery_backoff(owner.attempt))
            telemetry.LOG.exception("inline continuation failed; queueing it", extra={"run_id": run_id})
            self._orchestrator.wake(run_id, delay_seconds=0, key=None)
            return Ack()

    def _created_since(self, run_id: str, position: int) -> bool:
        """Whether a step was created after ``position`` (one read of the log's tail, without payloads)."""
        tail = self._world.events.list(run_id, after=position, resolve_data=ResolveData.NONE)
        return any(event.type is EventType.STEP_CREATED for event in tail)

    def _reroute(self, payload: InvokePayload, run_context: RunContext) -> HandlerResult:
        """Deployment guard (contract §5.4): re-enqueue toward the pinned deployment, or give up."""
        count = payload.deployment_mismatch_retry_count
        if count >= self._max_reroutes:
            error = FatalError(
                f"step {payload.step_id} of run {payload.run_id} is pinned to deployment "
                f"{run_context.deployment_id!r} but was delivered to {self._world.deployment_id()!r} "
                f"{count + 1} times"
            )
            self._orchestrator.fail_run(payload.run_id, encode_error(error), "DEPLOYMENT_MISMATCH")
            return Ack()
        rerouted = payload.model_copy(
            update={"deployment_mismatch_retry_count": count + 1, "requested_at": self._world.clock.now()}
        )
        self._dispatcher.republish(rerouted, delay_seconds=min(2 ** (count + 1), 8))
        return Ack()


class _ClaimRefused(Exception):
    def __init__(self, result: HandlerResult, outcome: str) -> None:
        super().__init__(outcome)
        self.result = result
        self.outcome = outcome
