"""The README's Python code blocks, by the file name their first line gives (``# shop.py``)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def section(title: str) -> str:
    """The text of the README section headed ``## <title>`` (up to the next ``## ``)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def named_blocks(text: str) -> dict[str, str]:
    """The Python blocks of ``text`` whose first line is ``# <file>.py``, by that file name."""
    blocks: dict[str, str] = {}
    for code in _BLOCK.findall(text):
        first = code.split("\n", 1)[0]
        match = re.fullmatch(r"# (\w+\.py)", first.strip())
        if match:
            blocks[match.group(1)] = code
    return blocks
