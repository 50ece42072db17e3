"""Forking an ended run: a new run of its workflow and input, on the current code, from a step.

``Runtime.fork(run_id, from_step=None)`` (README "Recovering runs") starts a new run
whose log begins with the original's, up to the fork point (``client/fork_plan.py``):
the steps settled before it are not run again, replay serves their recorded results.
The original is only read: it stays ended, its fence untouched.

Two writes, as ``start()`` makes (contract §6.1): ``run_created`` (attributes
``$forked_from`` and ``$fork_position`` name the original and the point) ∥ the
fork's first workflow message. The copy of the prefix is the workflow consumer's
(:meth:`Forks.prepare`, from ``Worker._handle_workflow``), before the run starts:

* the fork stays ``pending`` until its copy is whole; only a continuation writes
  ``run_started``, and every continuation of a pending fork finishes the copy first,
  so no replay of a fork ever reads a part of its prefix;
* the copy is resumable: it is a pure function of the original's log before the point
  (which never changes: the original has ended, and what a step reports after the end
  lands after it), and a copier first reads what the fork holds (``copied_count``)
  and writes the rest. A handler that dies midway (a Lambda timeout on a long log, a
  crash) leaves its message to be redelivered, or a reconciler's wake, and that goes
  on where it stopped;
* the API answers without waiting for the copy, whatever the log's length (API
  Gateway gives a request 29 s).

``idempotency_key``: a fork retried with the same key is the same fork (its run id is
derived from the original and the key); without one, each call makes a new fork.
"""

from __future__ import annotations

from concurrent.futures import Executor

from world_aws.client.audit import FORKED_BY, LOCAL_ACTOR
from world_aws.client.fork_plan import copied_count, copy_plan, fork_point
from world_aws.client.handle import RunHandle
from world_aws.client.starting import start_run
from world_aws.contract.records import (
    EventRequest,
    EventType,
    ResolveData,
    Run,
    RunCreatedData,
    RunCreation,
    RunStatus,
)
from world_aws.contract.rules import RESERVED_ATTRIBUTE_PREFIX
from world_aws.contract.world import SPEC_VERSION_CURRENT, World
from world_aws.engine import ids
from world_aws.errors import BadInput, Conflict, NotFound, RunExpired
from world_aws.observe import tracing
from world_aws.observe.telemetry import LOG
from world_aws.workflow.registry import Workflows

# Run attributes (the reserved ``$`` prefix, contract §2.1) of a fork.
FORKED_FROM = "$forked_from"
FORK_POSITION = "$fork_position"
MAX_KEY_CHARS = 256


def forked_from(run: Run) -> str | None:
    """The run ``run`` was forked from, if it is a fork."""
    return run.attributes.get(FORKED_FROM)


