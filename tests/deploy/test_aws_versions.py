"""Pinning on AWS: deployments are published versions of the workflow function (moto holds them).

moto keeps Lambda functions and their versions (``publish_version``,
``list_versions_by_function``, ``delete_function`` with a qualifier) but invoking
one needs Docker: the hand-over's ``Invoker`` here looks the version up in moto (a
deleted one is ``DeploymentGone``, as Lambda's ResourceNotFound is) and runs that
version's app in process, through the hand-over event the function's handler takes.
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.deploy.apps import version_app
from world_aws.aws.config import AwsConfig
from world_aws.aws.versions import (
    LambdaHandover,
    LambdaInvoker,
    handed_over,
    handover_answer,
    list_deployments,
    retire,
)
from world_aws.aws.world import create_aws_world
from world_aws.contract.world import World
from world_aws.errors import DeploymentGone, DeploymentInUse, NotFound
from world_aws.local.embedded import EmbeddedAws
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import DeployedWorld

FUNCTION = "t-dpl-workflow"
WAIT = 60.0


class InProcessInvoker:
    """``Invoker``: the version must exist in moto; its app's handler answers the hand-over event."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.runtimes: dict[str, Runtime] = {}
        self.invoked: list[str] = []

    def invoke(self, function: str, version: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            self._client.get_function(FunctionName=function, Qualifier=version)
        except ClientError as exc:
            raise DeploymentGone(f"{function}:{version}: {exc}") from exc
        delivery = handed_over(event)
        assert delivery is not None
        self.invoked.append(version)
        return handover_answer(self.runtimes[version].handle(delivery))


@pytest.fixture
def aws() -> Iterator[EmbeddedAws]:
    with EmbeddedAws(name_prefix="t-dpl") as embedded:
        yield embedded


def _lambda_client(aws: EmbeddedAws) -> Any:
    env = aws.env()
    return boto3.client(
        "lambda",
        endpoint_url=aws.endpoint_url,
        region_name=aws.region,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )


def _publish(client: Any, aws: EmbeddedAws, code: bytes) -> str:
    """Deploy ``code`` to the function (creating it first) and publish a version; its number."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", code)
    try:
        client.get_function(FunctionName=FUNCTION)
        client.update_function_code(FunctionName=FUNCTION, ZipFile=buffer.getvalue())
    except ClientError:
        iam = boto3.client(
            "iam",
            endpoint_url=aws.endpoint_url,
            region_name=aws.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        role = iam.create_role(RoleName="t-dpl-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        client.create_function(
            FunctionName=FUNCTION,
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": buffer.getvalue()},
        )
    return str(client.publish_version(FunctionName=FUNCTION)["Version"])


def _until_hook(world: World, token: str) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            world.hooks.get_by_token(token)
            return
        except NotFound:
            assert time.monotonic() < deadline, f"no hook {token}"
            time.sleep(0.05)


def test_a_delivery_for_an_older_version_is_handed_to_it_and_retire_waits_for_its_runs(
    aws: EmbeddedAws,
) -> None:
    client = _lambda_client(aws)
    world = create_aws_world(AwsConfig.from_env(aws.env()), clients=aws.clients)
    invoker = InProcessInvoker(client)
    handover = LambdaHandover(invoker, FUNCTION)
    config = RuntimeConfig(replay_cache_runs=0)
    # GIVEN version 1 of the workflow function, serving the order app's version 1
    v1 = _publish(client, aws, b"# v1")
    invoker.runtimes[v1] = Runtime(DeployedWorld(world, v1), version_app(1), config, handover=handover)
    consumers = world.start_consumers(lambda d: invoker.runtimes[max(invoker.runtimes, key=int)].handle(d))
    try:
        old = invoker.runtimes[v1].start("order", "a1")
        _until_hook(world, "approve:a1")
        # WHEN version 2, incompatible, is published and becomes the one that consumes
        v2 = _publish(client, aws, b"# v2")
        invoker.runtimes[v2] = Runtime(DeployedWorld(world, v2), version_app(2), config, handover=handover)
        new = invoker.runtimes[v2].start("order", "b1")
        _until_hook(world, "approve:b1")
        # THEN deployments lists both versions from Lambda, each with its live run
        listed = list_deployments(client, FUNCTION, world.runs)
        assert [(d.deployment_id, d.live_runs, d.newest) for d in listed] == [(v1, 1, False), (v2, 1, True)]
        # and version 1 cannot be retired while its run is pinned to it
        with pytest.raises(DeploymentInUse, match="1 live run"):
            retire(client, FUNCTION, v1, world.runs)
        # WHEN the hooks are resumed (through the newest version's runtime)
        invoked_before = len(invoker.invoked)
        invoker.runtimes[v2].resume_hook("approve:a1", "yes a1")
        invoker.runtimes[v2].resume_hook("approve:b1", "yes b1")
        # THEN the old run completed on version 1's code, handed over to it, the new one on version 2's
        assert old.result(timeout=WAIT) == {
            "version": 1,
            "reserved": "reserved a1 by v1",
            "approval": "yes a1",
        }
        assert new.result(timeout=WAIT) == {
            "version": 2,
            "reserved": "reserved b1 by v2",
            "approval": "yes b1",
        }
        assert old.run().deployment_id == v1 and new.run().deployment_id == v2
        assert set(invoker.invoked[invoked_before:]) == {v1}
        # and version 1, with no live run left, is retired: deleted from Lambda
        retire(client, FUNCTION, v1, world.runs)
        versions = client.list_versions_by_function(FunctionName=FUNCTION)["Versions"]
        assert [v["Version"] for v in versions if v["Version"] != "$LATEST"] == [v2]
        # and a hand-over to it now finds it gone (the delivery is then handled on the newest)
        with pytest.raises(DeploymentGone):
            handover.hand_over(v1, _any_delivery())
    finally:
        consumers.stop()
        for runtime in invoker.runtimes.values():
            runtime.close()
        world.close()


def test_the_lambda_invoker_finds_a_missing_function_version_gone(aws: EmbeddedAws) -> None:
    # GIVEN no such function (moto answers ResourceNotFoundException without Docker, as Lambda
    # does for a deleted version)
    client = _lambda_client(aws)
    # THEN the hand-over's invoke says the deployment is gone (handled on the newest), not a
    # misconfiguration (which would redeliver it forever)
    with pytest.raises(DeploymentGone, match="is gone"):
        LambdaInvoker(client).invoke("t-dpl-no-such-function", "7", {"world_aws_handover": {}})


def _any_delivery() -> Any:
    from world_aws.contract.world import Delivery, QueueName

    return Delivery(queue=QueueName.WORKFLOW, message_id="m", attempt=1, body=b"\xa0")


def test_the_deployment_id_is_the_workflow_functions_version() -> None:
    base = {
        "WORKFLOW_TABLE_NAME": "t",
        "WORKFLOW_QUEUE_URL": "q",
        "STEP_QUEUE_URL": "s",
        "WORKFLOW_PAYLOAD_BUCKET": "b",
        "AWS_REGION": "us-east-1",
    }
    # the workflow function: its own version, as Lambda sets it
    own = AwsConfig.from_env({**base, "AWS_LAMBDA_FUNCTION_NAME": "wf", "AWS_LAMBDA_FUNCTION_VERSION": "7"})
    assert (own.deployment_id, own.pinned_function) == ("7", "wf")
    # the other functions: the version the template names
    arn = "arn:aws:lambda:us-east-1:123456789012:function:wf:7"
    other = AwsConfig.from_env(
        {**base, "WORKFLOW_DEPLOYMENT_FUNCTION": arn, "AWS_LAMBDA_FUNCTION_VERSION": "3"}
    )
    assert (other.deployment_id, other.pinned_function) == ("7", arn.rsplit(":", 1)[0])
    # $LATEST (no version published) and local runs: no pinning by version
    latest = AwsConfig.from_env(
        {**base, "AWS_LAMBDA_FUNCTION_NAME": "wf", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST"}
    )
    assert (latest.deployment_id, latest.pinned_function) == ("dpl_local", None)
    # a hand-set id overrides (no hand-over)
    manual = AwsConfig.from_env(
        {**base, "WORKFLOW_DEPLOYMENT_ID": "dpl_9", "WORKFLOW_DEPLOYMENT_FUNCTION": arn}
    )
    assert (manual.deployment_id, manual.pinned_function) == ("dpl_9", None)
