"""Keeping user values out of the functions' logs (issue 14), unless the deployment asks for them.

Error messages name what went wrong, often by quoting it: a malformed attribute's value, a
dict key on the path to a value that would not serialize, a hook token, a step's own
exception text. The template promises that logs carry ids, so by default
(``WORKFLOW_LOG_USER_VALUES`` unset or ``0``) the functions' log handler formats a
redacted copy of every record (:class:`RedactingFormatter`; the record itself is left
alone for any other handler):

* quoted literals (``'...'`` or ``"..."``) in the message and in the ``reason`` and
  ``result`` fields become ``'<redacted>'``, except world-aws ids (``wrun_...``,
  ``step_...``, ``hook_...``, ``wait_...``, ``resume_...``) and ARNs;
* an exception keeps its type and traceback frames, but not its message (nor those of
  the exceptions chained to it): it reads ``<message withheld>``.

``WORKFLOW_LOG_USER_VALUES=1`` (template parameter ``LogUserValues``) logs everything as is.
"""

from __future__ import annotations

import copy
import logging
import re
import traceback
from typing import Any

_QUOTED = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""")
_ID = re.compile(r"""^['"]((?:wrun|step|hook|wait|resume)_[0-9A-Za-z_]+|arn:aws[a-z-]*:[^\s'"]+)['"]$""")
REDACTED = "'<redacted>'"
WITHHELD = "<message withheld: WORKFLOW_LOG_USER_VALUES=1 logs it>"
_FIELDS = ("reason", "result")


def redact(text: str) -> str:
    """``text`` with its quoted literals, other than ids, replaced by ``'<redacted>'``."""
    return _QUOTED.sub(lambda m: m.group(0) if _ID.match(m.group(0)) else REDACTED, text)


class RedactingFormatter(logging.Formatter):
    """Formats a redacted copy of each record with ``inner`` (Powertools' formatter).

    Everything else (``append_keys``, ``remove_keys``, ... that ``Logger`` calls on its
    formatter) is ``inner``'s.
    """

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return self.inner.format(redacted(record))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def redacted(original: logging.LogRecord) -> logging.LogRecord:
    """A copy of ``original`` without user values (see the module docstring)."""
    record = copy.copy(original)
    record.msg = redact(record.getMessage())
    record.args = None
    for name in _FIELDS:
        if hasattr(record, name):
            setattr(record, name, redact(str(getattr(record, name))))
    if record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
        frames = redact("".join(traceback.format_tb(error.__traceback__)))
        name = type(error).__name__
        # Powertools takes these two fields as given when the record has no exc_info.
        record.exception = f"Traceback (most recent call last):\n{frames}{name}: {WITHHELD}"
        record.exception_name = name
        record.exc_info = None
        record.exc_text = None
    return record
