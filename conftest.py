"""The repository's root conftest: ``pytest`` works in a clone whether or not pytest-xdist is installed.

``pyproject.toml``'s ``addopts`` asks for ``-n auto`` (the suite runs on every core, in CI too).
That option belongs to pytest-xdist, which ``world-aws[dev]`` installs and ``world-aws[local]``
does not: a user who followed the README's first install and runs ``pytest test_shop.py`` in
the clone would otherwise meet ``unrecognized arguments: -n``. Without xdist this conftest
accepts ``-n`` and ignores it, so the tests run in one process.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if pluginmanager.hasplugin("xdist"):
        return
    # pytest keeps lowercase short options for itself and its plugins: xdist declares -n with the
    # same group call.
    parser.getgroup("xdist")._addoption(
        "-n",
        "--numprocesses",
        dest="numprocesses",
        metavar="N",
        default=None,
        help="ignored: pytest-xdist is not installed, so the tests run in this process",
    )
