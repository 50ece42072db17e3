"""One measured run of the fan-out benchmark, on any backend.

``measure`` runs ``asyncio.gather`` of ``n`` steps once under one ``Variant`` (prologue x
dispatch) on a ``Backend`` (moto: ``bench.core.FanoutBench``; the model: ``bench.model``)
behind a ``BenchWorld``, consumes the queues with the backend's pump, and returns a
``RunSample``: calls and ops, run reads before the claims, and TTLS (start to the last
``step_started``). Full mode: trivial steps, ``step_workers`` consumers, the run completes.
Held mode: every step blocks until all ``n`` started, then the bench cancels the run and each
fails for good (``FatalError``, so no retry adds a prologue): TTLS is the start path alone.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from bench.instrument import EMPTY_RECEIVE, RUN_READ, CallRecorder, Snapshot
from bench.world import BenchWorld, RunTimeline
from world_aws import FatalError, Runtime, RuntimeConfig, Workflows
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import ResolveData, StepStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, QueueName, World
from world_aws.errors import BadInput

WORKFLOW = "bench.fanout"
PROLOGUES = ("run_context", "legacy")
DISPATCH_MODES = ("resilient", "sequential")


def fanout_app(gate: threading.Event | None = None, gate_timeout: float = 600.0) -> Workflows:
    """``bench.fanout(n)``: ``asyncio.gather`` of ``n`` calls of the step ``bench.leaf``.

    Args:
        gate: None for a trivial step; else the step waits for it, then fails for
            good (held mode: the run is cancelled by then).
        gate_timeout: how long a held step waits at most.
    """
    app = Workflows()

    @app.step(name="bench.leaf", max_retries=1)
    def leaf(i: int) -> int:
        if gate is not None:
            gate.wait(gate_timeout)
            raise FatalError("released after every branch started")
        return i

    @app.workflow(name=WORKFLOW)
    async def fanout(n: int) -> int:
        values = await asyncio.gather(*(leaf(i) for i in range(n)))
        return len(values)

    return app


@dataclass(frozen=True, slots=True)
class Variant:
    """``prologue``: "run_context" (contract §5.1) or "legacy" (no run_context on step messages).
    ``dispatch``: "resilient" (contract §5.2, creates batched when a pass only creates), "parallel"
    (resilient, every create and message in parallel) or "sequential"."""

    prologue: str
    dispatch: str

    @property
    def label(self) -> str:
        return f"{self.prologue} / {self.dispatch}"


def all_variants() -> list[Variant]:
    return [Variant(p, d) for p in PROLOGUES for d in DISPATCH_MODES]


@dataclass(frozen=True, slots=True)
class RunSample:
    """What one run cost and how long its fan-out took to start.

    ``calls`` are per ``service.Operation`` over the whole run (``sqs.ReceiveMessage``
    only the receives that brought messages), ``calls_to_last_start`` the same from
    ``start()`` until the last branch's ``step_started``; ``emulator_busy`` the
    seconds moto spent per operation over the whole run.

    ``backend`` is "moto" or "model". ``ops`` / ``ops_to_last_start`` count World
    operation invocations per op key, ``op_calls`` the calls each op (or the event
    source, ``EVENT_SOURCE``) made per ``service.Operation``, ``pre_claim_ops`` the
    ops step deliveries ran before their claim. ``round_trips`` (and
    ``round_trips_to_last_start``) are by service: the calls made on moto, the
    modeled round trips in the model pass, where ``pre_claim_run_reads`` counts
    ``runs.get`` ops (there are no AWS calls to look at). ``delivery_to_claim_p50``: the median over
    branches of the seconds from a step message's first delivery to its
    ``step_started`` (the consumer's prologue and claim).
    """

    n: int
    variant: Variant
    held: bool
    ttls_seconds: float
    calls: dict[str, int]
    calls_to_last_start: dict[str, int]
    pre_claim_run_reads: int
    steps_completed: int
    step_starts: int
    run_status: str
    wall_seconds: float
    emulator_busy: dict[str, float] = field(default_factory=dict)
    backend: str = "moto"
    ops: dict[str, int] = field(default_factory=dict)
    ops_to_last_start: dict[str, int] = field(default_factory=dict)
    op_calls: dict[str, dict[str, int]] = field(default_factory=dict)
    pre_claim_ops: dict[str, int] = field(default_factory=dict)
    round_trips: dict[str, float] = field(default_factory=dict)
    round_trips_to_last_start: dict[str, float] = field(default_factory=dict)
    delivery_to_claim_p50: float = math.nan
    ttfs_seconds: float = math.nan  # start() to the first branch's step_started


@dataclass(frozen=True, slots=True)
class PumpShape:
    """Consumer concurrency: invocations and polling threads per queue."""

    step_workers: int = 16
    step_pollers: int = 2
    workflow_workers: int = 4
    workflow_pollers: int = 1

    def workers(self, step_workers: int | None = None) -> dict[QueueName, int]:
        """Invocations per queue (``step_workers`` overrides the step queue's: held mode)."""
        step = self.step_workers if step_workers is None else step_workers
        return {QueueName.STEP: step, QueueName.WORKFLOW: self.workflow_workers}

    def pollers(self) -> dict[QueueName, int]:
        return {QueueName.STEP: self.step_pollers, QueueName.WORKFLOW: self.workflow_pollers}


class Pump(Protocol):
    """Consumers of both queues for one run (``bench.pump``)."""

    def idle(self) -> bool: ...

    def stop(self) -> None: ...


def calls_by_service(snapshot: Snapshot) -> dict[str, float]:
    """Calls per service (empty polls and the run-read tally left out): moto's round trips."""
    out: dict[str, float] = {}
    for operation, count in snapshot.calls.items():
        if operation in (EMPTY_RECEIVE, RUN_READ):
            continue
        service = operation.split(".", 1)[0]
        out[service] = out.get(service, 0.0) + count
    return dict(sorted(out.items()))


def run_item_reads(snapshot: Snapshot) -> int:
    """Reads of the run item by step deliveries before their claim, as the AWS calls show them."""
    return snapshot.pre_claim_run_reads


def run_get_ops(snapshot: Snapshot) -> int:
    """``runs.get`` ops by step deliveries before their claim (a World without AWS calls)."""
    return snapshot.pre_claim_ops.get("runs.get", 0)


class Bench(Protocol):
    """A backend of the fan-out passes (``bench.core.FanoutBench``, ``bench.model.ModelBench``)."""

    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample: ...


@dataclass(frozen=True, slots=True)
class Backend:
    """What ``measure`` needs of the World one run goes on.

    Attributes:
        name: "moto" or "model" (``RunSample.backend``).
        world: the backend World, unwrapped (the bench reads the outcome from it, muted).
        pump: consumers of both queues for ``(handler, step_workers)``.
        charge: called with each op's key before it runs (the model's latency), if any.
        round_trips: round trips by service in a recorder window.
        run_reads: run reads before the claim in a recorder window.
    """

    name: str
    world: World
    pump: Callable[[MessageHandler, int], Pump]
    charge: Callable[[str], None] | None = None
    round_trips: Callable[[Snapshot], dict[str, float]] = calls_by_service
    run_reads: Callable[[Snapshot], int] = run_item_reads


def measure(
    recorder: CallRecorder,
    backend: Backend,
    n: int,
    variant: Variant,
    *,
    held: bool,
    step_workers: int,
    run_timeout: float,
) -> RunSample:
    """Run ``bench.fanout(n)`` under ``variant`` on ``backend`` until it ends and its queues drain.

    Args:
        recorder: counts calls and ops (its thread state marks step deliveries).
        backend: the World, its consumers and its cost model.
        n: branches.
        variant: prologue x dispatch mode.
        held: steps wait until all ``n`` started, then the run is cancelled (TTLS of the start path).
        step_workers: step consumers in full mode (held mode runs at least ``n``).
        run_timeout: real seconds a run may take.

    Raises:
        RuntimeError: the run did not start or end within ``run_timeout``, or the queues did not drain.
    """
    timeline = RunTimeline()
    gate = threading.Event() if held else None
    world = BenchWorld(
        backend.world,
        timeline,
        recorder,
        legacy_producer=variant.prologue == "legacy",
        charge=backend.charge,
    )
    # The dispatched-step path is what this bench measures (inline execution off).
    # "parallel": resilient, with the batched append of a pass's creates off.
    config = RuntimeConfig(
        max_inline_steps=0,
        resilient_step_dispatch=variant.dispatch in ("resilient", "parallel"),
        batched_step_dispatch=variant.dispatch != "parallel",
    )
    runtime = Runtime(world, fanout_app(gate, run_timeout), config)

    def handle(delivery: Delivery) -> HandlerResult:
        step = _step_of(delivery.body)
        if step is None:
            return runtime.handle(delivery)
        timeline.delivered(step[0], step[1], time.perf_counter())
        with recorder.step_delivery():
            return runtime.handle(delivery)

    with recorder.muted():
        pump = backend.pump(handle, max(step_workers, n) if held else step_workers)
    at_last_start: list[Snapshot] = []
    try:
        before = recorder.snapshot()
        began = time.perf_counter()
        started = runtime.start(WORKFLOW, n)
        run_id = started.run_id
        timeline.expect(run_id, n, lambda: at_last_start.append(recorder.snapshot()))
        if gate is not None:
            if not timeline.wait_started(run_id, n, run_timeout):
                raise RuntimeError(f"run {run_id} (n={n}, {variant.label}) did not start in time")
            started.cancel("benchmark: every branch started")
            gate.set()
        if not timeline.wait_ended(run_id, run_timeout):
            raise RuntimeError(f"run {run_id} (n={n}, {variant.label}) did not end in time")
        wait_idle(recorder, pump, run_timeout)
        used = recorder.snapshot() - before
        wall = time.perf_counter() - began
    finally:
        if gate is not None:
            gate.set()
        with recorder.muted():
            pump.stop()
        runtime.close()
    with recorder.muted():
        run = backend.world.runs.get(run_id, resolve_data=ResolveData.NONE)
        steps = backend.world.steps.list(run_id, resolve_data=ResolveData.NONE)
    starts = timeline.starts(run_id)
    deliveries = timeline.deliveries(run_id)
    claims = [at - deliveries[step] for step, at in starts.items() if step in deliveries]
    to_start = at_last_start[0] - before if at_last_start else used
    op_calls: dict[str, dict[str, int]] = {}
    for (op, operation), count in sorted(used.op_calls.items()):
        op_calls.setdefault(op, {})[operation] = count
    return RunSample(
        n=n,
        variant=variant,
        held=held,
        ttls_seconds=max(starts.values()) - began if starts else math.nan,
        ttfs_seconds=min(starts.values()) - began if starts else math.nan,
        calls=dict(sorted(used.calls.items())),
        calls_to_last_start=dict(sorted(to_start.calls.items())),
        pre_claim_run_reads=backend.run_reads(used),
        steps_completed=sum(1 for s in steps if s.status is StepStatus.COMPLETED),
        step_starts=len(starts),
        run_status=run.status.value,
        wall_seconds=wall,
        emulator_busy={k: round(v, 4) for k, v in sorted(used.busy.items())},
        backend=backend.name,
        ops=dict(sorted(used.ops.items())),
        ops_to_last_start=dict(sorted(to_start.ops.items())),
        op_calls=op_calls,
        pre_claim_ops=dict(sorted(used.pre_claim_ops.items())),
        round_trips=backend.round_trips(used),
        round_trips_to_last_start=backend.round_trips(to_start),
        delivery_to_claim_p50=statistics.median(claims) if claims else math.nan,
    )


def wait_idle(recorder: CallRecorder, pump: Pump, timeout: float) -> None:
    """Wait until the run's last messages are handled and deleted (the polling not counted)."""
    deadline = time.monotonic() + timeout
    with recorder.muted():
        while not pump.idle():
            if time.monotonic() > deadline:
                raise RuntimeError("the queues did not drain after the run ended")
            time.sleep(0.05)


def _step_of(body: bytes) -> tuple[str, str] | None:
    """(run id, step id) of a step message; None for any other body."""
    try:
        payload = decode_payload(body)
    except BadInput:
        return None
    if isinstance(payload, InvokePayload) and payload.step_id is not None:
        return payload.run_id, payload.step_id
    return None
