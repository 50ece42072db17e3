"""``Runtime``: a user's ``Workflows`` bound to a World — the client API and the queue handler.

``start()`` implements resilient start (contract §6.1): the run id is minted here,
then ``run_created`` and the first workflow message (carrying the creation data)
are written in parallel; the consumer's first write, ``run_started`` with that
data, creates the run if ``run_created`` never landed.

``handle()`` is the one message handler for both queues: the local consumers,
the local event source and the Lambda functions all call it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from world_aws.contract.erasure import ErasedRun
from world_aws.contract.payload import HealthCheck, InvokePayload, RunInput
from world_aws.contract.records import (
    EventRequest,
    EventType,
    HookReceivedData,
    ResolveData,
    Run,
    RunCreation,
    RunStartedData,
    RunStatus,
)
from world_aws.contract.rules import RESERVED_ATTRIBUTE_PREFIX
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import (
    SPEC_VERSION_CURRENT,
    Ack,
    BlobRef,
    Delivery,
    HandlerResult,
    Redeliver,
    World,
)
from world_aws.errors import BadInput, Conflict, NotFound, RunErased, RunExpired
from world_aws.runtime import ids, tracing
from world_aws.runtime.audit import LOCAL_ACTOR, check_actor
from world_aws.runtime.children import PARENT_RUN_ID, refuse_reserved_token
from world_aws.runtime.config import RuntimeConfig
from world_aws.runtime.deployments import (
    Deployments,
    Handover,
    SingleDeployment,
    hand_over_or_none,
    pinned_elsewhere,
)
from world_aws.runtime.dispatch import StepDispatcher
from world_aws.runtime.executor import StepExecutor
from world_aws.runtime.forks import FORKED_FROM, Forks
from world_aws.runtime.handle import RunHandle
from world_aws.runtime.hooks import check_token
from world_aws.runtime.inline import InlineSteps, Owner
from world_aws.runtime.logcache import READ_ATTEMPTS, READ_MAX_PAUSE_SECONDS, LogCache
from world_aws.runtime.orchestrator import Orchestrator
from world_aws.runtime.registry import WorkflowFunction, Workflows
from world_aws.runtime.replaycache import ReplayCache
from world_aws.runtime.retry import retry_in_process
from world_aws.runtime.serde import encode_error
from world_aws.runtime.serde_limits import Payload
from world_aws.runtime.starting import start_run
from world_aws.runtime.telemetry import LOG
from world_aws.runtime.typed_hooks import Hook as TypedHookBase
from world_aws.runtime.typed_hooks import checked_payload, declared_type

# A first workflow message whose run never appeared is retried this many times.
MISSING_RUN_DELIVERIES = 5
# Tries of the wake-up publish after a hook_received landed, before the caller sees an error.
WAKE_ATTEMPTS = 3
# A caller's resume id is part of a DynamoDB sort key and of an SQS idempotency key.
MAX_RESUME_ID_CHARS = 200


class Runtime:
    def __init__(
        self,
        world: World,
        app: Workflows,
        config: RuntimeConfig | None = None,
        *,
        handover: Handover | None = None,
        deployments: Deployments | None = None,
    ) -> None:
        """Bind ``app`` to ``world``.

        ``handover``: the app's other deployments. With it, a delivery for a run pinned to
        another deployment than ``world.deployment_id()`` is handed to that deployment
        (``runtime/deployments.py``); without it, every delivery runs on this code.
        ``deployments``: what the API lists and retires (default: this one alone).
        """
        self.world = world
        self.app = app
        self.config = config or RuntimeConfig()
        self.handover = handover
        self.deployments: Deployments = deployments or SingleDeployment(world)
        self._pool = ThreadPoolExecutor(
            self.config.dispatch_parallelism, thread_name_prefix="world-aws-dispatch"
        )
        self.logs = LogCache(world, self.config.log_cache_runs)
        self.dispatcher = StepDispatcher(world, self.config, self._pool)
        inline = InlineSteps(world, app, self.dispatcher, self.config, self._pool)
        self.orchestrator = Orchestrator(
            world,
            app,
            self.dispatcher,
            self.logs,
            self._pool,
            ReplayCache(self.config.replay_cache_runs, checked=self.config.replay_checks),
            inline,
            max_events_per_run=self.config.max_events_per_run,
        )
        self.executor = StepExecutor(
            world,
            app,
            self.orchestrator,
            self.dispatcher,
            self.config.max_deployment_reroutes,
            handover=handover,
        )
        self.forks = Forks(world, app, self._pool)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.orchestrator.close()

    # --- client API -----------------------------------------------------------------

    def start(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        *args: Any,
        idempotency_key: str | None = None,
        attributes: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> RunHandle:
        """Start a run of ``workflow``; the same ``idempotency_key`` returns the same run.

        Raises:
            BadInput: unknown workflow, arguments that do not bind or do not serialize, an
                attribute whose name starts with ``$`` (reserved).
            WorldAwsError: the first message could not be published.
        """
        return self._keyed_start(workflow, args, kwargs, idempotency_key, attributes, compare=True)

    def start_again(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        *args: Any,
        idempotency_key: str,
        attributes: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> RunHandle:
        """Redo a keyed start this caller made, whose first message may never have left.

        For a keyed run that is still pending: the create is refused and the first
        message published again under its key (absorbed if it went). The run the key
        names is not read back and compared with the arguments (the caller made it with
        these). The scheduler's own redo is ``start_tick(..., again=True)``.

        Raises:
            BadInput, WorldAwsError: as ``start``.
        """
        return self._keyed_start(workflow, args, kwargs, idempotency_key, attributes, compare=False)

    def start_tick(
        self,
        workflow: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        tick_key: str,
        attributes: dict[str, str],
        again: bool = False,
    ) -> RunHandle:
        """The scheduler's start of a tick: the run ``ids.schedule_run_id(tick_key)`` names.

        Ticks have their own id namespace (``runtime/ids.py``): no caller's idempotency
        key names a tick's run. ``again`` redoes a start whose run is pending (see
        ``start_again``).

        Raises:
            BadInput, WorldAwsError: as ``start``; Conflict: the tick's run exists with
                another workflow or other arguments.
        """
        run_id = ids.schedule_run_id(tick_key)
        return self._keyed_start(
            workflow, args, kwargs, tick_key, attributes, compare=not again, run_id=run_id
        )

    def _keyed_start(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        idempotency_key: str | None,
        attributes: dict[str, str] | None,
        *,
        compare: bool,
        run_id: str | None = None,
    ) -> RunHandle:
        reserved = sorted(k for k in attributes or {} if k.startswith(RESERVED_ATTRIBUTE_PREFIX))
        if reserved:
            # The runtime's own links ($parent_run_id, $continued_from, ...): a run started with
            # them would write its hook and its outcome into the run they name.
            raise BadInput(
                f"attributes: {', '.join(reserved)}: names starting with "
                f"{RESERVED_ATTRIBUTE_PREFIX!r} are reserved (contract §2.1)"
            )
        wf = self.app.get_workflow(workflow if isinstance(workflow, str) else workflow.name)
        wf.bind(args, kwargs)
        data = self.app.serializer.dumps(
            {"args": list(args), "kwargs": kwargs},
            context=f"arguments of workflow {wf.name!r}",
            payload=Payload.STEP_INPUT,
        )
        if run_id is None:
            run_id = ids.run_id_for_key(idempotency_key) if idempotency_key else ids.new_run_id()
        with tracing.start_span(run_id, wf.name):
            return self._start(
                run_id, wf.name, data, idempotency_key, dict(attributes or {}), compare=compare
            )

    def _start(
        self,
        run_id: str,
        workflow_name: str,
        data: bytes,
        idempotency_key: str | None,
        attributes: dict[str, str],
        *,
        compare: bool = True,
    ) -> RunHandle:
        """``run_created`` ∥ the first workflow message, both carrying the run's root trace context."""
        carrier = tracing.current_carrier()
        creation = RunCreation(
            workflow_name=workflow_name,
            deployment_id=self.world.deployment_id(),
            spec_version=SPEC_VERSION_CURRENT,
            input=data,
            attributes={
                **attributes,
                **self.app.retention_attributes(workflow_name),
                **tracing.run_attributes(carrier),
            },
        )
        created = start_run(self.world, self._pool, run_id, creation, carrier, keyed=bool(idempotency_key))
        if isinstance(created, Conflict) and idempotency_key and compare:
            self._check_same_start(run_id, idempotency_key, creation)
        return RunHandle(self.world, self.app.serializer, run_id, started=True)

    def _check_same_start(self, run_id: str, idempotency_key: str, creation: RunCreation) -> None:
        """A start whose key names an existing run must ask for the same workflow and input.

        Raises:
            Conflict: naming the existing run's workflow and this start's.
        """
        existing = self.world.runs.get(run_id)
        same_workflow = existing.workflow_name == creation.workflow_name
        same_input = existing.input == creation.input or self._same_value(existing.input, creation.input)
        if same_workflow and same_input:
            return
        asked = f"workflow {creation.workflow_name!r}" + ("" if same_input else " with other arguments")
        raise Conflict(
            f"idempotency key {idempotency_key!r} names run {run_id} of workflow "
            f"{existing.workflow_name!r}; this start asks for {asked}"
        )

    def _same_value(self, stored: bytes | None, given: bytes) -> bool:
        """Whether two serialized inputs hold equal values (keyword order aside)."""
        try:
            return stored is not None and bool(
                self.app.serializer.loads(stored) == self.app.serializer.loads(given)
            )
        except BadInput:
            return False  # not even decodable by this app: not the same start

    def fork(
        self,
        run_id: str,
        from_step: str | None = None,
        *,
        idempotency_key: str | None = None,
        actor: str = LOCAL_ACTOR,
    ) -> RunHandle:
        """Start a new run of an ended run's workflow and input, on this code, from a step.

        Its log begins with the original's up to ``from_step`` (a step name, its first
        call; ``"name#n"``, its n-th), or by default up to the step whose failure
        ended the run: the steps settled before that point are not run again, their
        recorded results are reused. The original stays as it ended. The fork's
        ``$forked_from`` attribute names it, ``$forked_by`` the ``actor`` (audit: the API's
        caller's IAM ARN, in process ``"local"``). See ``runtime/forks.py``.

        A held run (running, its replay diverged on a deploy's code: README "Deploying
        changes") is cancelled first, then forked: the operator's way on for a run no
        deploy will release. Name a ``from_step`` at or before where it diverged, or the
        fork replays the diverging log again.

        Raises:
            NotFound: no such run, or no such step in its log.
            Conflict: the run has not ended and is not held (cancel it first).
            BadInput: a malformed ``from_step``, none for a completed run, or a
                workflow this code does not have.
        """
        check_actor(actor)
        if self.world.runs.get(run_id).held:
            self.orchestrator.lineage.cancel(run_id, "forked while held", actor=actor)
        return self.forks.fork(run_id, from_step, idempotency_key=idempotency_key, actor=actor)

    def get_run(self, run_id: str) -> RunHandle:
        """A handle on an existing run. Raises NotFound."""
        self.world.runs.get(run_id)
        return RunHandle(self.world, self.app.serializer, run_id)

    def delete_run(self, run_id: str) -> ErasedRun:
        """Erase an ended run and all its data: an erasure request (README "Retention and erasure").

        Its log, steps, hooks, waits, streams, hook tokens and index entries go, and the
        blobs no other run refers to. A message of the run still queued meets its tombstone
        and is acked. Its child runs and forks are runs of their own, kept.

        Raises:
            NotFound: no such run (or it was erased already).
            Conflict: the run has not ended (cancel it first).
        """
        erased = self.world.erasure.delete(run_id)
        self.logs.forget(run_id)
        return erased

    def resume_hook(
        self,
        token: str,
        payload: Any,
        *,
        resume_id: str | None = None,
        hook_type: type[TypedHookBase] | None = None,
        actor: str = LOCAL_ACTOR,
    ) -> str:
        """Deliver ``payload`` to the live hook holding ``token`` and wake its run (contract §6.2).

        Args:
            token: the hook's token.
            payload: any value the app's serializer handles. For a typed hook
                (``runtime/typed_hooks``), an instance of its type or a mapping of its
                fields: validated, and recorded as plain data.
            resume_id: the caller's key for this resume: a retry with the same id (after
                a timeout or an error) appends the payload once and wakes the run
                again (collapsed by key), and is a success even once the hook or its
                run has ended, if the first attempt was recorded by the token's last
                holder (``hooks.resumed``). Default: a fresh id, so a retry without it
                may deliver the payload twice.
            hook_type: the typed hook class the caller expects (``Hook.resume``), used
                when this app does not know the hook's type by name.
            actor: who resumes (audit), recorded on ``hook_received``: the API's caller's
                IAM ARN; in process ``"local"``.

        Returns:
            The resume id.

        Raises:
            NotFound: an unknown or disposed token.
            BadInput: an unusable resume id or payload; a payload that does not fit a
                typed hook's type (naming the field).
            WorldAwsError: the wake-up could not be published after the payload was
                recorded; retry with the same ``resume_id`` (the reconciler also wakes
                a run left like this).
        """
        if resume_id is not None:
            _check_resume_id(resume_id)
        check_actor(actor)
        refuse_reserved_token(token)
        try:
            hook = self.world.hooks.get_by_token(check_token(token))
        except NotFound:
            if resume_id is None or self.world.hooks.resumed(token, resume_id) is None:
                raise
            return resume_id  # recorded before the hook ended: the retry of a success
        declared = declared_type(self.app.serializer, hook.metadata)
        payload = checked_payload(self.app.hook_type, declared, payload, hook_type)
        data = self.app.serializer.dumps(payload, context="a hook payload", payload=Payload.HOOK_PAYLOAD)
        resume_id = resume_id or f"resume_{ids.new_ulid()}"
        try:
            self.world.events.create(
                hook.run_id,
                EventRequest(
                    EventType.HOOK_RECEIVED,
                    hook.hook_id,
                    HookReceivedData(token=token, payload=data, resume_id=resume_id, actor=actor),
                ),
            )
        except RunExpired:
            # The run ended since the hook was read: its hooks went with it, as a resume
            # that came after the end is told (unless this id was recorded before it).
            if self.world.hooks.resumed(token, resume_id) is not None:
                return resume_id
            raise NotFound(f"no live hook holds token {token!r}") from None
        # The payload is recorded: the run must hear of it. Retry the wake-up here
        # before giving the caller an error to retry with.
        retry_in_process(
            # Keyed by the run too: a resume id names a resume of one run (the World deduplicates
            # on (run, resume id), contract §6.2), and SQS keys are global to the queue.
            lambda: self.orchestrator.wake(
                hook.run_id, delay_seconds=0, key=f"{hook.run_id}:{resume_id}:wake"
            ),
            attempts=WAKE_ATTEMPTS,
            clock=self.world.clock,
            max_pause=1.0,
        )
        return resume_id

    # --- the queue handler ------------------------------------------------------------

    def handle(self, delivery: Delivery) -> HandlerResult:
        """Handle one delivery from either queue (contract §4.3).

        Raises:
            BadInput: the message is malformed (the caller dead-letters it after its redrive count).
            WorldAwsError: an infrastructure failure; the message is redelivered.
        """
        payload = decode_payload(delivery.body)
        if isinstance(payload, HealthCheck):
            return Ack()
        if delivery.attempt > self.config.max_queue_deliveries:
            error = BadInput(
                f"message {delivery.message_id} was delivered {delivery.attempt} times "
                f"(cap WORKFLOW_MAX_QUEUE_DELIVERIES={self.config.max_queue_deliveries})"
            )
            # The run may still be pending (its start rides its first write, which never landed).
            self.orchestrator.fail_run(
                payload.run_id,
                encode_error(error),
                "MAX_DELIVERIES_EXCEEDED",
                start=EventRequest(EventType.RUN_STARTED),
            )
            return Ack()
        if payload.step_id is not None:
            return self.executor.handle(payload, delivery)
        return self._handle_workflow(payload, delivery)

    def _handle_workflow(self, payload: InvokePayload, delivery: Delivery) -> HandlerResult:
        asked = None  # the deployment already asked (its answer: handle it here)
        if payload.run_input is not None:  # a run's first message names its deployment
            asked = payload.run_input.deployment_id
            routed = self._pinned(asked, delivery)
            if routed is not None:
                return routed
        if payload.run_input is not None and FORKED_FROM in payload.run_input.attributes:
            # A fork's first message: its copied prefix is written before it starts.
            self.forks.prepare(payload.run_id, self._creation(payload.run_input))
        start = None
        logged = self._reads_log_first(payload)
        seen = self._seen(payload, with_log=logged)
        if seen is not None:
            # Running: no run_started to write. Pending: its run_started goes with the
            # first pass's first write (one append with the first inline creates).
            run = seen
            start = EventRequest(EventType.RUN_STARTED) if seen.status is RunStatus.PENDING else None
        else:
            logged = False  # what happens next writes: the replay reads after it
            started = self._started(payload, delivery)
            if not isinstance(started, Run):
                return started
            run = started
        routed = self._pinned(run.deployment_id, delivery) if run.deployment_id != asked else None
        if routed is not None:
            return routed
        # A run's first delivery: its start message, or any message that found it pending or
        # missing and started it here (a reconciler's wake of a run whose first message was lost).
        first = payload.run_input is not None or seen is None or seen.status is RunStatus.PENDING
        if first and not self.orchestrator.lineage.on_child_start(run):
            return Ack()  # a child whose parent was cancelled: cancelled with it
        with tracing.workflow_span(run, payload.trace_carrier):
            return self.orchestrator.continue_run(
                run,
                redispatch_tag=payload.reconcile_tag,
                owner=Owner.of(delivery, payload.succeeds, payload.wakes),
                start=start,
                logged=logged,
            )

    def _pinned(self, deployment_id: str, delivery: Delivery) -> HandlerResult | None:
        """The answer of the run's own deployment if it is another one (None: handle it here)."""
        if not pinned_elsewhere(self.world, self.handover, deployment_id):
            return None
        assert self.handover is not None
        return hand_over_or_none(self.handover, deployment_id, delivery)

    def _started(self, payload: InvokePayload, delivery: Delivery) -> Run | HandlerResult:
        """Write ``run_started`` (a missing run made from ``run_input``): the running run, or the answer."""
        try:
            creation = self._creation(payload.run_input) if payload.run_input is not None else None
        except NotFound:  # its input's claim check is gone: an erased run's (contract §3.4)
            creation = None
        try:
            result = self.world.events.create(
                payload.run_id, EventRequest(EventType.RUN_STARTED, data=RunStartedData(creation=creation))
            )
        except Conflict:
            return Ack()  # terminal
        except RunErased:
            return Ack()  # its tombstone: the message outlived the run (contract §3.4)
        except NotFound:
            if delivery.attempt < MISSING_RUN_DELIVERIES:
                return Redeliver(float(delivery.attempt))
            LOG.error("workflow message for a run that does not exist", extra={"run_id": payload.run_id})
            return Ack()
        # The run may come without its input: a replay that starts the workflow takes it from the log.
        run = result.run if result.run is not None else self.world.runs.get(payload.run_id)
        return run if run.status is RunStatus.RUNNING else Ack()

    def _reads_log_first(self, payload: InvokePayload) -> bool:
        """Whether this delivery's first read should be its log's too (``events.list_with_run``).

        When it will most likely continue from that read (``_seen``): a wake-up (a running
        run, or an ended one, whose log is then not read), or a run's first message with
        inline execution on (the run is pending and continued with its start deferred). A
        child's first message and, with inline execution off, any first message write
        ``run_started`` first, so their replay reads after that: the run alone is read.
        """
        first = payload.run_input
        if first is None:
            return True
        return self.orchestrator.runs_inline and PARENT_RUN_ID not in first.attributes

    def _seen(self, payload: InvokePayload, *, with_log: bool) -> Run | None:
        """The run as one read shows it, when that read is all a continuation needs before it replays.

        That is a run that is running, or pending with inline execution on (its start is
        then appended with the first creates). Otherwise None, and ``run_started`` is
        written first as before: it creates a missing run from the message's
        ``run_input`` (contract §6.1) and, refused by a terminal run, repairs a missing
        terminal event (ARCHITECTURE §6). ``with_log``: the read is the run's log's too
        (``LogCache.read_with_run``), so the continuation's replay reads nothing more.
        """
        try:
            if with_log:
                run = self.logs.read_with_run(payload.run_id)
            else:
                # Tried again in process as a log read is (``LogCache.read``): a transient
                # failure here would cost the delivery, and a redelivery counts to the cap.
                run = retry_in_process(
                    lambda: self.world.runs.get(payload.run_id, resolve_data=ResolveData.NONE),
                    attempts=READ_ATTEMPTS,
                    clock=self.world.clock,
                    max_pause=READ_MAX_PAUSE_SECONDS,
                )
        except NotFound:
            return None
        if run.status is RunStatus.PENDING and payload.run_input is None and FORKED_FROM in run.attributes:
            # A wake of a fork whose first message's handler died before its copy was
            # whole (runtime/forks.py): finish it, then start the run as if missing.
            self.forks.finish(run)
            self.logs.forget(run.run_id)
            return None
        if run.status is RunStatus.RUNNING:
            return run
        # A child starts as before (run_started, then its parent checked): with its start
        # deferred, AWS chaos (seed 5, --max-inline 32 --max-fanout 40) once left one child
        # pending after its parent's cancel, before the delivery cap could fail a pending
        # run and before a failed hole wait stopped restarting (ARCHITECTURE §8).
        child = PARENT_RUN_ID in run.attributes
        return (
            run if run.status is RunStatus.PENDING and self.orchestrator.runs_inline and not child else None
        )

    def _creation(self, run_input: RunInput) -> RunCreation:
        if run_input.input is not None:
            data = run_input.input
        elif run_input.input_ref is not None:
            ref = run_input.input_ref
            data = self.world.blobs.get(BlobRef(key=ref.ref, size=ref.size, sha256=ref.sha256))
        else:
            raise BadInput("run_input carries neither input nor input_ref")
        return RunCreation(
            workflow_name=run_input.workflow_name,
            deployment_id=run_input.deployment_id,
            spec_version=run_input.spec_version,
            input=data,
            attributes=dict(run_input.attributes),
        )


def _check_resume_id(resume_id: str) -> None:
    if (
        not resume_id
        or len(resume_id) > MAX_RESUME_ID_CHARS
        or not resume_id.isprintable()
        or " " in resume_id
    ):
        raise BadInput(
            f"resume_id must be 1-{MAX_RESUME_ID_CHARS} printable characters without spaces, "
            f"got {resume_id[:40]!r}{'...' if len(resume_id) > 40 else ''}"
        )
