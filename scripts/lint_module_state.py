"""Lint: no mutable module-level state (contract §9). Standard library only.

Usage: ``python scripts/lint_module_state.py world_aws functions`` (directories or files).
Prints ``path:line: message`` per finding and exits 1 if there is any, else 0.
Test files (``tests/`` directories, ``test_*.py``, ``*_test.py``, ``conftest.py``) are skipped.

Rules:

* ``mutated-module-state``: a module-level name (or a class attribute) bound to a
  mutable container - a dict/list/set literal or comprehension, or a call of
  ``dict``, ``list``, ``set``, ``bytearray``, ``defaultdict``, ``OrderedDict``,
  ``deque``, ``Counter``, ... - that a function, method or lambda mutates:
  a mutating method call (``X.append(...)``, ``X[k].add(...)``,
  ``Cls.attr.append(...)``), an item or attribute assignment or deletion
  (``X[k] = v``, ``del X[k]``, ``X[k] += 1``), an augmented assignment
  (``X |= ...``), or a known mutating function (``heapq.heappush(X, ...)``).
  Writes at module top level run once, at import, and are fine.
* ``global-statement``: ``global NAME`` inside a function (rebinding module state).
* ``exported-empty-container``: an exported module-level name (no leading
  underscore, or listed in ``__all__``) bound to an *empty* mutable container:
  state waiting to be filled by whoever imports it.

The one escape is a comment on the line directly above the binding (or the
``global`` statement): ``# module-state-ok: <reason>``, with a non-empty reason.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ALLOW_MARKER = "# module-state-ok:"
_ALLOW_RE = re.compile(r"^\s*#\s*module-state-ok\s*:(.*)$")
_FIX = f"keep the state on an instance, or justify it with '{ALLOW_MARKER} <reason>' on the line above"

# fmt: off
CONTAINER_FACTORIES = frozenset({
    "dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "deque", "Counter", "ChainMap",
    "WeakValueDictionary", "WeakKeyDictionary", "WeakSet",
})
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
    "sort", "reverse", "popitem", "appendleft", "extendleft", "popleft", "rotate", "move_to_end",
    "subtract", "difference_update", "intersection_update", "symmetric_difference_update",
    "__setitem__", "__delitem__", "__iadd__", "__ior__",
})
# Functions that mutate their first argument in place (heapq, bisect, random).
MUTATING_FUNCTIONS = frozenset({
    "heappush", "heappop", "heapify", "heappushpop", "heapreplace", "insort", "insort_left",
    "insort_right", "shuffle",
})
# fmt: on


@dataclass(frozen=True)
class Finding:
    """One violation, printed as ``path:line: message``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class _Binding:
    """A module-level name or class attribute bound to a mutable container."""

    label: str  # "CACHE" or "Registry.handlers"
    kind: str  # "dict", "list", ...
    line: int
    empty: bool


def _container_kind(value: ast.expr | None) -> tuple[str, bool] | None:
    """(kind, is_empty) when ``value`` builds a mutable container, else None."""
    if isinstance(value, ast.Dict):
        return "dict", not value.keys
    if isinstance(value, ast.List):
        return "list", not value.elts
    if isinstance(value, ast.Set):
        return "set", False  # a set display always has elements ({} is a dict)
    if isinstance(value, ast.DictComp | ast.ListComp | ast.SetComp):
        return {ast.DictComp: "dict", ast.ListComp: "list", ast.SetComp: "set"}[type(value)], False
    if isinstance(value, ast.Call):
        name = _callee_name(value.func)
        if name in CONTAINER_FACTORIES:
            # defaultdict(list) is empty: its one positional argument is the default factory.
            positional = value.args[1:] if name == "defaultdict" else value.args
            content_kw = [k for k in value.keywords if k.arg not in ("maxlen",)]
            return name, not positional and not content_kw
    return None


def _callee_name(func: ast.expr) -> str:
    """``f`` for ``f(...)`` and ``mod.f(...)``; empty for anything else."""
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _names_in_target(target: ast.expr) -> Iterator[ast.Name]:
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _names_in_target(element)
    elif isinstance(target, ast.Starred):
        yield from _names_in_target(target.value)


_BLOCKS = (ast.If, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.For, ast.While)


