"""How the command line ends: usage errors, ``--json`` errors as JSON, and a closed pipe.

Every command writes its errors as ``world-aws: error: ...`` lines on stderr. With ``--json``
a script reads JSON, so :class:`JsonErrors` collects those lines and :func:`json_error` turns
them into one object on stderr, ``{"error": {"message": ...}, "exit_code": N}``; a usage
error (an unknown option, a bad value) comes out the same way, through :class:`Parser`.

``world-aws ls | head`` closes the pipe before the command is done: :func:`pipe_closed` points
stdout at ``/dev/null``, so neither the command nor the interpreter's last flush prints a
``BrokenPipeError`` traceback, and the command exits 141 (128 + SIGPIPE), as a shell tool
killed by the signal would.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from typing import NoReturn, TextIO

EXIT_USAGE = 2
EXIT_PIPE_CLOSED = 141
_PREFIXES = ("world-aws: error: ", "world-aws: ")


class UsageError(Exception):
    """argparse refused the command line (what ``ArgumentParser.error`` would print, and exit 2)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (and its subparsers) whose errors are raised for ``main`` to write."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def write_usage_error(error: UsageError, err: TextIO, *, as_json: bool) -> int:
    """Write a usage error as argparse does (usage line, then the error), or as JSON; returns 2."""
    if as_json:
        err.write(json_error(f"{error.parser.prog}: {error.message}", EXIT_USAGE))
    else:
        error.parser.print_usage(err)
        err.write(f"{error.parser.prog}: error: {error.message}\n")
    return EXIT_USAGE


class JsonErrors(io.StringIO):
    """Stands in for stderr under ``--json``: the error lines a command writes, for :func:`json_error`."""


def json_error(text: str, exit_code: int) -> str:
    """The JSON object (one line) of a command's error ``text`` (its ``world-aws:`` prefixes dropped)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    messages = []
    for line in lines:
        for prefix in _PREFIXES:
            if line.startswith(prefix):
                line = line[len(prefix) :]
                break
        messages.append(line.strip())
    return json.dumps({"error": {"message": "\n".join(messages)}, "exit_code": exit_code}) + "\n"


def pipe_closed() -> int:
    """Stdout's reader went away: stdout now goes to ``/dev/null`` (no traceback at exit); returns 141."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_PIPE_CLOSED
