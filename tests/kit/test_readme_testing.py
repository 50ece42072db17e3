"""The README's "Testing your workflows" section runs as written, as a user's pytest session.

The blocks are written to a fresh directory next to the README's ``shop.py`` and
run by pytest in-process (``pytester``); the ``workflow_kit`` fixture comes from
the installed package's pytest plugin, as it would for a user.
"""

from __future__ import annotations

import pytest

from .readme import named_blocks, section


def test_the_testing_section_runs_as_written(pytester: pytest.Pytester) -> None:
    # GIVEN the README's first workflow and the testing section's test files
    shop = named_blocks(section("Your first workflow"))["shop.py"]
    tests = named_blocks(section("Testing your workflows"))
    assert sorted(tests) == ["test_approval.py", "test_shop.py"]
    pytester.makepyfile(shop=shop, **{name.removesuffix(".py"): code for name, code in tests.items()})

    # WHEN pytest runs them
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")

    # THEN every test in them passes
    result.assert_outcomes(passed=4)
