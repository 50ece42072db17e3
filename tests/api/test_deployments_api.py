"""``GET /deployments``, ``POST /deployments/{id}/retire`` and ``GET /runs?blocked=true`` on one deployment.

A runtime without other deployments (no hand-over) has one: its own, the newest,
which cannot be retired. The held-runs listing takes no other status and no cursor.
"""

from __future__ import annotations

from datetime import UTC, datetime

from world_aws.contract.records import Blocked

from .conftest import Api


def test_one_deployment_is_listed_with_its_live_runs_and_cannot_be_retired(api: Api) -> None:
    api.start("wait_for_approval", "o-1")
    api.drain()
    listed = api.call("GET", "/deployments")
    assert listed.status == 200
    assert listed.body == {"deployments": [{"deployment_id": "dpl_local", "live_runs": 1, "newest": True}]}
    newest = api.call("POST", "/deployments/dpl_local/retire")
    assert newest.status == 400 and "newest" in newest.message
    unknown = api.call("POST", "/deployments/dpl_gone/retire")
    assert unknown.status == 404 and "dpl_gone" in unknown.message


def test_blocked_lists_the_held_runs_with_their_mark(api: Api) -> None:
    # GIVEN a running run, held (as a replay that diverged on other code holds it)
    run_id = api.start("wait_for_approval", "o-2")
    api.drain()
    since = datetime(2026, 12, 7, tzinfo=UTC)
    mark = Blocked("dpl_2", 4, "diverged", since, at="step_1", expected="a", actual="b")
    assert api.world.runs.hold(run_id, mark)
    # THEN ?blocked=true lists it with where it diverged, and GET /runs/{id} shows the mark
    (held,) = api.call("GET", "/runs", query={"blocked": "true"}).body["runs"]
    assert (held["run_id"], held["status"]) == (run_id, "running")
    assert held["blocked"] == {
        "deployment_id": "dpl_2",
        "position": 4,
        "message": "diverged",
        "since": "2026-12-07T00:00:00Z",
        "at": "step_1",
        "expected": "a",
        "actual": "b",
    }
    assert api.call("GET", f"/runs/{run_id}").body["blocked"]["expected"] == "a"
    # AND the listing refuses what it cannot honour
    for query in ({"blocked": "true", "status": "completed"}, {"blocked": "true", "cursor": "abc"}):
        refused = api.call("GET", "/runs", query=query)
        assert refused.status == 400 and "blocked" in refused.message
