"""Issue 14: default hook tokens are unguessable, recorded in ``hook_created``, and stable across replays."""

from __future__ import annotations

import random

import pytest

from world_aws import Workflows, create_hook
from world_aws.contract.records import EventType, RunStatus
from world_aws.workflow import hooks

from .harness import Harness


def approval_app(tokens: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="tokens.mail")
    def mail(token: str) -> None:
        tokens.append(token)

    @app.workflow
    async def approve() -> str:
        hook = create_hook()
        await mail(hook.token)
        return str(await hook)

    return app


def test_a_default_token_comes_from_os_urandom_and_is_recorded_in_hook_created(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN os.urandom answering known bytes
    drawn: list[int] = []

    def urandom(n: int) -> bytes:
        drawn.append(n)
        return bytes(range(n))

    monkeypatch.setattr(hooks, "urandom", urandom)
    tokens: list[str] = []
    runtime = harness.runtime_for(approval_app(tokens))
    # WHEN a run creates a hook without a token
    handle = runtime.start("approve")
    assert harness.settle(handle) is RunStatus.RUNNING
    # THEN the token is those 128 bits, not anything the run id predicts
    expected = "whk_" + bytes(range(16)).hex()
    assert tokens == [expected] and drawn == [16]
    old_formula = f"_{random.Random(handle.run_id).getrandbits(64):016x}"
    assert not expected.endswith(old_formula)
    # AND it is what hook_created recorded
    [created] = [e for e in harness.events(handle.run_id) if e.type is EventType.HOOK_CREATED]
    assert created.data.token == expected


def test_a_replay_on_a_fresh_handler_reads_the_default_token_from_the_log(harness: Harness) -> None:
    # GIVEN a run suspended on a default-token hook, and a second runtime that never saw it
    tokens: list[str] = []
    app = approval_app(tokens)
    first = harness.runtime_for(app)
    handle = first.start("approve")
    assert harness.settle(handle) is RunStatus.RUNNING
    fresh = harness.runtime_for(app)
    # WHEN the hook is resumed and the fresh runtime replays the run
    fresh.resume_hook(tokens[0], "yes")
    assert harness.settle(handle, runtime=fresh) is RunStatus.COMPLETED
    # THEN it replayed with the logged token (no divergence) and the step was not re-run
    assert handle.result(timeout=0) == "yes"
    assert len(tokens) == 1


def test_two_runs_get_different_tokens(harness: Harness) -> None:
    tokens: list[str] = []
    runtime = harness.runtime_for(approval_app(tokens))
    for _ in range(2):
        assert harness.settle(runtime.start("approve")) is RunStatus.RUNNING
    assert len(set(tokens)) == 2
    assert all(t.startswith(hooks.DEFAULT_TOKEN_PREFIX) and len(t) == 36 for t in tokens)
