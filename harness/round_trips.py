"""What each World operation costs on AWS: DynamoDB reads, writes, transactions and S3 calls.

Every event type (and a few rejections and reads) as a scenario against the AWS World on
in-process moto, its API calls counted through botocore's event hooks (``before-call.*.*``
on the World's own clients). ``tests/aws/test_event_plans.py`` checks each against its write
plan; ``python -m bench.world_ops`` prints them as a markdown table.

The counts are the design's round trips, not timings: moto's speed says nothing
about DynamoDB's. Reads are GetItem, BatchGetItem and Query calls; writes are
PutItem, UpdateItem and DeleteItem; transactions are TransactWriteItems.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import Clock
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.records import (
    EventType,
    PatchAppliedData,
    RunCreatedData,
    RunStartedData,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    WaitCreatedData,
    patch_correlation_id,
)
from world_aws.errors import WorldAwsError
from world_aws.testing.conformance.appended import OWNER
from world_aws.testing.conformance.support import (
    STEP,
    create_hook,
    create_run,
    create_step,
    creation,
    end_run,
    new_id,
    receive_hook,
    running_step,
    start_step,
    write,
)

READS = frozenset({"GetItem", "BatchGetItem", "Query"})
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
TRANSACTIONS = frozenset({"TransactWriteItems"})


@dataclass(frozen=True, slots=True)
class Cost:
    reads: int
    writes: int
    transactions: int
    s3: int
    outcome: str

    @property
    def round_trips(self) -> int:
        return self.reads + self.writes + self.transactions + self.s3


class CallCounter:
    """Counts API calls made by the World's DynamoDB and S3 clients."""

    def __init__(self, world: AwsWorld) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        for client in (world.clients.dynamodb, world.clients.s3):
            client.meta.events.register("before-call.*.*", self._count)

    def _count(self, event_name: str, **_: Any) -> None:
        _hook, service, operation = event_name.split(".", 2)
        self.calls[(service, operation)] += 1

    @contextmanager
    def measure(self) -> Iterator[Counter[tuple[str, str]]]:
        before = Counter(self.calls)
        taken: Counter[tuple[str, str]] = Counter()
        try:
            yield taken
        finally:
            taken.update(self.calls - before)


def cost_of(counter: CallCounter, operation: Callable[[], object]) -> Cost:
    """Run ``operation`` once and count what it called; a world-aws error is an outcome, not a failure."""
    with counter.measure() as calls:
        try:
            operation()
            outcome = "ok"
        except WorldAwsError as exc:
            outcome = type(exc).__name__
    ddb = {op: n for (service, op), n in calls.items() if service == "dynamodb"}
    return Cost(
        reads=sum(n for op, n in ddb.items() if op in READS),
        writes=sum(n for op, n in ddb.items() if op in WRITES),
        transactions=sum(n for op, n in ddb.items() if op in TRANSACTIONS),
        s3=sum(n for (service, _), n in calls.items() if service == "s3"),
        outcome=outcome,
    )


