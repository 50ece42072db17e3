"""The read-side stores of the in-memory World: runs, steps, hooks and waits.

Entities change only through ``events.create`` (:mod:`memory_events`); these
classes read the shared :class:`MemoryState` under its lock and hand out
detached copies, with payloads left out when asked for ``ResolveData.NONE``.
"""

from __future__ import annotations

import base64
import binascii
import builtins
from dataclasses import replace
from datetime import datetime

from world_aws.contract.records import Blocked, Event, Hook, ResolveData, Run, RunStatus, Step, Wait
from world_aws.contract.rules import resumed_by
from world_aws.contract.world import LiveRun, RunPage, Sweep
from world_aws.errors import BadInput, NotFound
from world_aws.local.memory_state import MemoryState, RunRecord, event_out, run_out, step_out
from world_aws.local.memory_stats import Stat, WorldStats

_CURSOR_PREFIX = "mem2:"


class _Reader:
    def __init__(self, state: MemoryState, stats: WorldStats) -> None:
        self._state = state
        self._stats = stats

    def _record(self, run_id: str) -> RunRecord:
        record = self._state.runs.get(run_id)
        if record is None:
            raise NotFound(f"run {run_id} not found")
        return record


class MemoryRunStore(_Reader):
    """``runs.get`` / ``runs.list``."""

    def get(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        """The run. Raises NotFound."""
        self._stats.incr(Stat.RUN_READS)
        with self._state.lock:
            return run_out(self._record(run_id).run, resolve_data)

    def claim_continuation(self, run_id: str, *, after: int, claimer: str) -> Run | None:
        """Claim the continuation after the outcome at ``after`` (see ``RunStore``). Raises NotFound."""
        self._stats.incr(Stat.RUN_READS)
        with self._state.lock:
            record = self._record(run_id)
            last = record.continuation
            if last is not None and last[0] >= after and last[1] != claimer:
                return None
            covered = record.events[-1].position if record.events else 0
            record.continuation = (covered, claimer)
            return run_out(record.run, ResolveData.ALL)

    def list_live(self, *, marked_before: datetime, limit: int) -> builtins.list[LiveRun]:
        """Non-terminal runs marked before ``marked_before``, earliest mark first (see ``RunStore``)."""
        self._stats.incr(Stat.RUN_LISTS)
        if limit < 1:
            raise BadInput(f"limit must be at least 1, not {limit}")
        with self._state.lock:
            live = [
                LiveRun(r.run.run_id, r.run.status, r.events[-1].created_at, r.mark, r.due_at)
                for r in self._state.runs.values()
                if r.mark is not None and r.mark < marked_before
            ]
        return sorted(live, key=lambda run: (run.mark, run.run_id))[:limit]

    def mark_live(self, run_id: str, *, mark: datetime) -> bool:
        """Mark a non-terminal run, entering it in the live index; False if it ended or is missing."""
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is None or record.run.status.terminal:
                return False
            record.mark = mark
            return True

    def sweep_created(self, *, created_before: datetime, limit: int) -> Sweep:
        """Mark the runs still going created before ``created_before`` past the cursor (see ``RunStore``)."""
        self._stats.incr(Stat.RUN_LISTS)
        if limit < 1:
            raise BadInput(f"limit must be at least 1, not {limit}")
        with self._state.lock:
            cursor = self._state.sweep_cursor
            past = sorted(
                (
                    r
                    for r in self._state.runs.values()
                    if r.run.created_at < created_before
                    and (cursor is None or (r.run.created_at, r.run.run_id) > cursor)
                ),
                key=lambda r: (r.run.created_at, r.run.run_id),
            )
            read = past[:limit]
            enrolled: builtins.list[LiveRun] = []
            for record in read:
                if record.run.status.terminal or record.mark is not None:
                    continue
                progress = record.events[-1].created_at
                record.mark = progress
                run = record.run
                enrolled.append(LiveRun(run.run_id, run.status, progress, progress, record.due_at))
            if read:
                self._state.sweep_cursor = (read[-1].run.created_at, read[-1].run.run_id)
        return Sweep(examined=len(read), enrolled=enrolled, caught_up=len(read) == len(past))

    def count_live(self, deployment_id: str) -> int:
        """How many runs not yet ended are pinned to ``deployment_id`` (held runs aside)."""
        self._stats.incr(Stat.RUN_LISTS)
        with self._state.lock:
            return sum(
                1
                for r in self._state.runs.values()
                if r.run.deployment_id == deployment_id and not r.run.status.terminal and not r.run.held
            )

    def hold(self, run_id: str, blocked: Blocked) -> bool:
        """Mark a running run held; False unless it is running."""
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is None or record.run.status is not RunStatus.RUNNING:
                return False
            record.run = replace(record.run, blocked=blocked)
            return True

    def release(self, run_id: str, *, deployment_id: str) -> bool:
        """Pin a held run to ``deployment_id``, marked released there; False unless it is held."""
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is None or not record.run.held:
                return False
            assert record.run.blocked is not None
            blocked = replace(record.run.blocked, released_to=deployment_id)
            record.run = replace(record.run, deployment_id=deployment_id, blocked=blocked)
            return True

    def unblock(self, run_id: str) -> None:
        """Clear a released run's mark."""
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is not None and record.run.blocked is not None and not record.run.blocked.held:
                record.run = replace(record.run, blocked=None)

    def list_blocked(self, *, limit: int = 100) -> builtins.list[Run]:
        """The held runs, oldest hold first, without their input."""
        self._stats.incr(Stat.RUN_LISTS)
        if limit < 1:
            raise BadInput(f"limit must be at least 1, not {limit}")
        with self._state.lock:
            held = [run_out(r.run, ResolveData.NONE) for r in self._state.runs.values() if r.run.held]
        return sorted(
            held, key=lambda run: (run.blocked.since if run.blocked else run.created_at, run.run_id)
        )[:limit]

    def list(
        self,
        *,
        status: RunStatus | None = None,
        workflow_name: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RunPage:
        """Runs newest first (by creation time, then run id, as the DynamoDB World's index
        sorts them), filtered; ``cursor`` continues a previous page.

        Raises:
            BadInput: ``limit`` below 1, or a cursor this store did not make.
        """
        self._stats.incr(Stat.RUN_LISTS)
        if limit < 1:
            raise BadInput(f"limit must be at least 1, not {limit}")
        before = _decode_cursor(cursor) if cursor is not None else None
        with self._state.lock:
            records = sorted(self._state.runs.values(), key=_listed_by, reverse=True)
            matching = [
                record
                for record in records
                if (before is None or _listed_by(record) < before)
                and (status is None or record.run.status is status)
                and (workflow_name is None or record.run.workflow_name == workflow_name)
            ]
            page = matching[:limit]
            runs = [run_out(record.run) for record in page]
        more = len(matching) > limit
        return RunPage(runs=runs, cursor=_encode_cursor(_listed_by(page[-1])) if more else None)


def _listed_by(record: RunRecord) -> tuple[datetime, str]:
    """A run's place in ``runs.list``: its creation time, then its id (both newest first)."""
    return record.run.created_at, record.run.run_id


def _encode_cursor(place: tuple[datetime, str]) -> str:
    created_at, run_id = place
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{created_at.isoformat()}#{run_id}".encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith(_CURSOR_PREFIX):
            raise ValueError(cursor)
        created_at, run_id = text.removeprefix(_CURSOR_PREFIX).split("#", 1)
        return datetime.fromisoformat(created_at), run_id
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise BadInput(f"not a runs.list cursor: {cursor!r}") from exc


class MemoryStepStore(_Reader):
    """``steps.get`` / ``steps.list``."""

    def get(self, run_id: str, step_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Step:
        """The step. Raises NotFound (run or step missing)."""
        self._stats.incr(Stat.STEP_READS)
        with self._state.lock:
            step = self._record(run_id).steps.get(step_id)
            if step is None:
                raise NotFound(f"step {step_id} not found in run {run_id}")
            return step_out(step, resolve_data)

    def list(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> builtins.list[Step]:
        """Every step of the run in creation order; an unknown run gives ``[]``."""
        self._stats.incr(Stat.STEP_LISTS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            steps = builtins.list(record.steps.values()) if record is not None else []
        return [step_out(step, resolve_data) for step in steps]

    def any_pending(self, run_id: str, *, besides: str | None = None) -> bool:
        """Whether a step of the run other than ``besides`` has no outcome yet."""
        self._stats.incr(Stat.STEP_PENDING_CHECKS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is None:
                return False
            # At most two looks: the first id is either ``besides`` or the answer.
            return any(step_id != besides for step_id in record.pending_steps)

    def renew_lease(self, run_id: str, owner: str, *, at: datetime) -> None:
        """Record ``owner``'s renewal at ``at`` (an unknown run keeps nothing)."""
        self._stats.incr(Stat.LEASE_RENEWALS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is not None:
                record.leases[owner] = at

    def lease(self, run_id: str, owner: str) -> datetime | None:
        """When ``owner`` last renewed (None: never, or an unknown run)."""
        self._stats.incr(Stat.LEASE_READS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            return record.leases.get(owner) if record is not None else None


class MemoryHookStore(_Reader):
    """``hooks.get_by_token`` / ``hooks.list``: live hooks only."""

    def get_by_token(self, token: str) -> Hook:
        """The live hook holding ``token``. Raises NotFound."""
        self._stats.incr(Stat.HOOK_READS)
        with self._state.lock:
            holder = self._state.tokens.get(token)
            hook = None
            if holder is not None:
                hook = self._state.runs[holder[0]].hooks.get(holder[1])
            if hook is None:
                raise NotFound(f"no live hook holds token {token!r}")
            return hook

    def resumed(self, token: str, resume_id: str) -> Event | None:
        """The resume ``resume_id`` of the token's last holder, live or not (see ``HookStore``)."""
        self._stats.incr(Stat.HOOK_READS)
        with self._state.lock:
            holder = self._state.last_holders.get(token)
            if holder is None:
                return None
            event = self._state.runs[holder[0]].resumes.get(resume_id)
            if event is None or not resumed_by(event, token, holder[1]):
                return None
            return event_out(event, ResolveData.NONE)

    def list(self, run_id: str) -> builtins.list[Hook]:
        """The live hooks of a run, in creation order; an unknown run gives ``[]``."""
        self._stats.incr(Stat.HOOK_LISTS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            return builtins.list(record.hooks.values()) if record is not None else []


class MemoryWaitStore(_Reader):
    """``waits.get`` / ``waits.list``."""

    def get(self, run_id: str, wait_id: str) -> Wait:
        """The wait. Raises NotFound (run or wait missing)."""
        self._stats.incr(Stat.WAIT_READS)
        with self._state.lock:
            wait = self._record(run_id).waits.get(wait_id)
            if wait is None:
                raise NotFound(f"wait {wait_id} not found in run {run_id}")
            return wait

    def list(self, run_id: str) -> builtins.list[Wait]:
        """Every wait of the run in creation order; an unknown run gives ``[]``."""
        self._stats.incr(Stat.WAIT_LISTS)
        with self._state.lock:
            record = self._state.runs.get(run_id)
            return builtins.list(record.waits.values()) if record is not None else []
