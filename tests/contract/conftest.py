"""Fixtures of the World conformance suite: ``world`` (parametrised over every World) and ``clock``."""

import pytest

# The suite lives in the package, not in test files: have pytest rewrite its
# asserts so failures show the compared values.
pytest.register_assert_rewrite("world_aws.testing")

from world_aws.testing.plugin import clock, race_iterations, world  # noqa: E402

__all__ = ["clock", "race_iterations", "world"]
