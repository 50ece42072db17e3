"""The dispatch window a concurrent duplicate opened: closed in-band, no reconciler.

Two deliveries A and B of one step message (SQS's at-least-once) both run the body. B's
outcome lands first; A's is refused, so A reads the run and continues, creating the next
step; B's last-completer check, made after A's create landed, finds that step pending and
acks the message both hold; A dies before publishing the step's message. Nothing of A is
left to bring the message back, and the step was pending with no message until the
reconciler woke the run. B now leaves a wake-up when a step it finds pending was created
after its own outcome (a continuation past it, which may be a twin of its own message).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from harness.harness import Harness
from tests.runtime.failures import Crash
from world_aws import RuntimeConfig, Workflows
from world_aws.contract.records import EventRequest, EventType, RunStatus
from world_aws.contract.world import Ack, Delivery, ForwardingWorld, HandlerResult, MessageHandler, QueueName

WAIT = 30.0  # real seconds a hook waits for the other delivery before the test fails


def etl_app(ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="dup.extract")
    def extract(source: str) -> list[int]:
        ran.append("extract")
        return [3, 1, 2]

    @app.step(name="dup.transform")
    def transform(rows: list[int]) -> list[int]:
        ran.append("transform")
        return sorted(rows)

    @app.workflow(name="dup.etl")
    async def etl(source: str) -> list[int]:
        return await transform(await extract(source))

    return app


class Hooked(ForwardingWorld):
    """``inner`` with a hook called before (and after) every call of every store."""

    def __init__(self, inner: Any, hook: Callable[[str, str, tuple[Any, ...]], None]) -> None:
        super().__init__(inner)
        for name in ("events", "runs", "steps", "hooks", "waits", "blobs", "queue", "streams"):
            setattr(self, name, _Store(name, getattr(inner, name), hook))

    def close(self) -> None:
        """The inner World is the harness's."""


class _Store:
    def __init__(self, name: str, inner: Any, hook: Callable[[str, str, tuple[Any, ...]], None]) -> None:
        self._name, self._inner, self._hook = name, inner, hook

    def __getattr__(self, method: str) -> Any:
        target = getattr(self._inner, method)
        op = f"{self._name}.{method}"

        def call(*args: Any, **kwargs: Any) -> Any:
            self._hook("before", op, args)
            result = target(*args, **kwargs)
            self._hook("after", op, args)
            return result

        return call


def _creates(args: tuple[Any, ...], etype: EventType, name: str | None = None) -> bool:
    """Whether a create or an append among ``args`` writes an ``etype`` (of step ``name``)."""
    requests = [a for a in args if isinstance(a, EventRequest)]
    requests += [r for a in args if isinstance(a, list) for r in a if isinstance(r, EventRequest)]
    return any(
        r.type is etype and (name is None or getattr(r.data, "step_name", None) == name) for r in requests
    )


def test_a_duplicate_that_acks_while_its_twin_dies_before_publishing_leaves_a_wake_up(
    harness: Harness,
) -> None:
    ran: list[str] = []
    outcomes = 0
    b_at_check = threading.Event()
    b_may_check = threading.Event()
    b_done = threading.Event()
    created = threading.Event()
    lock = threading.Lock()
    b_thread: list[threading.Thread] = []
    b_answer: list[HandlerResult] = []

    def hook(when: str, op: str, args: tuple[Any, ...]) -> None:
        nonlocal outcomes
        if when == "before" and op == "events.create" and _creates(args, EventType.STEP_COMPLETED):
            with lock:
                outcomes += 1
                mine = outcomes
            if mine == 1:  # A's outcome: let B run first, to its last-completer check
                b_thread[0].start()
                assert b_at_check.wait(WAIT), "B never reached its check"
        elif when == "before" and op == "steps.any_pending" and threading.current_thread() is b_thread[0]:
            b_at_check.set()  # B's outcome landed; it checks only once A created the next step
            assert b_may_check.wait(WAIT), "A never created the next step"
        elif (
            when == "after"
            and op in ("events.create", "events.append_after")
            and _creates(args, EventType.STEP_CREATED, "dup.transform")
        ):
            created.set()
        elif (
            when == "before"
            and op == "queue.publish"
            and args[0] is QueueName.STEP
            and not b_done.is_set()
            and b_at_check.is_set()
        ):
            # A's publish of the next step: B checks and acks, then A dies
            assert created.wait(WAIT)
            b_may_check.set()
            assert b_done.wait(WAIT)
            raise Crash("A died before publishing the next step's message")

    runtime = harness.runtime_for(
        etl_app(ran), RuntimeConfig(max_inline_steps=0), world=Hooked(harness.spy, hook)
    )

    def twins(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        if delivery.queue is not QueueName.STEP or b_thread:
            return handle(delivery)

        def b() -> None:
            b_answer.append(handle(Delivery(delivery.queue, delivery.message_id, 2, delivery.body)))
            b_done.set()

        b_thread.append(threading.Thread(target=b, name="duplicate-B"))
        try:
            handle(delivery)
        except Crash:
            pass
        b_thread[0].join(WAIT)
        # B acked the message both held: it is deleted, whatever became of A
        return Ack()

    # GIVEN the interleaving above, on the first step's message
    handle = runtime.start("dup.etl", "s3://rows")
    # WHEN the queues settle, with no reconciler tick
    status = harness.settle(handle, intercept=twins)
    # THEN B acked, and the run completed all the same
    assert b_answer == [Ack()] and created.is_set()
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [1, 2, 3]
    assert ran.count("transform") == 1
