"""Whether the embedded default can run here: it needs moto, which only ``world-aws[local]`` installs.

The plain wheel (``pip install world-aws``) has the runtime, the AWS World, the HTTP API and the
in-memory World, but not moto. ``world-aws run``, ``demo`` and ``dev`` on the embedded default
check first and print one line naming the two ways out (install the extra, or ``--world memory``)
with exit 2, instead of a ``ModuleNotFoundError`` traceback and exit 1 ("the run failed").
"""

from __future__ import annotations

import importlib.util

MISSING_MOTO = (
    "the embedded default needs moto, which this installation lacks: "
    "pip install 'world-aws[local]', or run on the in-memory World with --world memory"
)


def moto_installed() -> bool:
    """Whether ``import moto`` would find the package (without importing it)."""
    try:
        return importlib.util.find_spec("moto") is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a module set to None
        return False


def embedded_unavailable(kind: str) -> str | None:
    """The one-line reason a local World of ``kind`` cannot start here, or None if it can."""
    if kind == "embedded" and not moto_installed():
        return MISSING_MOTO
    return None