def scenarios(world: AwsWorld, clock: Clock) -> list[tuple[str, Callable[[], object]]]:
    """(name, operation) pairs; each operation's setup is done here, outside the measurement."""
    out: list[tuple[str, Callable[[], object]]] = []
    big = b"\x01" * (MAX_INLINE_PAYLOAD_BYTES + 1)

    run_id = new_id("wrun")
    out.append(
        (
            "run_created",
            lambda: write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation=creation())),
        )
    )
    pending = create_run(world, started=False)
    out.append(("run_started", lambda: write(world, pending, EventType.RUN_STARTED)))
    running = create_run(world)
    out.append(("run_started on a running run (no-op)", lambda: write(world, running, EventType.RUN_STARTED)))
    missing = new_id("wrun")
    out.append(
        (
            "run_started with creation data, run missing",
            lambda: write(world, missing, EventType.RUN_STARTED, data=RunStartedData(creation=creation())),
        )
    )

    step_run = create_run(world)
    out.append(("step_created", lambda: create_step(world, step_run)))
    out.append(("step_created, input > 128 KiB", lambda: create_step(world, step_run, input=big)))
    duplicate = create_step(world, step_run)
    out.append(("step_created duplicate (Conflict)", lambda: create_step(world, step_run, step_id=duplicate)))
    re_ensure = StepCreatedData(step_name=STEP, input=b"step-input", via_step_dispatch=True)
    out.append(
        (
            "step_created re-ensure by a step consumer (Conflict)",
            lambda: write(world, step_run, EventType.STEP_CREATED, duplicate, re_ensure),
        )
    )
    pending_step = create_step(world, step_run)
    out.append(("step_started", lambda: start_step(world, step_run, pending_step)))
    retrying = running_step(world, step_run)
    retry_at = clock.now() + timedelta(seconds=5)
    retry_data = StepRetryingData(error=b"boom", retry_after=retry_at)
    out.append(
        ("step_retrying", lambda: write(world, step_run, EventType.STEP_RETRYING, retrying, retry_data))
    )
    handed = new_id("step")
    write(
        world,
        step_run,
        EventType.STEP_CREATED,
        handed,
        StepCreatedData(step_name=STEP, input=b"in", owner=OWNER),
    )
    owned_retry = StepRetryingData(error=b"boom", retry_after=retry_at, owner=OWNER)
    out.append(
        (
            "step_retrying (owned: handed to its retry message)",
            lambda: write(world, step_run, EventType.STEP_RETRYING, handed, owned_retry),
        )
    )
    out.append(("step_started before retry_after (TooEarly)", lambda: start_step(world, step_run, retrying)))
    completing = running_step(world, step_run)
    done = StepCompletedData(output=b"result")
    out.append(("step_completed", lambda: write(world, step_run, EventType.STEP_COMPLETED, completing, done)))
    failing = running_step(world, step_run)
    failed = StepFailedData(error=b"boom")
    out.append(("step_failed", lambda: write(world, step_run, EventType.STEP_FAILED, failing, failed)))

    hook_run = create_run(world)
    token = new_id("tok")
    out.append(("hook_created", lambda: create_hook(world, hook_run, token, hook_id="hook_bench")))
    other = create_run(world)
    out.append(("hook_created, token held (hook_conflict)", lambda: create_hook(world, other, token)))
    out.append(
        (
            "hook_received",
            lambda: receive_hook(world, hook_run, "hook_bench", b"payload", resume_id="resume_1"),
        )
    )
    out.append(
        (
            "hook_received, same resume_id (dedup)",
            lambda: receive_hook(world, hook_run, "hook_bench", b"payload", resume_id="resume_1"),
        )
    )
    out.append(("hook_disposed", lambda: write(world, hook_run, EventType.HOOK_DISPOSED, "hook_bench")))

    wait_run = create_run(world)
    resume_at = WaitCreatedData(resume_at=clock.now())
    out.append(
        ("wait_created", lambda: write(world, wait_run, EventType.WAIT_CREATED, "wait_bench", resume_at))
    )
    out.append(("wait_completed", lambda: write(world, wait_run, EventType.WAIT_COMPLETED, "wait_bench")))
    patch = PatchAppliedData(change_id="bench-change")
    marker = patch_correlation_id(patch.change_id)
    out.append(("patch_applied", lambda: write(world, wait_run, EventType.PATCH_APPLIED, marker, patch)))

    ending = create_run(world)
    create_hook(world, ending, new_id("tok"))
    out.append(("run_completed (1 live hook to release)", lambda: end_run(world, ending)))
    to_fail, to_cancel = create_run(world), create_run(world)
    out.append(("run_failed", lambda: end_run(world, to_fail, EventType.RUN_FAILED)))
    out.append(("run_cancelled", lambda: end_run(world, to_cancel, EventType.RUN_CANCELLED)))
    ended = create_run(world)
    fenced = create_step(world, ended)
    end_run(world, ended)
    out.append(("step_started on a terminal run (RunExpired)", lambda: start_step(world, ended, fenced)))

    out.append(("events.list (step run, ~20 events)", lambda: world.events.list(step_run)))
    out.append(("events.list_with_run (step run)", lambda: world.events.list_with_run(step_run)))
    out.append(("events.list_with_run (ended run: no log)", lambda: world.events.list_with_run(ended)))
    out.append(("runs.get", lambda: world.runs.get(step_run)))
    claim = world.runs.claim_continuation
    out.append(("runs.claim_continuation", lambda: claim(step_run, after=1, claimer=completing)))
    out.append(("steps.get", lambda: world.steps.get(step_run, pending_step)))
    out.append(("steps.list", lambda: world.steps.list(step_run)))
    out.append(("steps.any_pending", lambda: world.steps.any_pending(step_run)))
    live_token = new_id("tok")
    create_hook(world, other, live_token)
    out.append(("hooks.get_by_token", lambda: world.hooks.get_by_token(live_token)))
    out.append(("hooks.list", lambda: world.hooks.list(other)))
    used_token, resume_id = new_id("tok"), new_id("resume")
    used = create_hook(world, other, used_token).hook
    assert used is not None
    receive_hook(world, other, used.hook_id, b"payload", resume_id=resume_id)
    write(world, other, EventType.HOOK_DISPOSED, used.hook_id)
    out.append(("hooks.resumed (hook disposed)", lambda: world.hooks.resumed(used_token, resume_id)))
    out.append(("runs.list (limit 10)", lambda: world.runs.list(limit=10)))
    return out
