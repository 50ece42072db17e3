"""``world-aws run`` checks replays cold, so a workflow that is not deterministic fails there.

A warm replay cache alone continues the suspended coroutine, so a workflow branching on
module state would complete locally and fail only once a new Lambda container replays it
from the log. ``run`` and ``dev`` (both on ``local_stack``) start the replay over from the
log whenever the log doubled and before the run's end (linear in the run's length); the
test kit replays each continuation from the log.
"""

from __future__ import annotations

import io
import json
import math

import pytest

from tests.kit import apps
from world_aws import WorkflowFailedError, Workflows
from world_aws.cli.main import main
from world_aws.local.stack import local_stack
from world_aws.serde.codec import decode_error


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


def test_the_local_stack_keeps_warm_replays_and_checks_them_cold() -> None:
    with local_stack(apps.app, kind="memory") as stack:
        assert stack.runtime.config.replay_cache_runs > 0 and stack.runtime.config.replay_checks


# How often each workflow below started from its first line (a cold replay, or the first run).
STARTS: list[str] = []
LATE_BRANCH: list[int] = []
longrun = Workflows()


@longrun.step
def inc(x: int) -> int:
    return x + 1


@longrun.step
def other(x: int) -> int:
    return x - 1


@longrun.workflow
async def chain(n: int) -> int:
    STARTS.append("chain")
    x = 0
    for _ in range(n):
        x = await inc(x)
    return x


@longrun.workflow
async def drifts(n: int) -> int:
    """Deterministic until its last step, which flips with each run of the code (module state)."""
    LATE_BRANCH.append(1)
    x = 0
    for _ in range(n - 1):
        x = await inc(x)
    return await (inc(x) if len(LATE_BRANCH) % 2 else other(x))


def test_a_long_run_re_runs_its_code_from_the_start_a_logarithmic_number_of_times() -> None:
    # GIVEN a 300-step sequential workflow on the local stack (as `world-aws run` runs it)
    STARTS.clear()
    with local_stack(longrun, kind="memory", run_schedules=False) as stack:
        # WHEN it runs to its end
        assert stack.runtime.start("chain", 300).result(timeout=120) == 300
    # THEN its code started over from the first line about once per doubling of the log (~10),
    # plus the check before its end: not once per step, as a cold replay per continuation did
    assert 2 <= len(STARTS) <= 2 * math.ceil(math.log2(1200)) + 4, len(STARTS)


def test_a_workflow_that_drifts_late_still_fails_with_non_determinism() -> None:
    # GIVEN a workflow whose last step differs on any replay after the first execution
    LATE_BRANCH.clear()
    with local_stack(longrun, kind="memory", run_schedules=False) as stack:
        handle = stack.runtime.start("drifts", 40)
        with pytest.raises(WorkflowFailedError):
            handle.result(timeout=120)
        run = handle.run()
    # THEN the check before its end replays it cold and fails it, naming both steps
    assert run.error_code == "NON_DETERMINISM"
    message = decode_error(run.error or b"").message
    assert "the log has step" in message and inc.name in message and other.name in message
