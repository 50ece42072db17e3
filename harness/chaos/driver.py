"""One chaos configuration: start runs, pump their messages through faults, act as their caller, check them.

Runs go in batches on one World and one ``ManualClock``. Each round the
harness delivers every visible message through :meth:`ChaosDriver.intercept`
(which drops deletes, crashes before the runtime sees a delivery, arms
concurrent copies and classifies what the handler raised), then the driver acts
as the runs' caller (resumes each run's hook once it exists, cancels the runs
of mode ``"cancel"``, retrying its own calls as a client would), then the clock
jumps to the next due message. A batch ends when nothing is queued and the
caller has nothing left to do, or after ``max_sim_seconds`` of simulated time.

Then the reconciler gets its turn, as the deployed schedule would: the clock jumps
past ``WORKFLOW_RECONCILE_AFTER_SECONDS`` and one ``Reconciler.tick`` wakes every
silent non-terminal run, whose messages are then pumped as before (up to
``RECONCILE_PASSES`` times). What it woke is counted (``reconciled``: late, the
design's last line) and judged like the rest; a run still not ended after it is
``stuck``, i.e. lost.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from harness.chaos.checks import CallerView, explain
from harness.chaos.workload import WORKFLOW, hook_payload, spec_for
from harness.fault_plan import Crash, Fault, FaultPlan
from harness.faulty_world import FaultyWorld
from harness.harness import Harness
from world_aws.client.handle import RunHandle
from world_aws.contract.payload import HealthCheck
from world_aws.contract.records import ResolveData
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, Redeliver
from world_aws.errors import BadInput, Conflict, NotFound, RetryLater, WorldAwsError
from world_aws.runtime.runtime import Runtime
from world_aws.worker.deployments import DeployedWorld
from world_aws.worker.reconciler import Reconciler

T = TypeVar("T")
RECONCILE_PASSES = 3  # reconciler ticks after a batch went quiet, while each wakes something
CALLER_ATTEMPTS = 10  # a client's retries of start / resume / cancel
COPY_WITHIN_CALLS = 12  # a concurrent copy starts within this many calls of the original
DEPLOY_ROUND = 3  # the round of the first batch after which the chaos deploy happens
AFTER_DEPLOY_RUNS = 5  # runs started on the new deployment at once, in the same batch


@dataclass
class HandlerErrors:
    """Non-domain exceptions out of the handler (anything but ``WorldAwsError`` and ``Crash``)."""

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, exc: Exception) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append("".join(traceback.format_exception(exc, limit=-4)).strip()[-600:])


class ChaosDriver:
    """Drives runs of the chaos workload on ``harness`` (whose World is ``faulty``)."""

    def __init__(
        self,
        harness: Harness,
        faulty: FaultyWorld,
        runtime: Runtime,
        copies: Runtime,
        *,
        visibility_seconds: float,
        max_sim_seconds: float,
        fanout: tuple[int, int] = (8, 24),
    ) -> None:
        self.harness = harness
        self.faulty = faulty
        self.plan: FaultPlan = faulty.plan
        self.runtime = runtime
        self.copies = copies  # a second process: concurrent copies run here
        self.visibility = visibility_seconds
        self.max_sim_seconds = max_sim_seconds
        self.fanout = fanout
        self.errors = HandlerErrors()
        self.deliveries = 0
        self.rounds = 0
        self.reconciler = Reconciler(faulty.inner)
        self.reconciled: list[str] = []  # runs the reconciler woke, in order
        # The first few woken runs as the reconciler found them (last events, faults on them).
        self.reconciled_details: dict[str, list[str]] = {}
        # A deploy in the middle of the first batch (bench/chaos.py): the deployments, and what
        # deploys the next version (its runtime and its copies' runtime).
        self.deployments: tuple[Any, Callable[[], tuple[Runtime, Runtime]]] | None = None
        self.deployed = False

    # --- a batch --------------------------------------------------------------------

    def run_batch(self, indices: range) -> list[CallerView]:
        callers = [self._start(spec_for(self.plan, i, self.fanout)) for i in indices]
        for caller in callers:
            caller.deployment = self.runtime.world.deployment_id() if self.deployments else None
        for _ in range(RECONCILE_PASSES):
            self._quiesce(callers)
            if not self._reconcile():
                break
        else:
            self._quiesce(callers)
        return callers

    def _reconcile(self) -> bool:
        """Let the reconciler's schedule come round once; whether it woke any run."""
        config = self.reconciler.config
        self.harness.advance(max(config.after_seconds, config.sweep_lag_seconds) + 1)
        woken = self.reconciler.tick().woken
        self.reconciled += [repair.run_id for repair in woken]
        for repair in woken:
            if len(self.reconciled_details) < 5 and repair.run_id not in self.reconciled_details:
                run = self.faulty.inner.runs.get(repair.run_id, resolve_data=ResolveData.NONE)
                self.reconciled_details[repair.run_id] = [
                    f"{run.workflow_name} {run.status.value} {run.attributes}",
                    *explain(self.faulty.inner, repair.run_id, self.plan.journal),
                ]
        return bool(woken)

    def _quiesce(self, callers: list[CallerView]) -> None:
        """Deliver, act and let time pass until nothing is due and the caller is idle (or the bound)."""
        began = self.harness.clock.now()
        round_no = 0
        while True:
            round_no += 1
            self.rounds += 1
            self.deliveries += self.harness.drain(intercept=self.intercept)
            if self.deployments is not None and not self.deployed and round_no == DEPLOY_ROUND:
                self._deploy(callers)
            acted = any([self._act(c, round_no) for c in callers])
            due = self.harness.pump.next_due()
            now = self.harness.clock.now()
            if (now - began).total_seconds() > self.max_sim_seconds:
                break
            if due is None:
                if not acted:
                    break
                due = now + timedelta(seconds=1)  # the caller acted: give it a simulated second
            if due > now:
                self.harness.advance((due - now).total_seconds())

    def _deploy(self, callers: list[CallerView]) -> None:
        """Deploy the next version with this batch's runs in flight; runs started from now on use it.

        A few runs are started on it at once, in this batch, beside the old ones.
        """
        assert self.deployments is not None
        self.runtime, self.copies = self.deployments[1]()
        self.deployed = True
        # The reconciler runs as the newest deployment (it releases held runs onto it).
        here = self.runtime.world.deployment_id()
        self.reconciler = Reconciler(DeployedWorld(self.faulty.inner, here), self.reconciler.config)
        first = max((c.spec["index"] for c in callers), default=0) + 1_000_000
        for index in range(first, first + AFTER_DEPLOY_RUNS):
            caller = self._start(spec_for(self.plan, index, self.fanout))
            caller.deployment = self.runtime.world.deployment_id()
            callers.append(caller)

    # --- the caller -----------------------------------------------------------------

    def _start(self, spec: dict[str, Any]) -> CallerView:
        key = f"chaos-{self.plan.seed}-{spec['index']}"
        with self.faulty.client():
            handle = _as_client(lambda: self.runtime.start(WORKFLOW, spec, idempotency_key=key))
        assert handle is not None, f"start of run {spec['index']} failed {CALLER_ATTEMPTS} times"
        return CallerView(spec=spec, run_id=handle.run_id)

    def _act(self, caller: CallerView, round_no: int) -> bool:
        """Resume the run's hook once it exists; cancel a run of mode cancel at its round."""
        spec = caller.spec
        acted = False
        if not caller.resumed and self._hook_live(spec["token"]):
            caller.resume_calls += 1
            with self.faulty.client():
                acted = self._resume(caller)
            caller.resumed = acted
        cancel_round = 1 + int(self.plan.uniform(f"cancel-round|{spec['index']}") * 6)
        if spec["mode"] == "cancel" and caller.cancel_answer is None and round_no >= cancel_round:
            try:
                with self.faulty.client():
                    caller.cancel_answer = _as_client(lambda: self._cancel(caller.run_id))
            except NotFound:
                # Resilient start: the run exists once its first message is handled
                # (run_created may have failed while the message went out). Next round.
                caller.notes.append(f"cancel in round {round_no}: run not found yet")
            acted = True
        return acted

    def _hook_live(self, token: str) -> bool:
        try:
            self.faulty.inner.hooks.get_by_token(token)
        except NotFound:
            return False
        return True

    def _resume(self, caller: CallerView) -> bool:
        token = caller.spec["token"]
        payload = hook_payload(caller.spec)
        for _ in range(CALLER_ATTEMPTS):
            try:
                self.runtime.resume_hook(token, payload, resume_id=f"{token}:resume")
                return True
            except NotFound:
                return False  # gone (the run ended) or not live: try again next round if still unresumed
            except RetryLater:
                caller.resume_calls += 1
        return False

    def _cancel(self, run_id: str) -> bool:
        return RunHandle(self.faulty, self.runtime.app.serializer, run_id).cancel("chaos")

    # --- deliveries -----------------------------------------------------------------

    def intercept(self, delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        key = f"{_delivery_name(delivery)}|{delivery.attempt}"
        if self.plan.fires(Fault.CRASH_DELIVERY, key):
            return Redeliver(self.visibility)
        if self.plan.fires(Fault.COPY, key):
            calls = 1 + self.plan.choose(f"copy-at|{key}", COPY_WITHIN_CALLS)
            self.faulty.arm_copy(calls, lambda: self._settle(lambda: self.copies.handle(delivery)))
        self.faulty.delivering = True
        try:
            result = self._settle(lambda: handle(delivery))
        finally:
            self.faulty.delivering = False
            self.faulty.disarm_copy()
        if isinstance(result, Ack) and self.plan.fires(Fault.DROP_DELETE, key):
            return Redeliver(self.visibility)
        return result

    def _settle(self, call: Callable[[], HandlerResult]) -> HandlerResult:
        """What the queue does with the handler's answer: a raise or a crash is a redelivery later."""
        try:
            return call()
        except Crash:
            return Redeliver(self.visibility)
        except WorldAwsError:
            return Redeliver(self.visibility)
        except Exception as exc:
            self.errors.add(exc)
            return Redeliver(self.visibility)


def _delivery_name(delivery: Delivery) -> str:
    """What a delivery carries, by name (its run and step), not by its random message id."""
    try:
        payload = decode_payload(delivery.body)
    except BadInput:
        return "unparsable"
    if isinstance(payload, HealthCheck):
        return "health"
    return f"{delivery.queue}|{payload.run_id}|{payload.step_id}"


def _as_client(call: Callable[[], T]) -> T | None:
    """``call`` as a client makes it: retried on retryable errors; a conflict answers itself."""
    for _ in range(CALLER_ATTEMPTS):
        try:
            return call()
        except RetryLater:
            continue
        except Conflict:
            raise
    return None
