"""The operator commands against a dev stack: start, resume, inspect, cancel, ls, and their errors."""

from __future__ import annotations

import io
import json
import socket

import pytest

from world_aws.cli.main import main

from .conftest import Dev


def test_a_run_started_over_http_is_resumed_by_the_cli_and_inspected(dev: Dev) -> None:
    # GIVEN a run started through the HTTP API, waiting on its approval hook
    started = dev.http("POST", "/runs", {"workflow": "approve_order", "args": ["order-1"]})
    run_id = started["run_id"]
    dev.wait_for_event(run_id, "hook_created")
    # WHEN the hook is resumed with the CLI
    resumed = dev.cli("resume", "approve:order-1", "--payload", '{"approved": true, "by": "ada"}')
    # THEN it says so, and the run completes with the decision
    assert resumed.code == 0, resumed.err
    assert resumed.out.startswith("resumed approve:order-1 (resume_")
    run = dev.wait_for_status(run_id, "completed")
    assert run["result"]["shipping"] == "order order-1 approved by ada, shipping"
    # AND inspect shows the run, its result and a timeline with attempts and durations
    inspected = dev.cli("inspect", run_id)
    assert inspected.code == 0, inspected.err
    lines = inspected.out.splitlines()
    assert f"run       {run_id}" in lines and "status    completed" in lines
    assert '  "status": "approved",' in lines
    timeline = inspected.out.split("timeline:\n", 1)[1].splitlines()
    assert timeline[0].split() == ["pos", "event", "step", "attempt", "duration"]
    by_event = {row.split()[1]: row.split() for row in timeline[1:]}
    assert by_event["hook_created"][2] == "approve:order-1"
    assert by_event["step_completed"][2:4] == ["fulfil", "1"] and by_event["step_completed"][-1] == "ms"
    assert by_event["run_completed"][-1] in ("ms", "s")


def test_inspect_json_gives_the_run_its_events_and_the_timeline(dev: Dev) -> None:
    started = dev.cli("start", "approve_order", "--arg", '"order-2"', "--kwarg", "cents=500")
    assert started.code == 0, started.err
    run_id = started.out.strip()
    dev.wait_for_status(run_id, "completed")  # below the approval threshold: no hook
    inspected = dev.cli("inspect", run_id, "--json")
    assert inspected.code == 0
    document = json.loads(inspected.out)
    assert document["run"]["result"] == {"order": "order-2", "status": "auto-approved"}
    assert [row["type"] for row in document["events"]][:2] == ["run_created", "run_started"]
    # quote ran inline: its step_created is its first attempt's start
    started_rows = [row for row in document["timeline"] if row["attempt"] is not None]
    assert [(row["event"], row["step"], row["attempt"]) for row in started_rows] == [
        ("step_created", "quote", 1),
        ("step_completed", "quote", 1),
    ]


