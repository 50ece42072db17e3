"""Fixtures of the HTTP API tests: ``handle_http`` driven with API Gateway v2.0 events.

``api`` wraps a ``Runtime`` over a fresh in-memory World on a ``ManualClock``;
``api.drain()`` delivers every queued message synchronously, so a run advances
exactly as far as its messages take it (no threads, no waiting).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from world_aws import Workflows
from world_aws.api.app import handle_http
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.runtime.runtime import Runtime

from .apps import app


def http_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw_body: str | None = None,
    query: Mapping[str, str] | None = None,
    base64_body: bool = False,
    stage: str = "$default",
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) event, as API Gateway sends it."""
    text = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    if text is not None and base64_body:
        text = base64.b64encode(text.encode()).decode()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": {"content-type": "application/json"},
        "queryStringParameters": dict(query) if query else None,
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": "req-1",
            "stage": stage,
        },
        "body": text,
        "isBase64Encoded": base64_body,
    }


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]
    text: str

    @property
    def message(self) -> str:
        return str(self.body["error"]["message"])


@dataclass
class Api:
    runtime: Runtime
    world: MemoryWorld
    clock: ManualClock

    def call(self, method: str, path: str, **kwargs: Any) -> Answer:
        response = handle_http(http_event(method, path, **kwargs), self.runtime)
        assert set(response) >= {"statusCode", "headers", "body"}
        assert response["headers"]["content-type"] == "application/json"
        text = response["body"]
        return Answer(response["statusCode"], json.loads(text), response["headers"], text)

    def drain(self) -> None:
        self.world.memory_queue.drain(self.runtime.handle)

    def start(self, workflow: str, *args: Any, **kwargs: Any) -> str:
        answer = self.call("POST", "/runs", body={"workflow": workflow, "args": list(args), "kwargs": kwargs})
        assert answer.status == 201, answer.body
        return str(answer.body["run_id"])


@contextmanager
def memory_runtime(workflows: Workflows) -> Iterator[tuple[Runtime, MemoryWorld, ManualClock]]:
    """A ``Runtime`` of ``workflows`` over a fresh in-memory World on a ``ManualClock``."""
    clock = ManualClock()
    world = create_memory_world(clock=clock)
    runtime = Runtime(world, workflows)
    try:
        yield runtime, world, clock
    finally:
        runtime.close()
        world.close()


@pytest.fixture
def api() -> Iterator[Api]:
    with memory_runtime(app) as (runtime, world, clock):
        yield Api(runtime, world, clock)
