"""The chaos workload: one workflow that uses every feature at once, and what each run must return.

``chaos.mix(spec)`` creates a hook first (the driver resumes it from outside
while the run works), then runs two sequential steps, a step that writes
``narrated(spec)`` values to the stream ``progress`` in several chunks (its first
attempt fails after the first chunk, so its retry rewrites it), an 8-24-way
``asyncio.gather`` fan-out, a gather of two child workflows (``chaos.child``:
two steps each), a step that fails with ``RetryableError`` before it
succeeds, a step that raises ``FatalError`` (caught as ``StepFailedError``), a
step with a 150 KiB input (S3 offload on the AWS World), a durable sleep of
1-2 s, and then awaits the hook. A spec in mode ``"fail"`` then raises, so the
run fails; the driver cancels runs of mode ``"cancel"`` midway.

Every step body records its execution (run, step id, attempt) in an
:class:`Executions` before it returns, and may then crash the process
(``Fault.CRASH_BODY``): the body ran, its outcome was never recorded.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

from harness.fault_plan import Crash, Fault, FaultPlan
from world_aws import (
    FatalError,
    RetryableError,
    StepFailedError,
    Workflows,
    create_hook,
    get_writable,
    patched,
    sleep,
)
from world_aws.workflow.context import get_step_metadata

BIG_INPUT_BYTES = 150 * 1024
STREAM = "progress"
WORKFLOW = "chaos.mix"
PATCH = "chaos.patch"  # the change mix decides with patched() before its second step
CHILD_WORKFLOW = "chaos.child"
FAIL_MESSAGE = "asked to fail"
MODES = ("complete", "fail", "cancel")


class Executions:
    """Every step body execution in order: (run id, step id, attempt, final). Thread-safe.

    ``final`` says the body ended the step (returned, or raised ``FatalError``), as
    opposed to asking for a retry.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ran: list[tuple[str, str, int, bool]] = []

    def record(self, *, final: bool) -> None:
        meta = get_step_metadata()
        with self._lock:
            self.ran.append((meta.run_id, meta.step_id, meta.attempt, final))

    def duplicates(self) -> tuple[int, int, int]:
        """(executions, those after their step's first final one, those of an attempt that already ran).

        The second is the work at-least-once delivery repeated (allowed, reported
        as a rate); the third should be 0, since every start takes a new attempt.
        """
        with self._lock:
            ran = list(self.ran)
        finished: set[tuple[str, str]] = set()
        attempts: Counter[tuple[str, str, int]] = Counter()
        repeated = 0
        for run_id, step_id, attempt, final in ran:
            attempts[(run_id, step_id, attempt)] += 1
            if (run_id, step_id) in finished:
                repeated += 1
            elif final:
                finished.add((run_id, step_id))
        return len(ran), repeated, sum(n - 1 for n in attempts.values())


def spec_for(plan: FaultPlan, index: int, fanout: tuple[int, int] = (8, 24)) -> dict[str, Any]:
    """The spec of run ``index``: its shape is drawn from the seed (fan-out, failures, sleep, mode)."""
    draw = plan.uniform
    low, high = fanout
    mode_draw = draw(f"mode|{index}")
    mode = "cancel" if mode_draw < 0.125 else "fail" if mode_draw < 0.25 else "complete"
    return {
        "index": index,
        "n": index % 7,
        "fanout": low + int(draw(f"fanout|{index}") * (high - low + 1)),
        "fails": 1 + int(draw(f"fails|{index}") * 2),  # 1..2 failed attempts first
        "sleep": round(1.0 + draw(f"sleep|{index}"), 3),  # 1..2 s
        "token": f"chaos:{plan.seed}:{index}",
        "mode": mode,
    }


def hook_payload(spec: dict[str, Any]) -> dict[str, Any]:
    return {"approved_by": f"caller-{spec['index']}"}


def child_inputs(spec: dict[str, Any]) -> list[int]:
    """The arguments of the two ``chaos.child`` runs of ``chaos.mix(spec)``, in call order."""
    return [spec["n"], spec["n"] + 1]


def expected_child_output(n: int) -> int:
    return (n + 10) + n * n


def narrated(spec: dict[str, Any]) -> list[dict[str, int]]:
    """The values ``chaos.narrate`` writes to the stream ``progress``, in order, each once."""
    return [{"run": spec["index"], "i": i} for i in range(3 + spec["n"])]


