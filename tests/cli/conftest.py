"""Fixtures of the CLI tests: a ``world-aws dev`` stack started in-process on a free port.

One dev stack per module (moto on loopback, the template's resources, the local
event source and the HTTP API): starting it costs about a second. It serves
``examples.approval:app``, whose workflow waits on the hook ``approve:<order>``.
Each test uses its own order ids, so the tests of a module do not see each
other's hooks.
"""

from __future__ import annotations

import io
import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from examples.approval import app
from world_aws.cli.main import main
from world_aws.local.dev import DevStack, start_dev_stack

DEADLINE_SECONDS = 30.0


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


@dataclass
class Dev:
    """The running dev stack, with the CLI and the HTTP API pointed at it."""

    stack: DevStack

    @property
    def url(self) -> str:
        return self.stack.url

    def cli(self, *argv: str) -> Result:
        """``world-aws <argv> --api <dev url>``, in-process."""
        out, err = io.StringIO(), io.StringIO()
        code = main([*argv, "--api", self.url], out=out, err=err)
        return Result(code, out.getvalue(), err.getvalue())

    def http(self, method: str, path: str, body: Any = None) -> Any:
        """A plain HTTP request to the API (what curl would do); returns the decoded answer."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"}  # a curl -d without it is refused (415)
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def wait_for_status(self, run_id: str, status: str) -> dict[str, Any]:
        """Poll until the run has ``status`` (the stack's consumers run on real threads)."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            run = self.http("GET", f"/runs/{run_id}")
            if run["status"] == status or time.monotonic() > deadline:
                assert run["status"] == status, run
                return dict(run)
            time.sleep(0.05)

    def wait_for_event(self, run_id: str, event_type: str) -> None:
        """Poll the run's log until it holds an event of ``event_type``."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            rows = self.http("GET", f"/runs/{run_id}/events")["events"]
            if any(row["type"] == event_type for row in rows):
                return
            assert time.monotonic() < deadline, f"no {event_type} in {[row['type'] for row in rows]}"
            time.sleep(0.05)


def fake_aws_environment(patch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region, and no endpoint, profile or API from the caller's shell."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }.items():
        patch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN", "WORLD_AWS_API"):
        patch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    with pytest.MonkeyPatch.context() as patch:
        fake_aws_environment(patch)
        stack = start_dev_stack(app, port=0)
        try:
            yield Dev(stack)
        finally:
            stack.stop()
