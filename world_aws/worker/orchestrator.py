"""Continuing a run: replay its workflow and act on the outcome (contract §8.1–§8.5).

One continuation = read the log (only what is new to this warm handler), replay
(continuing this handler's suspended replay of the run, if it kept one), then
either record the run's end (``run_completed`` / ``run_failed``) or run a
suspension pass: hooks first, then steps and waits, then dispatch (contract §8.4).
The pass raises if any create or publish it needs failed, so the message that
triggered it is redelivered and the pass redone (every create is idempotent).
"""

from __future__ import annotations

import contextlib
from collections.abc import Set as AbstractSet
from concurrent.futures import Executor
from datetime import datetime
from functools import partial

from world_aws.client.lineage import Lineage
from world_aws.client.parallel import run_parallel
from world_aws.client.run_slots import release_run_slot
from world_aws.client.starting import publish_wake
from world_aws.contract.clock import epoch_ms
from world_aws.contract.limits import SQS_MAX_DELAY_SECONDS
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    HookCreatedData,
    Run,
    RunCompletedData,
    RunFailedData,
    RunStatus,
    WaitCreatedData,
)
from world_aws.contract.world import Ack, HandlerResult, World
from world_aws.engine.logcache import LogCache
from world_aws.engine.replay import Completed, Continued, Failed, Replay, StepRequest, Suspended, WaitRequest
from world_aws.engine.replaycache import ReplayCache
from world_aws.errors import Conflict, Misconfigured, NotFound, RunExpired, UnknownWorkflow
from world_aws.observe.telemetry import LOG
from world_aws.serde.codec import encode_error
from world_aws.worker import holding
from world_aws.worker.config import DEFAULT_MAX_EVENTS_PER_RUN
from world_aws.worker.dispatch import StepDispatcher
from world_aws.worker.inline import InlinePlan, InlineSteps, Owner, creates_only, start_run
from world_aws.worker.pipeline import OutcomePipeline, run_end
from world_aws.workflow.chain import ERROR_CODE_EVENT_LIMIT, EventLimitExceeded
from world_aws.workflow.patching import patch_marker
from world_aws.workflow.registry import Workflows

# Rounds of replay within one continuation: each round after the first follows
# something the pass itself produced (a due wait completed, a hook conflict).
# Rounds that ran inline steps are progress and do not count.
MAX_ROUNDS = 16
# A wait due within this many seconds is woken under a per-second key (see _wake_key).
SHORT_WAKE_SECONDS = 2.0
# Events that are no progress for the hand-on (``Orchestrator._moved``): a step's claim
# (its create or start), and the run's start.
_CLAIMS = frozenset({EventType.STEP_CREATED, EventType.STEP_STARTED, EventType.RUN_STARTED})


