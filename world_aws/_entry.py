"""The ``world-aws`` console command: the embedded stack's process forked first, then the CLI.

Kept apart from ``world_aws.cli`` so that nothing heavy is imported before the fork: a
``run`` or ``demo`` on the embedded default starts its stack in a child
(``local/moto_process.py``) while this process imports the runtime and the app. The
argument scan is a guess (a wrong one costs a child started for nothing, or a slower
start); ``world_aws.cli.main`` parses the arguments for real.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence

_STACK_COMMANDS = frozenset({"run", "demo"})
_OPTIONS_WITH_VALUES = frozenset({"--api", "--sign"})


def main() -> None:
    argv = sys.argv[1:]
    process = None
    if runs_on_embedded(argv):
        from world_aws.local.extras import moto_installed
        from world_aws.local.moto_process import MotoProcess, fork_available

        if fork_available() and moto_installed():
            process = MotoProcess()
    try:
        from world_aws.cli.main import main as cli_main

        code = cli_main(argv, prestarted=process)
    except BrokenPipeError:  # `world-aws ls | head`: the reader is gone, nothing left to say
        from world_aws.cli.outcome import pipe_closed

        code = pipe_closed()
    finally:
        if process is not None:
            process.stop()
    sys.exit(code)


def runs_on_embedded(argv: Sequence[str]) -> bool:
    """Whether ``argv`` looks like ``run``/``demo`` on the embedded default (no ``--help``, no memory)."""
    args = list(argv)
    command = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _OPTIONS_WITH_VALUES:
            index += 2
            continue
        if not arg.startswith("-"):
            command = arg
            break
        index += 1
    if command not in _STACK_COMMANDS:
        return False
    if any(a in ("-h", "--help", "--world=memory") for a in args):
        return False
    return not any(a == "--world" and b == "memory" for a, b in itertools.pairwise(args))
