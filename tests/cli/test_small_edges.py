"""Small edges of the command line: a closed pipe, ``--json`` errors, a cancelled run's inspect."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from world_aws.cli.main import main

from .conftest import Dev

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback() -> None:
    # GIVEN the console command's output piped into a reader that stops after one line (`| head -1`)
    command = [sys.executable, "-c", "from world_aws._entry import main; main()", "demo", "--world", "memory"]
    writer = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout is not None and writer.stderr is not None
    first = writer.stdout.readline()
    writer.stdout.close()  # the reader goes away
    stderr = writer.stderr.read().decode()
    code = writer.wait(timeout=120)
    # THEN the command stops quietly, with the broken pipe's exit code
    assert first.startswith(b"world-aws: running checkout")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert code == 141


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "no_such_module:app", "wf", "--json", "--world", "memory"], "no_such_module"),
        (["demo", "--json", "--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
        (["inspect", "wrun_NOPE", "--json", "--api", "http://127.0.0.1:9"], "127.0.0.1:9"),
    ],
)
def test_with_json_an_error_is_one_json_object(argv: list[str], says: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    assert code == 2 and out.getvalue() == ""
    (line,) = err.getvalue().splitlines()
    document = json.loads(line)
    assert document["exit_code"] == 2 and says in document["error"]["message"]
    assert not document["error"]["message"].startswith("world-aws:")


def test_inspect_of_a_cancelled_run_aligns_its_error_with_the_other_fields(dev: Dev) -> None:
    run_id = dev.cli("start", "approve_order", "--arg", '"order-edge-1"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    assert dev.cli("cancel", run_id, "--reason", "customer left").code == 0
    lines = dev.cli("inspect", run_id).out.splitlines()
    (status,) = [line for line in lines if line.startswith("status")]
    (error,) = [line for line in lines if line.startswith("error")]
    assert status == "status    cancelled"
    assert error.startswith("error     ") and error[10] != " " and ":" not in error[:10]
    assert "the run was cancelled: customer left" in error