class Forks:
    """Makes forks (the client side) and copies their prefix (the consumer side)."""

    def __init__(self, world: World, app: Workflows, pool: Executor) -> None:
        self._world = world
        self._app = app
        self._pool = pool

    def fork(
        self,
        run_id: str,
        from_step: str | None = None,
        *,
        idempotency_key: str | None = None,
        actor: str = LOCAL_ACTOR,
    ) -> RunHandle:
        """Start a fork of the ended run ``run_id`` (module docstring).

        Args:
            run_id: the run to fork: failed, cancelled, or completed (with ``from_step``).
            from_step: the step to start again at: its name (its first call) or
                ``"name#n"`` (its n-th call); None: where the run failed (or stopped).
            idempotency_key: the same key (for the same run) returns the same fork.

        Returns:
            A handle on the fork (``pending`` until its copy is written and it starts).

        Raises:
            NotFound: no run ``run_id``, or no such step in its log.
            Conflict: the run has not ended; or the key names a fork of another point.
            BadInput: a malformed ``from_step`` or key, no ``from_step`` for a completed
                run, or a workflow this code no longer has.
        """
        if idempotency_key is not None and not 1 <= len(idempotency_key) <= MAX_KEY_CHARS:
            raise BadInput(f"idempotency_key must be 1-{MAX_KEY_CHARS} characters")
        source = self._world.runs.get(run_id)
        events = self._world.events.list(run_id, resolve_data=ResolveData.NONE)
        point = fork_point(source, events, from_step)
        self._app.get_workflow(source.workflow_name)  # UnknownWorkflow (BadInput): not in this code
        assert source.input is not None  # read with its payloads
        fork_id = (
            ids.run_id_for_key(f"fork:{run_id}:{idempotency_key}") if idempotency_key else ids.new_run_id()
        )
        attributes = {
            k: v for k, v in source.attributes.items() if not k.startswith(RESERVED_ATTRIBUTE_PREFIX)
        }
        attributes |= {FORKED_FROM: run_id, FORK_POSITION: str(point), FORKED_BY: actor}
        with tracing.start_span(fork_id, source.workflow_name):
            carrier = tracing.current_carrier()
            creation = RunCreation(
                workflow_name=source.workflow_name,
                deployment_id=self._world.deployment_id(),
                spec_version=SPEC_VERSION_CURRENT,
                input=source.input,
                attributes={
                    **attributes,
                    **self._app.retention_attributes(source.workflow_name),
                    **tracing.run_attributes(carrier),
                },
            )
            created = start_run(
                self._world, self._pool, fork_id, creation, carrier, keyed=bool(idempotency_key)
            )
        if isinstance(created, Conflict):
            self._check_same_fork(fork_id, run_id, point, idempotency_key)
        LOG.info("run forked", extra={"run_id": fork_id, "forked_from": run_id, "fork_position": point})
        return RunHandle(self._world, self._app.serializer, fork_id, started=True)

    def _check_same_fork(self, fork_id: str, run_id: str, point: int, key: str | None) -> None:
        """A fork whose key names an existing run must ask for the same run and point.

        Raises:
            Conflict: naming the existing fork's origin and point, and this request's.
        """
        existing = self._world.runs.get(fork_id, resolve_data=ResolveData.NONE).attributes
        source, at = existing.get(FORKED_FROM), existing.get(FORK_POSITION)
        if (source, at) != (run_id, str(point)):
            raise Conflict(
                f"idempotency key {key!r} names fork {fork_id} of run {source} at position {at}; "
                f"this fork asks for run {run_id} at position {point}"
            )

    # --- the consumer side ------------------------------------------------------------

    def prepare(self, run_id: str, creation: RunCreation) -> None:
        """A fork's first message: make sure the fork exists, and copy its prefix if it is pending.

        ``run_created`` is written from the message (its create at ``fork()`` may have
        failed, or not landed yet): a fork must never be created by ``run_started``,
        which would start it with its log empty.

        Raises:
            WorldAwsError: a read or write failed (the delivery is redelivered and goes on).
        """
        try:
            self._world.events.create(
                run_id, EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation))
            )
        except Conflict:
            pass  # created by fork(), or by an earlier delivery
        run = self._world.runs.get(run_id, resolve_data=ResolveData.NONE)
        if run.status is RunStatus.PENDING:
            self.finish(run)

    def finish(self, fork: Run) -> None:
        """Write what the pending ``fork``'s log lacks of its copied prefix.

        Raises:
            WorldAwsError: a read or write failed: the caller's delivery is redelivered,
                and the next copier goes on from what landed.
        """
        source_id = fork.attributes[FORKED_FROM]
        try:
            point = int(fork.attributes[FORK_POSITION])
        except (KeyError, ValueError):
            raise BadInput(f"fork {fork.run_id} has no usable {FORK_POSITION} attribute") from None
        source = self._world.events.list(source_id, resolve_data=ResolveData.ALL)
        plan = copy_plan(source, point, source_id, fork.run_id)
        have = self._world.events.list(fork.run_id, resolve_data=ResolveData.NONE)
        for request in plan[copied_count(plan, have) :]:
            try:
                self._world.events.create(fork.run_id, request)
            except Conflict:
                continue  # written by another copier meanwhile
            except NotFound:
                if not request.type.is_hook_event:
                    raise
                # A copier that lost the race to a disposal finds the hook gone: written.
            except RunExpired:
                return  # the fork was cancelled while it was being copied
