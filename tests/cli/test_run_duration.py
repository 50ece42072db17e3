"""``world-aws run`` on the embedded default: "completed in" is the run's own duration, not the command's.

The command also starts moto and provisions the template's resources; that time is
not the run's. The wall time of the whole command is printed (measured, not asserted).
"""

from __future__ import annotations

import io
import re
import time

import pytest

from world_aws.cli.main import main


def test_completed_in_is_the_runs_duration_as_its_timeline_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    out, err = io.StringIO(), io.StringIO()
    wall = time.perf_counter()
    code = main(["run", "tests.cli.three_steps:app", "three", "--arg", "4"], out=out, err=err)
    wall = time.perf_counter() - wall
    text = out.getvalue()
    assert code == 0, err.getvalue()
    shown = re.search(r"^status: completed in (\d+\.\d)s$", text, re.MULTILINE)
    ended = re.search(r"^\s+\d+\s+run_completed\s+(\d+) ms$", text, re.MULTILINE)
    assert shown is not None and ended is not None, text
    # The same duration: one shown to 0.1 s, the other to the ms (so 1.0496 s shows as
    # "1.0" beside "1050 ms"): equal to within the rounding of both.
    assert abs(float(shown.group(1)) - int(ended.group(1)) / 1000) <= 0.0505
    print(f"world-aws run, 3 steps, embedded moto: {wall:.2f} s wall, the run {shown.group(1)} s")
