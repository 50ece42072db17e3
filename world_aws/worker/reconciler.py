"""The reconciler: defence in depth, so that a run can be late after a bug but never lost.

Every non-terminal run should always have something durable that moves it on (a
message in flight, a delayed wake-up, a retry). If a bug breaks that, the run
goes silent: it takes no new position in its log. Each tick (an EventBridge
schedule on AWS, a background thread locally) the reconciler:

0. sweeps the runs created since the last sweep, up to ``sweep_lag_seconds`` ago
   (``runs.sweep_created``), into the live index if they are still going: a run is
   not put there at its creation, so the usual run, which ends within minutes, never
   writes the index; one whose first message never came is found here;
1. lists the live runs whose reconcile mark is older than ``after_seconds``
   (``runs.list_live``: one index Query and one BatchGetItem, at most
   ``max_runs_per_tick`` runs; the index holds only non-terminal runs);
2. for a run that progressed since (its last event is younger than
   ``after_seconds``) moves the mark to that progress, so it is looked at again
   only ``after_seconds`` after it; a run that finishes in time is never looked at;
3. wakes a silent run with a workflow message, as any continuation does: its
   replay re-runs the suspension pass, which completes due waits, re-publishes
   wake-ups, and re-publishes the steps created but never started, or finishes
   the run. The message carries a ``reconcile_tag``: those steps are re-published
   under their key plus the tag, since a first message lost *after* its send
   leaves its own key retained (24 h) and a plain re-publish would be absorbed.

Backoff, so that a run silent on purpose (sleeping or waiting on a hook for days)
stays cheap: the wakes of one silence (counted from its last event, at T =
``after_seconds``) fall at T, 2T, 4T, ... (gaps doubling up to
``max_backoff_seconds``, then constant); the n-th is keyed
``<run_id>:reconcile:<last event, epoch ms>:<n>``, so two ticks (or two
reconcilers) in the same bucket publish one message, and the mark is moved to
the next bucket. A tick that fails to move a mark wakes the run again under the
same key: the queue collapses it.

A sleeper's wake-up lost when due would wait for the next bucket (the 6-hour sleep's
at 640 min): so a run whose last wait is due before its next bucket
(``LiveRun.due_at``, noted by ``wait_created``) is marked at that due time instead,
looked at T after it, and that wake's key adds ``:due`` (the bucket may have been
woken before, under its plain key).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from world_aws.contract.clock import epoch_ms
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import RunStatus
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import LiveRun, QueueName, World
from world_aws.errors import Misconfigured, WorldAwsError
from world_aws.observe.telemetry import LOG
from world_aws.worker.config import ReconcilerConfig
from world_aws.worker.holding import Release, release_held
from world_aws.workflow.retention import ExpirySweep, sweep_expired


@dataclass(frozen=True, slots=True)
class Repair:
    """One run woken by the reconciler."""

    run_id: str
    status: RunStatus
    idle_seconds: float
    bucket: int
    key: str
    message_id: str


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one tick did: runs looked at, woken, re-marked (they had progressed), and failed."""

    looked_at: int = 0
    woken: list[Repair] = field(default_factory=list)
    remarked: int = 0
    failed: int = 0
    swept: int = 0
    # Held runs (worker/holding.py): released onto this deployment, and still held here.
    released: list[str] = field(default_factory=list)
    held: int = 0
    # Ended runs erased because their retention passed (workflow/retention.py).
    erased: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Where a silence falls in the wake schedule: bucket ``index``, from ``start`` to ``end`` of silence."""

    index: int
    start: timedelta
    end: timedelta


def bucket_of(idle: timedelta, after: timedelta, max_gap: timedelta) -> Bucket:
    """The wake bucket of a silence of ``idle`` (at least ``after``, T).

    Buckets are [T, 2T), [2T, 4T), ... while a bucket is narrower than ``max_gap``,
    then ``max_gap`` wide each: a run silent for a year with T = 10 min and a one-day
    cap is woken about 375 times, not 52,000.
    """
    index, start = 0, after
    while start < max_gap:
        if idle < 2 * start:
            return Bucket(index, start, 2 * start)
        index, start = index + 1, 2 * start
    extra = (idle - start) // max_gap
    begin = start + max_gap * extra
    return Bucket(index + extra, begin, begin + max_gap)


class Reconciler:
    """Finds silent non-terminal runs and wakes them; one ``tick()`` per schedule."""

    def __init__(
        self,
        world: World,
        config: ReconcilerConfig | None = None,
        *,
        on_repair: Callable[[Repair], None] | None = None,
    ) -> None:
        self._world = world
        self.config = config or ReconcilerConfig()
        self._after = timedelta(seconds=self.config.after_seconds)
        self._max_gap = timedelta(seconds=self.config.max_backoff_seconds)
        self._on_repair = on_repair

    def tick(self) -> TickReport:
        """Look at the live runs due and wake those that made no progress.

        Raises:
            WorldAwsError: the live index could not be read (the next tick tries again).
            Misconfigured: a table, index or queue is missing or refused, for any run:
                the deployment is wrong, not one run.
        """
        now = self._world.clock.now()
        release = self._release()
        sweep = self._world.runs.sweep_created(
            created_before=now - timedelta(seconds=self.config.sweep_lag_seconds),
            limit=self.config.max_sweep_runs,
        )
        if not sweep.caught_up:
            LOG.warning(
                "reconciler sweep read %d new runs and is behind; the next tick goes on", sweep.examined
            )
        due = self._world.runs.list_live(marked_before=now - self._after, limit=self.config.max_runs_per_tick)
        # A run the sweep just marked at an old progress is due now; the index may not show it yet.
        listed = {run.run_id for run in due}
        silent = [
            run for run in sweep.enrolled if run.run_id not in listed and now - run.progress_at >= self._after
        ]
        due += silent[: max(0, self.config.max_runs_per_tick - len(due))]  # the rest: next tick, by index
        woken: list[Repair] = []
        remarked = failed = 0
        for run in due:
            try:
                if now - run.progress_at < self._after:
                    # It progressed since its mark: look again T after that progress.
                    self._world.runs.mark_live(run.run_id, mark=run.progress_at)
                    remarked += 1
                    continue
                repair, next_mark = self._wake(run, now)
            except Misconfigured:
                raise
            except WorldAwsError as exc:
                failed += 1
                LOG.warning("reconciler could not handle run: %s", exc, extra={"run_id": run.run_id})
                continue
            woken.append(repair)
            try:
                self._world.runs.mark_live(run.run_id, mark=next_mark)
            except Misconfigured:
                raise
            except WorldAwsError as exc:
                # The next tick wakes it again, under the same key: the queue collapses the two.
                failed += 1
                LOG.warning("reconciler could not move a mark: %s", exc, extra={"run_id": run.run_id})
        expired = self._expire()
        return TickReport(
            erased=[erased.run_id for erased in expired.erased],
            looked_at=len(due),
            woken=woken,
            remarked=remarked,
            failed=failed,
            swept=sweep.examined,
            released=release.released,
            held=release.held,
        )

    def _expire(self) -> ExpirySweep:
        """Erase the ended runs whose retention passed (``workflow/retention.py``)."""
        if self.config.max_expired_runs <= 0:
            return ExpirySweep()
        try:
            return sweep_expired(self._world, limit=self.config.max_expired_runs)
        except Misconfigured:
            raise
        except WorldAwsError as exc:
            LOG.warning("reconciler could not list the expired runs: %s", exc)
            return ExpirySweep()

    def _release(self) -> Release:
        """Release the runs held on older code onto this deployment (``worker/holding.py``)."""
        try:
            return release_held(self._world)
        except Misconfigured:
            raise
        except WorldAwsError as exc:
            LOG.warning("reconciler could not release the held runs: %s", exc)
            return Release()

    def _wake(self, run: LiveRun, now: datetime) -> tuple[Repair, datetime]:
        """Publish the wake of ``run``'s bucket; the repair, and the mark that schedules the next look."""
        idle = now - run.progress_at
        bucket = bucket_of(idle, self._after, self._max_gap)
        # The tag re-keys the continuation's re-publish of steps created but never started: if
        # a first message was only late, not lost, that is one more delivery of the step, which
        # at-least-once delivery allows (the step keeps one outcome).
        tag = f"reconcile:{epoch_ms(run.progress_at)}:{bucket.index}"
        # The wait this silence sleeps on (created at its start or before; one due before
        # the silence began was completed or is the silence's own stall, woken as any).
        due = run.due_at if run.due_at is not None and run.due_at > run.progress_at else None
        if due is not None and now >= due + self._after > run.progress_at + bucket.start:
            tag += ":due"  # the look after the due time, in a bucket perhaps woken before it
        key = f"{run.run_id}:{tag}"
        body = encode_payload(InvokePayload(run_id=run.run_id, requested_at=now, reconcile_tag=tag))
        message_id = self._world.queue.publish(QueueName.WORKFLOW, body, idempotency_key=key)
        repair = Repair(run.run_id, run.status, idle.total_seconds(), bucket.index, key, message_id)
        LOG.warning(
            "reconciler woke a run with no progress for %.0f s",
            repair.idle_seconds,
            extra={"run_id": run.run_id, "status": run.status.value, "bucket": bucket.index, "key": key},
        )
        if self._on_repair is not None:
            self._on_repair(repair)
        # The mark is "T before the next look": looked at again when the next bucket begins,
        # or T after the wait is due if that is sooner.
        next_mark = run.progress_at + bucket.end - self._after
        if due is not None and now < due + self._after and due < next_mark:
            next_mark = due
        return repair, next_mark
