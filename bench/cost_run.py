"""The cost meter's workloads, and one metered run of a workload on the AWS World over moto.

``WORKLOADS``: W0 one step, W1 three sequential, W2 a hundred, W3 and W4 a gather of 64 and
256 (``-inline``: ``WORKFLOW_MAX_INLINE_STEPS`` at their width; ``-dispatched``:
``WORKFLOW_INLINE_FAST_SECONDS=0``), with payload, ``patched()``, encryption and flow-control
variants; steps are trivial. ``run_workload`` runs one on a fresh World (``MotoWorlds``)
behind a ``BenchWorld`` with the template's consumers (``QueuePump`` at each queue's
``BatchSize``, one invocation per batch), started as a client would, until it completed and
both queues drained.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from bench.core import MotoWorlds
from bench.invocations import FunctionUsage, InvocationMeter
from bench.invocations import difference as invocation_difference
from bench.measure import PumpShape, wait_idle
from bench.meter import BillingMeter
from bench.pump import QueuePump
from bench.usage import ItemWrites, Usage, difference
from bench.world import BenchWorld, RunTimeline
from world_aws import Batch, Concurrency, Runtime, RuntimeConfig, Workflows, patched
from world_aws.aws.codec import keys
from world_aws.aws.infra.template import load_template, resources
from world_aws.contract.records import ResolveData, RunStatus, StepStatus
from world_aws.contract.world import QueueName

SEQUENTIAL = "bench.cost.sequential"
BATCHED = "bench.cost.batched"
BATCH_SIZE = 10
GATHER = "bench.cost.gather"
SEQUENTIAL_LIMITED = "bench.cost.sequential_limited"
KB = 1024


@dataclass(frozen=True, slots=True)
class Workload:
    """One workload: ``steps`` steps, in sequence or gathered, with padded inputs."""

    name: str
    description: str
    steps: int
    gather: bool = False
    workflow_input_bytes: int = 0
    step_input_bytes: int = 0
    max_inline_steps: int | None = None  # WORKFLOW_MAX_INLINE_STEPS for this one (None: as deployed)
    inline_fast_seconds: float | None = None  # WORKFLOW_INLINE_FAST_SECONDS (None: as deployed)
    incompressible: bool = False  # inputs of pseudo-random bytes (else one byte repeated: zlib's best case)
    patched: bool = False  # the workflow calls ``patched()`` before its second step (its marker's cost)
    limited: bool = False  # its steps under ``Concurrency(limit=3)``: each attempt admitted (issue 41)
    run_limited: bool = False  # the workflow under ``Concurrency(limit=3)``: the run admitted (issue 41)
    encrypted: bool = False  # payloads sealed under a KMS key (PayloadKmsKeyArn; README "Security")
    batched: int = 0  # started by this many ``start()`` calls of a batched workflow (issue 41)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("W0", "1 step", 1),
        Workload("W1", "3 sequential steps", 3),
        Workload("W1-patched", "W1, patched() before step 2", 3, patched=True),
        Workload("W1-limited", "W1, steps under Concurrency(limit=3)", 3, limited=True),
        Workload("W1-batched", "W1, its run the batch of 10 start() calls", 3, batched=BATCH_SIZE),
        Workload("W1-wf-limited", "W1, the workflow under Concurrency(limit=3)", 3, run_limited=True),
        Workload("W2", "100 sequential steps", 100),
        Workload("W2-kms", "W2, payloads sealed under a KMS key", 100, encrypted=True),
        Workload("W3", "64-way gather", 64, gather=True),
        Workload("W4", "256-way gather", 256, gather=True),
        Workload("W3-inline", "W3, all 64 inline", 64, gather=True, max_inline_steps=64),
        Workload("W4-inline", "W4, all 256 inline", 256, gather=True, max_inline_steps=256),
        Workload("W3-dispatched", "W3, no fast rounds", 64, gather=True, inline_fast_seconds=0),
        Workload("W4-dispatched", "W4, no fast rounds", 256, gather=True, inline_fast_seconds=0),
        Workload("W2-in10K", "W2, 10 KB workflow input", 100, workflow_input_bytes=10 * KB),
        Workload("W2-in60K", "W2, 60 KB workflow input", 100, workflow_input_bytes=60 * KB),
        Workload("W1-step100K", "W1, 100 KB step inputs", 3, step_input_bytes=100 * KB),
        Workload("W1-step200K", "W1, 200 KB step inputs", 3, step_input_bytes=200 * KB),
        Workload(
            "W2-in60K-random",
            "W2, 60 KB incompressible workflow input",
            100,
            workflow_input_bytes=60 * KB,
            incompressible=True,
        ),
        Workload(
            "W2-step500-random",
            "W2, 500 B incompressible step inputs",
            100,
            step_input_bytes=500,
            incompressible=True,
        ),
        Workload(
            "W1-step100K-random",
            "W1, 100 KB incompressible step inputs",
            3,
            step_input_bytes=100 * KB,
            incompressible=True,
        ),
    )
}


def cost_app() -> Workflows:
    """The two workflows: ``steps`` calls of ``bench.cost.leaf`` one after the other, or gathered."""
    app = Workflows()

    @app.step(name="bench.cost.leaf")
    def leaf(i: int, pad: bytes) -> int:
        return i

    @app.step(name="bench.cost.limited_leaf", concurrency=Concurrency(limit=3))
    def limited_leaf(i: int, pad: bytes) -> int:
        return i

    @app.workflow(name=SEQUENTIAL)
    async def sequential(
        steps: int,
        step_pad: int,
        pad: bytes,
        noisy: bool = False,
        patch: bool = False,
        limited: bool = False,
    ) -> int:
        for i in range(steps):
            if patch and i == 1 and not patched("bench.cost.change"):
                raise AssertionError("a new run takes the patched branch")
            step = limited_leaf if limited else leaf
            await step(i, padding(step_pad, i, noisy))
        return steps

    @app.workflow(name=BATCHED, batch=Batch(max_size=BATCH_SIZE, max_wait="5s"))
    async def batched(items: list[int]) -> int:
        for i in range(3):
            await leaf(i, b"")
        return len(items)

    @app.workflow(name=SEQUENTIAL_LIMITED, concurrency=Concurrency(limit=3))
    async def sequential_limited(steps: int, step_pad: int, pad: bytes, noisy: bool = False) -> int:
        for i in range(steps):
            await leaf(i, padding(step_pad, i, noisy))
        return steps

    @app.workflow(name=GATHER)
    async def gather(steps: int, step_pad: int, pad: bytes, noisy: bool = False) -> int:
        values = await asyncio.gather(*(leaf(i, padding(step_pad, i, noisy)) for i in range(steps)))
        return len(values)

    return app


def padding(size: int, seed: int, noisy: bool) -> bytes:
    """``size`` bytes: one byte repeated, or (``noisy``) SHA-256 in counter mode, which zlib cannot shrink.

    A function of its arguments alone, so a workflow may call it (replays give the same bytes).
    """
    if not noisy:
        return b"s" * size
    blocks = (hashlib.sha256(f"{seed}:{n}".encode()).digest() for n in range(size // 32 + 1))
    return b"".join(blocks)[:size]


@dataclass(frozen=True, slots=True)
class LambdaFunction:
    """A template function that consumes a queue: name, memory, event source batch size, concurrency."""

    name: str
    memory_mb: int
    batch_size: int
    max_concurrency: int | None = None  # ScalingConfig.MaximumConcurrency (None: the account's)


def template_functions(template: Mapping[str, Any] | None = None) -> dict[QueueName, LambdaFunction]:
    """The functions consuming each queue, as ``template.yaml`` declares them."""
    doc = template if template is not None else load_template()
    default_memory = int(doc.get("Globals", {}).get("Function", {}).get("MemorySize", 128))
    queue_of = {"WorkflowQueue": QueueName.WORKFLOW, "StepQueue": QueueName.STEP}
    out: dict[QueueName, LambdaFunction] = {}
    for name, resource in resources(doc, "AWS::Serverless::Function").items():
        properties = resource.properties
        for event in dict(properties.get("Events", {})).values():
            if event.get("Type") != "SQS":
                continue
            queue = event["Properties"]["Queue"]["Fn::GetAtt"][0]
            if queue in queue_of:
                memory = int(properties.get("MemorySize", default_memory))
                batch = int(event["Properties"].get("BatchSize", 10))
                scaling = event["Properties"].get("ScalingConfig", {}).get("MaximumConcurrency")
                out[queue_of[queue]] = LambdaFunction(
                    name, memory, batch, int(scaling) if scaling is not None else None
                )
    return out


@dataclass(frozen=True, slots=True)
class CostSample:
    """What one run of a workload was billed: per World op, and per Lambda function."""

    workload: Workload
    bill: dict[str, Usage]
    items: dict[str, ItemWrites]
    functions: dict[str, FunctionUsage]
    memory_mb: dict[str, int]
    wall_seconds: float
    run_status: str
    steps_completed: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> Usage:
        return Usage.total(self.bill.values())

    @property
    def invocations(self) -> int:
        return sum(f.invocations for f in self.functions.values())

    @property
    def gb_seconds(self) -> float:
        return sum(f.gb_seconds(self.memory_mb[name]) for name, f in self.functions.items())


@dataclass
class Meters:
    """The moto worlds and the meters on their clients, shared by every run."""

    moto: MotoWorlds
    billing: BillingMeter
    invocations: InvocationMeter
    functions: dict[QueueName, LambdaFunction]
    shape: PumpShape = field(default_factory=PumpShape)


def run_workload(meters: Meters, workload: Workload, *, timeout: float = 900) -> CostSample:
    """Run ``workload`` once on a fresh World with the template's consumers; bill it.

    Raises:
        RuntimeError: the run did not complete, or its queues did not drain, within ``timeout``.
    """
    recorder = meters.moto.recorder
    functions = meters.functions
    with meters.moto.fresh_world(encrypt=workload.encrypted) as aws:
        timeline = RunTimeline()
        world = BenchWorld(aws, timeline, recorder, legacy_producer=False)
        config = RuntimeConfig.from_env()
        if workload.max_inline_steps is not None:
            config = dataclasses.replace(config, max_inline_steps=workload.max_inline_steps)
        if workload.inline_fast_seconds is not None:
            config = dataclasses.replace(config, inline_fast_seconds=workload.inline_fast_seconds)
        runtime = Runtime(world, cost_app(), config)
        with recorder.muted():
            pump = QueuePump(
                aws.clients.sqs,
                aws.queue_urls(),
                runtime.handle,
                aws.clock,
                workers=meters.shape.workers(),
                pollers=meters.shape.pollers(),
                batch_sizes={queue: f.batch_size for queue, f in functions.items()},
                on_invoke=lambda queue, records: meters.invocations.invocation(
                    functions[queue].name, records
                ),
                heartbeat=aws.config.heartbeat,
            )
        try:
            bill_before, lambdas_before = meters.billing.snapshot(), meters.invocations.snapshot()
            items_before = meters.billing.item_writes()
            began = time.perf_counter()
            name = GATHER if workload.gather else SEQUENTIAL_LIMITED if workload.run_limited else SEQUENTIAL
            size = workload.workflow_input_bytes
            pad = padding(size, -1, noisy=True) if workload.incompressible else b"w" * size
            extra = {"patch": True} if workload.patched else {}
            if workload.limited:
                extra["limited"] = True
            if workload.batched:  # the batch fills at its size: its last start sends it off
                handle = [runtime.start(BATCHED, i) for i in range(workload.batched)][-1]
            else:
                handle = runtime.start(
                    name, workload.steps, workload.step_input_bytes, pad, workload.incompressible, **extra
                )
            if not timeline.wait_ended(handle.run_id, timeout):
                raise RuntimeError(f"{workload.name}: run {handle.run_id} did not end within {timeout} s")
            wait_idle(recorder, pump, timeout)
            wall = time.perf_counter() - began
            # The reconciler's sweep reads every run once, whatever became of it (ARCHITECTURE §6
            # "The reconciler"). A tick's cursor read and write and its Query (~100 B an entry)
            # are shared by the runs it sweeps (hundreds a tick at a million runs a month), as the
            # schedule's own cost is: the run's share is its entry of the BatchGetItem, billed here.
            with recorder.muted():
                swept = aws.runs.sweep_created(
                    created_before=aws.clock.now() + timedelta(seconds=1), limit=1000
                )
            if swept.examined != 1:
                raise RuntimeError(f"{workload.name}: the sweep read {swept.examined} runs, not its one")
            with recorder.op("runs.sweep_created"):
                aws.table.batch_get([keys.run_key(handle.run_id)], consistent=False)
            bill = difference(meters.billing.snapshot(), bill_before, Usage)
            items = difference(meters.billing.item_writes(), items_before, ItemWrites)
            lambdas = invocation_difference(meters.invocations.snapshot(), lambdas_before)
        finally:
            with recorder.muted():
                pump.stop()
            runtime.close()
        with recorder.muted():
            run = aws.runs.get(handle.run_id, resolve_data=ResolveData.NONE)
            steps = aws.steps.list(handle.run_id, resolve_data=ResolveData.NONE)
    if run.status is not RunStatus.COMPLETED:
        raise RuntimeError(f"{workload.name}: run {handle.run_id} ended {run.status.value}")
    return CostSample(
        workload=workload,
        bill=bill,
        items=items,
        functions=lambdas,
        memory_mb={f.name: f.memory_mb for f in functions.values()},
        wall_seconds=wall,
        run_status=run.status.value,
        steps_completed=sum(1 for s in steps if s.status is StepStatus.COMPLETED),
    )
