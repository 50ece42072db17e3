"""Fixtures of the infrastructure tests: moto in-process (``mock_aws``) with fake credentials.

One moto per module (creating boto3 clients and provisioning cost about a
second); each test that creates resources uses its own name prefix.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws


@dataclass(frozen=True)
class Clients:
    dynamodb: Any
    sqs: Any
    s3: Any


@pytest.fixture(scope="module")
def clients() -> Iterator[Clients]:
    """boto3 clients on a fresh in-process moto, shared by the module's tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
            patch.delenv(name, raising=False)
        with mock_aws():
            yield Clients(
                dynamodb=boto3.client("dynamodb", region_name="us-east-1"),
                sqs=boto3.client("sqs", region_name="us-east-1"),
                s3=boto3.client("s3", region_name="us-east-1"),
            )
