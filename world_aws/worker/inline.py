"""Inline step execution: the invocation that continues a run runs its ready steps itself.

A continuation that reaches a suspension with new steps runs up to
``max_inline_steps`` of them in this invocation, in parallel, instead of
publishing a message per step; the orchestrator then replays again and goes on,
until the run ends or waits (a sleep, a hook, a wider fan-out's dispatched
branches, a retry's delay) or the invocation's deadline comes near. Each inline
step is *owned* by the delivery that runs it: its ``step_created`` names the
owner (``Owner.tag``) and also starts it, so an inline step
costs two events (created, outcome) and no message, no claim, no marker.

Ownership (who may start an inline step's body):
* a continuation of another delivery (a wake, a hook's resume, a reconciler's
  pass, a step message's last completer) leaves an owned step alone while its
  owner may still run it: for ``inline_lease_seconds`` after the owner's write, or
  after its last renewal (a live owner renews while its bodies run, ``runtime/leases.py``);
* the owner's own message, delivered again (a higher receive count), means the
  invocation that ran the body is gone (its heartbeat hid the message for as long
  as it lived, ``aws/queue/heartbeat.py``; a redelivery comes only once it stopped): it starts the step again
  (``step_started`` naming itself: a new attempt); so does the fresh message a
  continuation that failed after progress handed the run on to (``Owner.predecessor``);
* past the lease anyone may, for an owner whose message never comes back.
A failed attempt is retried by a delayed step message (``step_retrying`` with the
owner, then the publish, keyed by the attempt); if the owner died between the
two, the same rules re-publish it. Because the owner continues the run itself
after recording its outcomes, an owned step never counts for the last-completer
check of dispatched branches (``rules.counts_as_pending``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from operator import attrgetter
from typing import Any

from world_aws.client.parallel import run_parallel
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    ResolveData,
    Run,
    Step,
    StepCreatedData,
    StepStartedData,
    StepStatus,
)
from world_aws.contract.world import Delivery, World
from world_aws.engine import ids
from world_aws.engine.replay import OwnedStep, StepRequest, Suspended
from world_aws.errors import Conflict, RunExpired, Throttled, TooEarly, Transient
from world_aws.observe import telemetry, tracing
from world_aws.worker import stepbody
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.dispatch import StepDispatcher
from world_aws.worker.leases import LeaseKeeper, lease_end
from world_aws.worker.outcomes import OutcomeBatch, append_batches
from world_aws.workflow.registry import Workflows

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Owner:
    """The delivery a continuation runs for: who owns the inline steps it starts.

    Its ``tag`` (``<message id>#<receive count>#<handling>``) names the message, which
    delivery of it, and this handling of that delivery: SQS may hand one delivery to two
    consumers at once, and those two must not take each other's steps for their own.
    """

    message_id: str
    attempt: int
    deadline: datetime | None = None
    handling: str = field(default_factory=lambda: secrets.token_hex(4))
    # The delivery (``<message id>#<receive count>``) whose failed continuation handed the
    # run on to this message (``InvokePayload.succeeds``): it is gone like an earlier one of ours.
    predecessor: str | None = None
    # The wait this delivery's message is the wake-up of (``InvokePayload.wakes``).
    wakes: str | None = None

    @classmethod
    def of(cls, delivery: Delivery, predecessor: str | None = None, wakes: str | None = None) -> Owner:
        return cls(
            delivery.message_id, delivery.attempt, delivery.deadline, predecessor=predecessor, wakes=wakes
        )

    @property
    def tag(self) -> str:
        return f"{self.message_id}#{self.attempt}#{self.handling}"

    @property
    def delivery(self) -> str:
        """This delivery without its handling: what a hand-on names (``predecessor``)."""
        return f"{self.message_id}#{self.attempt}"

    def succeeds(self, tag: str) -> bool:
        """Whether ``tag`` names a delivery that is gone: an earlier one of this same message,
        or the predecessor's (or an earlier one of its message)."""
        delivery = _delivery_of(tag)
        if delivery is None:
            return False
        if delivery[0] == self.message_id and delivery[1] < self.attempt:
            return True
        before = _parse_delivery(self.predecessor) if self.predecessor else None
        return before is not None and delivery[0] == before[0] and delivery[1] <= before[1]

    def twin_of(self, tag: str) -> bool:
        """Whether ``tag`` names another handling of this very delivery (an SQS duplicate)."""
        return tag != self.tag and _delivery_of(tag) == (self.message_id, self.attempt)


@dataclass(slots=True)
class InlinePlan:
    """What a suspension pass runs here and what it dispatches."""

    create: list[StepRequest] = field(default_factory=list)  # new steps this delivery runs
    reclaim: list[OwnedStep] = field(default_factory=list)  # owned steps whose owner is gone
    adopt: list[OwnedStep] = field(default_factory=list)  # ours already, whose claim's answer was lost
    republish: list[OwnedStep] = field(default_factory=list)  # their retries, never published
    dispatch: list[StepRequest] = field(default_factory=list)  # new steps that go by message
    # Owned steps whose owner is gone, left to a step message (too little time to run them
    # here): published, never created again (they exist).
    handoff: list[StepRequest] = field(default_factory=list)
    # New steps past the inline ones that wait for them: the next round's if they are fast.
    held: list[StepRequest] = field(default_factory=list)

    @property
    def runs_steps(self) -> bool:
        return bool(self.create or self.reclaim or self.adopt)


@dataclass(frozen=True, slots=True)
class Hold:
    """Come back in ``seconds``, as a fresh wake-up of the run."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim of an inline step: the step when it is ours to run, and the event that claimed it."""

    step: Step | None
    request: StepRequest
    event: Event | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One inline attempt: the events it wrote (None if a write was refused), or its unwritten outcome."""

    written: list[Event] | None
    deferred: EventRequest | None = None

    @classmethod
    def of(cls, recorded: Event | str) -> Attempt:
        return cls([recorded] if isinstance(recorded, Event) else None)


@dataclass(frozen=True, slots=True)
class InlineRound:
    """What ``InlineSteps.run`` did: the steps whose body ran, and the events it wrote, by position.

    ``complete``: every claim and outcome write returned its event. When one was refused
    (a lost answer to a write that landed is refused on its retry), ``written`` may miss
    an event of ours already in the log.
    """

    ran: set[str] = field(default_factory=set)
    written: list[Event] = field(default_factory=list)
    complete: bool = False
    deferred: EventRequest | None = None  # a single step's outcome, left to the caller to write
    ended: bool = False  # the outcome was written with the run's end (``worker/pipeline.py``)
    # A body ran ``inline_fast_seconds``: the held steps were dispatched (these, if that
    # went through).
    slow: bool = False
    dispatched: tuple[str, ...] = ()


class InlineSteps:
    """Plans and runs the inline part of a suspension pass."""

    def __init__(
        self, world: World, app: Workflows, dispatcher: StepDispatcher, config: RuntimeConfig, pool: Executor
    ) -> None:
        self._world = world
        self._app = app
        self._dispatcher = dispatcher
        self._config = config
        self._pool = pool
        self.leases = LeaseKeeper(world, config.inline_lease_seconds)

    @property
    def enabled(self) -> bool:
        return self._config.max_inline_steps > 0

    @property
    def first_width(self) -> int:
        """How many steps of a wave run inline in its first round (``max_inline_steps``)."""
        return self._config.max_inline_steps

    def plan(
        self,
        run_id: str,
        outcome: Suspended,
        owner: Owner | None,
        ran: AbstractSet[str] = frozenset(),
        *,
        width: int | None = None,
        published: AbstractSet[str] = frozenset(),
    ) -> InlinePlan:
        """Split ``outcome``'s new steps into inline and dispatched ones; find owned steps to take over.

        ``ran``: the steps whose body this continuation already ran. A step owned by this
        very delivery that is not among them was claimed here with a lost answer (the
        write landed, its retry was refused): it is ours to run. ``width``: a round of that
        many inline steps (else ``max_inline_steps``) whose new steps past it wait for it
        (``held``) instead of being dispatched, if ``inline_fast_seconds`` allows
        (ARCHITECTURE §5, "Fast rounds"). ``published``: steps this continuation sent a
        message for: one still new (its create failed, which resilient dispatch tolerates)
        is dispatched again, never run here, where that message's consumer would start it
        beside this delivery's body.
        """
        now = self._world.clock.now()
        leases = _Leases(self._world, run_id, self._config.inline_lease_seconds)
        plan = InlinePlan()
        shared = False  # another delivery may still run steps of this run inline
        for owned in outcome.owned_steps:
            if owner is not None and owned.owner == owner.tag:
                if not owned.retrying and owned.request.step_id not in ran:
                    plan.adopt.append(owned)
                continue
            if not self._owner_gone(owned, owner, now, leases):
                shared = True
                continue  # its owner may still be running it: leave it alone
            if owned.retrying:
                plan.republish.append(owned)
            else:
                plan.reclaim.append(owned)
        if owner is None or not self.time_left(owner):
            # No delivery to own them, or too little time: hand them all on by message.
            plan.dispatch = list(outcome.new_steps)
            plan.handoff = [owned.request for owned in plan.reclaim]
            plan.reclaim = []
            return plan
        if shared:
            # Another delivery runs steps of this run inline: it may have sent messages for
            # the new ones whose creates have not landed (resilient dispatch tolerates a
            # failed create), and a message's consumer starts a running step, so one created
            # here would run twice at once. By message they go under the same keys (a copy
            # of such a message collapses) and their creates are ensured.
            plan.dispatch = list(outcome.new_steps)
            return plan
        holding = width is not None and self._config.inline_fast_seconds > 0
        inline = width if width is not None and holding else self._config.max_inline_steps
        room = max(0, inline - len(plan.reclaim) - len(plan.adopt))
        sent = [s for s in outcome.new_steps if s.step_id in published] if published else []
        new = [s for s in outcome.new_steps if s.step_id not in published] if sent else outcome.new_steps
        # A step under flow control is never run inline: its attempts are admitted by the step
        # consumer (worker/admission.py), and waiting there holds no invocation.
        controlled = [s for s in new if self._flow_controlled(s.step_name)]
        if controlled:
            new = [s for s in new if not self._flow_controlled(s.step_name)]
        plan.create = list(new[:room])
        rest = list(new[room:])
        if holding and plan.runs_steps:
            plan.held = rest
        else:
            plan.dispatch = rest
        plan.dispatch[:0] = sent + controlled
        return plan

    def _flow_controlled(self, step_name: str) -> bool:
        fn = self._app.get_step(step_name)
        return fn is not None and fn.options.flow_controlled

    def hold(self, run_id: str, outcome: Suspended, owner: Owner | None) -> Hold | None:
        """What to leave behind instead of a bare ack, if a step another delivery owns is still open.

        Acking would leave that step to its owner alone, and an owner can vanish without
        a redelivery: SQS may give one delivery to two consumers, and the one that acks
        need not be the one that died inside its inline step (or after creating it, its
        body never run). So something must come back when the first such step may be
        taken over (its lease's end: the owner's last write or renewal plus the lease,
        ``worker/leases.py``), reclaim whatever is still open then, or find the run
        moved on: a fresh wake-up then, this message acked. Not this message again: a
        long inline run would have it held round after round until its receive count
        reached the delivery cap, which fails the run (``WORKFLOW_MAX_QUEUE_DELIVERIES``);
        and its next receive would take a twin handling's steps over at once (an earlier
        delivery of its message), even from a twin that lives and renews.

        Steps waiting for their retry message are not held for (but a twin's are).
        """
        if owner is None:
            return None
        now = self._world.clock.now()
        leases = _Leases(self._world, run_id, self._config.inline_lease_seconds)
        left = [
            (leases.end(owned) - now).total_seconds()
            for owned in outcome.owned_steps
            # A retrying step waits for the message its owner published right after
            # step_retrying: holding for it would wake the run for nothing while it waits.
            if (not owned.retrying or owner.twin_of(owned.owner))
            and owned.owner != owner.tag
            and not self._owner_gone(owned, owner, now, leases)
        ]
        return Hold(max(1.0, math.ceil(min(left)))) if left else None

    def time_left(self, owner: Owner) -> bool:
        """Whether an inline step may still start before ``owner``'s invocation is stopped."""
        if not self.enabled:
            return False
        if owner.deadline is None:
            return True
        margin = timedelta(seconds=self._config.inline_margin_seconds)
        return self._world.clock.now() + margin < owner.deadline

    def run(
        self,
        run: Run,
        plan: InlinePlan,
        owner: Owner | None,
        *,
        defer: bool = False,
        after: int | None = None,
        start: EventRequest | None = None,
    ) -> InlineRound:
        """Re-publish lost retries, then claim and run ``plan``'s inline steps: which ran, what was written.

        A claim refused as a duplicate (another continuation's step, or our own whose answer
        was lost) runs nothing now: the next round's replay shows whose it is.
        ``defer``: see :meth:`run_claimed`. ``after``: the log's end when the pass wrote
        nothing else; then the creates go in ``events.append_after`` batches
        (:meth:`_append_creates`) instead of one write each (one create too: an append
        of it alone is one round trip, and on DynamoDB writes no step item, §8).
        ``start``: the pending run's ``run_started``, appended with the first creates
        (``after`` is then given), or written on its own first if that append fails.

        Raises:
            WorldAwsError: a claim or a write failed; the delivery is redelivered and its
                next attempt takes over whatever this one left owned.
        """
        for owned in plan.republish:
            self._publish_retry(run, owned.request, owned.attempt)
        if owner is None or not plan.runs_steps:
            if start is not None:
                start_run(self._world, run.run_id, start)
            return InlineRound()
        appended: list[Claim] = []
        one_by_one = plan.create
        started_event: list[Event] = []
        flush: Callable[[], None] | None = None
        if after is not None and plan.create:
            appended, one_by_one, started_event = self._append_creates(run, after, plan.create, owner, start)
            flush = partial(self._world.events.flush, run.run_id)
        elif start is not None:
            start_run(self._world, run.run_id, start)
        claims: list[Callable[[], Any]] = [partial(self._create, run, s, owner) for s in one_by_one]
        claims += [partial(self._reclaim, run, owned, owner) for owned in plan.reclaim]
        claims += [partial(self._adopt, run, owned) for owned in plan.adopt]
        claimed: list[Claim] = appended + _values(run_parallel(self._pool, claims))
        started = [(c.step, c.request) for c in claimed if c.step is not None]
        whole = len(started) == len(claimed)
        # Every claim wrote an event of ours: the log ends at the last one unless someone
        # else wrote meanwhile (then a batch of outcomes is refused and goes one by one).
        wrote = [c.event.position for c in claimed if c.event is not None]
        end = max(wrote) if whole and len(wrote) == len(claimed) else None
        bodies = self.run_claimed(
            run, started, owner, defer=defer and whole, after=end, beside=flush, held=plan.held
        )
        # A refused write may be our own that landed with its answer lost: then the log
        # holds an event of ours we do not know, and only a read shows it.
        return InlineRound(
            bodies.ran,
            sorted(
                started_event + [c.event for c in claimed if c.event is not None] + bodies.written,
                key=attrgetter("position"),
            ),
            bodies.complete and whole,
            bodies.deferred,
            slow=bodies.slow,
            dispatched=bodies.dispatched,
        )

    def run_claimed(
        self,
        run: Run,
        started: list[tuple[Step, StepRequest]],
        owner: Owner,
        *,
        defer: bool = False,
        after: int | None = None,
        beside: Callable[[], None] | None = None,
        held: Sequence[StepRequest] = (),
    ) -> InlineRound:
        """Run the bodies of steps this delivery holds (running, owned by it) and record their outcomes.

        ``defer`` with a single step: its completion or failure is not written but returned
        (``InlineRound.deferred``) for the caller to append with what the workflow does
        next (``Orchestrator``, "pipelined outcome" in ARCHITECTURE §5). With several and
        ``after`` (where the log ends once they were claimed), their completions and
        failures are appended in batches as they finish (``worker/outcomes.py``). A retry
        is always written alone (its message follows it). ``beside``: a call run in
        parallel with the bodies (``events.flush`` of the append that claimed them); it
        never fails the round (what it could not do, the run's next append does).
        ``held``: new steps waiting for these bodies; dispatched once one body has run
        ``inline_fast_seconds`` (the round is then ``slow``).
        """
        batch = (
            OutcomeBatch(self._world, run.run_id, after) if len(started) > 1 and after is not None else None
        )
        defer = defer and len(started) == 1
        waiting = _Waiting(self._dispatcher, run, list(held), self._config.inline_fast_seconds, len(started))
        attempts: list[Callable[[], Attempt]] = []
        for step, request in started:
            if not held:
                attempts.append(partial(self._attempt, run, step, request, owner, defer, batch))
                continue
            begun, ended = waiting.body()
            attempt = partial(self._attempt, run, step, request, owner, defer, batch, (begun, ended))
            attempts.append(partial(_then, attempt, ended))
        asides = [call for call in (beside, waiting.watch if held else None) if call is not None]
        try:
            # The first body on this thread; the calls beside it submitted next, so that
            # they start at once even when the bodies fill the pool.
            first = attempts[:1]
            with self.leases.holding(run.run_id, owner.tag):
                results = run_parallel(self._pool, [*first, *asides, *attempts[1:]])
            for aside in results[len(first) : len(first) + len(asides)]:
                if isinstance(aside, Exception):
                    logger.warning("run %s: a call beside the bodies failed: %r", run.run_id, aside)
            outcomes: list[Attempt] = _values(results[: len(first)] + results[len(first) + len(asides) :])
        except BaseException:
            if batch is not None:
                # The finished siblings' outcomes are written before the failure goes on
                # (as they were when each wrote its own): their bodies need not run again.
                with contextlib.suppress(Exception):
                    batch.flush()
            raise
        written = [e for out in outcomes if out.written for e in out.written]
        complete = all(out.written is not None for out in outcomes)
        if batch is not None:
            batched, landed = batch.flush()
            written += batched
            complete = complete and landed
        deferred = next((out.deferred for out in outcomes if out.deferred is not None), None)
        return InlineRound(
            {step.step_id for step, _ in started},
            sorted(written, key=attrgetter("position")),
            complete,
            deferred,
            slow=waiting.fired,
            dispatched=tuple(s.step_id for s in held) if waiting.sent else (),
        )

    # --- internals ------------------------------------------------------------------

    def _owner_gone(self, owned: OwnedStep, owner: Owner | None, now: datetime, leases: _Leases) -> bool:
        if owner is not None and owner.succeeds(owned.owner):
            return True
        return leases.end(owned) <= now

    # A claim that fails with Transient or Throttled runs nothing now, like a refused one:
    # the next round's replay shows whether it landed (then the step is ours to adopt) or
    # not (then it is claimed again). Failing the delivery instead would throw away the
    # whole wave's claims for one error: a wide wave would make no progress under a
    # steady rate of transient errors (the chaos suite's wide fan-outs, ARCHITECTURE §6).

    def _create(self, run: Run, request: StepRequest, owner: Owner) -> Claim:
        try:
            result = self._world.events.create(run.run_id, owned_create(request, owner))
        except (Conflict, RunExpired, Throttled, Transient):
            return Claim(None, request)  # another continuation has it, the run ended, or see above
        return Claim(result.step, request, result.event)

    def _append_creates(
        self, run: Run, after: int, creates: list[StepRequest], owner: Owner, start: EventRequest | None
    ) -> tuple[list[Claim], list[StepRequest], list[Event]]:
        """A wave's owned creates appended after ``after``, ``rules.MAX_BATCH_EVENTS`` at a time.

        Returns the claims of the batches that landed, the creates left to write one
        by one: all after the first batch that did not land (the log moved: the one-by-one
        creates judge each step) or whose answer was lost (then a create that landed is
        refused as a duplicate, and the next round's replay shows it ours to adopt), and
        ``start``'s event if it went first in the first batch. If that batch did not land,
        ``start`` is written on its own before any create (a landed one makes it a no-op).
        """
        requests = [owned_create(s, owner) for s in creates]
        # Their bodies follow: the last append's housekeeping is flushed beside them (run_claimed).
        results, _end = append_batches(self._world, run.run_id, after, requests, lead=start, flush_later=True)
        started: list[Event] = []
        if start is not None and not results:
            start_run(self._world, run.run_id, start)
        elif start is not None:
            first, *results = results
            started = [first.event] if first.event is not None else []
        claims = [Claim(r.step, s, r.event) for r, s in zip(results, creates, strict=False)]
        return claims, creates[len(results) :], started

    def _reclaim(self, run: Run, owned: OwnedStep, owner: Owner) -> Claim:
        """A new attempt of a step whose owner is gone, refused unless it still runs the attempt the
        replay saw (``takes_over``): of two deliveries that take it over at once, one runs it."""
        request = owned.request
        data = StepStartedData(step_name=request.step_name, owner=owner.tag, takes_over=owned.attempt)
        try:
            result = self._world.events.create(
                run.run_id, EventRequest(EventType.STEP_STARTED, request.step_id, data)
            )
        except (Conflict, RunExpired, TooEarly, Throttled, Transient):
            # Settled, taken over by another, handed to a retry message, the run ended, or above.
            return Claim(None, request)
        return Claim(result.step, request, result.event)

    def _adopt(self, run: Run, owned: OwnedStep) -> Claim:
        try:
            step = self._world.steps.get(run.run_id, owned.request.step_id, resolve_data=ResolveData.NONE)
        except (Throttled, Transient):
            return Claim(None, owned.request)
        if step.status is not StepStatus.RUNNING:
            return Claim(None, owned.request)
        return Claim(step, owned.request)

    def _attempt(
        self,
        run: Run,
        step: Step,
        request: StepRequest,
        owner: Owner,
        defer: bool,
        batch: OutcomeBatch | None = None,
        timed: tuple[Callable[[], None], Callable[[], None]] | None = None,
    ) -> Attempt:
        """One attempt of an owned step and its outcome's write (``defer``: returned; ``batch``: added).

        ``timed``: told when the body starts, and when it has returned or raised (before its
        outcome is written).
        """
        with tracing.inline_step_span(step):  # the attempt and its writes
            if timed is not None:
                timed[0]()
            try:
                outcome = stepbody.run_step_body(
                    self._world, self._app, step, request.input, deadline=owner.deadline, started_inline=True
                )
            finally:
                if timed is not None:
                    timed[1]()
            tracing.record_step_outcome(outcome.etype)
            if outcome.etype is not EventType.STEP_RETRYING:
                settled = stepbody.outcome_request(step, outcome, owner.tag)
                if defer:
                    return Attempt([], settled)
                if batch is not None:
                    batch.add(settled)
                    return Attempt([])
                return Attempt.of(stepbody.record(self._world, run.run_id, settled))
            delay = stepbody.retry_delay(outcome, step.attempt)
            retrying = stepbody.retrying_request(self._world, step, outcome, delay, owner.tag)
            recorded = stepbody.record(self._world, run.run_id, retrying)
            if recorded == "gone":
                return Attempt(None)
            if recorded == "skipped":
                # Refused: the step is no longer running. A lost answer to our own write looks
                # the same (it landed; its in-process retry was refused): pending means ours.
                current = self._world.steps.get(run.run_id, step.step_id, resolve_data=ResolveData.NONE)
                if current.status is not StepStatus.PENDING:
                    return Attempt(None)
            self._publish_retry(run, request, step.attempt, delay)
            return Attempt.of(recorded)

    def _publish_retry(self, run: Run, request: StepRequest, attempt: int, delay: float = 0) -> None:
        """The message of the next attempt (keyed by the failed one, so re-publishes collapse)."""
        seconds = max(1.0, float(math.ceil(delay)))
        self._dispatcher.publish(
            run, request, with_input=False, delay_seconds=seconds, key_tag=ids.retry_key_tag(attempt)
        )
        telemetry.LOG.info(
            "inline step retrying by message",
            extra={"run_id": run.run_id, "step_id": request.step_id, "attempt": attempt},
        )


# Threads of the pool a slow round's watcher dispatches its held steps on.
HELD_DISPATCH_THREADS = 8
# How long the watcher waits at most between looks while no body has started.
WATCH_IDLE_SECONDS = 1.0


class _Waiting:
    """The held steps of a round: dispatched once one of its bodies has run ``seconds``.

    ``watch`` runs beside the bodies (``InlineSteps.run_claimed``). Each body tells when
    it starts and ends (``body``): the user's code is timed, not a body's wait for a
    pool thread nor the outcome writes after it (an attempt that never reached its body
    ends when it returns). The watcher returns when every body has ended, or fires when
    a running body has run ``seconds``. ``fired`` is set before the dispatch: a dispatch
    that fails still ends the holding (the next pass finds the steps new, or created
    without a message, and dispatches them); ``sent`` once it returned.
    """

    def __init__(
        self, dispatcher: StepDispatcher, run: Run, held: list[StepRequest], seconds: float, bodies: int
    ) -> None:
        self._dispatcher = dispatcher
        self._run = run
        self._held = held
        self._seconds = seconds
        self._bodies = bodies
        self._running: dict[int, float] = {}  # body -> when it started (monotonic)
        self._ended: set[int] = set()
        self._tokens = 0
        self._changed = threading.Condition()
        self.fired = False
        self.sent = False

    def body(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """What one body calls when it starts and when it ends (an end counts once)."""
        with self._changed:
            self._tokens += 1
            token = self._tokens

        def started() -> None:
            with self._changed:
                if token not in self._ended:
                    self._running[token] = time.monotonic()
                    self._changed.notify_all()

        def ended() -> None:
            with self._changed:
                if token not in self._ended:
                    self._ended.add(token)
                    self._running.pop(token, None)
                    self._changed.notify_all()

        return started, ended

    def _slow(self) -> bool:
        """Wait until every body ended (False) or one has run ``seconds`` (True)."""
        with self._changed:
            while len(self._ended) < self._bodies:
                now = time.monotonic()
                if self._running:
                    oldest = min(self._running.values())
                    if now - oldest >= self._seconds:
                        return True
                    self._changed.wait(oldest + self._seconds - now)
                else:
                    self._changed.wait(WATCH_IDLE_SECONDS)  # bodies still waiting for threads
            return False

    def watch(self) -> None:
        if not self._slow():
            return
        self.fired = True
        telemetry.LOG.info(
            "inline round slow: dispatching the steps it held",
            extra={"run_id": self._run.run_id, "steps": len(self._held)},
        )
        # On a pool of its own: the slow bodies may fill the runtime's, and the held
        # steps must not wait for them.
        with ThreadPoolExecutor(HELD_DISPATCH_THREADS, thread_name_prefix="held-dispatch") as pool:
            self._dispatcher.on(pool).dispatch(self._run, self._held, [])
        self.sent = True


class _Leases:
    """When owned steps' leases end, for one pass: the log's write, or the owner's renewal.

    The renewal is read (``steps.lease``) only for a step whose write is older than the
    lease, once per owner; a read that fails counts as a renewal now (the step is left
    alone, and looked at again by the next wake-up).
    """

    def __init__(self, world: World, run_id: str, lease_seconds: float) -> None:
        self._world = world
        self._run_id = run_id
        self._seconds = lease_seconds
        self._renewed: dict[str, datetime | None] = {}

    def end(self, owned: OwnedStep) -> datetime:
        written = lease_end(owned.since, None, self._seconds)
        if written > self._world.clock.now():
            return written
        if owned.owner not in self._renewed:
            try:
                self._renewed[owned.owner] = self._world.steps.lease(self._run_id, owned.owner)
            except (Throttled, Transient):
                return self._world.clock.now() + timedelta(seconds=self._seconds / 3)
        return lease_end(owned.since, self._renewed[owned.owner], self._seconds)


def _then(call: Callable[[], Attempt], after: Callable[[], None]) -> Attempt:
    try:
        return call()
    finally:
        after()


def creates_only(outcome: Suspended, plan: InlinePlan, *, dispatched: bool = False) -> bool:
    """Whether the pass of ``outcome`` under ``plan`` writes nothing but inline steps' creates.

    ``dispatched``: or dispatched steps' creates too (their messages are not log writes).
    """
    return not (
        outcome.new_hooks
        or outcome.disposed_hooks
        or outcome.new_children
        or outcome.new_waits
        or outcome.pending_waits
        or outcome.undispatched_steps
        or (plan.dispatch and not dispatched)
        or plan.reclaim
        or plan.handoff
        or plan.adopt
        or plan.republish
    )


def start_run(world: World, run_id: str, start: EventRequest) -> int | None:
    """Write a pending run's ``run_started`` on its own, before anything else of its continuation.

    Returns:
        Its position (None if the World wrote no event: a start that had landed).

    Raises:
        RunExpired: the run ended before it started (cancelled while pending): nothing to do.
    """
    try:
        result = world.events.create(run_id, start)
    except Conflict:
        raise RunExpired(f"run {run_id} ended before it started") from None
    return result.event.position if result.event is not None else None


def owned_create(step: StepRequest, owner: Owner) -> EventRequest:
    """The ``step_created`` of an inline step: owned (and so started) by ``owner``'s delivery."""
    data = StepCreatedData(step_name=step.step_name, input=step.input, owner=owner.tag)
    return EventRequest(EventType.STEP_CREATED, step.step_id, data)


def _delivery_of(tag: str) -> tuple[str, int] | None:
    """The message id and receive count an owner tag names (None if it is not one)."""
    delivery, sep, _handling = tag.rpartition("#")
    return _parse_delivery(delivery) if sep else None


def _parse_delivery(text: str) -> tuple[str, int] | None:
    """The message id and receive count of ``<message id>#<receive count>`` (``Owner.delivery``)."""
    message_id, sep, count = text.rpartition("#")
    if not sep or not count.isdigit():
        return None
    return message_id, int(count)


def _values(results: list[Any]) -> list[Any]:
    """The results of ``run_parallel``, raising the first exception after all calls have ended."""
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results