def _unpacked(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """Pairs of ``A, B = [], {}``; empty when the assignment is not such an unpacking."""
    if not (isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List)):
        return []
    return list(zip(target.elts, value.elts, strict=True)) if len(target.elts) == len(value.elts) else []


def _assignments(body: Iterable[ast.stmt]) -> Iterator[tuple[ast.stmt, ast.expr, ast.expr | None]]:
    """(statement, target, value) for every assignment in ``body``, through if/try/with blocks."""
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                pairs = _unpacked(target, stmt.value)
                yield from ((stmt, t, v) for t, v in pairs) if pairs else [(stmt, target, stmt.value)]
        elif isinstance(stmt, ast.AnnAssign):
            yield stmt, stmt.target, stmt.value
        elif isinstance(stmt, _BLOCKS):
            for block in ("body", "orelse", "finalbody"):
                yield from _assignments(getattr(stmt, block, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _assignments(handler.body)


def _exported_all(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for _, target, value in _assignments(tree.body):
        if (
            isinstance(target, ast.Name)
            and target.id == "__all__"
            and isinstance(value, ast.List | ast.Tuple)
        ):
            names.update(
                e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return names


def _bindings(tree: ast.Module) -> tuple[dict[str, _Binding], dict[tuple[str, str], _Binding]]:
    """Module-level names and top-level class attributes bound to mutable containers."""
    names: dict[str, _Binding] = {}
    for stmt, target, value in _assignments(tree.body):
        found = _container_kind(value)
        for name in _names_in_target(target) if found else ():
            names.setdefault(name.id, _Binding(name.id, found[0], stmt.lineno, found[1]))  # type: ignore[index]
    attrs: dict[tuple[str, str], _Binding] = {}
    for cls in (s for s in tree.body if isinstance(s, ast.ClassDef)):
        for stmt, target, value in _assignments(cls.body):
            found = _container_kind(value)
            if found and isinstance(target, ast.Name):
                label = f"{cls.name}.{target.id}"
                attrs.setdefault((cls.name, target.id), _Binding(label, found[0], stmt.lineno, found[1]))
    return names, attrs


def _local_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names a function binds locally (so they hide module names), minus its ``global`` ones."""
    args = node.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    bound = {a.arg for a in params if a is not None}
    declared_global: set[str] = set()
    stack: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, ast.AugAssign) and isinstance(current.target, ast.Name):
            # Python makes `X |= ...` local (and fails at run time without `global X`); the
            # writer meant the module's X, so keep resolving it there.
            stack.append(current.value)
            continue
        if isinstance(current, ast.Global):
            declared_global.update(current.names)
        elif isinstance(current, ast.Name) and isinstance(current.ctx, ast.Store | ast.Del):
            bound.add(current.id)
        elif isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(current.name)
            continue  # their bodies are other scopes
        elif isinstance(current, ast.Lambda):
            continue
        elif isinstance(current, ast.alias):
            bound.add((current.asname or current.name).split(".")[0])
        elif isinstance(current, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and current.name:
            bound.add(current.name)
        elif isinstance(current, ast.MatchMapping) and current.rest:
            bound.add(current.rest)
        stack.extend(ast.iter_child_nodes(current))
    return bound - declared_global


class _Finder(ast.NodeVisitor):
    """Walks a module, resolving names through function scopes, and collects mutations."""

    def __init__(self, names: dict[str, _Binding], attrs: dict[tuple[str, str], _Binding]) -> None:
        self.names = names
        self.attrs = attrs
        self.scopes: list[tuple[str, set[str]]] = []  # (function name, its local names)
        self.mutations: dict[str, list[tuple[str, int]]] = {}
        self.globals: list[tuple[ast.Global, str]] = []

    # --- scopes ---

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str) -> None:
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.visit(default)
        self.scopes.append((name, _local_names(node)))
        for stmt in [node.body] if isinstance(node, ast.Lambda) else node.body:
            self.visit(stmt)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node, "<lambda>")

    def visit_Global(self, node: ast.Global) -> None:
        if self.scopes:
            self.globals.append((node, self.scopes[-1][0]))

    def _is_module_name(self, name: str) -> bool:
        return not any(name in local for _, local in self.scopes)

    # --- mutations ---

    def _resolve(self, receiver: ast.expr) -> _Binding | None:
        """The tracked binding that ``receiver`` is (or is an item/attribute of), if any."""
        node = receiver
        while True:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                attr = self.attrs.get((node.value.id, node.attr))
                if attr is not None and self._is_module_name(node.value.id):
                    return attr
            if isinstance(node, ast.Name):
                binding = self.names.get(node.id)
                return binding if binding is not None and self._is_module_name(node.id) else None
            if isinstance(node, ast.Subscript | ast.Attribute):
                node = node.value
                continue
            return None

    def _mutated(self, receiver: ast.expr, line: int) -> None:
        binding = self._resolve(receiver)
        if binding is not None and self.scopes:
            self.mutations.setdefault(binding.label, []).append((self.scopes[-1][0], line))

    def _target(self, target: ast.expr, line: int) -> None:
        if isinstance(target, ast.Subscript | ast.Attribute):
            self._mutated(target.value, line)
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            for element in target.elts if not isinstance(target, ast.Starred) else [target.value]:
                self._target(element, line)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS:
            self._mutated(func.value, node.lineno)
        if _callee_name(func) in MUTATING_FUNCTIONS and node.args:
            self._mutated(node.args[0], node.lineno)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node.lineno)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self._mutated(node.target, node.lineno)  # X |= ..., X += [...]
        self._target(node.target, node.lineno)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target, node.lineno)
        self.generic_visit(node)


def _allow_comment(lines: list[str], line: int) -> str | None:
    """The text after the marker on the line above ``line`` (1-based), or None if no marker."""
    match = _ALLOW_RE.match(lines[line - 2]) if line >= 2 else None
    return match.group(1).strip() if match else None


def _escaped(lines: list[str], line: int) -> tuple[bool, str]:
    """(allowed, hint to append to the message)."""
    reason = _allow_comment(lines, line)
    if reason:
        return True, ""
    if reason == "":
        return False, f" (the '{ALLOW_MARKER}' comment above needs a reason)"
    return False, ""


def lint_source(source: str, path: str) -> list[Finding]:
    """All findings in one module's source text."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return [Finding(path, exc.lineno or 1, f"cannot parse: {exc.msg}")]
    lines = source.splitlines()
    names, attrs = _bindings(tree)
    finder = _Finder(names, attrs)
    finder.visit(tree)
    findings: list[Finding] = []

    def report(line: int, message: str) -> None:
        allowed, hint = _escaped(lines, line)
        if not allowed:
            findings.append(Finding(path, line, f"{message}; {_FIX}{hint}"))

    for binding in [*names.values(), *attrs.values()]:
        sites = finder.mutations.get(binding.label, [])
        where = ", ".join(f"{fn}() line {ln}" for fn, ln in sites[:3]) + (", ..." if len(sites) > 3 else "")
        if sites:
            report(
                binding.line, f"[mutated-module-state] {binding.kind} {binding.label!r} is mutated in {where}"
            )
    exported = _exported_all(tree)
    for binding in names.values():
        if binding.empty and (not binding.label.startswith("_") or binding.label in exported):
            report(binding.line, f"[exported-empty-container] {binding.label!r} is an empty {binding.kind}")
    for node, function in finder.globals:
        report(node.lineno, f"[global-statement] 'global {', '.join(node.names)}' in {function}()")
    return sorted(findings, key=lambda f: (f.line, f.message))


def _is_test(path: Path) -> bool:
    name = path.name
    return (
        any(part in ("tests", "test") for part in path.parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def python_files(paths: Iterable[str]) -> Iterator[Path]:
    """The non-test ``.py`` files under ``paths`` (files or directories), in a stable order."""
    for raw in paths:
        path = Path(raw)
        candidates = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for candidate in candidates:
            hidden = any(part.startswith(".") and part not in (".", "..") for part in candidate.parts)
            if not hidden and "__pycache__" not in candidate.parts and not _is_test(candidate):
                yield candidate


def main(argv: list[str] | None = None) -> int:
    """Lint the given paths; print findings; return the exit code (0 clean, 1 findings, 2 usage)."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: lint_module_state.py PATH [PATH ...]", file=sys.stderr)
        return 2
    missing = [a for a in args if not Path(a).exists()]
    if missing:
        print(f"lint_module_state: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    findings: list[Finding] = []
    for path in python_files(args):
        findings.extend(lint_source(path.read_text(encoding="utf-8"), str(path)))
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
