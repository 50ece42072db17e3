"""The sealing seam over another World: the memory World wrapped in ``SealedWorld``.

The same stores' wrappers the AWS World installs seal the memory World's payloads: a
workflow's run (dispatched steps, a hook, a stream, a failing step) keeps no marker in
what the inner World stores or queues, and reads back whole through the sealed World.
The key service here is a local one (AES-GCM key wrap under a test master key), as a
World of one's own may bring.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import creation_of, payload_fields
from world_aws.contract.sealing import is_sealed
from world_aws.contract.world import Queue, QueueName
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.sealing import SealedWorld
from world_aws.testing.local_keys import LocalKeyService
from world_aws.worker.config import RuntimeConfig

from .sealed_app import BIG_INPUT_CHARS, MARK, TOKEN, app, scan


class WatchedQueue:
    """The World's queue, keeping every body published."""

    def __init__(self, inner: Queue) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    def publish(self, queue: QueueName, body: bytes, **options: Any) -> str:
        self.sent.append(body)
        return self.inner.publish(queue, body, **options)


def test_a_sealed_memory_world_stores_and_queues_no_plaintext() -> None:
    # GIVEN the memory World sealed with a local key service, every step by message
    memory = create_memory_world(clock=ManualClock())
    keys = LocalKeyService()
    world = SealedWorld(memory, keys)
    watched = WatchedQueue(memory.queue)
    world.queue = watched
    runtime = Runtime(world, app, replace(RuntimeConfig.from_env(), max_inline_steps=0))
    try:
        # WHEN the marked workflow runs to its end
        handle = runtime.start(scan, f"input {MARK}")
        memory.memory_queue.drain(runtime.handle)
        runtime.resume_hook(TOKEN, f"approved {MARK}")
        memory.memory_queue.drain(runtime.handle)
        result = handle.result(timeout=5)
        # THEN it reads back whole through the sealed World
        assert result["out"] == f"output {MARK} of input {MARK}"
        assert result["size"] == BIG_INPUT_CHARS + len(MARK)
        assert result["approval"] == f"approved {MARK}"
        # and the inner World holds every payload sealed, nowhere the marker
        run_id = handle.run_id
        stored = [p for e in memory.events.list(run_id) for p in _payloads(e.data)]
        stored += [c.data for c in memory.streams.read(run_id, "default")]
        assert stored and all(is_sealed(p) for p in stored)
        assert not any(MARK.encode() in p for p in stored)
        assert watched.sent and not any(MARK.encode() in body for body in watched.sent)
        assert keys.generated == 1  # one data key for the run, kept in memory
    finally:
        runtime.close()
        memory.close()


def _payloads(data: object) -> list[bytes]:
    values = [getattr(data, n) for n in payload_fields(type(data))]  # type: ignore[arg-type]
    creation = creation_of(data)  # type: ignore[arg-type]
    if creation is not None:
        values.append(creation.input)
    return [bytes(v) for v in values if v]
