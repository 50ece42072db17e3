"""``world-aws stream`` and ``world-aws resume`` of a typed hook, against a dev stack (memory World)."""

from __future__ import annotations

import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from world_aws import Hook, Workflows, get_writable
from world_aws.cli.main import main
from world_aws.local.dev import DevStack, start_dev_stack

DEADLINE_SECONDS = 30.0

app = Workflows()


class Go(Hook):
    count: int


@app.step
def tick(count: int) -> int:
    writer = get_writable("ticks")
    for i in range(count):
        writer.write({"tick": i})
    writer.close()
    return count


@app.workflow
async def ticking() -> int:
    go = await Go.wait(token="go:ticks")
    return await tick(go.count)


@pytest.fixture(scope="module")
def stack() -> Iterator[DevStack]:
    built = start_dev_stack(app, port=0, kind="memory")
    try:
        yield built
    finally:
        built.stop()


def cli(stack: DevStack, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--api", stack.url], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def http(stack: DevStack, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    request = urllib.request.Request(stack.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_typed_hook_refuses_a_bad_payload_and_the_cli_follows_the_stream(stack: DevStack) -> None:
    # GIVEN a run waiting on a typed hook
    status, started = http(stack, "POST", "/runs", {"workflow": "ticking"})
    assert status == 201
    run_id = started["run_id"]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while http(stack, "POST", "/hooks/go:ticks/resume", {"payload": {"count": "many"}})[0] == 404:
        assert time.monotonic() < deadline, "the hook never appeared"
        time.sleep(0.05)
    # WHEN it is resumed with a payload that does not fit THEN 400 over HTTP, exit 2 from the CLI
    status, refused = http(stack, "POST", "/hooks/go:ticks/resume", {"payload": {"count": "many"}})
    assert status == 400 and "field 'count'" in refused["error"]["message"]
    code, _, err = cli(stack, "resume", "go:ticks", "--payload", '{"count": "many"}')
    assert code == 2 and "field 'count'" in err
    # WHEN a fitting payload comes THEN the run writes 3 ticks, which `stream --follow` prints
    code, _, err = cli(stack, "resume", "go:ticks", "--payload", '{"count": 3}')
    assert code == 0, err
    code, out, err = cli(stack, "stream", run_id, "--name", "ticks", "--follow")
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [{"tick": 0}, {"tick": 1}, {"tick": 2}]
    code, out, _ = cli(stack, "stream", run_id, "--name", "ticks", "--from", "2")
    assert (code, out) == (0, '{"tick": 2}\n')
