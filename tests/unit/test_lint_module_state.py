"""The no-mutable-module-state lint (contract §9, scripts/lint_module_state.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "lint_module_state.py"


def _load_lint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lint_module_state", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


lint = _load_lint()


def run_lint(tmp_path: Path, source: str, name: str = "sample.py") -> tuple[int, list[str]]:
    """Write ``source`` to a module under tmp_path, lint the directory, return (exit code, lines)."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    lines: list[str] = []
    findings = list(lint.python_files([str(tmp_path)]))
    for file in findings:
        lines.extend(str(f) for f in lint.lint_source(file.read_text(), str(file)))
    code = lint.main([str(tmp_path)])
    assert code == (1 if lines else 0)
    return code, lines


@pytest.mark.parametrize(
    "mutation",
    [
        "CACHE.append(v)",
        "CACHE.extend([v])",
        "CACHE.insert(0, v)",
        "CACHE.pop()",
        "CACHE.remove(v)",
        "CACHE.clear()",
        "CACHE.update({v: 1})",
        "CACHE.setdefault(v, 1)",
        "CACHE.add(v)",
        "CACHE.discard(v)",
        "CACHE.sort()",
        "CACHE.reverse()",
        "CACHE.popitem()",
        "CACHE[v] = 1",
        "CACHE[v] += 1",
        "del CACHE[v]",
        "CACHE.attr = v",
        "CACHE |= {v}",
        "CACHE[v].append(1)",
        "CACHE[v][0] = 1",
        "heapq.heappush(CACHE, v)",
        "(lambda: CACHE.append(v))()",
    ],
)
def test_module_container_mutated_in_a_function_is_flagged(tmp_path: Path, mutation: str) -> None:
    # GIVEN a private module-level container and a function that mutates it
    source = f"import heapq\n_x = 0\nCACHE = {{1: 2}}\n\ndef put(v):\n    {mutation}\n"
    # WHEN the lint runs
    code, lines = run_lint(tmp_path, source)
    # THEN it fails and points at the binding, naming the function and line of the mutation
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"{tmp_path / 'sample.py'}:3: [mutated-module-state]")
    function = "<lambda>" if "lambda" in mutation else "put"
    assert f"'CACHE' is mutated in {function}() line 6" in lines[0]


@pytest.mark.parametrize(
    ("binding", "kind"),
    [
        ("{}", "dict"),
        ("[]", "list"),
        ("{1}", "set"),
        ("dict()", "dict"),
        ("list()", "list"),
        ("set()", "set"),
        ("bytearray()", "bytearray"),
        ("defaultdict(list)", "defaultdict"),
        ("collections.defaultdict(int)", "defaultdict"),
        ("OrderedDict()", "OrderedDict"),
        ("deque(maxlen=3)", "deque"),
        ("Counter()", "Counter"),
        ("{k: k for k in range(3)}", "dict"),
        ("[k for k in range(3)]", "list"),
        ("{k for k in range(3)}", "set"),
    ],
)
def test_every_kind_of_mutable_container_is_tracked(tmp_path: Path, binding: str, kind: str) -> None:
    source = f"""
        import collections
        from collections import Counter, OrderedDict, defaultdict, deque
        _state = {binding}

        def touch(v):
            _state.clear()
        """
    code, lines = run_lint(tmp_path, source)
    assert code == 1
    assert len(lines) == 1
    assert f":4: [mutated-module-state] {kind} '_state' is mutated in touch() line 7" in lines[0]


def test_module_top_level_writes_are_fine(tmp_path: Path) -> None:
    # GIVEN a private dict filled at import time and only read in functions
    source = """
        _ROUTES = {}
        _ROUTES["a"] = 1
        _ROUTES.update(b=2)
        for i in range(3):
            _ROUTES[i] = i
        DEFAULTS = {"retries": 3}

        def route(name):
            return _ROUTES.get(name, DEFAULTS["retries"])
        """
    # THEN the lint passes
    assert run_lint(tmp_path, source) == (0, [])


def test_module_dict_mutated_in_a_method_is_flagged(tmp_path: Path) -> None:
    source = """
        _registry = {}

        class Workflows:
            def step(self, fn):
                _registry[fn.__name__] = fn
                return fn
        """
    code, lines = run_lint(tmp_path, source)
    assert code == 1
    assert ":2: [mutated-module-state] dict '_registry' is mutated in step() line 6" in lines[0]


def test_class_level_mutable_attribute_mutated_through_the_class_is_flagged(tmp_path: Path) -> None:
    # GIVEN a class attribute list appended to through ClassName.attr from a function
    source = """
        class Plugins:
            loaded = []
            names = ("a", "b")

        def load(p):
            Plugins.loaded.append(p)
            return Plugins.names
        """
    code, lines = run_lint(tmp_path, source)
    assert code == 1
    assert len(lines) == 1
    assert ":3: [mutated-module-state] list 'Plugins.loaded' is mutated in load() line 7" in lines[0]


