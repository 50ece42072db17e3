"""Child workflows and continue-as-new, the World side: starting, telling the parent, cancelling.

The parent's suspension pass starts each new child (an idempotent resilient start
of its derived run id, attributes ``$parent_run_id``, ``$root_run_id``,
``$parent_call_id``), *then* writes the call's ``hook_created`` in its own log, so a
hook in the log means the child was started. The child's first delivery ensures
that hook too, before any replay of the child: it exists before the child can end.

Why the parent is never stranded (ARCHITECTURE §6, "The rule"): whatever ends a
child tells the parent before its message is acked, by writing the outcome as the
call's ``hook_received`` (deduplicated by the resume id ``<child>:end``) and waking
the parent (keyed ``<child>:end:wake``); a failure raises, so the message comes
back. Every path that later meets the ended child does it again (a workflow message
refused by the terminal run, a step delivery that finds the run ended, a retried
cancel), and a reconciler wake of the parent reads its open children and tells it
about any that ended: late, never lost. A child id held by a run this parent did
not start fails its call with ``ChildRunIdTaken`` (``children.taken_outcome``)
instead of waiting for a run that will never tell the parent.

A cancel (``cancel``) writes ``run_cancelled``, tells the parent, then cancels
every child whose outcome the run's log does not hold; a caller that sees it fail
retries it (a retry of an already cancelled run redoes both). A child whose first
delivery finds its parent cancelled cancels itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from functools import partial
from typing import Any

from world_aws.client.parallel import run_parallel
from world_aws.client.starting import start_calls, start_result
from world_aws.contract.erasure import RETENTION_ATTRIBUTE
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import (
    EventRequest,
    EventType,
    HookCreatedData,
    HookReceivedData,
    ResolveData,
    Run,
    RunCancelledData,
    RunCompletedData,
    RunCreation,
    RunFailedData,
    RunStatus,
    data_as,
)
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import SPEC_VERSION_CURRENT, QueueName, World
from world_aws.engine import children
from world_aws.engine.chain_links import last_of_chain, next_run_id
from world_aws.engine.children import PARENT_CALL_ID, PARENT_RUN_ID, ROOT_RUN_ID, ChildRequest
from world_aws.errors import BadInput, Conflict, NotFound, RunExpired, Transient
from world_aws.serde.codec import Serializer
from world_aws.workflow.chain import CONTINUED_FROM, ContinuedAsNew
from world_aws.workflow.retry import retry_in_process

# In-process tries of telling a parent (its hook_received, its wake-up) before redelivery.
NOTIFY_ATTEMPTS = 3


class Lineage:
    """Links between runs: parent and children, a run and the one that continues it."""

    def __init__(
        self,
        world: World,
        serializer: Serializer,
        pool: Executor | None = None,
        *,
        retention: Callable[[str], dict[str, str]] | None = None,
        ended: Callable[[Run], None] | None = None,
    ) -> None:
        self._world = world
        self._serializer = serializer
        self._pool = pool
        # A new child's retention attributes by workflow name (Workflows.retention_attributes).
        self._retention = retention or (lambda _name: {})
        # Called with a run this cancels, after its run_cancelled (client/run_slots.py).
        self._ended = ended or (lambda _run: None)

    # --- the parent's suspension pass ------------------------------------------------

    def start_children(self, parent: Run, requests: Sequence[ChildRequest]) -> None:
        """Start each child (its first message, *then* its ``run_created``), then record its call's hook.

        The messages go first: a pass that dies between the two writes leaves a child with a
        message and no ``run_created`` (the message creates it), never one created without
        a message. The latter was left to the reconciler when the parent was cancelled
        before its redelivery: its cancel knows no child without a hook, and its redelivery
        finds it ended (ARCHITECTURE §6, "Child workflows"). A child's first delivery
        writes the parent's hook first, or cancels itself if the parent ended.

        Raises:
            WorldAwsError: a start or a hook failed; the pass is redone (both are idempotent).
        """
        if not requests:
            return
        pairs = [
            start_calls(self._world, request.run_id, self._child_creation(parent, request))
            for request in requests
        ]
        for published in self._parallel([publish for _, publish in pairs]):
            if isinstance(published, Exception):
                raise published
        creates = self._parallel([create for create, _ in pairs])
        taken: list[tuple[ChildRequest, Run]] = []
        for request, created in zip(requests, creates, strict=True):
            start_result(created, None)
            if isinstance(created, Conflict) and (holder := self._foreign_holder(parent.run_id, request)):
                taken.append((request, holder))
        hooks = [partial(self._ensure_hook, parent.run_id, request) for request in requests]
        for answer in self._parallel(hooks):
            if isinstance(answer, Exception):
                raise answer
        for request, holder in taken:
            self._refuse_taken(parent.run_id, request, holder)

    def reconcile_children(self, parent: Run, requests: Sequence[ChildRequest]) -> None:
        """On a reconciler wake: tell the parent about started children that ended, restart lost ones."""
        for request in requests:
            try:
                child = self._world.runs.get(request.run_id)
            except NotFound:
                self.start_children(parent, [request])
                continue
            if not children.is_child_of(child, parent.run_id, request.call_id):
                self._refuse_taken(parent.run_id, request, child)
                continue
            # A child that continued as new tells its parent when its chain's last run ends.
            last = last_of_chain(self._world, child.run_id) if self.continued_to(child) else child
            if last is not None and last.status.terminal:
                self.after_end(last)

    def _child_creation(self, parent: Run, request: ChildRequest) -> RunCreation:
        return RunCreation(
            workflow_name=request.workflow_name,
            deployment_id=parent.deployment_id,
            spec_version=SPEC_VERSION_CURRENT,
            input=request.input,
            attributes={
                PARENT_RUN_ID: parent.run_id,
                ROOT_RUN_ID: parent.root_run_id,
                PARENT_CALL_ID: request.call_id,
                **self._retention(request.workflow_name),
            },
        )

    def _foreign_holder(self, parent_run_id: str, request: ChildRequest) -> Run | None:
        """The run holding the child's id if this parent did not start it (a create that conflicted)."""
        try:
            holder = self._world.runs.get(request.run_id, resolve_data=ResolveData.NONE)
        except NotFound:
            return None
        return None if children.is_child_of(holder, parent_run_id, request.call_id) else holder

    def _refuse_taken(self, parent_run_id: str, request: ChildRequest, holder: Run) -> None:
        """Fail the call whose child id ``holder`` took: its outcome in the parent's log, then a wake.

        The outcome is deduplicated by its resume id, the wake by its key, so a redone pass
        writes each once; the holder is left alone (not the parent's to cancel or to wait for).
        """
        self._ensure_hook(parent_run_id, request)
        outcome = HookReceivedData(
            token=request.token,
            payload=children.taken_outcome(self._serializer, request, holder),
            resume_id=f"{request.run_id}:taken",
        )
        self._retry(
            lambda: self._world.events.create(
                parent_run_id, EventRequest(EventType.HOOK_RECEIVED, request.call_id, outcome)
            )
        )
        body = encode_payload(InvokePayload(run_id=parent_run_id, requested_at=self._world.clock.now()))
        self._retry(
            lambda: self._world.queue.publish(
                QueueName.WORKFLOW, body, idempotency_key=f"{request.run_id}:taken:wake"
            )
        )

    def _ensure_hook(self, parent_run_id: str, request: ChildRequest) -> None:
        try:
            self._world.events.create(
                parent_run_id,
                EventRequest(EventType.HOOK_CREATED, request.call_id, HookCreatedData(token=request.token)),
            )
        except Conflict:
            pass  # the child's first delivery (or an earlier pass) wrote it

    # --- the child's side ------------------------------------------------------------

    def on_child_start(self, child: Run) -> bool:
        """A child's first delivery: ensure its call's hook in the parent. False: cancelled, stop.

        A parent already cancelled (its cancel ran before it knew of this child) takes
        the child with it.
        """
        predecessor = child.attributes.get(CONTINUED_FROM)
        if predecessor is not None:
            # A cancel of the run it continues may land after this run's start and before the
            # link's run_completed: the chain was cut there, so this run goes with it.
            before = self._world.runs.get(predecessor, resolve_data=ResolveData.NONE)
            if before.status is RunStatus.CANCELLED:
                self.cancel(child.run_id, f"run {predecessor} it continues was cancelled")
                return False
        parent_run_id = child.attributes.get(PARENT_RUN_ID)
        call_id = child.attributes.get(PARENT_CALL_ID)
        if parent_run_id is None or call_id is None:
            return True
        request = ChildRequest(call_id, child.run_id, child.workflow_name, b"")
        try:
            self._ensure_hook(parent_run_id, request)
        except RunExpired:
            parent = self._world.runs.get(parent_run_id, resolve_data=ResolveData.NONE)
            if parent.status is RunStatus.CANCELLED:
                self.cancel(child.run_id, f"parent run {parent_run_id} was cancelled")
                return False
        return True

    def before_end(self, run_id: str, request: EventRequest, run: Run | None) -> None:
        """Before a child's ``run_completed`` / ``run_failed``: tell its parent the outcome.

        Told first, so that a crash between the two leaves the child running and its
        message to come back and redo both (the outcome is deduplicated by resume id).

        Raises:
            WorldAwsError: the parent could not be told; the child's message must come back.
        """
        if run is None:
            try:
                run = self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
            except NotFound:
                return
        if PARENT_RUN_ID not in run.attributes or run.status.terminal:
            return  # no parent; or already ended, and whatever ended it told the parent
        data = request.data
        if isinstance(data, RunCompletedData):
            self._tell_parent(run, children.COMPLETED, data.output, None, None)
        else:
            failed = data_as(data, RunFailedData)
            self._tell_parent(run, children.FAILED, None, failed.error, failed.error_code)

    def after_end(self, run: Run | None) -> None:
        """After a cancel (or on a reconciler wake of the parent): tell ``run``'s parent how it ended.

        Raises:
            WorldAwsError: the parent could not be told; the caller must retry.
        """
        if run is None or not run.status.terminal or PARENT_RUN_ID not in run.attributes:
            return
        if run.output is None and run.error is None and run.status is not RunStatus.CANCELLED:
            run = self._world.runs.get(run.run_id)  # read without payloads: fetch them
        if self.continued_to(run) is not None:
            return  # the last run of the chain tells the parent
        self._tell_parent(run, run.status.value, run.output, run.error, run.error_code)

    def _tell_parent(
        self, run: Run, status: str, output: bytes | None, error: bytes | None, error_code: str | None
    ) -> None:
        parent_run_id = run.attributes[PARENT_RUN_ID]
        call_id = run.attributes.get(PARENT_CALL_ID, "")
        payload = children.encode_outcome(
            self._serializer, status, output=output, error=error, error_code=error_code
        )
        request = EventRequest(
            EventType.HOOK_RECEIVED,
            call_id,
            HookReceivedData(
                token=children.child_token(run.run_id), payload=payload, resume_id=f"{run.run_id}:end"
            ),
        )
        try:
            self._retry(lambda: self._world.events.create(parent_run_id, request))
        except RunExpired:
            return  # the parent ended: nobody waits for this outcome
        except NotFound as exc:
            # The parent runs but its hook is not there yet: its pass is between the
            # child's start and the hook. Come back (the pass, or its redo, writes it).
            raise Transient(f"parent {parent_run_id} has no hook for child {run.run_id} yet") from exc
        body = encode_payload(InvokePayload(run_id=parent_run_id, requested_at=self._world.clock.now()))
        self._retry(
            lambda: self._world.queue.publish(
                QueueName.WORKFLOW, body, idempotency_key=f"{run.run_id}:end:wake"
            )
        )

    def continued_to(self, run: Run) -> str | None:
        """The run that continues ``run`` (completed by ``continue_as_new``), if any."""
        if run.status is not RunStatus.COMPLETED or run.output is None:
            return None
        try:
            value = self._serializer.loads(run.output)
        except BadInput:
            return None
        return value.run_id if isinstance(value, ContinuedAsNew) else None

    # --- cancellation ------------------------------------------------------------------

    def cancel(self, run_id: str, reason: str | None = None, *, actor: str | None = None) -> bool:
        """Cancel ``run_id``, tell its parent, cancel its children; False if it had already ended.

        ``actor``: who asked (audit), recorded on the ``run_cancelled`` of this run only.

        Raises:
            WorldAwsError: a write failed; retry the cancel (it redoes what is left).
        """
        try:
            result = self._world.events.create(
                run_id,
                EventRequest(EventType.RUN_CANCELLED, data=RunCancelledData(reason=reason, actor=actor)),
            )
        except Conflict:
            run = self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
            if run.status is RunStatus.CANCELLED:  # a cancel that may have died half-way: finish it
                self._ended(run)
                self.after_end(run)
                self._cancel_children(run_id)
                self._cancel_successor(run_id, reason)
            elif run.status is RunStatus.COMPLETED:
                # Continued as new: the chain goes on in its last run, which the cancel is for.
                last = last_of_chain(self._world, run_id)
                if last is not None and last.run_id != run_id and not last.status.terminal:
                    return self.cancel(last.run_id, reason, actor=actor)
            return False
        if result.run is not None:
            self._ended(result.run)
        self.after_end(result.run)
        self._cancel_children(run_id)
        self._cancel_successor(run_id, reason)
        return True

    def _cancel_successor(self, run_id: str, reason: str | None) -> None:
        """Cancel the run a ``continue_as_new`` of ``run_id`` started before the cancel landed.

        Its id is derived (``next_run_id``); it exists only if the continuation got that far,
        and one started after this read cancels itself on its first delivery (``on_child_start``).
        """
        successor = next_run_id(run_id)
        try:
            run = self._world.runs.get(successor, resolve_data=ResolveData.NONE)
        except NotFound:
            return
        if run.attributes.get(CONTINUED_FROM) == run_id and not run.status.terminal:
            self.cancel(successor, reason)

    def _cancel_children(self, run_id: str) -> None:
        started: dict[str, str] = {}
        done: set[str] = set()
        for event in self._world.events.list(run_id, resolve_data=ResolveData.NONE):
            cid = event.correlation_id or ""
            if isinstance(event.data, HookCreatedData) and (
                child := children.child_of_token(event.data.token)
            ):
                started[cid] = child
            elif event.type is EventType.HOOK_RECEIVED:
                done.add(cid)
        for cid, child in started.items():
            if cid not in done:
                self.cancel(child, f"parent run {run_id} was cancelled")

    # --- continue-as-new ---------------------------------------------------------------

    def continue_as_new(self, run: Run, data: bytes) -> bytes:
        """Start the run that continues ``run`` with input ``data``; returns ``run``'s output (the link).

        Raises:
            WorldAwsError: the start failed; the continuation is redone (the start is idempotent).
        """
        next_id = next_run_id(run.run_id)
        attributes = {ROOT_RUN_ID: run.root_run_id, CONTINUED_FROM: run.run_id}
        kept = (PARENT_RUN_ID, PARENT_CALL_ID, RETENTION_ATTRIBUTE)  # the chain keeps its retention
        attributes |= {k: v for k, v in run.attributes.items() if k in kept}
        creation = RunCreation(
            workflow_name=run.workflow_name,
            deployment_id=run.deployment_id,
            spec_version=SPEC_VERSION_CURRENT,
            input=data,
            attributes=attributes,
        )
        start_result(*self._parallel(start_calls(self._world, next_id, creation)))
        return self._serializer.dumps(ContinuedAsNew(next_id), context="a continue_as_new link")

    # --- internals ---------------------------------------------------------------------

    def _parallel(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        if self._pool is not None:
            return run_parallel(self._pool, calls)
        results: list[Any] = []
        for call in calls:
            try:
                results.append(call())
            except Exception as exc:
                results.append(exc)
        return results

    def _retry(self, call: Callable[[], Any]) -> Any:
        return retry_in_process(call, attempts=NOTIFY_ATTEMPTS, clock=self._world.clock, max_pause=1.0)
