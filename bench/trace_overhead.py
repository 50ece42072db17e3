"""What tracing costs per step: ``python -m bench.trace_overhead [--sdk] [--dispatched] [--steps 300]``.

One workflow awaits ``--steps`` steps one after another on the in-memory World
(manual clock, every delivery on this thread), ``--repeat`` times, its steps run
inline (the default) or, with ``--dispatched``, each by its own message; printed:
the best CPU time per step, the deliveries, the spans finished per run and the
bytes of ``trace_carrier`` per delivered message. Without ``--sdk`` no tracer provider is set (the API's no-op
tracer: what a host without OpenTelemetry pays); with it, an SDK provider records
every span into a processor that drops it (the cost of making spans, not of
exporting them). Run it on another checkout for a before/after figure.
"""

from __future__ import annotations

import argparse
import json
import time

from bench.longrun import chain_app
from world_aws.contract.clock import ManualClock
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig


def once(steps: int, *, dispatched: bool = False) -> tuple[float, int, int]:
    """One chain: CPU seconds per step, deliveries, and bytes of trace carriers on them."""
    world = create_memory_world(clock=ManualClock())
    runtime = Runtime(world, chain_app(), RuntimeConfig(max_inline_steps=0) if dispatched else None)
    carried = [0]

    def handle(delivery: Delivery) -> HandlerResult:
        payload = decode_payload(delivery.body)
        carrier = getattr(payload, "trace_carrier", {})
        carried[0] += sum(len(k) + len(v) for k, v in carrier.items())
        return runtime.handle(delivery)

    try:
        handle_run = runtime.start("chain", steps)
        began = time.process_time()
        delivered = world.memory_queue.drain(handle, max_deliveries=10 * steps + 10)
        spent = time.process_time() - began
        assert handle_run.status().value == "completed", handle_run.status()
        return spent / steps, delivered, carried[0]
    finally:
        runtime.close()
        world.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sdk", action="store_true", help="record spans with the OpenTelemetry SDK")
    parser.add_argument("--dispatched", action="store_true", help="every step by message (inline off)")
    ns = parser.parse_args(argv)
    finished = None
    if ns.sdk:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        provider = TracerProvider()
        finished = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(finished))
        trace.set_tracer_provider(provider)
    samples, spans = [], 0
    for _ in range(ns.repeat):
        samples.append(once(ns.steps, dispatched=ns.dispatched))
        if finished is not None:
            spans = len(finished.get_finished_spans())
            finished.clear()
    best, delivered, carried = min(samples)
    result = {
        "sdk": ns.sdk,
        "dispatched": ns.dispatched,
        "steps": ns.steps,
        "deliveries": delivered,
        "cpu_us_per_step": round(best * 1e6, 1),
        "spans_per_run": spans,
        "carrier_bytes_per_delivery": round(carried / max(delivered, 1), 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
