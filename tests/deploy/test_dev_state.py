"""``world-aws dev --state DIR``: the embedded stack's runs, events, payloads and schedules survive a restart.

Each test starts the dev stack on moto (in-process, or ``world-aws dev`` in a child process
for the ``kill -9`` case), stops it, starts a new one on the same directory, and reads
the state back through the API and the World. The app's runs wait on a hook, so a run
is in flight across the restart and finishes on the next stack.
"""

from __future__ import annotations

import io
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cli.conftest import fake_aws_environment
from tests.cli.test_dev_command import dev_process
from world_aws.cli.dev import state_dir
from world_aws.cli.main import build_parser, main
from world_aws.client import connect
from world_aws.contract.records import RunStatus
from world_aws.deploy.project import init
from world_aws.errors import BadInput, NotFound
from world_aws.local.dev import DevStack, start_dev_stack
from world_aws.local.dev_state import SNAPSHOT_FILE, StateDir
from world_aws.local.moto_state import MotoState
from world_aws.workflow.loading import load_app
from world_aws.workflow.registry import Workflows

WAIT = 60.0
APP = """
from world_aws import Workflows, create_hook

app = Workflows()


@app.step
def measure(note: str) -> int:
    return len(note)


@app.workflow
async def review(name: str, note: str) -> str:
    size = await measure(note)
    answer = await create_hook(token="review:" + name)
    return "{greeting} " + name + ": " + str(size) + " " + answer


@app.workflow
async def hourly() -> str:
    return "tick"


app.schedule(hourly, "rate(1 hour)")
"""
# Payloads above the table's inline limit go to the bucket: this note is one.
BIG_NOTE = "x" * 300_000


