"""``world-aws run`` at its edges: one-line errors (exit 2), --kwarg, --timeout, Ctrl-C, big output."""

from __future__ import annotations

import io
import json
import re

import pytest

from world_aws.cli import run as run_command
from world_aws.cli.main import main

MEMORY = ["--world", "memory", "--timeout", "30"]


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("workflow", "arg", "says"),
    [
        ("three", "1" + "0" * 5000, r"cannot be read: Exceeds the limit \(4300 digits\)"),
        # json refuses it at the default recursion limit; under a higher one (pytest-xdist workers)
        # it parses, and the int parameter refuses the list
        ("three", "[" * 5000 + "]" * 5000, "is nested too deeply|does not fit int"),
        ("echo", '"\\ud800"', "surrogates not allowed"),
    ],
    ids=["5000-digit int", "5000-deep nesting", "lone surrogate"],
)
def test_an_argument_that_cannot_be_used_is_one_line_and_exit_2(workflow: str, arg: str, says: str) -> None:
    code, _, err = _main("run", "tests.cli.three_steps:app", workflow, "--arg", arg, *MEMORY)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("world-aws: error: ")
    assert re.search(says, err) and len(err) < 400


@pytest.mark.parametrize("port", ["-5", "70000"])
def test_dev_refuses_a_port_out_of_range(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", "--port", port]) == 2
    assert f"argument --port: invalid port value: '{port}'" in capsys.readouterr().err


def test_kwarg_passes_a_keyword_argument() -> None:
    code, out, _ = _main("run", "tests.cli.three_steps:app", "three", "--kwarg", "x=4", *MEMORY, "--json")
    assert (code, json.loads(out)["result"]) == (0, 7)


def test_a_timeout_exits_3_and_says_the_run_is_left_running() -> None:
    argv = [
        "run",
        "tests.kit.apps:app",
        "approval",
        "--arg",
        '"o-1"',
        "--world",
        "memory",
        "--timeout",
        "0.2",
    ]
    code, out, _ = _main(*argv)
    assert code == run_command.EXIT_TIMEOUT == 3
    assert "status: running" in out and "still running after --timeout (exit 3)" in out


def test_ctrl_c_says_which_run_was_left_and_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_command, "_follow", interrupted)
    code, out, err = _main("run", "tests.cli.three_steps:app", "three", "--arg", "4", *MEMORY)
    run_id = next(line.split()[1] for line in out.splitlines() if line.startswith("run wrun_"))
    assert code == 130
    assert f"interrupted: run {run_id} was left unfinished" in err and "Traceback" not in err


def test_a_big_result_is_cut_in_the_text_output_but_not_in_json() -> None:
    code, out, _ = _main("run", "tests.cli.three_steps:app", "big", "--arg", "1000000", *MEMORY)
    assert code == 0
    assert "characters; --json prints it all)" in out and len(out) < 10_000
    code, out, _ = _main("run", "tests.cli.three_steps:app", "big", "--arg", "1000000", *MEMORY, "--json")
    assert code == 0 and len(json.loads(out)["result"]) >= 1_000_000
