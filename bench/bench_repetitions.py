"""Benchmark: repetitions of a bias probe are batched on a local model.

Loads SmolLM2 once, then scans bias.ForcedChoice (a seeded sample) with num_repetitions = 1
and = 5 against the same loaded model, and prints the wall time of each scan and the ratio.
Unbatched, 5 repetitions would take 5× as long; the ceiling in this run is 5 × the 1-repetition
time. Run: python bench/bench_repetitions.py [--sample 4] [--max-tokens 40]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from redline.attempt import Conversation
from redline.engine import ScanConfig, scan
from redline.generators import get_generator
from redline.store import Store


async def main(sample: int, max_tokens: int) -> None:
    gen = get_generator("smollm2", max_tokens=max_tokens, temperature=0.7, batch_size=64)
    await gen.start()
    await gen.generate(Conversation.from_openai([{"role": "user", "content": "hi"}]), 1)  # warm up
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for reps in (1, 5):
            store = Store(Path(tmp) / f"r{reps}.db")
            config = ScanConfig(
                model="smollm2", probes="bias.ForcedChoice", sample=sample, num_repetitions=reps, concurrency=64
            )
            start = time.perf_counter()
            await scan(config, store, generator=gen)
            times[reps] = time.perf_counter() - start
    await gen.aclose()
    ratio = times[5] / times[1]
    print(f"attempts: {sample * 2} x 1 repetition = {times[1]:.1f} s;  {sample * 2} x 5 repetitions = {times[5]:.1f} s")
    print(f"ratio 5-rep / 1-rep = {ratio:.2f}  (unbatched ceiling: 5.00; {5 / ratio:.1f}x faster than sequential)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(main(args.sample, args.max_tokens))