def _write(path: Path, greeting: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(APP.replace("{greeting}", greeting), encoding="utf-8")
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


@pytest.fixture
def app_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_aws_environment(monkeypatch)
    path = tmp_path / "reviews.py"
    _write(path, "reviewed")
    return path


def _start(app_file: Path, state: Path) -> DevStack:
    return start_dev_stack(load_app(f"{app_file}:app"), port=0, state_dir=state)


def _hook(dev: DevStack, token: str) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            dev.stack.world.hooks.get_by_token(token)
            return
        except NotFound:
            assert time.monotonic() < deadline, f"no hook {token}"
            time.sleep(0.05)


def test_a_run_waiting_on_a_hook_finishes_after_a_restart(app_file: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    # GIVEN a run waiting on its hook, with a payload big enough for the bucket
    with _start(app_file, state) as dev:
        run = connect(dev.url).start("review", "ada", BIG_NOTE)
        _hook(dev, "review:ada")
        events_before = [(e.position, e.type) for e in dev.stack.runtime.get_run(run.run_id).events()]
        deadline = time.monotonic() + WAIT
        while (schedules_before := dev.stack.world.schedules.get("hourly")) is None:  # the first pass
            assert time.monotonic() < deadline, "the scheduler never passed"
            time.sleep(0.05)
    assert (state / SNAPSHOT_FILE).is_file()
    # WHEN dev starts again on the same directory
    with _start(app_file, state) as dev:
        client = connect(dev.url)
        # THEN the run, its log, its payload and the schedule's state are there
        handle = dev.stack.runtime.get_run(run.run_id)
        assert handle.status() is RunStatus.RUNNING
        assert [(e.position, e.type) for e in handle.events()] == events_before
        assert dev.stack.world.schedules.get("hourly") == schedules_before
        # AND resuming its hook completes it
        client.resume("review:ada", "fine")
        assert client.result(run.run_id, timeout=WAIT) == "reviewed ada: 300000 fine"
    # AND a third start still sees it completed
    with _start(app_file, state) as dev:
        assert connect(dev.url).get(run.run_id)["status"] == "completed"


def test_a_state_directory_serves_one_stack_at_a_time(app_file: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _start(app_file, state), pytest.raises(BadInput, match="another `world-aws dev` uses this state"):
        _start(app_file, state)
    (state / SNAPSHOT_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(BadInput, match="not a world-aws dev snapshot"):
        _start(app_file, state)
    assert (state / SNAPSHOT_FILE).read_text(encoding="utf-8") == "{not json"  # left for the user


def test_a_reload_keeps_old_runs_on_their_code_and_the_state_survives(app_file: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _start(app_file, state) as dev:
        # GIVEN a run on the first code, then an edit deployed (what --reload does)
        old = connect(dev.url).start("review", "bo", "ab")
        _hook(dev, "review:bo")
        _write(app_file, "checked")
        dev.stack.deploy(load_app_fresh(app_file))
        new = connect(dev.url).start("review", "cy", "abc")
        _hook(dev, "review:cy")
        # THEN the old run ends on its code and the new one on the new code
        connect(dev.url).resume("review:bo", "ok")
        assert old.result(timeout=WAIT) == "reviewed bo: 2 ok"
    # WHEN dev restarts (on the code on disk, the edited one)
    with _start(app_file, state) as dev:
        client = connect(dev.url)
        assert client.get(old.run_id)["status"] == "completed"
        # THEN a deploy after the restart takes no id a live run is pinned to
        pinned = dev.stack.world.runs.get(new.run_id).deployment_id
        assert pinned != dev.stack.deployment_id
        assert dev.stack.deploy(load_app_fresh(app_file)) not in (pinned, dev.stack.deployments.ids()[0])
        # AND the run from before the restart finishes on the code there is
        client.resume("review:cy", "ok")
        assert client.result(new.run_id, timeout=WAIT) == "checked cy: 3 ok"


def test_a_failed_save_is_logged_and_the_next_one_saves(
    app_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("WORLD_AWS_DEV_SAVE_SECONDS", "0.05")
    saves: list[bool] = []
    save = StateDir.save

    def disk_full_once(self: StateDir, snapshot: MotoState) -> None:
        saves.append(True)
        if len(saves) == 1:
            raise OSError(28, "No space left on device")
        save(self, snapshot)

    monkeypatch.setattr(StateDir, "save", disk_full_once)
    # GIVEN a stack whose first periodic save fails (a full disk)
    with _start(app_file, state) as dev:
        run = connect(dev.url).start("review", "eve", "ab")
        _hook(dev, "review:eve")
        deadline = time.monotonic() + WAIT
        while "review:eve" not in _snapshot_text(state):
            assert time.monotonic() < deadline, "no later save"
            time.sleep(0.05)
        # THEN it kept serving, said why in the log, and a later save holds the run
        assert connect(dev.url).get(run.run_id)["status"] == "running"
    assert "could not save its state" in caplog.text and "No space left" in caplog.text
    with _start(app_file, state) as dev:
        assert connect(dev.url).get(run.run_id)["status"] == "running"


def load_app_fresh(path: Path) -> Workflows:
    from world_aws.local.reload import fresh_app

    return fresh_app(f"{path}:app", [path.resolve()])


def _dev_process(app_file: Path, state: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORLD_AWS_", "AWS_ENDPOINT"))}
    env["WORLD_AWS_DEV_SAVE_SECONDS"] = "0.2"
    code = "import sys; from world_aws.cli.main import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "dev", f"{app_file}:app", "--port", "0", "--state", str(state)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    url = None
    seen: list[str] = []
    while True:
        line = lines.get(timeout=WAIT)
        assert line is not None, "\n".join(seen)
        seen.append(line)
        if line.strip().startswith("HTTP API"):
            url = line.split()[-1]
        if line == "Press Ctrl-C to stop.":
            assert url is not None and f"  state      {state} (kept across restarts)" in seen
            return proc, url


def test_kill_9_loses_only_what_came_after_the_last_save(app_file: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    # GIVEN `world-aws dev --state` in its own process, a run waiting on its hook, saved
    proc, url = _dev_process(app_file, state)
    try:
        run = connect(url).start("review", "di", "abcd")
        deadline = time.monotonic() + WAIT
        while "review:di" not in _snapshot_text(state):  # the hook is in a saved snapshot
            assert time.monotonic() < deadline, "no save holds the hook"
            time.sleep(0.05)
    finally:
        # WHEN it is killed without a chance to save again
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=WAIT)
    # THEN a new dev on the directory has the run and finishes it
    proc, url = _dev_process(app_file, state)
    try:
        client = connect(url)
        client.resume("review:di", "ok")
        assert client.result(run.run_id, timeout=WAIT) == "reviewed di: 4 ok"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0


def _snapshot_text(state: Path) -> str:
    try:
        return (state / SNAPSHOT_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def test_dev_keeps_state_by_default_in_a_project_only(tmp_path: Path) -> None:
    parser = build_parser()
    plain = parser.parse_args(["dev"])
    # GIVEN a directory that is no project: nothing is kept unless asked
    assert state_dir(plain, cwd=tmp_path) is None
    assert state_dir(parser.parse_args(["dev", "--state", "kept"]), cwd=tmp_path) == Path("kept")
    # WHEN it is a project made by `world-aws init`: .world-aws/ inside it, unless --no-state
    root = init("shop", tmp_path)
    assert state_dir(plain, cwd=root) == root / ".world-aws"
    assert state_dir(parser.parse_args(["dev", "--no-state"]), cwd=root) is None
    assert state_dir(parser.parse_args(["dev", "--world", "memory"]), cwd=root) is None


def test_dev_in_a_project_serves_its_app_and_keeps_its_state_inside_it(tmp_path: Path) -> None:
    root = init("shop", tmp_path)
    # WHEN `world-aws dev` starts in the project with no app named, then stops
    with dev_process("--port", "0", cwd=root) as (proc, lines):
        proc.send_signal(signal.SIGINT)
    # THEN it served the project's app and saved its state in .world-aws/
    assert proc.returncode == 0, lines
    assert any(line.startswith("world-aws dev: starting shop:app on moto") for line in lines), lines
    (state_line,) = [line for line in lines if line.strip().startswith("state ")]
    assert state_line.endswith("/shop/.world-aws (kept across restarts)"), state_line
    assert (root / ".world-aws" / SNAPSHOT_FILE).is_file()


def test_state_on_the_memory_world_is_refused_in_one_line(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["dev", "--world", "memory", "--port", "0", "--state", str(tmp_path / "s")], out=out, err=err)
    assert code == 2
    (line,) = err.getvalue().splitlines()
    assert "needs the embedded world" in line