class Orchestrator:
    def __init__(
        self,
        world: World,
        app: Workflows,
        dispatcher: StepDispatcher,
        logs: LogCache,
        pool: Executor,
        replays: ReplayCache | None = None,
        inline: InlineSteps | None = None,
        lineage: Lineage | None = None,
        max_events_per_run: int = DEFAULT_MAX_EVENTS_PER_RUN,
    ) -> None:
        self._world = world
        self._app = app
        self._dispatcher = dispatcher
        self._logs = logs
        self._pool = pool
        self._replays = replays if replays is not None else ReplayCache(0)
        self._inline = inline
        self.lineage = lineage or Lineage(
            world,
            app.serializer,
            pool,
            retention=app.retention_attributes,
            ended=partial(release_run_slot, world, app),  # a run it cancels gives its slot back
        )
        self._max_events = max_events_per_run
        self._pipeline = OutcomePipeline(world, app, logs, self._replays, inline, max_events_per_run)

    def continue_run(
        self,
        run: Run,
        *,
        redispatch_tag: str | None = None,
        owner: Owner | None = None,
        start: EventRequest | None = None,
        logged: bool = False,
    ) -> HandlerResult:
        """Replay ``run`` and record what it reached.

        ``run`` may come without its input (a World may leave it out of a claimed
        run or a transition's result): a replay started here takes it from the
        log's ``run_created`` event, which it reads first anyway.

        ``redispatch_tag`` (a reconciler's wake) re-keys the re-publish of undispatched steps.
        ``owner`` is the delivery this continuation runs for: with it, ready steps run
        here (``worker/inline.py``) and the replay goes on after them, in this call.
        ``start``: the pending run's ``run_started``, written before anything else: in
        one append with the first pass's inline creates when that pass has only those,
        else on its own first.
        ``logged``: the log cache was read with ``run`` (``LogCache.read_with_run``), after
        which nothing was written: the first replay takes the cached log as it is.
        """
        if run.held:
            return Ack()  # nothing runs a held run until a deploy releases it (worker/holding.py)
        try:
            workflow = self._app.get_workflow(run.workflow_name)
        except UnknownWorkflow as err:
            self.fail_run(run.run_id, encode_error(err), "UNKNOWN_WORKFLOW", run=run, start=start)
            return Ack()
        # A replay this handler left suspended continues from where it stopped (contract §8.3).
        replay = self._replays.take(run.run_id) or Replay(run, workflow, self._app.serializer)
        suspended = False
        published: set[str] = set()  # steps this call dispatched: no need to re-publish them
        ran: set[str] = set()  # steps whose body this call ran inline
        rounds = 0
        # A wave's steps past the inline ones wait for them while its rounds are fast, each
        # round twice as wide as the last (ARCHITECTURE §5, "Fast rounds").
        first_width = width = self._inline.first_width if self._inline is not None else 0
        # The events of the last inline round continued the cached log, or the log was read
        # with the run: no read.
        fed = logged
        first: int | None = None  # where the log ended at this call's first read
        unblocked = False  # a released run's mark cleared by this call
        try:
            while True:
                if self._replays.check_due(replay):  # local runs: re-run the code once the log doubled
                    replay.close()
                    replay = Replay(run, workflow, self._app.serializer)
                replay.feed(self._logs.read(run.run_id, after=replay.last_position, fetch=not fed))
                fed = False
                first = replay.last_position if first is None else first
                if replay.last_position > self._max_events:
                    limit = EventLimitExceeded(run.run_id, replay.last_position, self._max_events)
                    self.fail_run(run.run_id, encode_error(limit), ERROR_CODE_EVENT_LIMIT, run=run)
                    return Ack()
                outcome = replay.outcome()
                if holding.held_by(self._world, run, outcome):
                    assert isinstance(outcome, Failed)
                    holding.hold(self._world, run, outcome, replay.last_position)
                    self._forget(run.run_id)
                    return Ack()  # nothing runs it until a deploy releases it (worker/holding.py)
                if run.blocked is not None and not unblocked:
                    self._world.runs.unblock(run.run_id)  # released onto code it replays on
                    unblocked = True
                if replay.patches.unrecorded:
                    # patched() took a new branch here: its marker goes in first, before
                    # anything that branch writes (workflow/patching.py); then replay on.
                    if start is not None:
                        start_run(self._world, run.run_id, start)
                        start = None
                    fed = self._logs.feed(run.run_id, self._record_patches(run.run_id, replay))
                    continue
                if not isinstance(outcome, Suspended) and self._replays.check_before_end(replay):
                    # Local runs: the end recorded is a cold replay's of the whole log.
                    replay.close()
                    replay = Replay(run, workflow, self._app.serializer)
                    continue
                if start is not None and not isinstance(outcome, Suspended):
                    start_run(self._world, run.run_id, start)
                    start = None
                if isinstance(outcome, Continued):
                    # The next run may create hooks with this run's tokens, and its first
                    # delivery may come before this run's end releases them (a hook_conflict
                    # there): free them before it exists.
                    for hook_id in replay.live_hooks():
                        self._dispose(run.run_id, hook_id)
                    output = self.lineage.continue_as_new(run, outcome.input)
                    completed = EventRequest(EventType.RUN_COMPLETED, data=RunCompletedData(output=output))
                    # The chain's last run tells the parent.
                    self._end(run.run_id, completed, run, tell_parent=False, data=replay.run_input)
                    return Ack()
                if isinstance(outcome, Completed | Failed):
                    self._end(run.run_id, run_end(outcome), run, data=replay.run_input)
                    return Ack()
                # Not copied: a long run has run many.
                plan = self._plan(run.run_id, outcome, owner, ran, width=width, published=published)
                if not plan.held:
                    width = first_width  # the next wave starts narrow again
                # Steps handed off to a message exist (owned, their owner gone): published as the
                # undispatched are, never created (an append of a create names a new step).
                outcome.undispatched_steps[:] = [
                    s for s in [*outcome.undispatched_steps, *plan.handoff] if s.step_id not in published
                ]
                # A pass that writes nothing but creates (inline or dispatched) knows where
                # the log ends: its creates append, the dispatched ones first.
                end = replay.last_position if creates_only(outcome, plan, dispatched=True) else None
                if start is not None and not (plan.create and end is not None and not plan.dispatch):
                    written = start_run(self._world, run.run_id, start)
                    start = None
                    end = written if end is not None and written == end + 1 else None
                again, end = self._suspend(
                    run,
                    outcome,
                    plan.dispatch,
                    redispatch_tag if not rounds else None,
                    after=end,
                    owner=owner,
                )
                published.update(s.step_id for s in [*plan.dispatch, *outcome.undispatched_steps])
                if self._inline is not None:
                    inline_round = self._inline.run(run, plan, owner, defer=True, after=end, start=start)
                    start = None  # written by that round, with its creates or before them
                    published.update(inline_round.dispatched)  # held steps sent on by a slow round
                    if plan.held and inline_round.ran and not inline_round.slow:
                        width *= 2
                    if inline_round.ran:
                        ran |= inline_round.ran
                        if not self._replays.keeps_replays:
                            # Replaying cold after every step, as a new container would, is
                            # what catches a workflow that is not deterministic (local runs).
                            replay.close()
                            replay = Replay(run, workflow, self._app.serializer)
                        fed = inline_round.complete and self._logs.feed(run.run_id, inline_round.written)
                        while inline_round.deferred is not None:
                            assert owner is not None  # only an owner runs steps
                            replay, inline_round, fed = self._pipeline.settle(
                                run, workflow, replay, inline_round.deferred, fed, owner, ran, published
                            )
                            ran |= inline_round.ran
                        if inline_round.ended:  # the last outcome landed with the run's end
                            self._forget(run.run_id)
                            return Ack()
                        continue  # outcomes recorded: replay them (progress, not a round)
                    # Every claim refused: another continuation's steps, or ours with a lost
                    # answer. Another round (counted) shows whose they are.
                    again = again or plan.runs_steps
                if not again:
                    suspended = True
                    hold = self._inline.hold(run.run_id, outcome, owner) if self._inline is not None else None
                    if hold is None:
                        return Ack()
                    self.wake(run.run_id, delay_seconds=min(hold.seconds, SQS_MAX_DELAY_SECONDS), key=None)
                    return Ack()
                rounds += 1
                if rounds >= MAX_ROUNDS:
                    LOG.warning(
                        "continuation stopped after %d rounds", MAX_ROUNDS, extra={"run_id": run.run_id}
                    )
                    self.wake(run.run_id, delay_seconds=1, key=None)
                    return Ack()
        except RunExpired:
            return Ack()  # the run ended while this pass ran: nothing more to do
        except Misconfigured:
            raise  # never acked (ARCHITECTURE 6)
        except Exception:
            # Only an owner hands on, and only after progress (read only for an owner).
            if (
                owner is None
                or first is None
                or not self._moved(run.run_id, first)
                or not self._hand_on(run.run_id, owner)
            ):
                raise
            return Ack()
        finally:
            if suspended and not replay.done:
                self._replays.put(run.run_id, replay)
            else:
                replay.close()

    def _plan(
        self,
        run_id: str,
        outcome: Suspended,
        owner: Owner | None,
        ran: AbstractSet[str],
        *,
        width: int,
        published: AbstractSet[str],
    ) -> InlinePlan:
        if self._inline is None:
            return InlinePlan(dispatch=list(outcome.new_steps))
        return self._inline.plan(run_id, outcome, owner, ran, width=width, published=published)

    @property
    def runs_inline(self) -> bool:
        """Whether continuations run ready steps themselves (``WORKFLOW_MAX_INLINE_STEPS`` > 0)."""
        return self._inline is not None and self._inline.enabled

    def close(self) -> None:
        """Close the suspended replays this handler kept."""
        self._replays.clear()

    def fail_run(
        self,
        run_id: str,
        error: bytes,
        error_code: str,
        *,
        run: Run | None = None,
        start: EventRequest | None = None,
    ) -> None:
        """Record ``run_failed``. ``start``: the run may still be pending (its start deferred,
        ``continue_run``), so its ``run_started`` is written first: only a running run fails."""
        if start is not None:
            try:
                start_run(self._world, run_id, start)
            except (RunExpired, NotFound):
                self._forget(run_id)
                return  # it ended before it started, or it does not exist: nothing to fail
        self._end(
            run_id,
            EventRequest(EventType.RUN_FAILED, data=RunFailedData(error=error, error_code=error_code)),
            run,
        )

    def wake(
        self,
        run_id: str,
        *,
        delay_seconds: float,
        key: str | None,
        succeeds: str | None = None,
        wakes: str | None = None,
    ) -> str:
        """Publish a continuation message for ``run_id`` (``succeeds``: see :meth:`_hand_on`;
        ``wakes``: the wait it is the wake-up of, ``_wake_timing``)."""
        return publish_wake(
            self._world, run_id, delay_seconds=delay_seconds, key=key, succeeds=succeeds, wakes=wakes
        )

    # --- internals ------------------------------------------------------------------

    def _record_patches(self, run_id: str, replay: Replay) -> list[Event]:
        """Write ``replay``'s unrecorded ``patch_applied`` markers, in order; the events written."""
        written: list[Event] = []
        for change_id in list(replay.patches.unrecorded):
            result = self._world.events.create(run_id, patch_marker(change_id))
            if result.event is not None:
                written.append(result.event)
        replay.patches.recorded(list(replay.patches.unrecorded))
        return written

    def _moved(self, run_id: str, after: int) -> bool:
        """Whether the log holds an event after ``after`` that moves the workflow on.

        That is anything but a step's claim (its create or start), which a failing
        continuation writes anew on every delivery, or the run's start (a first delivery's,
        appended with its first creates: the redelivery writes none, so it would count one
        delivery more). Read from the World (one read, on this failure path only): the
        replay saw a pipelined outcome before it was written, and a wave's outcome batches
        that landed before the failure were never fed to the cache.
        """
        try:
            events = self._logs.read(run_id, after=after)
        except Exception:
            return False
        return any(e.type not in _CLAIMS for e in events)

    def _hand_on(self, run_id: str, owner: Owner) -> bool:
        """Hand a continuation that failed after moving the run on to a fresh message; True if sent.

        Redelivering this message instead would be right for its inline steps (its next
        receive succeeds this one and takes them over at once), but the receive count
        grows over the whole life of a run that one message carries from wave to wave:
        a long inline run under a steady rate of errors would reach the delivery cap
        (``WORKFLOW_MAX_QUEUE_DELIVERIES``) and fail though every delivery made progress.
        The fresh wake-up names this delivery (``succeeds``), so it takes over those steps
        at once as the redelivery would. A continuation that moved nothing is redelivered:
        a failure that repeats without progress still reaches the cap.
        """
        try:
            self.wake(run_id, delay_seconds=0, key=None, succeeds=owner.delivery)
        except Exception:
            LOG.warning(
                "could not hand the continuation on; redelivering", exc_info=True, extra={"run_id": run_id}
            )
            return False
        LOG.warning(
            "continuation failed after progress; handed on to a fresh message",
            exc_info=True,
            extra={"run_id": run_id, "succeeds": owner.delivery},
        )
        return True

    def _end(
        self,
        run_id: str,
        request: EventRequest,
        run: Run | None = None,
        *,
        tell_parent: bool = True,
        data: bytes | None = None,
    ) -> None:
        """Record the run's end, then give its slot back (``data``: its input, if known: no read)."""
        if tell_parent:  # a child tells its parent first: a crash after this redoes both (client/lineage.py)
            self.lineage.before_end(run_id, request, run)
        try:
            ended = self._world.events.create(run_id, request)
        except NotFound:
            pass  # erased
        except Conflict:
            # Already terminal: a concurrent continuation or a cancellation won (it releases the
            # slot), or this is the redo of our own end whose answer was lost (release it here).
            release_run_slot(self._world, self._app, run, run_id, data=data)
        else:
            release_run_slot(self._world, self._app, ended.run or run, run_id, data=data)
        self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        """Drop the ended run's cached log and replay."""
        self._logs.forget(run_id)
        self._replays.forget(run_id)

    def _dispose(self, run_id: str, hook_id: str) -> None:
        """``hook_disposed``; already disposed, gone with its run, or never created (a conflict): done."""
        with contextlib.suppress(Conflict, NotFound, RunExpired):
            self._world.events.create(run_id, EventRequest(EventType.HOOK_DISPOSED, hook_id))

    def _suspend(
        self,
        run: Run,
        outcome: Suspended,
        new_steps: list[StepRequest],
        redispatch_tag: str | None = None,
        *,
        after: int | None = None,
        owner: Owner | None = None,
    ) -> tuple[bool, int | None]:
        """Run one suspension pass, dispatching ``new_steps``.

        ``after``: where the log ends, for a pass that writes nothing but creates.
        ``owner``: the delivery the pass runs for (a wait's own early wake-up: ``_wake_timing``).

        Returns:
            Whether the replay should go another round, and where the log ends now if
            ``after`` was given and every dispatched create was appended after it.
        """
        now = self._world.clock.now()
        again = False
        events = self._world.events
        # 1. hooks first, so a resume can find them as early as possible. Hooks the
        # workflow disposed: logged ones first (a new hook may reuse their token),
        # new ones right after their creation.
        new_ids = {hook.hook_id for hook in outcome.new_hooks}
        disposed = set(outcome.disposed_hooks)
        for hook_id in outcome.disposed_hooks:
            if hook_id not in new_ids:
                self._dispose(run.run_id, hook_id)
        for hook in outcome.new_hooks:
            try:
                result = events.create(
                    run.run_id,
                    EventRequest(
                        EventType.HOOK_CREATED,
                        hook.hook_id,
                        HookCreatedData(token=hook.token, metadata=hook.metadata),
                    ),
                )
                again = again or (result.event is not None and result.event.type is EventType.HOOK_CONFLICT)
            except Conflict:
                pass
            if hook.hook_id in disposed:
                self._dispose(run.run_id, hook.hook_id)
        # 1b. child workflows: started, then their call's hook (client/lineage.py)
        self.lineage.start_children(run, outcome.new_children)
        if redispatch_tag is not None:
            new_children = set(outcome.new_children)
            self.lineage.reconcile_children(run, [c for c in outcome.open_children if c not in new_children])
        # 2. waits (steps are created by the dispatcher, in parallel with their messages)
        for wait in outcome.new_waits:
            with contextlib.suppress(Conflict):
                events.create(
                    run.run_id,
                    EventRequest(
                        EventType.WAIT_CREATED, wait.wait_id, WaitCreatedData(resume_at=wait.resume_at)
                    ),
                )
        due = [w for w in outcome.pending_waits if w.resume_at <= now]
        for wait in due:
            with contextlib.suppress(Conflict):
                events.create(run.run_id, EventRequest(EventType.WAIT_COMPLETED, wait.wait_id))
        # 3. dispatch
        end = self._dispatcher.dispatch(
            run,
            new_steps,
            outcome.undispatched_steps,
            redispatch_tag=redispatch_tag,
            after=after,
            retrying=outcome.retrying_steps,
        )
        later = [w for w in outcome.pending_waits if w.resume_at > now]
        self._wake_for(run.run_id, later, now, owner)
        return again or bool(due), end

    def _wake_for(self, run_id: str, waits: list[WaitRequest], now: datetime, owner: Owner | None) -> None:
        calls = []
        for w in waits:
            early = owner.message_id if owner is not None and owner.wakes == w.wait_id else None
            delay, key = _wake_timing(w.wait_id, (w.resume_at - now).total_seconds(), now, early=early)
            calls.append(partial(self.wake, run_id, delay_seconds=delay, key=key, wakes=w.wait_id))
        for result in run_parallel(self._pool, calls):
            if isinstance(result, Exception):
                raise result