def expected_output(spec: dict[str, Any]) -> dict[str, Any]:
    """What ``chaos.mix(spec)`` returns in mode ``"complete"``, whatever failed underneath."""
    first = 1 + spec["n"]
    return {
        "sequential": first + 1,
        "narrated": len(narrated(spec)),
        "fanout": sum(i * i for i in range(spec["fanout"])),
        "children": [expected_child_output(n) for n in child_inputs(spec)],
        "flaky": "ok",
        "caught": "world_aws.errors.FatalError",
        "size": BIG_INPUT_BYTES,
        "hook": hook_payload(spec),
    }


def step_prefix(version: int) -> str:
    """The step names' prefix of the workload's ``version`` (a deploy renames every step)."""
    return "chaos." if version == 1 else f"chaos.v{version}."


def chaos_app(executions: Executions, plan: FaultPlan, *, version: int = 1) -> Workflows:
    """The workload's ``Workflows``; bodies record into ``executions`` and may crash per ``plan``.

    ``version`` > 1: the same workflows and results with every step renamed (``step_prefix``),
    as a deploy that is incompatible with the runs of version 1: one of them replayed on it
    would diverge at its first step (the chaos deploy, ``bench/chaos.py``).
    """
    app = Workflows()
    prefix = step_prefix(version)

    def ran(final: bool = True) -> None:
        executions.record(final=final)
        meta = get_step_metadata()
        if plan.fires(Fault.CRASH_BODY, f"{meta.run_id}|{meta.step_id}|{meta.attempt}"):
            raise Crash(f"died after the body of {meta.step_name} ran")

    @app.step(name=prefix + "add")
    def add(a: int, b: int) -> int:
        ran()
        return a + b

    @app.step(name=prefix + "narrate", max_retries=4)
    def narrate(spec: dict[str, Any]) -> int:
        attempt = get_step_metadata().attempt
        writer = get_writable(STREAM)
        values = narrated(spec)
        for i, value in enumerate(values):
            writer.write(value)
            if i % 2 == 1:
                writer.flush()  # several chunks per attempt
            if attempt == 1 and i == 1:
                ran(final=False)
                raise RetryableError("the narrator lost its voice", retry_after=0.5)
        writer.close()
        ran()
        return len(values)

    @app.step(name=prefix + "square")
    def square(i: int) -> int:
        ran()
        return i * i

    @app.step(name=prefix + "flaky", max_retries=4)
    def flaky(fails: int) -> str:
        failing = get_step_metadata().attempt <= fails
        ran(final=not failing)
        if failing:
            raise RetryableError("flaky dependency")
        return "ok"

    @app.step(name=prefix + "refuse")
    def refuse(n: int) -> str:
        ran()
        raise FatalError(f"refused {n}")

    @app.step(name=prefix + "measure")
    def measure(blob: bytes) -> int:
        ran()
        return len(blob)

    @app.workflow(name=CHILD_WORKFLOW)
    async def child(n: int) -> int:
        return await add(n, 10) + await square(n)

    @app.workflow(name=WORKFLOW)
    async def mix(spec: dict[str, Any]) -> dict[str, Any]:
        hook = create_hook(token=spec["token"])
        first = await add(1, spec["n"])
        # Every run is new to the change, so patched() must say True however the faults fall:
        # a decision lost or flipped on a redelivery shows as a wrong "sequential".
        second = await add(first, 1 if patched(PATCH) else 0)
        told = await narrate(spec)
        squares = await asyncio.gather(*(square(i) for i in range(spec["fanout"])))
        kids = await asyncio.gather(*(child(n) for n in child_inputs(spec)))
        flaky_out = await flaky(spec["fails"])
        try:
            await refuse(spec["n"])
            caught = ""
        except StepFailedError as failure:
            caught = failure.error_type
        size = await measure(b"x" * BIG_INPUT_BYTES)
        await sleep(spec["sleep"])
        payload = await hook
        if spec["mode"] == "fail":
            raise ValueError(FAIL_MESSAGE)
        return {
            "sequential": second,
            "narrated": told,
            "fanout": sum(squares),
            "children": list(kids),
            "flaky": flaky_out,
            "caught": caught,
            "size": size,
            "hook": payload,
        }

    return app
