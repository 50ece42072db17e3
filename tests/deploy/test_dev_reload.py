"""``world-aws dev --reload`` and the operator's view of deployments, over the dev stack's HTTP API.

The app is a file the test rewrites, as a developer edits it: ``AppReloader.check``
(what the reload thread calls every half second) imports it afresh and deploys it
beside the old code. Runs started before keep their code; the CLI lists the
deployments with their live runs, refuses to retire one a run is pinned to, and
lists the held runs.
"""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from world_aws.cli.main import main
from world_aws.contract.records import RunStatus
from world_aws.errors import NotFound
from world_aws.local.dev import DevStack, start_dev_stack
from world_aws.local.reload import AppReloader
from world_aws.workflow.loading import load_app

WAIT = 60.0

APP = """
from world_aws import Workflows, create_hook

app = Workflows()


@app.step(name="greet.{step}")
def greet(name: str) -> str:
    return "{greeting}, " + name


@app.workflow(name="greet")
async def flow(name: str) -> str:
    greeting = await greet(name)
    answer = await create_hook(token="reply:" + name)
    return greeting + " / " + answer
"""


def _write(path: Path, step: str, greeting: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(APP.replace("{step}", step).replace("{greeting}", greeting), encoding="utf-8")
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))  # a change, whatever the clock


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    path = tmp_path / "greeter.py"
    _write(path, "hello", "hello")
    return path


@pytest.fixture
def dev(app_file: Path) -> Iterator[DevStack]:
    with start_dev_stack(load_app(f"{app_file}:app"), kind="memory") as running:
        yield running


