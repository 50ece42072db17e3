"""``python -m bench.chaos``: the chaos workload under each fault group (the driver: ``harness.chaos``)."""

from harness.chaos.run import main

if __name__ == "__main__":
    raise SystemExit(main())
