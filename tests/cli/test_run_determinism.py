"""``world-aws run`` replays every continuation cold, so a workflow that is not deterministic fails there.

A warm replay cache continues the suspended coroutine, so a workflow branching on
module state would complete locally and fail only once a new Lambda container
replays it from the log. ``run`` and ``dev`` (both on ``local_stack``) and the test
kit replay each continuation from the log instead.
"""

from __future__ import annotations

import io
import json

import pytest

from tests.kit import apps
from world_aws.cli import main
from world_aws.local.stack import local_stack


def test_run_fails_a_workflow_that_branches_on_module_state_naming_both_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the embedded default (moto), fake credentials, and a workflow whose first step
    # depends on how often its module's code ran
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    apps.fickle_calls.clear()
    out, err = io.StringIO(), io.StringIO()
    # WHEN world-aws runs it
    code = main(["run", "tests.kit.apps:app", "fickle", "--json", "--timeout", "60"], out=out, err=err)
    # THEN the run fails with NON_DETERMINISM, naming the logged step and the one the code called
    document = json.loads(out.getvalue())
    assert (code, document["status"], document["error"]["code"]) == (1, "failed", "NON_DETERMINISM")
    assert (
        f"the log has step {apps.left.name!r} but the code calls step {apps.right.name!r}"
        in (document["error"]["message"])
    )


def test_the_local_stack_keeps_no_warm_replays_unless_configured() -> None:
    with local_stack(apps.app, kind="memory") as stack:
        assert stack.runtime.config.replay_cache_runs == 0