def _cli(dev: DevStack, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--api", dev.url], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _hook(dev: DevStack, token: str) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            dev.stack.world.hooks.get_by_token(token)
            return
        except NotFound:
            assert time.monotonic() < deadline, f"no hook {token}"
            time.sleep(0.05)


def test_an_edit_deploys_the_new_code_and_runs_in_flight_keep_theirs(dev: DevStack, app_file: Path) -> None:
    reloader = AppReloader(f"{app_file}:app", dev.stack.deploy)
    assert app_file.resolve() in reloader.files
    assert reloader.check() is None  # nothing changed yet
    # GIVEN a run started through the API on the first code, waiting on its hook
    code, out, _ = _cli(dev, "start", "greet", "--arg", '"ada"')
    assert code == 0
    old_run = out.strip()
    _hook(dev, "reply:ada")
    # WHEN the developer renames the step and changes the greeting
    _write(app_file, "bonjour", "bonjour")
    deployed = reloader.check()
    # THEN a new deployment serves new runs, and the API lists both with their live runs
    assert deployed is not None and dev.stack.deployment_id == deployed
    code, out, _ = _cli(dev, "start", "greet", "--arg", '"bob"')
    new_run = out.strip()
    _hook(dev, "reply:bob")
    code, out, _ = _cli(dev, "deployments", "--json")
    listed = json.loads(out)["deployments"]
    assert [(d["live_runs"], d["newest"]) for d in listed] == [(1, False), (1, True)]
    # and the old deployment cannot be retired while its run is in flight (exit 1: refused)
    code, _, err = _cli(dev, "deployments", "retire", listed[0]["deployment_id"])
    assert code == 1 and "1 live run" in err, err
    # WHEN both hooks are resumed
    assert _cli(dev, "resume", "reply:ada", "--payload", '"yes"')[0] == 0
    assert _cli(dev, "resume", "reply:bob", "--payload", '"oui"')[0] == 0
    # THEN each run ended with the code that started it
    assert dev.stack.runtime.get_run(old_run).result(timeout=WAIT) == "hello, ada / yes"
    assert dev.stack.runtime.get_run(new_run).result(timeout=WAIT) == "bonjour, bob / oui"
    # and the old deployment, with no run left, retires
    code, out, _ = _cli(dev, "deployments", "retire", listed[0]["deployment_id"])
    assert code == 0 and "retired" in out
    code, out, _ = _cli(dev, "deployments", "--json")
    assert [d["deployment_id"] for d in json.loads(out)["deployments"]] == [deployed]
    code, out, _ = _cli(dev, "deployments")
    assert deployed in out and "newest" in out


def test_an_edit_that_does_not_import_keeps_the_running_code(dev: DevStack, app_file: Path) -> None:
    errors: list[BaseException] = []
    reloader = AppReloader(f"{app_file}:app", dev.stack.deploy, on_error=errors.append)
    first = dev.stack.deployment_id
    app_file.write_text("this is not python(", encoding="utf-8")
    os.utime(app_file, ns=(1, 1))
    assert reloader.check() is None and errors
    assert dev.stack.deployment_id == first and dev.stack.deployments.ids() == [first]


def test_ls_blocked_lists_a_held_run_and_inspect_shows_where_it_diverged(
    dev: DevStack, app_file: Path
) -> None:
    # GIVEN a run of the first code whose deployment is retired by force after an incompatible edit
    first = dev.stack.deployment_id
    handle = dev.stack.runtime.start("greet", "cy")
    _hook(dev, "reply:cy")
    _write(app_file, "bonjour", "bonjour")
    dev.stack.deploy(load_app_fresh(app_file))
    dev.stack.deployments.retire(first, force=True)
    # WHEN its hook is resumed: its replay on the new code diverges
    assert _cli(dev, "resume", "reply:cy", "--payload", '"x"')[0] == 0
    deadline = time.monotonic() + WAIT
    while not handle.run().held:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # THEN ls --blocked lists it, still running, with where it diverged
    code, out, _ = _cli(dev, "ls", "--blocked", "--json")
    assert code == 0
    (listed,) = json.loads(out)["runs"]
    assert (listed["run_id"], listed["status"]) == (handle.run_id, RunStatus.RUNNING.value)
    assert (listed["blocked"]["expected"], listed["blocked"]["actual"]) == ("greet.hello", "greet.bonjour")
    code, out, _ = _cli(dev, "ls", "--blocked")
    assert (
        code == 0
        and handle.run_id in out
        and "the log has 'greet.hello', the code calls 'greet.bonjour'" in out
    )
    code, out, _ = _cli(dev, "inspect", handle.run_id)
    assert code == 0 and "blocked" in out and "greet.bonjour" in out
    # and an operator cancels the held run
    assert _cli(dev, "cancel", handle.run_id)[0] == 0
    assert handle.wait(timeout=WAIT).status is RunStatus.CANCELLED
    _code, out, _ = _cli(dev, "ls", "--blocked", "--json")
    assert json.loads(out)["runs"] == []


def load_app_fresh(path: Path) -> object:
    from world_aws.local.reload import fresh_app

    return fresh_app(f"{path}:app", [path.resolve()])


def test_world_aws_dev_reload_deploys_an_edited_app_file(tmp_path: Path) -> None:
    # GIVEN `world-aws dev --reload` serving an app file, in its own process
    path = tmp_path / "edited.py"
    _write(path, "hello", "hello")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORLD_AWS_"))}
    code = "import sys; from world_aws.cli.main import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "dev", f"{path}:app", "--world", "memory", "--port", "0", "--reload"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []

    def until(text: str) -> None:
        while not seen or text not in seen[-1]:
            line = lines.get(timeout=WAIT)
            assert line is not None, "world-aws dev exited:\n" + "\n".join(seen)
            seen.append(line)

    try:
        until("Press Ctrl-C")
        assert any(line.startswith("  reload     watching 1 file(s)") for line in seen)
        # WHEN the file is edited
        _write(path, "bonjour", "bonjour")
        # THEN the server deploys it, saying runs in flight keep their code
        until("deployed as")
        assert "runs in flight keep the code that started them" in seen[-1]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
