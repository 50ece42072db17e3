"""``world-aws demo``'s output reads calmly: each event once, a retried attempt's error on one line."""

from __future__ import annotations

import io
import json
import re

from world_aws.cli.main import main


def _demo(*extra: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "--world", "memory", *extra], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def test_the_demo_prints_each_event_once_and_the_retry_on_one_line() -> None:
    text = _demo()
    # each position is printed once (the live timeline is the timeline: no second table)
    positions = [int(m.group(1)) for m in re.finditer(r"^ +(\d+)  [a-z_]+", text, re.MULTILINE)]
    assert positions and len(positions) == len(set(positions))
    assert text.count("timeline:") == 1
    # the retried attempt: its error's type and message on its timeline line, no traceback
    (retry,) = [line for line in text.splitlines() if "step_retrying" in line]
    assert retry.endswith("RetryableError: payment provider timed out")
    assert "Traceback" not in text and "stepbody" not in text and "failed attempts" not in text
    assert "status: completed" in text


def test_the_demo_attempts_traceback_starts_in_the_demo_not_in_the_runtime() -> None:
    document = json.loads(_demo("--json"))
    (retry,) = [row for row in document["events"] if row["type"] == "step_retrying"]
    stack = retry["error"]["stack"]
    assert "demo.py" in stack and 'raise RetryableError("payment provider timed out"' in stack
    assert not any(f"world_aws/{layer}/" in stack for layer in ("worker", "engine", "workflow"))
