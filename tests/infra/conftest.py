"""Fixtures of the infrastructure tests: moto in-process (``mock_aws``) with fake credentials."""

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


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clients]:
    """boto3 clients on a fresh in-process moto (nothing exists yet)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield Clients(
            dynamodb=boto3.client("dynamodb", region_name="us-east-1"),
            sqs=boto3.client("sqs", region_name="us-east-1"),
            s3=boto3.client("s3", region_name="us-east-1"),
        )
