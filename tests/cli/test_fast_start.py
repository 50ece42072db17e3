"""The console command starts the embedded stack in a forked child first (issue 13, a 3 s first run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from world_aws._entry import runs_on_embedded
from world_aws.local import stack as stack_module
from world_aws.local.stack import local_stack

from .three_steps import app as three_steps_app

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
CONSOLE_COMMAND = [sys.executable, "-c", "from world_aws._entry import main; main()"]
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the child is forked on Linux only"
)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "m:app", "wf"], True),
        (["demo"], True),
        (["--api", "http://x", "run", "m:app", "wf"], True),
        (["run", "m:app", "wf", "--world", "memory"], False),
        (["run", "m:app", "wf", "--world=memory"], False),
        (["run", "--help"], False),
        (["dev", "m:app"], False),
        (["--api", "run", "ls"], False),
        ([], False),
    ],
)
def test_the_argument_scan_starts_a_stack_only_for_run_and_demo_on_embedded(
    argv: list[str], expected: bool
) -> None:
    assert runs_on_embedded(argv) is expected


@linux_only
def test_the_child_serves_its_stack_to_the_parent_and_exits_when_told() -> None:
    # GIVEN a fresh process (no thread started) that forks the stack's child first
    script = """
import os, boto3
from world_aws.local.moto_process import MotoProcess, fork_available
assert fork_available()
child = MotoProcess()
env = child.report()["env"]
client = boto3.client("dynamodb", endpoint_url=child.endpoint_url, region_name=child.region)
print("tables", client.list_tables()["TableNames"] == [env["WORKFLOW_TABLE_NAME"]])
child.release_long_polls()
child.stop()
try:
    os.kill(child.pid, 0)
    print("child alive")
except ProcessLookupError:
    print("child gone")
"""
    # WHEN it uses the stack and stops the child
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120
    )
    # THEN the parent reached the child's provisioned table, and the child is gone
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["tables True", "child gone"]


@linux_only
def test_world_aws_run_on_the_forked_stack_completes_and_leaves_no_process_behind() -> None:
    # WHEN the console command runs a 3-step workflow on the embedded default
    done = subprocess.run(
        [*CONSOLE_COMMAND, "run", "tests.cli.three_steps:app", "three", "--arg", "4"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN it completed (and returned at all: a child left running would hold its output open)
    assert done.returncode == 0, done.stderr
    assert "status: completed" in done.stdout
    assert "moto on http://127.0.0.1:" in done.stdout


class FailedChild:
    """A prestarted stack whose child failed to start."""

    endpoint_url = "http://127.0.0.1:9"
    region = "us-east-1"

    def __init__(self) -> None:
        self.stopped = False

    def report(self) -> dict[str, Any]:
        raise RuntimeError("the embedded stack's process failed: boom")

    def release_long_polls(self) -> None:
        raise AssertionError("never used")

    def stop(self) -> None:
        self.stopped = True


def test_a_child_that_failed_is_replaced_by_a_stack_in_this_process(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN a prestarted stack whose child failed
    child = FailedChild()
    # WHEN a local stack is opened with it and runs a workflow
    with local_stack(three_steps_app, run_schedules=False, prestarted=child) as stack:  # type: ignore[arg-type]
        handle = stack.runtime.start("three", 4)
        result = handle.result(timeout=60)
    # THEN the run completed on an in-process stack, the failure logged and the child stopped
    assert stack.endpoint_url is not None and stack.endpoint_url != FailedChild.endpoint_url
    assert result is not None
    assert child.stopped
    assert any(
        "starting it in this one" in r.getMessage() for r in caplog.records if r.name == stack_module.LOG.name
    )
