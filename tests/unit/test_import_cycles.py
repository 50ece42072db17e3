"""No import cycle anywhere in ``world_aws``: type-only imports and package ``__init__`` modules included.

An import of ``a.b.c`` runs ``a/b/__init__.py`` first, so it counts as an import of
``a.b`` too: a package whose ``__init__`` imports its own modules closes a cycle with
each of them that imports a sibling. The root ``world_aws`` (the public surface,
imported lazily by name) is the one exception: no module under it imports it but the
bundled demo app (``world_aws/demo.py``), written as a user's app is.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tests.unit.test_layers import PROJECT_IMPORTS, REPO, Import, discover, imports_of

ROOT = "world_aws"


def import_graph(imports: Iterable[Import], modules: Collection[str]) -> dict[str, set[str]]:
    """Module -> the modules it imports (inside ``world_aws``), with the packages they run."""
    graph: dict[str, set[str]] = {m: set() for m in modules if m.startswith(ROOT + ".")}
    # (world_aws.demo imports the root, as a user's app does; the root is not a node.)
    for imp in imports:
        if imp.module not in graph:
            continue
        target = _known(imp.imported, modules)
        if target is None or not target.startswith(ROOT + "."):
            continue
        if target != imp.module:
            graph[imp.module].add(target)
        parts = target.split(".")
        for i in range(2, len(parts)):
            ran = ".".join(parts[:i])  # each enclosing package's __init__ runs first
            if ran in graph and not imp.module.startswith(ran + "."):
                graph[imp.module].add(ran)
    return graph


def _known(name: str, modules: Collection[str]) -> str | None:
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts) if parts else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_world_aws_has_no_import_cycle() -> None:
    # GIVEN every import of every world_aws module, type-only and in-function ones too
    modules = discover(REPO)
    graph = import_graph(PROJECT_IMPORTS, modules)
    # THEN no module reaches itself through them
    assert cycles(graph) == []


def test_no_module_imports_the_root_package() -> None:
    # The root re-exports the public names; a module importing it would import every layer.
    offenders = [
        f"{i.path}:{i.line}"
        for i in PROJECT_IMPORTS
        if i.module.startswith(ROOT + ".") and i.imported == ROOT and i.module != "world_aws.demo"
    ]
    assert offenders == []


def test_checker_finds_a_type_only_cycle_and_one_through_a_package_init() -> None:
    # GIVEN made-up modules: a -> b at run time, b -> a only under TYPE_CHECKING; and a
    # package whose __init__ imports its module that imports a sibling
    local = {
        "world_aws.x",
        "world_aws.x.a",
        "world_aws.x.b",
        "world_aws.y",
        "world_aws.y.m",
        "world_aws.y.n",
    }
    sources = {
        "world_aws.x.a": "from world_aws.x.b import B\n",
        "world_aws.x.b": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from world_aws.x.a import A\n"
        ),
        "world_aws.y": "from world_aws.y.m import M\n",
        "world_aws.y.m": "from world_aws.y import N\n",  # a name of the package's __init__
        "world_aws.x": "",
        "world_aws.y.n": "",
    }
    imports = [
        imp
        for name, text in sources.items()
        for imp in imports_of(name, REPO / "world_aws" / "made_up.py", text, local)
    ]
    # WHEN the graph is checked
    found = cycles(import_graph(imports, local))
    # THEN both cycles are reported
    assert ["world_aws.x.a", "world_aws.x.b"] in found
    assert ["world_aws.y", "world_aws.y.m"] in found
