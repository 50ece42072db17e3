"""The World conformance suite: one module of pytest tests per area of the contract.

Every test takes a ``world`` fixture (a fresh World) and, when it moves time,
``clock`` (the ``ManualClock`` the World was built with); see
:mod:`world_aws.testing.plugin`. A test directory pulls the whole suite in with::

    globals().update(conformance_tests())

Tests are named for the rule they check (contract §2, §3, §4.3, §4.4).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

AREAS = (
    "runs",
    "steps",
    "owned_steps",
    "appended",
    "fence",
    "hooks",
    "waits",
    "patches",
    "ordering",
    "payloads",
    "blobs",
    "concurrency",
    "queue",
    "live",
    "deployments",
    "schedules",
    "streams",
    "admission",
    "gates",
    "shapes",
    "erasure",
)


def conformance_tests() -> dict[str, Callable[..., object]]:
    """Every test function of every area module, by name.

    Raises:
        ValueError: two areas define a test of the same name (one would hide the other).
    """
    tests: dict[str, Callable[..., object]] = {}
    for area in AREAS:
        module = importlib.import_module(f"{__name__}.{area}")
        for name, obj in vars(module).items():
            if name.startswith("test_") and callable(obj):
                if name in tests:
                    raise ValueError(f"conformance test {name} is defined twice (second in {area})")
                tests[name] = obj
    return tests
