"""``Worker``: the one message handler for both queues, and the execution machinery behind it.

``handle()`` is called by the local consumers, the local event source and the Lambda
functions alike. It builds the continuation machinery once (log cache, dispatcher,
inline steps, orchestrator, step executor) over one thread pool. ``Runtime`` is the
façade over this and the ``Client`` (``runtime/runtime.py``).
"""

from __future__ import annotations

from concurrent.futures import Executor

from world_aws.client.forks import FORKED_FROM, Forks
from world_aws.contract.payload import HealthCheck, InvokePayload, RunInput
from world_aws.contract.records import (
    EventRequest,
    EventType,
    ResolveData,
    Run,
    RunCreation,
    RunStartedData,
    RunStatus,
)
from world_aws.contract.world import Ack, BlobRef, Delivery, HandlerResult, Redeliver, World
from world_aws.engine.children import PARENT_RUN_ID
from world_aws.engine.logcache import READ_ATTEMPTS, READ_MAX_PAUSE_SECONDS, LogCache
from world_aws.engine.replaycache import ReplayCache
from world_aws.errors import BadInput, Conflict, NotFound, RunErased
from world_aws.observe import tracing
from world_aws.observe.telemetry import LOG
from world_aws.serde.codec import encode_error
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import Handover, hand_over_or_none, pinned_elsewhere
from world_aws.worker.dispatch import StepDispatcher
from world_aws.worker.executor import StepExecutor
from world_aws.worker.gates import GateFlushes
from world_aws.worker.inline import InlineSteps, Owner
from world_aws.worker.orchestrator import Orchestrator
from world_aws.worker.run_admission import HeldRun, RunGate, RunRefused
from world_aws.workflow.registry import Workflows
from world_aws.workflow.retry import retry_in_process

# A first workflow message whose run never appeared is retried this many times.
MISSING_RUN_DELIVERIES = 5


class Worker:
    """Handles deliveries of ``app``'s runs on ``world``: continuations and step attempts."""

    def __init__(
        self,
        world: World,
        app: Workflows,
        config: RuntimeConfig,
        pool: Executor,
        forks: Forks,
        *,
        handover: Handover | None = None,
    ) -> None:
        self.world = world
        self.app = app
        self.config = config
        self.handover = handover
        self.forks = forks
        self.logs = LogCache(world, config.log_cache_runs)
        self.dispatcher = StepDispatcher(world, config, pool)
        inline = InlineSteps(world, app, self.dispatcher, config, pool)
        # Renews the leases of the inline bodies this worker runs (``worker/leases.py``).
        self.leases = inline.leases
        self.orchestrator = Orchestrator(
            world,
            app,
            self.dispatcher,
            self.logs,
            pool,
            ReplayCache(config.replay_cache_runs, checked=config.replay_checks),
            inline,
            max_events_per_run=config.max_events_per_run,
        )
        self.executor = StepExecutor(
            world,
            app,
            self.orchestrator,
            self.dispatcher,
            config.max_deployment_reroutes,
            handover=handover,
        )
        self.runs_gate = RunGate(world, app)

        # The due messages of debounce windows and batches (worker/gates.py).
        self.gates = GateFlushes(world, app, pool)

    def close(self) -> None:
        self.orchestrator.close()

    def handle(self, delivery: Delivery) -> HandlerResult:
        """Handle one delivery from either queue (contract §4.3).

        Raises:
            BadInput: the message is malformed (the caller dead-letters it after its redrive count).
            WorldAwsError: an infrastructure failure; the message is redelivered.
        """
        payload = delivery.parsed()
        if isinstance(payload, HealthCheck):
            return Ack()
        if payload.flush is not None:
            return self.gates.handle(payload)
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
        logged = self._reads_log_first(payload)
        seen = self._seen(payload, with_log=logged)
        held = None
        if seen is None or seen.status is RunStatus.PENDING:
            # A run under its workflow's flow control starts once admitted (worker/run_admission.py).
            admitted = self.runs_gate.admit(payload, seen, delivery)
            if isinstance(admitted, RunRefused):
                return admitted.result
            held = admitted
        try:
            return self._continue(payload, delivery, seen, logged, asked, held)
        except BaseException:
            self.runs_gate.started(held, ran=True)  # it may have started: its token counts, its slot stays
            raise

    def _continue(
        self,
        payload: InvokePayload,
        delivery: Delivery,
        seen: Run | None,
        logged: bool,
        asked: str | None,
        held: HeldRun | None,
    ) -> HandlerResult:
        start = None
        if seen is not None:
            # Running: no run_started to write. Pending: its run_started goes with the
            # first pass's first write (one append with the first inline creates).
            run = seen
            start = EventRequest(EventType.RUN_STARTED) if seen.status is RunStatus.PENDING else None
        else:
            logged = False  # what happens next writes: the replay reads after it
            started = self._started(payload, delivery)
            if not isinstance(started, Run):
                self.runs_gate.started(held, ran=False)  # it had ended (or is not there yet)
                return started
            run = started
        routed = self._pinned(run.deployment_id, delivery) if run.deployment_id != asked else None
        if routed is not None:
            return routed
        # A run's first delivery: its start message, or any message that found it pending or
        # missing and started it here (a reconciler's wake of a run whose first message was lost).
        first = payload.run_input is not None or seen is None or seen.status is RunStatus.PENDING
        if first and not self.orchestrator.lineage.on_child_start(run):
            self.runs_gate.started(held, ran=False)
            return Ack()  # a child whose parent was cancelled: cancelled with it
        with tracing.workflow_span(run, payload.trace_carrier):
            answer = self.orchestrator.continue_run(
                run,
                redispatch_tag=payload.reconcile_tag,
                owner=Owner.of(delivery, payload.succeeds, payload.wakes),
                start=start,
                logged=logged,
            )
        self.runs_gate.started(held, ran=True)
        return answer

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
            # whole (client/forks.py): finish it, then start the run as if missing.
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
