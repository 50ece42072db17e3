"""``world-aws workflows``, ``result``, ``watch`` and ``start --wait`` against a dev stack."""

from __future__ import annotations

import json
import threading

from .conftest import Dev


def test_workflows_lists_what_the_api_can_start(dev: Dev) -> None:
    listed = dev.cli("workflows")
    assert listed.code == 0
    assert "approve_order(order_id: str, cents: int = 25000) -> dict[str, object]" in listed.out
    document = json.loads(dev.cli("workflows", "--json").out)
    assert [w["name"] for w in document["workflows"]] == ["approve_order"]


def test_start_wait_prints_the_result_of_a_run_that_ends_by_itself(dev: Dev) -> None:
    done = dev.cli("start", "approve_order", "--arg", '"order-w1"', "--kwarg", "cents=1", "--wait")
    assert done.code == 0, done.err
    run_id, *result = done.out.splitlines()
    assert run_id.startswith("wrun_")
    assert json.loads("\n".join(result)) == {"order": "order-w1", "status": "auto-approved"}


def test_start_wait_json_is_one_document(dev: Dev) -> None:
    done = dev.cli("start", "approve_order", "--arg", '"order-w2"', "--kwarg", "cents=1", "--wait", "--json")
    document = json.loads(done.out)
    assert (done.code, document["status"], document["result"]["status"]) == (0, "completed", "auto-approved")


def test_result_of_a_waiting_run_says_so_then_waits_for_its_end(dev: Dev) -> None:
    run_id = dev.cli("start", "approve_order", "--arg", '"order-w3"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    early = dev.cli("result", run_id)
    assert early.code == 3 and "has not ended" in early.out
    # WHEN someone approves while `result --wait` waits
    waited: list[object] = []
    waiter = threading.Thread(target=lambda: waited.append(dev.cli("result", run_id, "--wait")))
    waiter.start()
    assert dev.cli("resume", "approve:order-w3", "--payload", '{"approved": true, "by": "ada"}').code == 0
    waiter.join(timeout=60)
    (late,) = waited
    assert late.code == 0  # type: ignore[attr-defined]
    assert json.loads(late.out)["status"] == "approved"  # type: ignore[attr-defined]


def test_result_of_a_cancelled_run_is_its_error_and_exit_1(dev: Dev) -> None:
    run_id = dev.cli("start", "approve_order", "--arg", '"order-w4"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    dev.cli("cancel", run_id, "--reason", "no stock")
    shown = dev.cli("result", run_id)
    assert shown.code == 1 and "the run was cancelled: no stock" in shown.out


def test_watch_follows_the_timeline_to_the_end(dev: Dev) -> None:
    run_id = dev.cli("start", "approve_order", "--arg", '"order-w5"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    watched: list[object] = []
    watcher = threading.Thread(target=lambda: watched.append(dev.cli("watch", run_id)))
    watcher.start()
    dev.cli("resume", "approve:order-w5", "--payload", '{"approved": true, "by": "bo"}')
    watcher.join(timeout=60)
    (seen,) = watched
    text = seen.out  # type: ignore[attr-defined]
    assert seen.code == 0  # type: ignore[attr-defined]
    lines = text.splitlines()
    rows = [line.split() for line in lines if line[:6].strip().isdigit()]
    events = [row[1] for row in rows]
    assert events[:2] == ["run_created", "run_started"] and events[-1] == "run_completed"
    assert "hook_received" in events
    positions = [int(row[0]) for row in rows]
    assert positions == sorted(set(positions))  # each event once, in order
    assert "status: completed" in text and '"status": "approved"' in text
