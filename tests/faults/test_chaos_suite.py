"""The chaos suite in CI: each fault group alone and all together, seeded, every run checked.

The same configurations as ``python -m bench.chaos`` at a small size: the
in-memory World for every group (faults at the World protocol boundary), and
one smaller configuration of every fault at once on the AWS World over moto
(faults in botocore hooks on the World's own clients). A failure names each
violated invariant with up to three runs that broke it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from harness.chaos.driver import AFTER_DEPLOY_RUNS
from harness.chaos.run import ChaosConfig, run_configuration
from world_aws.worker.config import RuntimeConfig

MEMORY_GROUPS = ("transient", "lost", "delivery", "crash", "reorder", "all")
SEED = 11


@pytest.fixture(autouse=True)
def _quiet_runtime_logs() -> Iterator[None]:
    # The runtime logs (with tracebacks) every injected failure it survives.
    logging.disable(logging.ERROR)
    yield
    logging.disable(logging.NOTSET)


def assert_sound(row: dict[str, Any]) -> None:
    broken = {kind: n for kind, n in row["violations"].items() if n}
    report = json.dumps({"stuck": row["stuck"], "broken": broken, "examples": row["examples"]}, indent=1)
    assert row["runs"] == row["config"]["runs"] + (AFTER_DEPLOY_RUNS if row["config"]["deploy"] else 0)
    assert row["stuck"] == 0 and not broken, report
    assert row["same_attempt_executions"] == 0, "two bodies ran under one attempt number"


@pytest.mark.parametrize("max_inline", [RuntimeConfig().max_inline_steps, 0], ids=["inline", "kill-switch"])
@pytest.mark.parametrize("group", MEMORY_GROUPS)
def test_every_run_ends_soundly_under_faults_on_the_memory_world(group: str, max_inline: int) -> None:
    # GIVEN 30 runs of the every-feature workload under one fault group, inline execution
    # on (the default) or off (WORKFLOW_MAX_INLINE_STEPS=0, every step by message)
    config = ChaosConfig(group, runs=30, seed=SEED, batch=15, max_inline=max_inline)
    # WHEN they are pumped until the queues settle
    row = run_configuration(config)
    # THEN faults fired, and every run is terminal with its fault-free outcome and a sound log
    assert sum(row["faults_fired"].values()) > 0
    assert_sound(row)


@pytest.mark.parametrize(
    ("group", "seed", "runs"),
    [
        # A consumer of a delivery SQS gave twice created a wave's inline steps and died;
        # the other acked: stranded until continuations hold for open owned steps
        # (ARCHITECTURE 5, "Leave a wake-up, not a bare ack").
        ("all", 5, 20),
    ],
    ids=["all-seed5-twin-owner-died"],
)
def test_configurations_that_once_stranded_a_run_end_soundly(group: str, seed: int, runs: int) -> None:
    # GIVEN a fault group and seed under which a run was once left stuck
    config = ChaosConfig(group, runs=runs, seed=seed, batch=20)
    # WHEN they are pumped until the queues settle
    row = run_configuration(config)
    # THEN every run is terminal with its fault-free outcome and a sound log
    assert sum(row["faults_fired"].values()) > 0
    assert_sound(row)


@pytest.mark.parametrize(
    ("fast_seconds", "fanout"),
    [(RuntimeConfig().inline_fast_seconds, (24, 40)), (0.0, (24, 40)), (1e-6, (24, 40))],
    ids=["fast-rounds", "no-fast-rounds", "every-round-slow"],
)
def test_wide_fan_outs_end_soundly_under_all_faults_whatever_their_rounds(
    fast_seconds: float, fanout: tuple[int, int]
) -> None:
    # GIVEN 30 runs with fan-outs wider than the inline width under every fault: run in fast
    # rounds (the default), dispatched past the width at once, or held and then dispatched
    # beside the running bodies by a slow round's watcher
    config = ChaosConfig("all", runs=30, seed=SEED, batch=15, fanout=fanout, inline_fast_seconds=fast_seconds)
    # WHEN they are pumped until the queues settle
    row = run_configuration(config)
    # THEN every run is terminal with its fault-free outcome and a sound log
    assert sum(row["faults_fired"].values()) > 0
    assert_sound(row)


@pytest.mark.parametrize("max_inline", [RuntimeConfig().max_inline_steps, 0], ids=["inline", "kill-switch"])
def test_runs_caught_in_throttling_storms_end_soundly_not_at_the_delivery_cap(max_inline: int) -> None:
    # GIVEN 30 runs under every fault and throttling storms (every call of a delivery
    # throttled for 5 minutes of every 10), deliveries that raise waiting out the
    # template's 900 s visibility timeout
    config = ChaosConfig(
        "all",
        runs=30,
        seed=SEED,
        batch=15,
        fanout=(8, 40),
        max_inline=max_inline,
        storm_seconds=300,
        storm_every_seconds=600,
    )
    # WHEN they are pumped until the queues settle
    row = run_configuration(config)
    # THEN storms fired, and no run failed at the delivery cap or broke another rule
    assert row["faults_fired"].get("storm", 0) > 0
    assert_sound(row)


@pytest.mark.parametrize("max_inline", [RuntimeConfig().max_inline_steps, 0], ids=["inline", "kill-switch"])
def test_every_run_ends_soundly_under_all_faults_on_the_aws_world(max_inline: int) -> None:
    # GIVEN 2 runs with 8-way fan-outs under every fault, on moto, inline on or off
    config = ChaosConfig("all", runs=2, seed=SEED, world="aws", fanout=(8, 8), max_inline=max_inline)
    # WHEN they are pumped until the queues settle
    row = run_configuration(config)
    # THEN every run is terminal with its fault-free outcome and a sound log
    assert sum(row["faults_fired"].values()) > 0
    assert_sound(row)


@pytest.mark.parametrize("max_inline", [RuntimeConfig().max_inline_steps, 0], ids=["inline", "kill-switch"])
def test_a_deploy_in_the_middle_keeps_runs_in_flight_on_the_old_app_under_all_faults(max_inline: int) -> None:
    # GIVEN 30 runs under every fault, and, a few rounds into the first batch, a deploy of an
    # incompatible app (every step renamed: an old run replayed on it would diverge), on which
    # 5 runs start at once beside the old ones
    config = ChaosConfig("all", runs=30, seed=SEED, batch=15, max_inline=max_inline, deploy=True)
    # WHEN they are pumped until the queues settle
    row = run_configuration(config)
    # THEN every run ended soundly, pinned to the deployment it started on, and ran only that
    # deployment's steps ("deployment" counts the runs that did not)
    assert sum(row["faults_fired"].values()) > 0
    assert_sound(row)
