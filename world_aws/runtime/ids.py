"""Identifiers: ULID-based run ids and deterministic per-run correlation ids.

Run ids are minted client-side (``wrun_<ULID>``). Step, hook and wait ids come
from per-kind counters of one run, so a replay of the same prefix regenerates
the same ids (SPEC §8.3); they embed the run's ULID so that they are unique
across runs too (the step-queue idempotency key is global).
"""

from __future__ import annotations

import hashlib
import os
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def crockford(data: bytes, length: int = 26) -> str:
    """The low ``length`` base-32 (Crockford) digits of ``data`` read as a big-endian number."""
    value = int.from_bytes(data, "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(length)))


def new_ulid(now_ms: int | None = None) -> str:
    """A 26-character ULID: 48 bits of milliseconds, 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    return crockford(((ms << 80) | int.from_bytes(os.urandom(10), "big")).to_bytes(17, "big"))


def new_run_id() -> str:
    return f"wrun_{new_ulid()}"


def run_id_for_key(idempotency_key: str) -> str:
    """A run id derived from a start idempotency key: the same key names the same run."""
    return f"wrun_{crockford(hashlib.sha256(idempotency_key.encode('utf-8')).digest()[:16])}"


def correlation_id(kind: str, run_id: str, n: int) -> str:
    """The n-th (1-based) ``kind`` id of a run: ``step_<run ulid>_<n>``."""
    suffix = run_id.split("_", 1)[1] if "_" in run_id else run_id
    return f"{kind}_{suffix}_{n}"


def fnv1a32(text: str) -> int:
    """32-bit FNV-1a of the UTF-8 bytes of ``text``."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def step_idempotency_key(step_id: str, step_name: str) -> str:
    """The key every producer of a step's messages uses (SPEC §4.4)."""
    return f"{step_id}:{fnv1a32(step_name):08x}"


def retry_key_tag(attempt: int) -> str:
    """What a step's key is tagged with for the message of its next attempt after ``attempt`` failed."""
    return f"retry{attempt}"


def retry_idempotency_key(step_id: str, step_name: str, attempt: int) -> str:
    """The key of the message that carries a step's next attempt after ``attempt`` failed."""
    return f"{step_idempotency_key(step_id, step_name)}:{retry_key_tag(attempt)}"
