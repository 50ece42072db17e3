"""Command-line values given as JSON (``--arg``, ``--kwarg NAME=JSON``, ``--payload``), as one-line errors."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from world_aws.errors import BadInput

# An option echoed in an error is cut to this many characters (a 1 MB argument is not repeated).
SHOWN_CHARS = 60


def json_option(option: str, raw: str) -> Any:
    """``raw`` parsed as JSON.

    Raises:
        BadInput: one line naming the option: not JSON, an integer over Python's
            4300-digit limit, or nesting too deep to parse.
    """
    shown = raw if len(raw) <= SHOWN_CHARS else raw[:SHOWN_CHARS] + "..."
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{option} {shown!r} is not valid JSON: {exc.msg}") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise BadInput(f"{option} {shown!r} cannot be read: {exc}") from None
    except RecursionError:
        raise BadInput(f"{option} {shown!r} is nested too deeply") from None


def kwarg_options(raws: Iterable[str]) -> dict[str, Any]:
    """``--kwarg NAME=JSON`` options as keyword arguments.

    Raises:
        BadInput: one that is not ``NAME=JSON``, or whose JSON does not parse.
    """
    kwargs: dict[str, Any] = {}
    for raw in raws:
        name, sep, value = raw.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"--kwarg {raw[:SHOWN_CHARS]!r}: expected NAME=JSON")
        kwargs[name] = json_option(f"--kwarg {name}", value)
    return kwargs