def test_names_that_are_local_in_the_function_are_not_module_state(tmp_path: Path) -> None:
    source = """
        _cache = {}
        _items = []
        _seen = set()

        def with_param(_cache):
            _cache["x"] = 1

        def with_local():
            _items = []
            _items.append(1)

            def inner():
                _items.append(2)  # the enclosing function's list

            return inner

        def with_comprehension():
            return [_seen for _seen in range(3)]
        """
    assert run_lint(tmp_path, source) == (0, [])


def test_global_statement_in_a_function_is_flagged(tmp_path: Path) -> None:
    source = """
        _count = 0

        def bump():
            global _count
            _count += 1

        def outer():
            def inner():
                global _count, _other
                _count = 0
            return inner
        """
    code, lines = run_lint(tmp_path, source)
    assert code == 1
    assert [line.split(": ", 1)[1].split(";")[0] for line in lines] == [
        "[global-statement] 'global _count' in bump()",
        "[global-statement] 'global _count, _other' in inner()",
    ]
    assert lines[0].startswith(f"{tmp_path / 'sample.py'}:5:")


def test_exported_empty_containers_are_flagged(tmp_path: Path) -> None:
    # GIVEN public empty containers, a private one listed in __all__, and ones that are fine
    source = """
        __all__ = ["_ALSO_EXPORTED", "run"]
        HANDLERS = []
        REGISTRY: dict[str, int] = {}
        _ALSO_EXPORTED = set()
        _PRIVATE = []
        DEFAULTS = {"a": 1}
        NAMES = ("a",)

        def run():
            return HANDLERS, REGISTRY, _ALSO_EXPORTED, _PRIVATE, DEFAULTS, NAMES
        """
    code, lines = run_lint(tmp_path, source)
    assert code == 1
    assert [line.split(": ", 1)[1].split(";")[0] for line in lines] == [
        "[exported-empty-container] 'HANDLERS' is an empty list",
        "[exported-empty-container] 'REGISTRY' is an empty dict",
        "[exported-empty-container] '_ALSO_EXPORTED' is an empty set",
    ]


def test_allow_comment_with_a_reason_silences_each_rule(tmp_path: Path) -> None:
    source = """
        # module-state-ok: process-wide log-once latch, guarded by a lock
        _warned = set()
        # module-state-ok: filled by plugins at import, read-only afterwards
        HOOKS = []
        _ticks = 0

        def warn_once(key):
            _warned.add(key)

        def tick():
            # module-state-ok: a monotonic counter for debugging only
            global _ticks
            _ticks += 1
        """
    assert run_lint(tmp_path, source) == (0, [])


@pytest.mark.parametrize(
    "comment",
    ["# module-state-ok:", "# module-state-ok:   ", "# module-state-ok: reason\n"],
    ids=["no-reason", "blank-reason", "not-directly-above"],
)
def test_allow_comment_without_a_reason_or_not_directly_above_does_not_count(
    tmp_path: Path, comment: str
) -> None:
    source = f"{comment}\n_warned = set()\n\ndef warn_once(key):\n    _warned.add(key)\n"
    code, lines = run_lint(tmp_path, source)
    assert code == 1
    assert "[mutated-module-state] set '_warned'" in lines[0]
    if "reason" not in comment:
        assert "needs a reason" in lines[0]


def test_test_files_are_ignored(tmp_path: Path) -> None:
    offending = "_calls = []\n\ndef record(x):\n    _calls.append(x)\n"
    for name in ("tests/helpers.py", "pkg/test_things.py", "pkg/things_test.py", "pkg/conftest.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(offending)
    assert lint.main([str(tmp_path)]) == 0
    (tmp_path / "pkg" / "real.py").write_text(offending)
    assert lint.main([str(tmp_path)]) == 1


def test_command_line_prints_path_line_message_and_sets_the_exit_code(tmp_path: Path) -> None:
    # GIVEN one clean and one offending module
    (tmp_path / "clean.py").write_text('"""Clean."""\nLIMIT = 3\n')
    (tmp_path / "bad.py").write_text("import os\n\ndef f():\n    global X\n")
    # WHEN the script runs as a program
    clean = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "clean.py")], capture_output=True, text=True, check=False
    )
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, check=False
    )
    missing = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "nope")], capture_output=True, text=True, check=False
    )
    # THEN exit codes and output follow the contract
    assert (clean.returncode, clean.stdout) == (0, "")
    assert bad.returncode == 1
    assert bad.stdout.startswith(f"{tmp_path / 'bad.py'}:4: [global-statement] 'global X' in f()")
    assert missing.returncode == 2
    assert "no such file" in missing.stderr


def test_unparsable_module_is_a_finding(tmp_path: Path) -> None:
    code, lines = run_lint(tmp_path, "def broken(:\n")
    assert code == 1
    assert ":1: cannot parse" in lines[0]


def test_real_tree_has_no_mutable_module_state() -> None:
    # GIVEN the project's own packages
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "world_aws", "functions"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    # THEN the lint passes on them
    assert result.returncode == 0, result.stdout + result.stderr
