"""The chaos benchmark on the AWS World (moto): faults injected by botocore hooks on the World's own clients.

Each API call the World makes draws its fault once, in ``before-call`` (keyed by
the operation and its request), and the hooks act it out:

* ``Fault.TRANSIENT``: ``before-send`` answers instead of moto: a throttling
  error, an HTTP 500, or a connection error; on the first attempt only, or (half
  of them) on every attempt, so the retries run out and the World sees
  ``Throttled`` / ``Transient``; ``needs-retry`` retries an injected failure at
  once (3 attempts, as the clients' standard mode, without its real backoff);
* ``Fault.LOST``: the call runs; ``after-call`` then raises a read timeout;
* ``Fault.REPEAT``: the call runs; ``needs-retry`` asks botocore to send the
  same request again (not for ``TransactWriteItems``, which DynamoDB
  deduplicates by its client request token);
* ``Fault.CRASH_CALL`` (only while a delivery is handled): ``Crash`` from
  ``before-send`` (the call never went out) or ``after-call`` (it ran).

Faults fire only while the runtime handles a delivery or the driver calls as a
client, never in the pump's own receives and deletes or in the checks. Delayed
sends are made due on the manual clock by the ``SqsPump``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from harness.chaos.run import Setup
from harness.fake_time import FakeMonotonic
from harness.fault_plan import Crash, Fault, FaultPlan
from harness.faulty_world import FaultyWorld
from harness.harness import Harness
from harness.sqs_pump import SqsPump
from world_aws.aws.clients import AwsClients
from world_aws.aws.read.log_reader import HoleRepairPolicy
from world_aws.contract.clock import ManualClock
from world_aws.contract.world import World
from world_aws.testing.aws_factory import aws_world

RETRY_ATTEMPTS = 3  # botocore's standard mode, as the World's clients are configured
_NOT_REPEATED = frozenset({"dynamodb.TransactWriteItems"})
_JSON_ERRORS = {
    0: (400, '{"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "injected"}'),
    1: (500, '{"__type": "InternalServerError", "message": "injected"}'),
}
_S3_ERRORS = {
    0: (503, "<Error><Code>SlowDown</Code><Message>injected</Message></Error>"),
    1: (500, "<Error><Code>InternalError</Code><Message>injected</Message></Error>"),
}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


class _Call(threading.local):
    fault: Fault | None = None
    injected: bool = False  # this attempt failed by injection: retry it at once
    persistent: bool = False
    kind: int = 0
    point: str = ""


class BotocoreFaults:
    """The fault hooks of one World's clients; faults only while ``faulty`` is delivering or calling."""

    def __init__(self, plan: FaultPlan, faulty: FaultyWorld) -> None:
        self.plan = plan
        self.faulty = faulty
        self._call = _Call()

    def attach(self, clients: AwsClients) -> None:
        for client in (clients.dynamodb, clients.sqs, clients.s3):
            events = client.meta.events
            events.register("before-call.*.*", self._before_call)
            events.register_first("before-send.*.*", cast(Any, self._before_send))
            events.register_first("needs-retry.*.*", cast(Any, self._needs_retry))
            events.register("after-call.*.*", self._after_call)

    def _before_call(self, event_name: str, params: dict[str, Any], **_: Any) -> None:
        call = self._call
        call.fault = None
        if not (self.faulty.delivering or self.faulty.calling):
            return
        operation = event_name.split(".", 1)[1]
        digest = hashlib.blake2b(repr(params.get("body")).encode(), digest_size=8).hexdigest()
        point = call.point = f"{operation}|{digest}"
        plan = self.plan
        if self.faulty.delivering and plan.fires(Fault.CRASH_CALL, point):
            call.fault, call.kind = Fault.CRASH_CALL, plan.choose(f"crash-side|{point}", 2)
        elif plan.fires(Fault.TRANSIENT, point):
            call.fault, call.kind = Fault.TRANSIENT, plan.choose(f"transient-kind|{point}", 3)
            call.persistent = plan.choose(f"persistent|{point}", 2) == 1
        elif operation not in _NOT_REPEATED and plan.fires(Fault.REPEAT, point):
            call.fault = Fault.REPEAT
        elif plan.fires(Fault.LOST, point):
            call.fault = Fault.LOST

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        call = self._call
        if call.fault is Fault.CRASH_CALL and call.kind == 0:
            call.fault = None
            raise Crash(f"died before {call.point}")
        if call.fault is not Fault.TRANSIENT:
            return None
        call.injected = True
        if not call.persistent:
            call.fault = None
        if call.kind == 2:
            raise EndpointConnectionError(endpoint_url=request.url)
        s3 = ".s3." in request.url or "s3.amazonaws" in request.url
        status, body = (_S3_ERRORS if s3 else _JSON_ERRORS)[call.kind]
        return AWSResponse(request.url, status, HTTPHeaders(), _Raw(body.encode()))

    def _needs_retry(self, attempts: int, response: Any = None, **_: Any) -> int | None:
        call = self._call
        if call.injected:
            # As botocore's standard mode would (3 attempts), but without its real backoff sleep.
            call.injected = False
            return 0 if attempts < RETRY_ATTEMPTS else None
        if call.fault is not Fault.REPEAT or attempts != 1 or response is None:
            return None
        call.fault = None
        return 0 if response[0].status_code < 300 else None

    def _after_call(self, http_response: Any, **_: Any) -> None:
        call = self._call
        fault, call.fault = call.fault, None
        if fault is Fault.CRASH_CALL:
            raise Crash(f"died after {call.point}")
        if fault is Fault.LOST and http_response.status_code < 300:
            raise ReadTimeoutError(endpoint_url="injected")


@contextmanager
def aws_setup(plan: FaultPlan, visibility_seconds: float) -> Iterator[Setup]:
    """An AWS World on moto with the fault hooks on its clients, a pump and checks on a clean client."""
    clock = ManualClock()
    fake = FakeMonotonic()  # hole repair waits its grace period without really waiting
    repair = HoleRepairPolicy(monotonic=fake.monotonic, sleep=fake.sleep)
    with aws_world(clock, repair=repair) as world:
        faulty = FaultyWorld(cast(World, world), plan, inject_calls=False)  # delays and copies only
        BotocoreFaults(plan, faulty).attach(world.clients)
        sqs = world.clients.sqs
        urls = set(world.queue_urls().values())

        def dead_letters() -> int:
            total = 0
            for url in (u for u in sqs.list_queues().get("QueueUrls", []) if u not in urls):
                counts = sqs.get_queue_attributes(
                    QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
                )
                total += int(counts["Attributes"].get("ApproximateNumberOfMessages", "0"))
            return total

        yield Setup(Harness("aws", cast(World, faulty), clock, SqsPump(world)), faulty, dead_letters)
