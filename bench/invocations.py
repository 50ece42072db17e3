"""``InvocationMeter``: Lambda invocations and their modelled billed duration.

One invocation per SQS batch the event source delivers (``bench.pump``'s ``on_invoke``). Its
duration is modelled (moto's wall clock measures the emulator's queue):
``billed ms = ceil(CPU outside AWS calls + round trips on the critical path)``. CPU is the
thread CPU time of the invocation's thread and of the tasks it hands to pools, less the CPU
inside AWS calls. Every AWS call costs its service's latency (``Latency``), in sequence; tasks
submitted to a pool before the thread next waits on a future (``run_parallel``) overlap, so such
a batch costs its slowest branch (or its total over the pool's width). ``propagating_context()``
carries the caller's context into pool tasks, so their calls are charged to the invocation.
GB-s = the function's ``MemorySize`` (``template.yaml``) in GB x billed seconds.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Share:
    """What one thread did for an invocation: CPU outside calls, modelled call latency."""

    cpu_in_calls: float = 0.0
    latency: float = 0.0
    cpu_total: float = 0.0
    width: int = 1  # threads of the pool the task ran on

    @property
    def seconds(self) -> float:
        return max(0.0, self.cpu_total - self.cpu_in_calls) + self.latency


@dataclass
class _Batch:
    """Tasks handed to a pool together, and the latency of the calls their submitter made meanwhile."""

    tasks: list[_Share] = field(default_factory=list)
    inline: float = 0.0

    def seconds(self) -> float:
        """Its slowest branch, or its tasks' total over the pool's width if that is longer."""
        slowest = max([self.inline, *(t.seconds for t in self.tasks)])
        return max(slowest, sum(t.seconds for t in self.tasks) / self.tasks[0].width)


@dataclass
class _Invocation:
    function: str
    own: _Share = field(default_factory=_Share)
    batches: list[_Batch] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    open: bool = False  # the last batch still takes tasks: its submitter has not waited yet

    def new_task(self, width: int) -> _Share:
        task = _Share(width=max(1, width))
        with self.lock:
            if not self.open:
                self.batches.append(_Batch())
                self.open = True
            self.batches[-1].tasks.append(task)
        return task

    def charge_own(self, cpu_in_call: float, latency: float) -> None:
        """A call on the invocation's thread: in sequence, or alongside the batch it has not waited for."""
        with self.lock:
            self.own.cpu_in_calls += cpu_in_call
            if self.open:
                self.batches[-1].inline += latency  # run_parallel runs its first call on the caller
            else:
                self.own.latency += latency

    def close_batch(self) -> None:
        """The invocation's thread waits for a result: tasks submitted later are a new batch."""
        with self.lock:
            self.open = False

    def billed_ms(self) -> int:
        seconds = self.own.seconds + sum(batch.seconds() for batch in self.batches)
        return max(1, math.ceil(seconds * 1000))


_INVOCATION: contextvars.ContextVar[_Invocation | None] = contextvars.ContextVar(
    "bench_invocation", default=None
)
# The task a pool thread is running. Per thread, not in the context: the task may run its
# call in a context of its own (``run_parallel`` submits ``copy_context().run``), which a
# context variable set around the task would not reach.
_TASKS = threading.local()


def _current_task() -> _Share | None:
    task: _Share | None = getattr(_TASKS, "task", None)
    return task


@dataclass(frozen=True, slots=True)
class FunctionUsage:
    """One function's invocations over a window: how many, records delivered, billed ms, wall seconds."""

    invocations: int = 0
    records: int = 0
    billed_ms: int = 0
    wall_seconds: float = 0.0

    def gb_seconds(self, memory_mb: int) -> float:
        return memory_mb / 1024 * self.billed_ms / 1000


class InvocationMeter:
    """Counts invocations per function and models their billed duration.

    Args:
        latency_of: round-trip seconds of one call to a service (``"dynamodb"``, ``"sqs"``, ``"s3"``).
    """

    def __init__(self, latency_of: Callable[[str], float]) -> None:
        self._latency_of = latency_of
        self._lock = threading.Lock()
        self._usage: dict[str, FunctionUsage] = {}

    @contextmanager
    def invocation(self, function: str, records: int) -> Iterator[None]:
        """One invocation of ``function`` with ``records`` SQS records runs inside the block."""
        current = _Invocation(function)
        token = _INVOCATION.set(current)
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            current.own.cpu_total = time.thread_time() - cpu
            wall = time.perf_counter() - began
            _INVOCATION.reset(token)
            with self._lock:
                old = self._usage.get(function, FunctionUsage())
                self._usage[function] = FunctionUsage(
                    old.invocations + 1,
                    old.records + records,
                    old.billed_ms + current.billed_ms(),
                    old.wall_seconds + wall,
                )

    def call_started(self, context: dict[str, Any]) -> None:
        """An AWS call begins on this thread (the meter's ``before-call``): note its CPU clock."""
        context["bench.cpu"] = time.thread_time()

    def call_ended(self, context: dict[str, Any], service: str) -> None:
        """The call that ``context`` began ends: charge its latency and its CPU to the invocation."""
        share = _current_task()
        invocation = _INVOCATION.get()
        if invocation is None or "bench.cpu" not in context:
            return
        cpu = time.thread_time() - context["bench.cpu"]
        if share is None:
            invocation.charge_own(cpu, self._latency_of(service))
        else:
            share.cpu_in_calls += cpu
            share.latency += self._latency_of(service)

    def snapshot(self) -> dict[str, FunctionUsage]:
        with self._lock:
            return dict(self._usage)


def difference(after: dict[str, FunctionUsage], before: dict[str, FunctionUsage]) -> dict[str, FunctionUsage]:
    """Per function, what ``after`` holds beyond ``before``."""
    out = {}
    for name, usage in after.items():
        old = before.get(name, FunctionUsage())
        if usage.invocations > old.invocations:
            out[name] = FunctionUsage(
                usage.invocations - old.invocations,
                usage.records - old.records,
                usage.billed_ms - old.billed_ms,
                usage.wall_seconds - old.wall_seconds,
            )
    return out


def _run_task(task: _Share, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    outer = _current_task()
    _TASKS.task = task
    cpu = time.thread_time()
    try:
        return fn(*args, **kwargs)
    finally:
        task.cpu_total = time.thread_time() - cpu
        _TASKS.task = outer


@contextmanager
def propagating_context() -> Iterator[None]:
    """Inside the block, a task submitted to any thread pool during an invocation is charged to it."""
    original = ThreadPoolExecutor.submit

    def submit(self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        invocation = _INVOCATION.get()
        if invocation is None:
            return original(self, fn, *args, **kwargs)
        task = invocation.new_task(getattr(self, "_max_workers", 1))
        return original(self, contextvars.copy_context().run, _run_task, task, fn, args, kwargs)

    original_result = Future.result

    def result(self: Future[Any], timeout: float | None = None) -> Any:
        invocation = _INVOCATION.get()
        if invocation is not None and _current_task() is None:
            invocation.close_batch()
        return original_result(self, timeout)

    ThreadPoolExecutor.submit = submit  # type: ignore[method-assign,assignment]
    Future.result = result  # type: ignore[method-assign]
    try:
        yield
    finally:
        ThreadPoolExecutor.submit = original  # type: ignore[method-assign]
        Future.result = original_result  # type: ignore[method-assign]
