"""KMS faults on the sealed path: throttling is a transient error, and nothing is recorded half-sealed.

An AWS World on in-process moto with a KMS key; KMS's answers are replaced by a
``ThrottlingException`` (botocore's before-call hook on the World's real client) while
a switch is on. A start whose data key cannot be made raises ``Throttled`` and records
nothing; a reader whose ``Decrypt`` is throttled gets ``Throttled`` (a ``RetryLater``:
the delivery is tried again) and the whole run once KMS answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from world_aws.aws.local_clients import local_kms_key
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import ResolveData
from world_aws.contract.sealing import is_sealed
from world_aws.errors import RetryLater, Throttled
from world_aws.runtime.runtime import Runtime
from world_aws.testing.aws_factory import aws_world

from .sealed_app import MARK, app, scan


@dataclass
class Throttle:
    """While ``on``, every KMS call named in ``operations`` is answered ThrottlingException."""

    operations: tuple[str, ...]
    on: bool = False
    refused: int = 0

    def __call__(self, model: Any, **_: Any) -> None:
        if self.on and model.name in self.operations:
            self.refused += 1
            error = {"Code": "ThrottlingException", "Message": "Rate exceeded"}
            raise ClientError({"Error": error}, model.name)


@pytest.fixture
def sealing_world() -> Iterator[tuple[AwsWorld, Throttle]]:
    with aws_world(ManualClock()) as plain:
        throttle = Throttle(("GenerateDataKey", "Decrypt"))
        plain.clients.kms.meta.events.register("before-call.kms.*", throttle)
        config = replace(plain.config, payload_key_id=local_kms_key(plain.clients))
        world = create_aws_world(config, clients=plain.clients, clock=plain.clock)
        try:
            yield world, throttle
        finally:
            world.close()


def test_a_start_whose_data_key_is_throttled_raises_throttled_and_records_nothing(
    sealing_world: tuple[AwsWorld, Throttle],
) -> None:
    world, throttle = sealing_world
    runtime = Runtime(world, app)
    try:
        # GIVEN KMS throttles GenerateDataKey
        throttle.on = True
        # WHEN a run starts THEN the caller gets a retry-later error, and no run exists
        with pytest.raises(Throttled):
            runtime.start(scan, f"input {MARK}")
        assert throttle.refused >= 1
        assert world.runs.list().runs == []
        # WHEN KMS answers again THEN the start goes through, its input sealed at rest
        throttle.on = False
        handle = runtime.start(scan, f"input {MARK}")
        stored = world.runs.inner.get(handle.run_id)  # type: ignore[attr-defined]
        assert is_sealed(stored.input)
    finally:
        runtime.close()


def test_a_reader_whose_decrypt_is_throttled_retries_later_then_reads_the_run(
    sealing_world: tuple[AwsWorld, Throttle],
) -> None:
    world, throttle = sealing_world
    runtime = Runtime(world, app)
    try:
        run_id = runtime.start(scan, f"input {MARK}").run_id
    finally:
        runtime.close()
    # GIVEN another container (a World with cold caches) whose Decrypt is throttled
    reader = create_aws_world(world.config, clients=world.clients, clock=world.clock)
    try:
        throttle.on = True
        # WHEN it reads the run THEN it is told to retry later (the delivery comes back)
        for _ in range(2):
            with pytest.raises(RetryLater):
                reader.runs.get(run_id)
        # a read without payloads needs no key
        assert reader.runs.get(run_id, resolve_data=ResolveData.NONE).run_id == run_id
        # WHEN KMS answers again THEN the run reads whole
        throttle.on = False
        run = reader.runs.get(run_id)
        assert run.input is not None and MARK.encode() in run.input
    finally:
        reader.close()
