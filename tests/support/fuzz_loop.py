"""`make fuzz`: the endpoint fuzzer (tests/e2e/test_fuzz.py) with fresh random seeds, one after another.

Runs for about FUZZ_SECONDS (default 600; at most 86400): a new round starts only while time is
left, and a round is bounded by its request count and pytest's timeout, so the whole run ends
by FUZZ_SECONDS plus one round. Each round prints its seed; the first failing one stops the loop
and prints the command that sends exactly the same requests again. The suite (and CI) never
draws a seed: it runs test_fuzz.FIXED_SEED.

    FUZZ_SECONDS=600 make fuzz
    MCP_FUZZ_SEED=123 MCP_FUZZ_REQUESTS=10000 make fuzz-replay
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_SECONDS = 86_400


def main() -> int:
    seconds = min(float(os.environ.get("FUZZ_SECONDS") or 600), MAX_SECONDS)
    requests = int(os.environ.get("MCP_FUZZ_REQUESTS") or 10_000)
    started = time.monotonic()
    rounds = 0
    while rounds == 0 or time.monotonic() - started < seconds:
        seed = random.SystemRandom().randrange(2**32)
        rounds += 1
        print(f"fuzz round {rounds}: MCP_FUZZ_SEED={seed} MCP_FUZZ_REQUESTS={requests}", flush=True)
        env = {**os.environ, "MCP_FUZZ_SEED": str(seed), "MCP_FUZZ_REQUESTS": str(requests)}
        arguments = ["-m", "pytest", "tests/e2e/test_fuzz.py::test_fuzz_endpoint", "-q", "-p", "no:cacheprovider"]
        code = subprocess.run([sys.executable, *arguments], cwd=ROOT, env=env, check=False).returncode
        if code != 0:
            print(
                f"\nfuzz: seed {seed} failed (pytest exit {code}). Replay exactly the same requests with:\n"
                f"  MCP_FUZZ_SEED={seed} MCP_FUZZ_REQUESTS={requests} make fuzz-replay\n"
                f"or\n  MCP_FUZZ_SEED={seed} MCP_FUZZ_REQUESTS={requests} python {' '.join(arguments)} -s\n"
                "Then make it a regression test (README, Testing: tests/integration/test_hardening.py).",
                flush=True,
            )
            return 1
    print(f"fuzz: {rounds} seed(s), no failure, in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
