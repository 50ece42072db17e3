"""Identifiers: ULID-based run ids and deterministic per-run correlation ids.

Run ids are minted client-side (``wrun_<ULID>``), or derived from a seed
(:func:`derived_run_id`) where the same start must name the same run. Each kind of
derived id has its own seed namespace, so no seed of one kind can equal a seed of
another: a child's is ``<parent run id>:<call id>`` and a continuation's
``<run id>:continue`` (both begin ``wrun_``), a schedule tick's
``schedule:<name>:<tick>``, and a caller's idempotency key is prefixed
``key:``. A caller, who chooses its key freely, therefore can never name (and
pre-create) a child's, a continuation's or a tick's run. Step, hook and wait ids come
from per-kind counters of one run, so a replay of the same prefix regenerates
the same ids (contract §8.3); they embed the run's ULID so that they are unique
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


# The seed prefixes of derived run ids (see the module docstring).
CALLER_KEY_SEED = "key:"
SCHEDULE_SEED = "schedule:"
RUN_ID_PREFIX = "wrun_"


def derived_run_id(seed: str) -> str:
    """``wrun_`` and 26 Crockford digits of the seed's SHA-256: the same seed names the same run."""
    return f"{RUN_ID_PREFIX}{crockford(hashlib.sha256(seed.encode('utf-8')).digest()[:16])}"


def run_id_for_key(idempotency_key: str) -> str:
    """The run a caller's start idempotency key names (``Runtime.start``, ``POST /runs``).

    Seeded ``key:<key>``: never a child's, a continuation's or a schedule tick's id.
    """
    return derived_run_id(f"{CALLER_KEY_SEED}{idempotency_key}")


def schedule_run_id(tick_key: str) -> str:
    """The run of a schedule tick, from its key ``schedule:<name>:<tick ISO time>``.

    Raises:
        ValueError: the key is not in the schedules' namespace.
    """
    if not tick_key.startswith(SCHEDULE_SEED):
        raise ValueError(f"a schedule tick's key starts with {SCHEDULE_SEED!r}, got {tick_key!r}")
    return derived_run_id(tick_key)


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
    """The key every producer of a step's messages uses (contract §4.4)."""
    return f"{step_id}:{fnv1a32(step_name):08x}"


def retry_key_tag(attempt: int) -> str:
    """What a step's key is tagged with for the message of its next attempt after ``attempt`` failed."""
    return f"retry{attempt}"


def retry_idempotency_key(step_id: str, step_name: str, attempt: int) -> str:
    """The key of the message that carries a step's next attempt after ``attempt`` failed."""
    return f"{step_idempotency_key(step_id, step_name)}:{retry_key_tag(attempt)}"
