"""The stream-read benchmark reads one value both ways and reports each (no timing asserted)."""

from __future__ import annotations

import json

import pytest

from bench import stream_read


def test_stream_read_reports_the_whole_read_and_the_limited_one(capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN the benchmark reads one value of a 250-value stream (3 chunks) once each way
    assert stream_read.main(["--values", "250", "--repeat", "1"]) == 0
    # THEN it reports both reads (each checked inside to answer the stream's first value)
    result = json.loads(capsys.readouterr().out)
    assert (result["world"], result["values"]) == ("memory", 250)
    assert set(result["decode_all_then_cut"]) == set(result["api_limit_1"]) == {"seconds", "peak_mib"}
