"""``aws_world(clock)``: a fresh AWS World on moto, in-process, for the conformance suite and tests.

Inside the context:

* fake credentials and region ``us-east-1`` are set in the environment (and
  restored afterwards), so nothing can reach a real account;
* ``moto.mock_aws`` intercepts every boto3 call in this process;
* moto's request processing is serialised with one lock, so each request is
  atomic as on AWS (see :mod:`world_aws.testing.moto_patches`);
* the table, queues and bucket are created from ``template.yaml`` by
  ``world_aws.aws.infra.provision``: the same definitions as a deployment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from moto import mock_aws

from world_aws.aws.clients import AwsClients
from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.provision import provision
from world_aws.aws.read.log_reader import HoleRepairPolicy
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock
from world_aws.testing.moto_patches import serialised_moto

REGION = "us-east-1"
FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
# Variables that would point boto3 elsewhere than moto: cleared inside the context.
_CLEARED_ENV = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@contextmanager
def aws_world(clock: ManualClock, *, repair: HoleRepairPolicy | None = None) -> Iterator[AwsWorld]:
    """A fresh, empty AWS World on in-process moto, built on ``clock``.

    Args:
        clock: the World's clock.
        repair: the readers' hole-repair policy (tests of contract §3.2 inject a fake time).
    """
    with _fake_environment(), serialised_moto(), mock_aws():
        bootstrap = AwsConfig(
            table_name="-", workflow_queue_url="-", step_queue_url="-", bucket_name="-", region=REGION
        )
        clients = AwsClients.create(bootstrap, kms=True)  # tests and the cost meter watch its calls
        resources = provision(clients, name_prefix="world-aws-test")
        config = AwsConfig(
            table_name=resources.table_name,
            workflow_queue_url=resources.workflow_queue_url,
            step_queue_url=resources.step_queue_url,
            bucket_name=resources.bucket_name,
            region=REGION,
        )
        world = create_aws_world(config, clients=clients, clock=clock, repair=repair)
        try:
            yield world
        finally:
            world.close()
            clients.close()


@contextmanager
def _fake_environment() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in (*FAKE_ENV, *_CLEARED_ENV)}
    os.environ.update(FAKE_ENV)
    for name in _CLEARED_ENV:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
