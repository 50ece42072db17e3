"""The import layers of STYLE.md (house rule 1), enforced by parsing every module's imports.

``errors`` (stdlib only) <- ``contract`` <- ``runtime`` <- ``functions``/CLI; ``aws`` and
``local`` implement ``contract``, and only the composition roots pick a backend.
Each rule is data (:data:`RULES`): to add a layer, add a rule. Every import counts:
absolute and relative, at module level, inside functions and under ``TYPE_CHECKING``,
and ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED_PACKAGES = ("world_aws", "functions", "infra")

BOTO = ("boto3", "botocore", "mypy_boto3_*")  # the stub packages are boto3 too
# The runtime, by role (ARCHITECTURE.md "Layers"): each package's charter is its __init__ docstring.
RUNTIME_PACKAGES = (
    "world_aws.serde",
    "world_aws.workflow",
    "world_aws.engine",
    "world_aws.observe",
    "world_aws.client",
    "world_aws.worker",
    "world_aws.runtime",
)
# What no runtime package imports: the façade and the layers built on the runtime.
ABOVE_THE_RUNTIME = (
    "world_aws.runtime",
    "world_aws.api",
    "world_aws.cli",
    "world_aws.testing",
    "world_aws.local",
    "world_aws.aws",
    "functions",
)


@dataclass(frozen=True)
class Rule:
    """One layering rule.

    Attributes:
        name: short id (the test id).
        says: the rule in words, quoted in every violation.
        applies_to: module patterns the rule constrains (``"*"`` is every scanned module).
        exempt: module patterns excused from the rule.
        forbids: patterns no constrained module may import.
        allows_only: when set, a constrained module may import nothing but the standard
            library and these patterns.
    """

    name: str
    says: str
    applies_to: tuple[str, ...]
    exempt: tuple[str, ...] = ()
    forbids: tuple[str, ...] = ()
    allows_only: tuple[str, ...] | None = None

    def constrains(self, module: str) -> bool:
        return matches_any(module, self.applies_to) and not matches_any(module, self.exempt)

    def breaks(self, imported: str) -> bool:
        if matches_any(imported, self.forbids):
            return True
        if self.allows_only is None:
            return False
        return not is_stdlib(imported) and not matches_any(imported, self.allows_only)


RULES: tuple[Rule, ...] = (
    Rule(
        name="errors-stdlib-only",
        says="world_aws/errors.py imports the standard library only",
        applies_to=("world_aws.errors",),
        allows_only=(),
    ),
    Rule(
        name="contract-is-pure",
        says="world_aws/contract imports only the stdlib, pydantic, cbor2, world_aws.errors and itself",
        applies_to=("world_aws.contract",),
        allows_only=("pydantic", "cbor2", "world_aws.errors", "world_aws.contract"),
    ),
    Rule(
        name="runtime-receives-a-world",
        says=(
            "the runtime's packages (serde, workflow, engine, observe, client, worker, runtime) never "
            "import boto3, botocore, moto, world_aws.aws or world_aws.local"
        ),
        applies_to=RUNTIME_PACKAGES,
        forbids=(*BOTO, "moto", "world_aws.aws", "world_aws.local"),
    ),
    Rule(
        name="serde-is-low",
        says=(
            "world_aws/serde imports only the stdlib, pydantic, cbor2, world_aws.errors, "
            "world_aws.contract and itself"
        ),
        applies_to=("world_aws.serde",),
        allows_only=(
            "pydantic",
            "pydantic_core",
            "cbor2",
            "world_aws.errors",
            "world_aws.contract",
            "world_aws.serde",
        ),
    ),
    Rule(
        name="workflow-never-imports-the-engine",
        says=(
            "world_aws/workflow (the authoring API) imports only the stdlib, pydantic, "
            "world_aws.errors, world_aws.contract, world_aws.serde and itself: never the engine, "
            "the worker, the client or a World"
        ),
        applies_to=("world_aws.workflow",),
        allows_only=(
            "pydantic",
            "pydantic_core",
            "world_aws.errors",
            "world_aws.contract",
            "world_aws.serde",
            "world_aws.workflow",
        ),
    ),
    Rule(
        name="observe-is-low",
        says="world_aws/observe imports only the stdlib, OpenTelemetry, world_aws.contract and itself",
        applies_to=("world_aws.observe",),
        allows_only=("opentelemetry", "world_aws.contract", "world_aws.observe"),
    ),
    Rule(
        name="engine-is-pure-replay",
        says="world_aws/engine never imports the client, the worker, the runtime façade or an outer layer",
        applies_to=("world_aws.engine",),
        forbids=("world_aws.client", "world_aws.worker", *ABOVE_THE_RUNTIME),
    ),
    Rule(
        name="client-never-imports-the-worker",
        says=(
            "world_aws/client never imports the worker, the runtime façade or an outer layer "
            "(but client/remote.py, a service's HTTP client of a deployed stack, stands on the CLI's)"
        ),
        applies_to=("world_aws.client",),
        exempt=("world_aws.client.remote",),
        forbids=("world_aws.worker", *ABOVE_THE_RUNTIME),
    ),
    Rule(
        name="worker-below-the-facade",
        says="world_aws/worker never imports the runtime façade or an outer layer",
        applies_to=("world_aws.worker",),
        forbids=ABOVE_THE_RUNTIME,
    ),
    Rule(
        name="api-over-the-runtime",
        says=(
            "world_aws/api imports only the stdlib, pydantic, world_aws.errors, world_aws.contract, "
            "the runtime's packages but the worker, and itself (no backend, no web framework)"
        ),
        applies_to=("world_aws.api",),
        allows_only=(
            "pydantic",
            "world_aws.errors",
            "world_aws.contract",
            "world_aws.serde",
            "world_aws.workflow",
            "world_aws.engine",
            "world_aws.client",
            "world_aws.runtime",
            "world_aws.api",
        ),
    ),
    Rule(
        name="sealing-over-the-contract",
        says=(
            "world_aws/sealing (payload encryption) imports only the stdlib, cryptography, "
            "world_aws.errors, world_aws.contract and itself: the key service is injected"
        ),
        applies_to=("world_aws.sealing",),
        allows_only=("cryptography", "world_aws.errors", "world_aws.contract", "world_aws.sealing"),
    ),
    Rule(
        name="aws-implements-the-contract",
        says="world_aws/aws implements the contract: it never imports the runtime, the local World or a root",
        applies_to=("world_aws.aws",),
        forbids=("world_aws.runtime", "world_aws.local", "world_aws.cli", "functions"),
    ),
    Rule(
        name="aws-codec-knows-the-layout-only",
        says=(
            "world_aws/aws/codec imports only boto3's types, world_aws.errors, world_aws.contract, "
            "world_aws.aws.errors and itself"
        ),
        applies_to=("world_aws.aws.codec",),
        allows_only=(
            *BOTO,
            "world_aws.errors",
            "world_aws.contract",
            "world_aws.aws.errors",
            "world_aws.aws.codec",
        ),
    ),
    Rule(
        name="aws-write-never-reads-or-queues",
        says="world_aws/aws/write never imports world_aws/aws/read or world_aws/aws/queue",
        applies_to=("world_aws.aws.write",),
        forbids=(
            "world_aws.aws.read",
            "world_aws.aws.queue",
            "world_aws.aws.world",
            "world_aws.aws.event_store",
        ),
    ),
    Rule(
        name="aws-read-never-queues",
        says="world_aws/aws/read never imports world_aws/aws/queue",
        applies_to=("world_aws.aws.read",),
        forbids=("world_aws.aws.queue", "world_aws.aws.world", "world_aws.aws.event_store"),
    ),
    Rule(
        name="aws-queue-apart-from-the-table",
        says="world_aws/aws/queue never imports world_aws/aws/write or world_aws/aws/read",
        applies_to=("world_aws.aws.queue",),
        forbids=(
            "world_aws.aws.write",
            "world_aws.aws.read",
            "world_aws.aws.world",
            "world_aws.aws.event_store",
        ),
    ),
    Rule(
        name="boto3-only-in-aws",
        says="only world_aws/aws (its infra/ provisions template.yaml's resources) may import boto3/botocore",
        applies_to=("*",),
        exempt=("world_aws.aws",),
        forbids=BOTO,
    ),
    Rule(
        name="moto-only-in-local-and-testing",
        says=(
            "only the embedded default (world_aws/local/embedded.py, its moto_server, its "
            "moto_speedups/moto_fast_json and its moto_state) and world_aws/testing may import moto"
        ),
        applies_to=("*",),
        exempt=(
            "world_aws.local.embedded",
            "world_aws.local.moto_server",
            "world_aws.local.moto_speedups",
            "world_aws.local.moto_fast_json",
            "world_aws.local.moto_state",
            "world_aws.testing",
        ),
        forbids=("moto",),
    ),
    Rule(
        name="backends-chosen-by-composition-roots",
        says=(
            "only the composition roots (functions/, world_aws/cli and the console command's "
            "world_aws._entry) and the test kit (world_aws/testing) import the backends "
            "world_aws.aws and world_aws.local"
        ),
        applies_to=("*",),
        exempt=(
            "functions",
            "world_aws.cli",
            "world_aws._entry",
            "world_aws.testing",
            "world_aws.aws",
            "world_aws.local",
            "infra",
        ),
        forbids=("world_aws.aws", "world_aws.local"),
    ),
)


def matches_any(module: str, patterns: tuple[str, ...]) -> bool:
    """True if ``module`` is one of ``patterns`` or inside one (``a`` covers ``a.b``; globs allowed)."""
    for pattern in patterns:
        if pattern == "*" or module == pattern or module.startswith(pattern + "."):
            return True
        if "*" in pattern and fnmatch.fnmatchcase(module, pattern):
            return True
    return False


def is_stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


# --- reading imports -----------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    path: str
    line: int
    imported: str  # the imported module, absolute


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(root: Path) -> dict[str, Path]:
    """Every module of the scanned packages, by dotted name."""
    modules: dict[str, Path] = {}
    for package in SCANNED_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                modules[module_name(path, root)] = path
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, *([target] if target else [])])


def imports_of(module: str, path: Path, source: str, local_modules: Collection[str]) -> Iterator[Import]:
    """Every module that ``source`` imports, resolved to an absolute name."""
    tree = ast.parse(source, filename=str(path))
    shown = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Call):
            for name in dict.fromkeys(_imported_names(node, module, path, local_modules)):
                yield Import(module, shown, node.lineno, name)


def _imported_names(
    node: ast.Import | ast.ImportFrom | ast.Call, module: str, path: Path, local_modules: Collection[str]
) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            base = _resolve_relative(module, path.name == "__init__.py", node.level, node.module)
        # `from pkg import sub` imports the submodule pkg.sub when there is one
        candidates = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        return [c if c in local_modules else base for c in candidates]
    return [_dynamic_import_target(node)] if _dynamic_import_target(node) else []


def _dynamic_import_target(node: ast.Call) -> str:
    """``"x"`` for ``importlib.import_module("x")`` and ``__import__("x")``; else empty."""
    func = node.func
    named = (isinstance(func, ast.Name) and func.id == "__import__") or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )
    first = node.args[0] if node.args else None
    if named and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return ""


def violations(rule: Rule, imports: list[Import]) -> list[str]:
    return [
        f"{imp.path}:{imp.line}: {imp.module} imports {imp.imported!r}, but {rule.says} [{rule.name}]"
        for imp in imports
        if rule.constrains(imp.module) and rule.breaks(imp.imported)
    ]


def all_imports() -> list[Import]:
    modules = discover(REPO)
    found: list[Import] = []
    for name, path in modules.items():
        found.extend(imports_of(name, path, path.read_text(encoding="utf-8"), modules))
    return found


# --- the project's own tree ----------------------------------------------------------------

PROJECT_IMPORTS = all_imports()


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_project_respects_layer_rule(rule: Rule) -> None:
    # GIVEN every import of every module under world_aws/, functions/ and infra/
    # WHEN the rule is checked against them
    found = violations(rule, PROJECT_IMPORTS)
    # THEN nothing breaks it
    assert not found, "\n".join(found)


def test_every_rule_constrains_some_existing_module() -> None:
    # A rule whose pattern matches nothing (a typo, a moved package) would pass vacuously.
    modules = discover(REPO)
    assert "world_aws.errors" in modules and len(modules) > 10
    for rule in RULES:
        assert any(rule.constrains(m) for m in modules), f"rule {rule.name} constrains no module"


# --- the checker itself, on made-up modules --------------------------------------------------


def _check(module: str, filename: str, source: str, local: set[str]) -> list[str]:
    path = REPO / "world_aws" / "_made_up" / filename
    imports = list(imports_of(module, path, source, local))
    return [v for rule in RULES for v in violations(rule, imports)]


def test_checker_resolves_relative_imports_and_sees_imports_inside_functions() -> None:
    # GIVEN a runtime module that imports the AWS World relatively, and boto3 inside a function
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from ..aws import world\n"
        "if TYPE_CHECKING:\n"
        "    from mypy_boto3_sqs import SQSClient\n"
        "def make():\n"
        "    import boto3.session\n"
        "    return importlib.import_module('moto')\n"
    )
    local = {"world_aws.aws", "world_aws.aws.world", "world_aws.runtime", "world_aws.runtime.maker"}
    found = _check("world_aws.runtime.maker", "maker.py", source, local)
    # THEN each import is reported with its line, the imported name and the rule
    text = "\n".join(found)
    assert ":3: world_aws.runtime.maker imports 'world_aws.aws.world'" in text
    assert ":5: world_aws.runtime.maker imports 'mypy_boto3_sqs'" in text
    assert ":7: world_aws.runtime.maker imports 'boto3.session'" in text
    assert ":8: world_aws.runtime.maker imports 'moto'" in text
    assert "[runtime-receives-a-world]" in text
    assert "[boto3-only-in-aws]" in text


def test_checker_allows_only_the_listed_dependencies_in_the_contract() -> None:
    local = {
        "world_aws.contract",
        "world_aws.contract.records",
        "world_aws.errors",
        "world_aws.serde.codec",
    }
    clean = (
        "import json\nfrom pydantic import BaseModel\nimport cbor2\n"
        "from . import records\nfrom ..errors import BadInput\n"
    )
    assert _check("world_aws.contract.thing", "thing.py", clean, local) == []
    dirty = "from world_aws.serde.codec import Serializer\nimport yaml\n"
    found = _check("world_aws.contract.thing", "thing.py", dirty, local)
    assert len(found) == 2
    assert all("[contract-is-pure]" in f for f in found)
    assert "imports 'world_aws.serde.codec'" in found[0] and "imports 'yaml'" in found[1]


def test_checker_keeps_errors_on_the_standard_library() -> None:
    found = _check("world_aws.errors", "errors.py", "from enum import StrEnum\nimport pydantic\n", set())
    assert (
        len(found) == 1
        and "imports 'pydantic', but world_aws/errors.py imports the standard library only" in found[0]
    )


def test_relative_import_from_a_package_init_resolves_inside_the_package() -> None:
    path = REPO / "world_aws" / "aws" / "__init__.py"
    local = {"world_aws.aws", "world_aws.aws.world"}
    imports = list(
        imports_of("world_aws.aws", path, "from .world import AwsWorld\nfrom . import world\n", local)
    )
    assert [i.imported for i in imports] == ["world_aws.aws.world", "world_aws.aws.world"]
