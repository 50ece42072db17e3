"""Root of the test suite: what must happen before any test module is imported.

The World conformance suite lives in the package (``world_aws.testing``), not in
test files, so pytest rewrites its asserts only if asked before the package is
first imported. Subdirectory conftests load only when their directory is
collected, after earlier directories' modules may already have imported it.
"""

import pytest

pytest.register_assert_rewrite("world_aws.testing")

# ``pytester`` runs the README's test examples as a user's pytest session would (tests/kit/).
pytest_plugins = ["pytester"]
