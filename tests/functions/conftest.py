"""Fixtures of the Lambda function tests: the embedded moto endpoint and the sample events.

``embedded`` is one ``EmbeddedAws`` per module; ``resources`` a fresh copy of the
template's table, queues and bucket per test. The sample events of
``infra/events`` name queues of the default prefix: ``sample_event`` re-points
each record's ``eventSourceARN`` at the test's queues and leaves everything
else as committed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from functions._container import PROCESS
from infra.events.make_events import EVENTS_DIR
from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.world import QueueName
from world_aws.local.embedded import EmbeddedAws

APP = "world_aws.demo:app"


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedAws]:
    with EmbeddedAws(name_prefix="t-fn") as aws:
        yield aws


@pytest.fixture
def resources(embedded: EmbeddedAws) -> ProvisionedResources:
    """A fresh copy of the template's resources for this test."""
    return embedded.provision(f"t-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def function_env(
    embedded: EmbeddedAws, resources: ProvisionedResources, request: pytest.FixtureRequest
) -> dict[str, str]:
    """The environment template.yaml gives a function, for this test's resources.

    ``@pytest.mark.dispatched``: inline step execution off (``WORKFLOW_MAX_INLINE_STEPS=0``).
    """
    dispatched = request.node.get_closest_marker("dispatched") is not None
    return {
        **embedded.env(),
        **resources.to_env(),
        "WORKFLOW_APP": APP,
        "POWERTOOLS_SERVICE_NAME": "world_aws",
        "POWERTOOLS_METRICS_NAMESPACE": "WorldAws",
        "WORKFLOW_MAX_INLINE_STEPS": "0" if dispatched else "3",
    }


@pytest.fixture
def deploy(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``deploy(**overrides)``: set the function environment (names overridden), build the container afresh.

    Each call is a new deployment of the functions: the next invocation builds its
    World and Runtime from the environment as it is then.
    """

    def set_environment(**overrides: str) -> None:
        for name, value in {**function_env, **overrides}.items():
            monkeypatch.setenv(name, value)
        PROCESS.container.reset()

    yield set_environment
    PROCESS.container.reset()


@pytest.fixture
def deployed(deploy: Callable[..., None]) -> None:
    """The function environment of the test's resources set, and the container built afresh from it."""
    deploy()


@pytest.fixture
def world(embedded: EmbeddedAws, function_env: dict[str, str]) -> AwsWorld:
    """An AWS World on the test's resources, to read state back through the contract."""
    return create_aws_world(AwsConfig.from_env(function_env), clients=embedded.clients)


@pytest.fixture
def sample_event(resources: ProvisionedResources) -> Callable[[str], dict[str, Any]]:
    """``sample_event(file_name)``: a committed sample event, re-pointed at the test's queues."""
    arns = {queue: resources.queues[queue].arn for queue in QueueName}

    def load(file_name: str) -> dict[str, Any]:
        event: dict[str, Any] = json.loads((EVENTS_DIR / file_name).read_text(encoding="utf-8"))
        for record in event.get("Records", []):
            step = record["eventSourceARN"].endswith("-step-queue")
            record["eventSourceARN"] = arns[QueueName.STEP if step else QueueName.WORKFLOW]
        return event

    return load
