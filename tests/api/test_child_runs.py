"""A child workflow is shown as a child, not a hook: timeline spans, summary counts, runs list, CLI table."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from examples.children import app, ship_orders
from world_aws.cli import render
from world_aws.testing.kit import KitRun, WorkflowKit

from .conftest import Api


@pytest.fixture
def parent() -> Iterator[tuple[Api, KitRun]]:
    """A parent that ran two child workflows (one failed), and the API in front of its World."""
    with WorkflowKit(app) as kit:
        run = kit.run(ship_orders, ["o-1", "bad-2"])
        yield Api(kit.runtime, kit.world, kit.clock), run


def test_the_timeline_has_child_spans_counted_apart_from_hooks(parent: tuple[Api, KitRun]) -> None:
    api, run = parent
    timeline = api.call("GET", f"/runs/{run.run_id}/timeline").body
    children = api.call("GET", f"/runs/{run.run_id}").body["links"]["children"]
    spans = timeline["spans"]
    assert [span["kind"] for span in spans] == ["child", "child"]
    assert sorted(span["name"] for span in spans) == sorted(children)
    assert all(span["status"] == "ended" and span["ended_at"] for span in spans)
    summary = timeline["summary"]
    assert (summary["children"], summary["hooks"]) == (2, 0)
    assert "2 children" in render.summary_line(summary) and "hook" not in render.summary_line(summary)


def test_the_runs_list_marks_child_runs_with_their_parent(parent: tuple[Api, KitRun]) -> None:
    api, run = parent
    listed = api.call("GET", "/runs").body["runs"]
    parents = {row["run_id"]: row["parent_run_id"] for row in listed}
    assert parents[run.run_id] is None
    children = [rid for rid, by in parents.items() if by == run.run_id]
    assert len(children) == 2


def test_the_cli_timeline_shows_child_starts_and_ends(parent: tuple[Api, KitRun]) -> None:
    api, run = parent
    rows = api.call("GET", f"/runs/{run.run_id}/events").body["events"]
    out = io.StringIO()
    render.print_rows_timeline(rows, out)
    text = out.getvalue()
    assert "hook_created" not in text and "wchild_" not in text
    assert text.count("child_started   child wrun_") == 2 and text.count("child_ended     child wrun_") == 2
