"""``MemoryGateStore``: debounce windows, batches and singleton keys in memory, under one lock.

The policy is the contract's (``world_aws.contract.coalesce``); this keeps one ``Gate``
per scope and applies each rule atomically.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from world_aws.contract.clock import Clock
from world_aws.contract.coalesce import Gate

A = TypeVar("A")


class MemoryGateStore:
    """Gates per scope. Thread-safe."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._gates: dict[str, Gate] = {}

    def get(self, scope: str) -> Gate:
        with self._lock:
            return self._gates.get(scope, Gate(scope))

    def change(self, scope: str, rule: Callable[[Gate, datetime], tuple[Gate, A]]) -> A:
        with self._lock:
            gate = self._gates.get(scope, Gate(scope))
            new, answer = rule(gate, self._clock.now())
            if new != gate:
                self._gates[scope] = replace(new, version=gate.version + 1)
            return answer
