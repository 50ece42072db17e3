"""``Client``: starting runs, handles on them, resuming hooks and forking, for a user's ``Workflows``.

``start()`` implements resilient start (contract §6.1): the run id is minted here,
then ``run_created`` and the first workflow message (carrying the creation data)
are written in parallel; the consumer's first write, ``run_started`` with that
data, creates the run if ``run_created`` never landed. ``Runtime`` is the façade
over this and the ``Worker`` (``runtime/runtime.py``).
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from world_aws.client.audit import LOCAL_ACTOR, check_actor
from world_aws.client.coalesce import GatedStarts
from world_aws.client.forks import Forks
from world_aws.client.handle import RunHandle
from world_aws.client.lineage import Lineage
from world_aws.client.run_slots import release_run_slot
from world_aws.client.starting import publish_wake, start_run
from world_aws.contract.erasure import ErasedRun
from world_aws.contract.records import EventRequest, EventType, HookReceivedData, Run, RunCreation
from world_aws.contract.rules import RESERVED_ATTRIBUTE_PREFIX
from world_aws.contract.world import SPEC_VERSION_CURRENT, World
from world_aws.engine import ids
from world_aws.engine.children import refuse_reserved_token
from world_aws.errors import BadInput, Conflict, NotFound, RunExpired
from world_aws.observe import tracing
from world_aws.serde.limits import Payload
from world_aws.workflow.hooks import check_token
from world_aws.workflow.registry import WorkflowFunction, Workflows
from world_aws.workflow.retry import retry_in_process
from world_aws.workflow.run_flow import PRIORITY_ATTRIBUTE, check_priority
from world_aws.workflow.typed_hooks import Hook as TypedHookBase
from world_aws.workflow.typed_hooks import checked_payload, declared_type

# Tries of the wake-up publish after a hook_received landed, before the caller sees an error.
WAKE_ATTEMPTS = 3
# A caller's resume id is part of a DynamoDB sort key and of an SQS idempotency key.
MAX_RESUME_ID_CHARS = 200


class Client:
    """What a caller does with the World: start, read, resume, fork. No queue handling."""

    def __init__(self, world: World, app: Workflows, pool: Executor, forks: Forks | None = None) -> None:
        self.world = world
        self.app = app
        self._pool = pool
        self.forks = forks or Forks(world, app, pool)
        self.lineage = Lineage(world, app.serializer, pool, ended=self._ended)
        # Debounced, batched and singleton workflows start through their gate (client/coalesce.py).
        self.gated = GatedStarts(world, app, self._gated_start)

    def start(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        *args: Any,
        idempotency_key: str | None = None,
        attributes: dict[str, str] | None = None,
        priority: int | None = None,
        **kwargs: Any,
    ) -> RunHandle:
        """Start a run of ``workflow``; the same ``idempotency_key`` returns the same run.

        ``priority``: among runs waiting for a slot of the workflow's ``concurrency``, higher
        goes first (default: the workflow's ``priority``); recorded as the attribute ``$priority``.

        Raises:
            BadInput: unknown workflow, arguments that do not bind or do not serialize, an
                attribute whose name starts with ``$`` (reserved).
            WorldAwsError: the first message could not be published.
            Conflict: a singleton workflow refusing a second live run (README "Flow control").
        """
        wf = self.app.get_workflow(workflow if isinstance(workflow, str) else workflow.name)
        if wf.gate is not None:
            return self.gated.start(wf, args, kwargs, idempotency_key=idempotency_key, attributes=attributes)
        return self._keyed_start(
            workflow, args, kwargs, idempotency_key, attributes, compare=True, priority=priority
        )

    def _ended(self, run: Run) -> None:
        """A run this client cancelled: give its concurrency slot back (``client/run_slots.py``)."""
        release_run_slot(self.world, self.app, run)

    def _gated_start(
        self,
        run_id: str,
        wf: WorkflowFunction[Any, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        idempotency_key: str | None,
        attributes: dict[str, str] | None,
    ) -> RunHandle:
        """A gate's own start of the run it claimed (a singleton's)."""
        return self._keyed_start(wf, args, kwargs, idempotency_key, attributes, compare=True, run_id=run_id)

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

        Ticks have their own id namespace (``engine/ids.py``): no caller's idempotency
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
        priority: int | None = None,
    ) -> RunHandle:
        reserved = sorted(k for k in attributes or {} if k.startswith(RESERVED_ATTRIBUTE_PREFIX))
        if reserved:
            # The runtime's own links ($parent_run_id, $continued_from, ...): a run started with
            # them would write its hook and its outcome into the run they name.
            raise BadInput(
                f"attributes: {', '.join(reserved)}: names starting with "
                f"{RESERVED_ATTRIBUTE_PREFIX!r} are reserved (contract §2.1)"
            )
        if priority is not None:
            attributes = {**(attributes or {}), PRIORITY_ATTRIBUTE: str(check_priority(priority))}
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
        return RunHandle(self.world, self.app.serializer, run_id, started=True, ended=self._ended)

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
        caller's IAM ARN, in process ``"local"``). See ``client/forks.py``.

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
            self.lineage.cancel(run_id, "forked while held", actor=actor)
        return self.forks.fork(run_id, from_step, idempotency_key=idempotency_key, actor=actor)

    def get_run(self, run_id: str) -> RunHandle:
        """A handle on an existing run. Raises NotFound."""
        self.world.runs.get(run_id)
        return RunHandle(self.world, self.app.serializer, run_id, ended=self._ended)

    def delete_run(self, run_id: str) -> ErasedRun:
        """Erase an ended run and all its data: an erasure request (README "Retention and erasure").

        Its log, steps, hooks, waits, streams, hook tokens and index entries go, and the
        blobs no other run refers to. A message of the run still queued meets its tombstone
        and is acked. Its child runs and forks are runs of their own, kept.

        Raises:
            NotFound: no such run (or it was erased already).
            Conflict: the run has not ended (cancel it first).
        """
        return self.world.erasure.delete(run_id)

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
                (``workflow/typed_hooks.py``), an instance of its type or a mapping of its
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
            lambda: publish_wake(
                self.world, hook.run_id, delay_seconds=0, key=f"{hook.run_id}:{resume_id}:wake"
            ),
            attempts=WAKE_ATTEMPTS,
            clock=self.world.clock,
            max_pause=1.0,
        )
        return resume_id


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
