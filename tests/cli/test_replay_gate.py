"""The replay gate against a dev stack: ``world-aws export`` and ``world-aws replay``, and their exit codes.

Runs of ``examples.approval:app`` are made on the embedded stack (moto behind the
dev server's HTTP API); one waits on its approval hook, one completed. The changed
code (``tests/cli/approval_changed.py``) calls ``price`` where the runs' logs have
``quote``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from examples.approval import app
from world_aws.cli.main import main
from world_aws.contract import log_export

from .conftest import Dev, Result

CHANGED = str(Path(__file__).with_name("approval_changed.py")) + ":app"
SAME = "examples.approval:app"


def _local(*argv: str) -> Result:
    """``world-aws <argv>`` in-process, without ``--api`` (a replay of a file needs no API)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def runs(dev: Dev) -> dict[str, str]:
    """A run waiting on its hook and a completed one (auto-approved), by kind."""
    waiting = dev.http("POST", "/runs", {"workflow": "approve_order", "args": ["gate-1"]})["run_id"]
    done = dev.http("POST", "/runs", {"workflow": "approve_order", "args": ["gate-2", 500]})["run_id"]
    dev.wait_for_event(waiting, "hook_created")
    dev.wait_for_status(done, "completed")
    return {"waiting": waiting, "completed": done}


@pytest.fixture(scope="module")
def exported(dev: Dev, runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gate") / "runs.json"
    result = dev.cli("export", runs["waiting"], runs["completed"], "--out", str(path))
    assert result.code == 0, result.err
    return path


def test_export_writes_each_runs_whole_log_with_exact_payloads(
    dev: Dev, runs: dict[str, str], exported: Path
) -> None:
    # GIVEN the exported file WHEN read back THEN it is the versioned format with both runs' logs
    document = json.loads(exported.read_text())
    assert (document["format"], document["version"]) == ("world-aws.runs", 1)
    read = log_export.read_document(document)
    assert [r.run.run_id for r in read] == [runs["waiting"], runs["completed"]]
    for run in read:
        rows = dev.http("GET", f"/runs/{run.run.run_id}/events")["events"]
        assert [e.type.value for e in run.events] == [row["type"] for row in rows]
    # AND the payloads are the serializer's bytes: the hook's metadata decodes to what the code gave
    waiting = read[0]
    assert waiting.run.status.value == "running"
    (hook,) = [e for e in waiting.events if e.type.value == "hook_created"]
    assert app.serializer.loads(hook.data.metadata) == {"cents": 25_000}  # type: ignore[union-attr]


def test_export_to_stdout_is_the_same_document(dev: Dev, runs: dict[str, str]) -> None:
    result = dev.cli("export", runs["completed"])
    assert result.code == 0, result.err
    assert [r.run.run_id for r in log_export.read_document(json.loads(result.out))] == [runs["completed"]]


def test_replay_passes_the_code_that_made_the_runs(dev: Dev, runs: dict[str, str], exported: Path) -> None:
    result = _local("replay", SAME, str(exported))
    assert result.code == 0, result.out + result.err
    lines = result.out.splitlines()
    assert lines[0].split()[:2] == ["ok", runs["waiting"]] and "(running," in lines[0]
    assert lines[1].split()[:2] == ["ok", runs["completed"]] and "(completed," in lines[1]
    assert lines[-1] == "2 run(s) replayed, 0 diverged"


def test_replay_flags_a_changed_step_sequence_with_where_it_diverges(
    dev: Dev, runs: dict[str, str], exported: Path
) -> None:
    # GIVEN code whose first step changed WHEN the exported runs are replayed on it
    result = _local("replay", CHANGED, str(exported))
    # THEN it exits 1 and names, per run, the position, the logged step and the called one
    assert result.code == 1, result.out + result.err
    waiting = next(
        r
        for r in log_export.read_document(json.loads(exported.read_text()))
        if r.run.status.value == "running"
    )
    created = next(e for e in waiting.events if e.type.value == "step_created")
    line = next(line for line in result.out.splitlines() if runs["waiting"] in line)
    assert line.startswith(f"DIVERGED  {runs['waiting']}  approve_order: at position {created.position} (")
    assert line.endswith(
        "the log has step 'examples.approval.quote' but the code calls step 'examples.approval.price'"
    )
    assert result.out.splitlines()[-1] == "2 run(s) replayed, 2 diverged"


def test_replay_json_reports_each_runs_verdict(dev: Dev, exported: Path) -> None:
    result = _local("replay", CHANGED, str(exported), "--json")
    assert result.code == 1
    verdicts = json.loads(result.out)["runs"]
    assert [v["ok"] for v in verdicts] == [False, False]
    divergence = verdicts[0]["divergence"]
    assert divergence["log_has"] == "step 'examples.approval.quote'"
    assert divergence["code"] == "calls step 'examples.approval.price'"
    assert isinstance(divergence["position"], int)


def test_replay_reads_the_deployed_runs_from_the_api_with_its_filters(dev: Dev, runs: dict[str, str]) -> None:
    # WHEN the gate reads the stack's running runs of the workflow created in the last hour
    same = dev.cli("replay", SAME, "--workflow", "approve_order", "--status", "running", "--since", "1h")
    changed = dev.cli(
        "replay", CHANGED, "--workflow", "approve_order", "--status", "running", "--since", "1h"
    )
    # THEN it replays those (the waiting one among them, not the completed one): ok on the same
    # code, exit 1 on the changed code
    assert same.code == 0, same.out + same.err
    assert runs["waiting"] in same.out and runs["completed"] not in same.out
    assert changed.code == 1 and f"DIVERGED  {runs['waiting']}" in changed.out
    # AND a filter that keeps nothing replays nothing, and says so
    none = dev.cli("replay", SAME, "--workflow", "no_such_workflow")
    assert none.code == 0 and "no runs matched" in none.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", SAME, "/no/such/runs.json"], "cannot read /no/such/runs.json"),
        (["replay", "no_such_module:app", "{file}"], "no module named 'no_such_module'"),
        (["replay", SAME, "{file}", "--since", "soon"], "cannot parse duration 'soon'"),
        (["replay", SAME, "{file}", "--limit", "0"], "--limit must be at least 1"),
        (["replay", SAME, "{file}"], "not both"),
        (["export", "wrun_NOSUCHRUN"], "not found"),
        (["export", "{run}", "--out", "/no/such/dir/runs.json"], "cannot write /no/such/dir/runs.json"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    dev: Dev, runs: dict[str, str], exported: Path, argv: list[str], message: str
) -> None:
    args = [a.replace("{file}", str(exported)).replace("{run}", runs["completed"]) for a in argv]
    # A replay of a file runs without --api (with it, it is refused: "not both")
    result = dev.cli(*args) if argv[0] == "export" or message == "not both" else _local(*args)
    assert result.code == 2, result.out + result.err
    assert message in result.err and len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ('{"format": "other"}', "not a world-aws run export"),
        ('{"format": "world-aws.runs", "version": 9, "runs": []}', "version 9 is not supported"),
    ],
)
def test_a_file_that_is_not_an_export_exits_2(dev: Dev, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = _local("replay", SAME, str(path))
    assert result.code == 2 and message in result.err


def test_an_unreachable_api_exits_2() -> None:
    result = _local("replay", SAME, "--api", "http://127.0.0.1:9")
    assert result.code == 2 and "cannot reach http://127.0.0.1:9" in result.err
