"""Resilient start of a run (contract §6.1), shared by ``start()``, child workflows and continue-as-new.

``run_created`` and the first workflow message (carrying the creation data, keyed
``<run_id>:start``) are written in parallel. A failed publish fails the start; a
``run_created`` that failed transiently is fine (the message creates the run), and
a Conflict means the run exists already (a redone start of a deterministic id).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from world_aws.client.parallel import run_parallel
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.payload import InvokePayload, RunInput, StepInputRef
from world_aws.contract.records import (
    EventRequest,
    EventResult,
    EventType,
    RunCreatedData,
    RunCreation,
)
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import QueueName, World
from world_aws.errors import Conflict, RetryLater
from world_aws.observe import tracing


def start_run(
    world: World,
    pool: Executor,
    run_id: str,
    creation: RunCreation,
    carrier: dict[str, str] | None = None,
    *,
    keyed: bool = True,
) -> EventResult | Exception:
    """Create ``run_id`` and publish its first message; returns what ``run_created`` answered.

    ``carrier`` is the run's root trace context (W3C), carried by the first message;
    ``keyed``: see :func:`start_calls`.

    Returns:
        The create's result, or its tolerated error (``Conflict``: the run exists;
        ``RetryLater``: the message will create it).

    Raises:
        WorldAwsError: the publish failed, or the create failed otherwise.
    """
    created, published = run_parallel(pool, start_calls(world, run_id, creation, carrier, keyed=keyed))
    return start_result(created, published)


def start_calls(
    world: World,
    run_id: str,
    creation: RunCreation,
    carrier: dict[str, str] | None = None,
    *,
    keyed: bool = True,
) -> list[Callable[[], Any]]:
    """The two writes of a start, ``run_created`` and the first message, to run in parallel.

    The message is keyed ``<run_id>:start`` (contract §4.4) when the same start may be made
    again: a caller's retry under its idempotency key, a parent's pass redone before its
    child's ``hook_created``, a chain's next run. A start without a key (``keyed=False``)
    names a new run each time, so nothing would repeat its publish, and the key's claim
    and record (2 WRU on the AWS World) would buy nothing; a copy of the message anyway
    (at-least-once delivery) is a second continuation, as any duplicate wake-up is.

    A sealing World gives the run its data key first (``contract.sealing``): both writes
    carry the same sealed creation.
    """
    creation = world.payloads.creation(run_id, creation)
    message = InvokePayload(
        run_id=run_id,
        run_input=run_input_of(world, creation, run_id),
        requested_at=world.clock.now(),
        trace_carrier=carrier or {},
    )
    return [
        lambda: world.events.create(
            run_id, EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=creation))
        ),
        lambda: world.queue.publish(
            QueueName.WORKFLOW, encode_payload(message), idempotency_key=f"{run_id}:start" if keyed else None
        ),
    ]


def start_result(created: Any, published: Any) -> EventResult | Exception:
    """Judge the answers of :func:`start_calls` (see :func:`start_run`)."""
    if isinstance(published, Exception):
        raise published
    if isinstance(created, Exception) and not isinstance(created, Conflict | RetryLater):
        raise created
    assert isinstance(created, EventResult | Exception)
    return created


def run_input_of(world: World, creation: RunCreation, run_id: str) -> RunInput:
    """The creation data a first message carries (the input in S3 above 128 KiB)."""
    if len(creation.input) <= MAX_INLINE_PAYLOAD_BYTES:
        data, ref = creation.input, None
    else:
        blob = world.blobs.put(creation.input, run_id=run_id)
        data, ref = None, StepInputRef(ref=blob.key, size=blob.size, sha256=blob.sha256)
    return RunInput(
        workflow_name=creation.workflow_name,
        deployment_id=creation.deployment_id,
        spec_version=creation.spec_version,
        input=data,
        input_ref=ref,
        attributes=creation.attributes,
    )


def publish_wake(
    world: World,
    run_id: str,
    *,
    delay_seconds: float,
    key: str | None,
    succeeds: str | None = None,
    wakes: str | None = None,
) -> str:
    """Publish a continuation message for ``run_id``: its next replay (a wake-up).

    ``key`` collapses publishes of the same wake-up; ``succeeds`` and ``wakes`` are
    the worker's (``worker/orchestrator.py``: the message it hands on, the wait it wakes).
    """
    body = encode_payload(
        InvokePayload(
            run_id=run_id,
            requested_at=world.clock.now(),
            trace_carrier=tracing.current_carrier(),
            succeeds=succeeds,
            wakes=wakes,
        )
    )
    return world.queue.publish(QueueName.WORKFLOW, body, delay_seconds=delay_seconds, idempotency_key=key)
