"""The docs describe the system as it is: a short ARCHITECTURE.md, the contract, and references that resolve.

* ARCHITECTURE.md is at most 600 lines and holds no history: no sessions, no issue
  numbers, no dates (measured figures live in docs/benchmarks.md, decisions and their
  dates in docs/decisions/).
* docs/contract.md exists, and its "Section map" maps every ``SPEC §X.Y`` still cited
  anywhere in the repository to one of its own sections.
* Every ``docs/contract.md §X.Y`` and ``ARCHITECTURE §N`` reference, in the code and in
  the docs, names a section that exists; a quoted name after it (``ARCHITECTURE §8 "The
  tail"``) is found in that section.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
CONTRACT = ROOT / "docs" / "contract.md"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
DECISIONS = ROOT / "docs" / "decisions"

MAX_ARCHITECTURE_LINES = 600
# Where references are looked for: the code, the tests, the benches, the docs.
SOURCE_DIRS = ("world_aws", "functions", "scripts", "tests", "bench", "examples", "docs", "infra")
ROOT_FILES = ("README.md", "ARCHITECTURE.md", "template.yaml", "pyproject.toml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".html", ".js"}

HISTORY = re.compile(r"\bsessions?\b|\bissues? #?\d+|\b20\d\d-\d\d-\d\d\b", re.IGNORECASE)
SECTION_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", re.MULTILINE)
ARCH_REF = re.compile(r"ARCHITECTURE(?:\.md)?,? (?:§ ?)?(\d+)(?:,? \"([^\"\n]+)\")?")
CONTRACT_REF = re.compile(r"(?:docs/)?contract(?:\.md)? §(\d+(?:\.\d+)?)")
SPEC_REF = re.compile(r"SPEC (?:§ ?)?(\d+(?:\.\d+)?)")


def _sections(path: Path) -> dict[str, str]:
    """Each numbered section of ``path`` (``## 8.`` or ``### 3.1``) by its number, with its text."""
    text = path.read_text(encoding="utf-8")
    heads = list(SECTION_HEADING.finditer(text))
    sections: dict[str, str] = {}
    for i, head in enumerate(heads):
        end = len(text)
        for later in heads[i + 1 :]:
            # A section runs to the next heading that is not inside it (``## 8`` holds its ``### 8.1``).
            if not later.group(1).startswith(head.group(1) + "."):
                end = later.start()
                break
        sections[head.group(1)] = text[head.start() : end]
    return sections


def _files() -> Iterator[Path]:
    for name in ROOT_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            wanted = path.suffix in SUFFIXES and "__pycache__" not in path.parts
            if wanted and path.is_file() and path.resolve() != Path(__file__).resolve():
                yield path


def _where(path: Path, text: str, offset: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


def test_architecture_is_short_and_holds_no_history() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    lines = text.count("\n") + (not text.endswith("\n"))
    assert lines <= MAX_ARCHITECTURE_LINES, f"ARCHITECTURE.md: {lines} lines, over {MAX_ARCHITECTURE_LINES}"
    history = [_where(ARCHITECTURE, text, m.start()) + f": {m.group(0)!r}" for m in HISTORY.finditer(text)]
    assert history == [], "ARCHITECTURE.md describes the present; history goes to docs/decisions/"


def test_the_contract_benchmarks_and_decisions_exist() -> None:
    assert CONTRACT.is_file()
    assert BENCHMARKS.is_file()
    records = [p for p in DECISIONS.glob("*.md") if re.match(r"\d{4}-\d\d-\d\d-", p.name)]
    assert records, "docs/decisions/ holds no dated decision record"
    for record in records:
        body = record.read_text(encoding="utf-8")
        assert record.name[:10] in body, f"{record.name} does not state its date"
        for part in ("## Context", "## Decision", "## Consequences"):
            assert part in body, f"{record.name} has no {part!r}"


def test_the_section_map_covers_every_spec_section_cited() -> None:
    sections = _sections(CONTRACT)
    mapping = dict(re.findall(r"^\| (\d+(?:\.\d+)?) \| (\d+(?:\.\d+)?) \|$", sections["11"], re.MULTILINE))
    assert mapping, "docs/contract.md §11 has no section map"
    assert [old for old, new in mapping.items() if new not in sections] == []
    unmapped = []
    for path in _files():
        if path == CONTRACT:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in SPEC_REF.finditer(text):
            if match.group(1) not in mapping:
                unmapped.append(f"{_where(path, text, match.start())}: SPEC §{match.group(1)}")
    assert unmapped == [], "cited SPEC sections without a row in docs/contract.md's section map"


def test_every_reference_to_architecture_or_the_contract_resolves() -> None:
    arch, contract = _sections(ARCHITECTURE), _sections(CONTRACT)
    broken = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in ARCH_REF.finditer(text):
            number, name = match.group(1), match.group(2)
            section = arch.get(number)
            if section is None:
                broken.append(f"{_where(path, text, match.start())}: ARCHITECTURE §{number} has no section")
            elif name is not None and name.lower() not in section.lower():
                broken.append(f"{_where(path, text, match.start())}: ARCHITECTURE §{number} has no {name!r}")
        for match in CONTRACT_REF.finditer(text):
            if match.group(1) not in contract:
                where = _where(path, text, match.start())
                broken.append(f"{where}: docs/contract.md §{match.group(1)} has no section")
    assert broken == []


def test_bare_section_references_inside_each_doc_resolve_to_its_own_sections() -> None:
    for doc, other in ((ARCHITECTURE, "contract"), (CONTRACT, "ARCHITECTURE")):
        text = doc.read_text(encoding="utf-8")
        sections = _sections(doc)
        # "§5" in ARCHITECTURE.md is its own §5 unless "contract §" says otherwise, and the reverse.
        elsewhere = re.compile(rf"(?:{other}|SPEC)(?:'s)?\s+$")
        missing = [
            f"{_where(doc, text, m.start())}: §{m.group(1)}"
            for m in re.finditer(r"§(\d+(?:\.\d+)?)", text)
            if m.group(1) not in sections and not elsewhere.search(text[max(0, m.start() - 20) : m.start()])
        ]
        assert missing == [], f"{doc.name} cites sections it does not have"
