"""``world-aws run`` shows a failed run's cause with the user's traceback, and each failed attempt."""

from __future__ import annotations

import io
import json
import re

from world_aws.cli.main import main

ARGV = ["run", "tests.kit.failing:app", "validate", "--arg", "5", "--world", "memory", "--timeout", "60"]


def test_run_prints_the_cause_traceback_and_each_failed_attempt() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(ARGV, out=out, err=err) == 1
    text = out.getvalue()
    assert re.search(r"step_retrying +check +1 +\S+ ms  ValueError: bad value 5", text)  # live, as it happens
    assert "caused by ValueError: bad value 5" in text
    assert "failed attempts:" in text and "check attempt 2: ValueError: bad value 5" in text
    assert 'raise ValueError(f"bad value {value}")' in text
    assert not any(f"world_aws/{layer}/" in text for layer in ("worker", "engine", "workflow"))


def test_run_json_carries_the_error_cause_and_each_attempts_error() -> None:
    out = io.StringIO()
    assert main([*ARGV, "--json"], out=out, err=io.StringIO()) == 1
    document = json.loads(out.getvalue())
    assert document["error"]["cause"]["message"] == "bad value 5"
    assert "in parse_quantity" in document["error"]["cause"]["stack"]
    assert [e["error"]["message"] for e in document["events"] if e["error"]] == ["bad value 5"] * 2