def test_cancel_stops_a_waiting_run_and_a_second_cancel_is_refused(dev: Dev) -> None:
    run_id = dev.cli("start", "approve_order", "--arg", '"order-3"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    cancelled = dev.cli("cancel", run_id, "--reason", "customer left")
    assert (cancelled.code, cancelled.out) == (0, f"cancelled {run_id}\n")
    run = dev.http("GET", f"/runs/{run_id}")
    assert run["status"] == "cancelled"
    assert run["error"]["message"] == "the run was cancelled: customer left"
    again = dev.cli("cancel", run_id)
    assert again.code == 1
    assert again.err == f"world-aws: run {run_id} has already ended (cancelled)\n"


def test_ls_lists_runs_filtered_by_status_and_workflow(dev: Dev) -> None:
    done = dev.cli("start", "approve_order", "--arg", '"order-4"', "--kwarg", "cents=1").out.strip()
    waiting = dev.cli("start", "approve_order", "--arg", '"order-5"').out.strip()
    dev.wait_for_status(done, "completed")
    dev.wait_for_event(waiting, "hook_created")

    def listed(*options: str) -> list[str]:
        result = dev.cli("ls", "--json", *options)
        assert result.code == 0, result.err
        return [run["run_id"] for run in json.loads(result.out)["runs"]]

    assert done in listed("--status", "completed") and waiting not in listed("--status", "completed")
    assert waiting in listed("--status", "running") and done not in listed("--status", "running")
    assert listed("--workflow", "approve_order")[:2] == [waiting, done]  # newest first
    assert listed("--workflow", "no_such_workflow") == []
    assert len(listed("--limit", "1")) == 1
    table = dev.cli("ls", "--status", "running")
    assert table.out.splitlines()[0].split()[:4] == ["run", "id", "workflow", "status"]
    assert any(line.startswith(waiting) and " running " in line for line in table.out.splitlines())


def test_the_api_url_comes_from_world_aws_api_by_default(dev: Dev, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_AWS_API", dev.url)
    out, err = io.StringIO(), io.StringIO()
    assert main(["ls", "--limit", "1"], out=out, err=err) == 0, err.getvalue()
    assert out.getvalue().startswith("run id")


def test_api_goes_before_or_after_the_command_and_after_wins(dev: Dev) -> None:
    # GIVEN a run the dev stack knows
    run_id = dev.cli("start", "approve_order", "--arg", '"order-api-1"').out.strip()
    # WHEN --api comes before the command
    out, err = io.StringIO(), io.StringIO()
    code = main(["--api", dev.url, "inspect", run_id, "--json"], out=out, err=err)
    # THEN it is used, as it is after the command
    assert code == 0, err.getvalue()
    assert json.loads(out.getvalue())["run"]["run_id"] == run_id
    # AND given twice, the one after the command is the one used
    out, err = io.StringIO(), io.StringIO()
    assert main(["--api", "http://127.0.0.1:9", "inspect", run_id, "--api", dev.url], out=out, err=err) == 0


@pytest.mark.parametrize("argv", [["run", "m:app", "wf"], ["demo"], ["dev", "m:app"]])
def test_api_before_a_command_that_does_not_use_it_is_a_one_line_error(argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["--api", "http://127.0.0.1:9", *argv], out=out, err=err) == 2
    assert err.getvalue() == (
        "world-aws: error: --api and --sign are options of "
        "start, ls, inspect, cancel, fork, resume, schedules, gate, stream, deployments, runs, workflows, "
        "result, watch, export, replay, ui\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect", "wrun_NOPE"], "world-aws: run 'wrun_NOPE' not found\n"),
        (["cancel", "wrun_NOPE"], "world-aws: run 'wrun_NOPE' not found\n"),
        (
            ["resume", "approve:nobody", "--payload", "1"],
            "world-aws: no live hook holds token 'approve:nobody' (has the run reached its hook yet?",
        ),
        (
            ["resume", "approve:x", "--payload", "{oops"],
            "world-aws: error: --payload '{oops' is not valid JSON: Expecting property name enclosed in "
            "double quotes\n",
        ),
        (
            ["start", "approve_order", "--arg", "order-6"],
            "world-aws: error: --arg 'order-6' is not valid JSON",
        ),
        (
            ["start", "approve_order", "--kwarg", "cents"],
            "world-aws: error: --kwarg 'cents': expected NAME=JSON\n",
        ),
        (["start", "nope"], "world-aws: workflow: unknown workflow 'nope' (registered: approve_order)\n"),
        (["ls", "--limit", "0"], "world-aws: limit: Input should be greater than or equal to 1\n"),
    ],
    ids=[
        "inspect-404",
        "cancel-404",
        "resume-404",
        "bad-payload",
        "bad-arg",
        "bad-kwarg",
        "unknown-workflow",
        "bad-limit",
    ],
)
def test_errors_are_one_line_with_exit_code_2(dev: Dev, argv: list[str], message: str) -> None:
    result = dev.cli(*argv)
    assert result.code == 2
    assert result.err.startswith(message) and result.err.count("\n") == 1, result.err
    assert result.out == ""


def test_an_unreachable_api_is_a_one_line_error_that_suggests_world_aws_dev() -> None:
    # GIVEN a loopback port nothing listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out, err = io.StringIO(), io.StringIO()
    # WHEN a command targets it
    code = main(["ls", "--api", f"http://127.0.0.1:{port}"], out=out, err=err)
    # THEN exit 2 and one line that says what to do
    assert code == 2
    assert err.getvalue() == (
        f"world-aws: cannot reach http://127.0.0.1:{port}: connection refused — is `world-aws dev` running?\n"
    )


def test_an_api_url_that_is_not_http_is_refused() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["ls", "--api", "ftp://example.com"], out=out, err=err) == 2
    assert (
        err.getvalue()
        == "world-aws: error: the API URL must be http:// or https://, got 'ftp://example.com'\n"
    )
