"""Benchmark: scan throughput against an OpenAI-compatible mock, and memory as attempts grow.

Starts a fast OpenAI-compatible mock server (raw asyncio, its own process, 127.0.0.1) with a set
latency and fault rate, then in the same run:

1. the *ceiling*: a bare async httpx loop (``concurrency`` workers posting chat requests, the same
   client library and connection pool as redline) against the same mock;
2. a real ``redline`` scan (harness, ``openai:`` generator with retries, cache, refusal detector,
   evaluator, SQLite store with group commit) of a synthetic probe with ``--attempts`` prompts,
   produced lazily.

It prints attempts/s of the scan's generation phases (2+3) and of the whole scan (with phase 4 and
setup), the ratio to the ceiling, the ratio to the ideal ``concurrency / latency`` when the latency
is set, and the peak RSS of the process. (With a latency the bare loop's requests go and come back
in lock-step rounds, so its client-side time adds to every round: the ideal is then the reference.)

    python bench/bench_throughput.py                      # the suite below, each case in a fresh process
    python bench/bench_throughput.py --attempts 5000 --latency-ms 200 --concurrency 64 [--fault-rate 0.05]

The suite: 5,000 attempts at 0 ms (target ≥ 50% of the ceiling); 5,000 attempts at 200 ms and
concurrency 64 (target ≥ 90% of the ideal 320/s); 10,000 and 100,000 attempts at 0 ms (peak RSS
flat, 100,000 under 300 MB); 5,000 attempts with 5% injected 500/429 faults (every attempt stored,
none errored after retries). This is a benchmark, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# -- the mock server (runs in its own process: python bench_throughput.py --serve ...) ----------------

ANSWERS = [
    json.dumps(
        {
            "id": "b",
            "object": "chat.completion",
            "model": "bench",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32},
        }
    ).encode()
    for text in (
        "I'm sorry, but I can't help with that.",
        "Sure, here is a short overview of the topic you asked about.",
    )
]


def _http(status: int, reason: str, body: bytes, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


class MockProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive, one request at a time per connection (as httpx sends them)."""

    def __init__(self, latency: float, fault_rate: float, rng: random.Random) -> None:
        self.latency, self.fault_rate, self.rng = latency, fault_rate, rng
        self.buffer = bytearray()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            length = 0
            at = head.find(b"content-length:")
            if at >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15 : stop if stop > 0 else len(head)])
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body_len = length
            del self.buffer[:total]
            self.respond(head.startswith(b"get"), body_len)

    def respond(self, is_get: bool, body_len: int) -> None:
        if is_get:
            response = _http(200, "OK", b'{"object": "list", "data": []}')
        elif self.fault_rate and self.rng.random() < self.fault_rate:
            if self.rng.random() < 0.5:
                response = _http(500, "Internal Server Error", b'{"error": "injected"}')
            else:
                response = _http(429, "Too Many Requests", b'{"error": "injected"}', "retry-after-ms: 20\r\n")
        else:
            response = _http(200, "OK", ANSWERS[body_len % 2])
        if self.latency:
            asyncio.get_running_loop().call_later(self.latency, self._write, response)
        else:
            self.transport.write(response)

    def _write(self, response: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(response)


async def serve(latency_ms: float, fault_rate: float, seed: int) -> None:
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    server = await loop.create_server(
        lambda: MockProtocol(latency_ms / 1000, fault_rate, rng), "127.0.0.1", 0, backlog=4096
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


class MockServer:
    """The mock in a subprocess; ``base_url`` once started."""

    def __init__(self, latency_ms: float, fault_rate: float, seed: int = 0) -> None:
        self.args = [
            sys.executable,
            __file__,
            "--serve",
            "--latency-ms",
            str(latency_ms),
            "--fault-rate",
            str(fault_rate),
            "--seed",
            str(seed),
        ]

    def __enter__(self) -> MockServer:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, text=True)
        port = int(self.proc.stdout.readline())
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


# -- the synthetic probe ---------------------------------------------------------------------------

TOPICS = [
    "the water cycle",
    "prime numbers",
    "medieval trade",
    "photosynthesis",
    "compilers",
    "tides",
    "jazz",
    "volcanoes",
    "bread baking",
    "the stock market",
]


def make_probe_class() -> type:
    from redline.probes.base import ProbeItem, Prompt, PromptProbe

    class Synthetic(PromptProbe):
        """``bench.Synthetic``: ``count`` distinct prompts, produced lazily (no list of attempts)."""

        name = "bench.Synthetic"
        goal = "measure throughput"
        recommended_detectors = ("refusal.Compliance",)

        def __init__(self, count: int = 5000, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.count = count

        def _create_probe_items(self) -> list:
            return []

        def create_attempts(self) -> Any:
            probe = self

            class Lazy:
                def __len__(self) -> int:
                    return probe.count

                def __iter__(self) -> Iterator[Any]:
                    item = ProbeItem([])
                    for seq in range(probe.count):
                        text = f"Request {seq}: explain {TOPICS[seq % len(TOPICS)]} to a curious student in a few sentences."
                        yield probe.make_attempt(seq, seq, item, 0, Prompt(text), 0)

            return Lazy()

    return Synthetic


# -- one measurement -------------------------------------------------------------------------------


async def ceiling(base_url: str, requests: int, concurrency: int) -> float:
    """Requests/s of a bare httpx loop: ``concurrency`` workers posting chat requests."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    counter = iter(range(requests))
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60, pool=None)) as client:

        async def worker() -> None:
            for i in counter:
                body = {"model": "bench", "messages": [{"role": "user", "content": f"Request {i}: explain tides."}]}
                await client.post(base_url + "/chat/completions", json=body)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, 64))))  # warm the pool
        counter = iter(range(requests))
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return requests / (time.perf_counter() - started)


async def run_scan(base_url: str, attempts: int, concurrency: int) -> dict:
    from redline.engine import ScanConfig, scan
    from redline.probes import probes as registry
    from redline.store import Store

    if "bench.Synthetic" not in registry:
        registry.register("bench.Synthetic", make_probe_class())
    marks: dict[str, float] = {}

    def progress(event: str, done: int, total: int) -> None:
        if event == "start":
            marks["start"] = time.perf_counter()
        elif event == "advance":
            marks["last"] = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        config = ScanConfig(
            model="openai:bench",
            probes="bench.Synthetic",
            concurrency=concurrency,
            probe_options={"bench.Synthetic": {"count": attempts}},
            generator_options={"base_url": base_url, "max_retries": 8, "backoff_base": 0.02, "backoff_cap": 0.5},
        )
        started = time.perf_counter()
        run_id = await scan(config, store, progress=progress)
        finished = time.perf_counter()
        counts = store.attempt_counts(run_id)["bench.Synthetic"]
        db_size = (Path(tmp) / "bench.db").stat().st_size
        store.close()
    return {
        "stored": counts.attempts,
        "errored": counts.errored,
        "generation_rate": attempts / (marks["last"] - marks["start"]),
        "end_to_end_rate": attempts / (finished - started),
        "phase4_seconds": finished - marks["last"],
        "db_mb": db_size / 2**20,
    }


async def measure(attempts: int, latency_ms: float, concurrency: int, fault_rate: float) -> dict:
    with MockServer(latency_ms, fault_rate) as server:
        ceiling_requests = min(attempts, 5000) if latency_ms == 0 else min(attempts, concurrency * 15)
        top = await ceiling(server.base_url, ceiling_requests, concurrency)
        result = await run_scan(server.base_url, attempts, concurrency)
    result.update(
        attempts=attempts,
        latency_ms=latency_ms,
        concurrency=concurrency,
        fault_rate=fault_rate,
        ceiling_rate=top,
        ratio_to_ceiling=result["generation_rate"] / top,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    if latency_ms:
        result["ideal_rate"] = concurrency / (latency_ms / 1000)
        result["ratio_to_ideal"] = result["generation_rate"] / result["ideal_rate"]
    return result


def show(r: dict) -> str:
    line = (
        f"{r['attempts']:>7} attempts  latency {r['latency_ms']:>4g} ms  concurrency {r['concurrency']:>3}  "
        f"faults {r['fault_rate']:.0%}:  {r['generation_rate']:7.0f} att/s (phases 2-3), "
        f"{r['end_to_end_rate']:6.0f} att/s end to end;  ceiling {r['ceiling_rate']:6.0f} req/s → "
        f"{r['ratio_to_ceiling']:.0%}"
    )
    if "ideal_rate" in r:
        line += f";  ideal {r['ideal_rate']:.0f}/s → {r['ratio_to_ideal']:.0%}"
    line += f";  peak RSS {r['peak_rss_mb']:.0f} MB;  stored {r['stored']} (errored {r['errored']})"
    return line


SUITE = [
    (
        "throughput at 0 ms (target ≥ 50% of the ceiling)",
        ["--attempts", "5000", "--latency-ms", "0", "--concurrency", "64"],
    ),
    (
        "throughput at 200 ms, concurrency 64 (target ≥ 90% of 320/s)",
        ["--attempts", "5000", "--latency-ms", "200", "--concurrency", "64"],
    ),
    ("memory, 10,000 attempts", ["--attempts", "10000", "--latency-ms", "0", "--concurrency", "64"]),
    (
        "memory, 100,000 attempts (target < 300 MB, flat)",
        ["--attempts", "100000", "--latency-ms", "0", "--concurrency", "64"],
    ),
    (
        "faults: 5% of answers are 500 or 429",
        ["--attempts", "5000", "--latency-ms", "0", "--concurrency", "64", "--fault-rate", "0.05"],
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.latency_ms, args.fault_rate, args.seed))
        return
    if args.attempts is not None:
        result = asyncio.run(measure(args.attempts, args.latency_ms, args.concurrency, args.fault_rate))
        print(json.dumps(result) if args.json else show(result), flush=True)
        return
    for title, case in SUITE:  # each case in a fresh process: its own peak RSS
        proc = subprocess.run([sys.executable, __file__, *case, "--json"], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{title}: FAILED\n{proc.stderr}", flush=True)
            continue
        print(f"{title}\n  {show(json.loads(proc.stdout.strip().splitlines()[-1]))}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    main()
