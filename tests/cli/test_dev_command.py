"""``world-aws dev``: serves until SIGINT/SIGTERM, prints what to export, refuses a busy port."""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from world_aws.cli.main import main

REPO = Path(__file__).resolve().parents[2]
START_DEADLINE_SECONDS = 60.0
STOP_DEADLINE_SECONDS = 20.0
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


@contextmanager
def dev_process(
    *argv: str, python: str = sys.executable, cwd: Path = REPO
) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``world-aws dev <argv>`` in a child process; yields it once it says "Press Ctrl-C", with its lines.

    ``python`` is the interpreter that runs it (another venv's, for the wheel test), in ``cwd``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORLD_AWS_"))} | FAKE_AWS_ENV
    code = "import sys; from world_aws.cli.main import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [python, "-c", code, "dev", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    try:
        while not seen or seen[-1] != "Press Ctrl-C to stop.":
            line = lines.get(timeout=START_DEADLINE_SECONDS)
            assert line is not None, "world-aws dev exited early:\n" + "\n".join(seen)
            seen.append(line)
        yield proc, seen
        proc.wait(timeout=STOP_DEADLINE_SECONDS)
        while (line := lines.get(timeout=STOP_DEADLINE_SECONDS)) is not None:
            seen.append(line)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _exports(lines: list[str]) -> dict[str, str]:
    return dict(line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export "))


def test_dev_serves_the_api_on_loopback_until_sigint_then_stops_cleanly() -> None:
    with dev_process("examples.approval:app", "--port", "0") as (proc, lines):
        # THEN it printed the API, the moto endpoint and what to export
        exports = _exports(lines)
        api = exports["WORLD_AWS_API"]
        assert api.startswith("http://127.0.0.1:")
        assert exports["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
        assert {
            "WORKFLOW_TABLE_NAME",
            "WORKFLOW_QUEUE_URL",
            "STEP_QUEUE_URL",
            "WORKFLOW_PAYLOAD_BUCKET",
        } <= set(exports)
        assert f"  HTTP API   {api}" in lines
        # AND the reconciler ticks in the background (defaults: every 5 min, runs silent for 10)
        assert "  reconciler every 300 s, wakes runs silent for 600 s" in lines
        # AND the API answers
        with urllib.request.urlopen(api + "/runs", timeout=10) as answer:
            assert json.loads(answer.read()) == {"runs": [], "cursor": None}
        # WHEN it gets SIGINT (Ctrl-C)
        proc.send_signal(signal.SIGINT)
    # THEN it stopped everything and exited 0, without a traceback
    assert proc.returncode == 0, "\n".join(lines)
    assert lines[-2:] == ["world-aws dev: stopping...", "world-aws dev: stopped"]
    assert not any("Traceback" in line for line in lines)
    with pytest.raises(OSError):
        urllib.request.urlopen(api + "/runs", timeout=2)


def test_dev_stops_cleanly_on_sigterm() -> None:
    with dev_process("examples.approval:app", "--port", "0", "--world", "memory") as (proc, lines):
        proc.send_signal(signal.SIGTERM)
    assert proc.returncode == 0, "\n".join(lines)
    assert lines[-1] == "world-aws dev: stopped"


def test_dev_on_a_busy_port_is_a_one_line_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out, err = io.StringIO(), io.StringIO()
        code = main(["dev", "--world", "memory", "--port", str(port)], out=out, err=err)
    assert code == 2
    assert err.getvalue() == (
        f"world-aws: port {port} on 127.0.0.1 is in use (another `world-aws dev`?); choose one with --port\n"
    )


def test_dev_with_an_unknown_app_is_a_one_line_error() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["dev", "no_such_module:app"], out=out, err=err) == 2
    assert err.getvalue().startswith("world-aws: error: no module named 'no_such_module'")