def _wake_timing(wait_id: str, delay: float, now: datetime, *, early: str | None = None) -> tuple[float, str]:
    """The delay and idempotency key of a wait's wake-up message.

    Every pass of a sleeping run publishes its wake-up under the wait's own key,
    so they collapse into one message. But a wake-up handled early (the consumer's
    clock behind the producer's, by up to the five minutes SigV4 allows) finds its
    wait not yet due and must publish one more for the rest: under the wait's key
    that publish would be absorbed by the first one's retained key and the run
    would not wake until the reconciler. So the pass of a wait's own wake-up
    (``early``: its message id, ``InvokePayload.wakes``) keys the rest by that
    message (a redelivery of it collapses into the same one), and any short
    remainder gets a key of its own moment; both wait at least a second (SQS delays
    are whole seconds anyway), which takes them past the skew. Upstream keys short
    remainders the same way (vercel/workflow PR #1925).
    """
    if early is not None:
        return max(delay, 1.0), f"{wait_id}:wake:{early}"
    if delay > SHORT_WAKE_SECONDS:
        return delay, f"{wait_id}:wake"
    return max(delay, 1.0), f"{wait_id}:wake:{epoch_ms(now)}"


def is_running(run: Run) -> bool:
    return run.status is RunStatus.RUNNING
