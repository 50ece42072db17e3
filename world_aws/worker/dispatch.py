"""Step dispatch (contract §5.1, §5.2): creating steps and publishing their messages.

Resilient mode (default): per new step, ``step_created`` and the step message
are written in parallel, the message carrying the serialized input (inline up
to 128 KiB, else an S3 claim check) and the run's immutable identity
(``run_context``). A failed publish fails the pass (its workflow message is
redelivered, and creates are idempotent); a create that fails transiently is
fine, because the consumer materialises the step from the message.

Sequential mode (``WORKFLOW_RESILIENT_STEP_DISPATCH=0``, a run whose spec
version predates binary transport, or a World that declares
``precondition_guard``): create first, then publish a message without
``step_input``.

A pass that writes nothing but step creates knows where the log ends (``after``):
its new steps are then created in appends of ``rules.MAX_BATCH_EVENTS`` each
(``events.append_after``, one write for ten creates instead of ten), and the
messages of the steps that landed are published after them (create, then publish:
an append and a consumer's re-ensure of the same step racing would move the log
under the next append). What did not land (the log moved, an answer lost) takes
the path above, where a create that landed is a tolerated conflict.

Every step message carries the idempotency key ``<step_id>:<fnv1a32(step_name)>``
so redundant publishes of one step collapse (contract §4.4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from datetime import timedelta
from functools import partial
from typing import Any

from world_aws.client.parallel import run_parallel
from world_aws.contract.clock import epoch_ms
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.payload import InlineStepInput, InvokePayload, RunContext, StepInputRef
from world_aws.contract.records import EventRequest, EventType, Run, StepCreatedData
from world_aws.contract.sealing import SEALED_OVERHEAD_BYTES, is_sealed
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import SPEC_VERSION_BINARY_TRANSPORT, BlobRef, QueueName, World
from world_aws.engine import ids
from world_aws.engine.replay import RetryingStep, StepRequest
from world_aws.errors import Conflict, RetryLater
from world_aws.observe import tracing
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.outcomes import append_batches


def run_context_of(run: Run) -> RunContext:
    """The immutable identity of ``run`` that step messages carry (never its status)."""
    started = run.started_at or run.created_at
    return RunContext(
        deployment_id=run.deployment_id,
        spec_version=run.spec_version,
        started_at=epoch_ms(started),
        root_run_id=run.root_run_id,
        workflow_name=run.workflow_name,
    )


class StepDispatcher:
    """Creates steps and publishes their messages for one suspension pass."""

    def __init__(self, world: World, config: RuntimeConfig, pool: Executor) -> None:
        self._world = world
        self._config = config
        self._pool = pool

    def on(self, pool: Executor) -> StepDispatcher:
        """This dispatcher on another pool (one the running bodies do not fill)."""
        return StepDispatcher(self._world, self._config, pool)

    def resilient_for(self, run: Run) -> bool:
        """Whether ``run``'s new steps take the resilient path (create and publish in parallel)."""
        if self._world.capabilities.precondition_guard:
            return False  # only sequencing orders a refused create before its message (contract §5.2)
        return self._config.resilient_step_dispatch and run.spec_version >= SPEC_VERSION_BINARY_TRANSPORT

    def dispatch(
        self,
        run: Run,
        new_steps: list[StepRequest],
        undispatched: list[StepRequest],
        *,
        redispatch_tag: str | None = None,
        after: int | None = None,
        retrying: Sequence[RetryingStep] = (),
    ) -> int | None:
        """Create and publish ``new_steps``; re-publish ``undispatched`` ones (idempotent).

        ``redispatch_tag`` (a reconciler's wake) re-publishes ``undispatched`` under their key
        plus the tag: a message lost after its send would otherwise keep its key retained.
        So it does the ``retrying`` steps whose retry message is overdue (``overdue_retries``):
        nothing else re-publishes a lost retry message of a dispatched step, and an inline
        step's owner re-publishes under the retry's own key, which a lost message keeps.
        ``after``: where the log ends, if this pass writes nothing but creates (then, unless
        ``batched_step_dispatch`` is off, the creates are appended first and the messages follow).

        Returns:
            Where the log ends now, if ``after`` was given and every create was appended.

        Raises:
            WorldAwsError: the pass failed and must be redone (its message redelivered).
        """
        if redispatch_tag is not None and retrying:
            undispatched = [*undispatched, *self.overdue_retries(retrying)]
        appended: list[StepRequest] = []
        rest = new_steps
        if after is not None and new_steps:
            if self._config.batched_step_dispatch:
                results, after = append_batches(
                    self._world, run.run_id, after, [_create_request(s) for s in new_steps]
                )
                appended, rest = new_steps[: len(results)], new_steps[len(results) :]
            else:
                after = None  # the creates below move the log's end: the caller reads it again
        if self.resilient_for(run):
            self._dispatch_resilient(run, rest, appended, undispatched, redispatch_tag)
            return after
        creates = run_parallel(self._pool, [partial(self._create, run, s) for s in rest])
        for result in creates:
            if isinstance(result, Exception):
                _tolerate_create_error(result, transient_ok=False)
        publishes = run_parallel(
            self._pool,
            self._publishes(run, [*appended, *rest], undispatched, redispatch_tag, with_input=False),
        )
        for result in publishes:
            if isinstance(result, Exception):
                raise result
        return after

    def overdue_retries(self, retrying: Sequence[RetryingStep]) -> list[StepRequest]:
        """The ``retrying`` steps whose retry message should have started them long ago.

        Overdue: due ``inline_lease_seconds`` ago (the queues' visibility timeout, after
        which a delivery of the message that died before its claim is back). One due later
        may still come, and a copy of it would start the step beside it (a step message
        starts a running step): it is left to a later wake.
        """
        grace = timedelta(seconds=self._config.inline_lease_seconds)
        now = self._world.clock.now()
        return [step.request for step in retrying if step.retry_after + grace <= now]

    def _dispatch_resilient(
        self,
        run: Run,
        new_steps: list[StepRequest],
        appended: list[StepRequest],
        undispatched: list[StepRequest],
        redispatch_tag: str | None,
    ) -> None:
        """``new_steps`` created ∥ published; ``appended`` (created already) published with them."""
        creates: list[Callable[[], Any]] = [partial(self._create, run, s) for s in new_steps]
        publishes = self._publishes(
            run, [*appended, *new_steps], undispatched, redispatch_tag, with_input=True
        )
        results = run_parallel(self._pool, creates + publishes)
        create_results, publish_results = results[: len(creates)], results[len(creates) :]
        for result in publish_results:
            if isinstance(result, Exception):
                raise result  # the pass fails; its message is redelivered (contract §5.2)
        for result in create_results:
            if isinstance(result, Exception):
                _tolerate_create_error(result, transient_ok=True)

    def _publishes(
        self,
        run: Run,
        new_steps: list[StepRequest],
        undispatched: list[StepRequest],
        redispatch_tag: str | None,
        *,
        with_input: bool,
    ) -> list[Callable[[], Any]]:
        """Publish every new step, then re-publish every undispatched one (re-keyed by the tag)."""
        publish = partial(self.publish, run, with_input=with_input)
        calls: list[Callable[[], Any]] = [partial(publish, s) for s in new_steps]
        return calls + [partial(publish, s, key_tag=redispatch_tag) for s in undispatched]

    def publish(
        self,
        run: Run,
        step: StepRequest,
        *,
        with_input: bool,
        delay_seconds: float = 0,
        reroutes: int = 0,
        key_tag: str | None = None,
    ) -> str:
        """Publish one step message (also used for delayed retries and re-routes); ``key_tag`` re-keys it."""
        payload = InvokePayload(
            run_id=run.run_id,
            step_id=step.step_id,
            step_name=step.step_name,
            step_input=self._step_input(run.run_id, step.input) if with_input else None,
            run_context=run_context_of(run),
            requested_at=self._world.clock.now(),
            deployment_mismatch_retry_count=reroutes,
            trace_carrier=tracing.current_carrier(),
        )
        return self._world.queue.publish(
            QueueName.STEP,
            encode_payload(payload),
            delay_seconds=delay_seconds,
            idempotency_key=None if reroutes else _step_key(step, key_tag),
        )

    def republish(
        self, payload: InvokePayload, *, delay_seconds: float, idempotency_key: str | None = None
    ) -> str:
        """Publish an existing step message again, unchanged but for what the caller updated."""
        return self._world.queue.publish(
            QueueName.STEP,
            encode_payload(payload),
            delay_seconds=delay_seconds,
            idempotency_key=idempotency_key,
        )

    def _step_input(self, run_id: str, data: bytes) -> InlineStepInput | StepInputRef:
        # Sealed as the step_created's input is (contract.sealing): a consumer re-ensuring the
        # create from the message hands the World what it would have stored.
        data = self._world.payloads.seal(run_id, "input", data)
        if len(data) <= MAX_INLINE_PAYLOAD_BYTES + (SEALED_OVERHEAD_BYTES if is_sealed(data) else 0):
            return InlineStepInput(input=data)
        ref = self._world.blobs.put(data, run_id=run_id)
        return StepInputRef(ref=ref.key, size=ref.size, sha256=ref.sha256)

    def _create(self, run: Run, step: StepRequest) -> None:
        self._world.events.create(run.run_id, _create_request(step))


def _create_request(step: StepRequest) -> EventRequest:
    """The producer's ``step_created`` of a dispatched step."""
    return EventRequest(
        EventType.STEP_CREATED, step.step_id, StepCreatedData(step_name=step.step_name, input=step.input)
    )


def _step_key(step: StepRequest, tag: str | None) -> str:
    key = ids.step_idempotency_key(step.step_id, step.step_name)
    return key if tag is None else f"{key}:{tag}"


def resolve_step_input(world: World, step_input: InlineStepInput | StepInputRef) -> bytes:
    """The input bytes a step message carries, following a claim check."""
    if isinstance(step_input, InlineStepInput):
        return step_input.input
    return world.blobs.get(BlobRef(key=step_input.ref, size=step_input.size, sha256=step_input.sha256))


def _tolerate_create_error(error: Exception, *, transient_ok: bool) -> None:
    if isinstance(error, Conflict):
        return  # someone created it already
    if transient_ok and isinstance(error, RetryLater):
        return  # the consumer materialises it from the message (contract §5.2)
    raise error
