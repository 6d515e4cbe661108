"""Benchmark: redline's continuous batcher against transformers' own, on the default scan's prompts.

In one process, on the embedded SmolLM2-135M (loaded once, every core), the prompts of the default
scan (``redline scan`` with no options: the default probes; collected by running that scan with the
``test.echo`` generator, which needs no model), chat template applied, generated three ways with
the same settings (``max_tokens``, ``temperature``, ``top_p`` of the ``smollm2`` generator unless
given) and every prompt submitted at once, as the scan's attempts arrive:

1. **redline**: :class:`redline.generators.continuous.ContinuousBatcher`, as the generator builds it.
2. **transformers CB**: transformers' continuous batching (``model.init_continuous_batching``, a
   fresh manager per round, its key/value cache sized to the generator's ``cache_mb``); one
   contender per value of ``--cb-max-requests`` (requests decoded together at most).
3. **generate()**: ``model.generate`` on the prompts sorted by length, in static batches of
   ``--batch`` rows (what ``bench/bench_local.py`` calls the ceiling).

The contenders run interleaved (one of each per round, the order rotated each round) so that other
load on the machine falls on all of them alike; the table gives each one's median and range of
generated tokens (end tokens not counted) per wall-clock second and per CPU-second of the process
over the rounds, and redline's ratio to each other contender round by round. Only generation is
timed; the setup of transformers' manager (its cache allocation) is shown apart.

    python bench/bench_batching.py                   # 3 rounds, the default scan's settings
    python bench/bench_batching.py --rounds 2 --no-generate --cb-max-requests 16,128
    python bench/bench_batching.py --store scan.db   # the prompts of the run stored in scan.db
    python bench/bench_batching.py --device cuda     # on a GPU

This is a benchmark, not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def default_scan_prompts(store: Path | None) -> list[Any]:
    """The conversations of the default scan, from a run of it with the ``test.echo`` generator
    (or of the run in ``store``, when given)."""
    from redline.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        if store is None:
            store = Path(tmp) / "prompts.db"
            command = [sys.executable, "-m", "redline", "scan", "--model", "test.echo", "--store", str(store), "--json"]
            done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            if done.returncode not in (0, 3):
                raise SystemExit(f"redline scan --model test.echo exited with {done.returncode}")
        with Store(store) as db:
            (listing,) = db.list_runs()
            return [attempt.prompt for attempt in db.iter_attempts(listing.run_id)]


@dataclass
class Timed:
    """One contender's round: tokens generated (end tokens not counted), wall and CPU seconds
    (every thread of this process), and the seconds spent setting up before the clock started."""

    tokens: int
    wall: float
    cpu: float
    setup: float = 0.0


class Clock:
    """Wall and CPU time (``time.process_time``: every thread of the process) from :meth:`start`."""

    def start(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def stop(self, tokens: int, setup: float = 0.0) -> Timed:
        return Timed(tokens, time.perf_counter() - self.wall, time.process_time() - self.cpu, setup)


def run_redline(gen: Any, prompts: list[list[int]]) -> Timed:
    """redline's batcher on ``prompts``, all submitted at once."""
    from redline.generators.continuous import BatchRequest

    batcher = gen.batcher
    batcher._prefixes.clear()  # each round starts cold, as transformers' fresh manager does
    remaining = [len(prompts)]
    tokens = [0]
    finished = threading.Event()
    lock = threading.Lock()

    def done(outputs: list[list[int]]) -> None:
        with lock:
            tokens[0] += sum(map(len, outputs))
            remaining[0] -= 1
            if remaining[0] == 0:
                finished.set()

    def failed(exc: BaseException) -> None:
        raise SystemExit(f"redline's batcher failed: {exc}")

    batcher.start()
    clock = Clock()
    clock.start()
    for ids in prompts:
        batcher.submit(BatchRequest(ids, 1, done, failed))
    finished.wait()
    timed = clock.stop(tokens[0])
    batcher.stop()
    return timed


def run_transformers_cb(gen: Any, prompts: list[list[int]], cb_options: dict[str, Any]) -> Timed:
    """transformers' continuous batching on ``prompts``, all added at once to a fresh manager."""
    from transformers import ContinuousBatchingConfig

    model = gen._model
    eos = set(gen._eos_ids(model, gen._tokenizer))
    began = time.perf_counter()
    manager = model.init_continuous_batching(
        generation_config=generation_config(gen),
        continuous_batching_config=ContinuousBatchingConfig(**cb_options),
    )
    manager.start()
    # the manager builds its cache on its first step: a one-token request, before the clock starts
    (warm,) = manager.add_requests(inputs=[[1, 2, 3]], max_new_tokens=1)
    while (result := manager.get_result(timeout=600)) is None or result.request_id != warm or not result.is_finished():
        if result is None:
            raise SystemExit("transformers' continuous batching did not start")
    setup = time.perf_counter() - began
    clock = Clock()
    clock.start()
    ids = manager.add_requests(inputs=prompts, max_new_tokens=gen.max_tokens)
    tokens, left = 0, set(ids)
    while left:
        result = manager.get_result(timeout=600)
        if result is None:
            raise SystemExit("transformers' continuous batching stopped before answering every prompt")
        if result.is_finished():
            if result.error is not None:
                raise SystemExit(f"transformers' continuous batching failed: {result.error}")
            left.discard(result.request_id)
            tokens += sum(1 for t in result.generated_tokens if t not in eos)
    timed = clock.stop(tokens, setup)
    manager.stop(block=True)
    manager.destroy()
    return timed


def run_generate(gen: Any, prompts: list[list[int]], batch: int) -> Timed:
    """``model.generate`` on ``prompts`` sorted by length, in static batches of ``batch`` rows."""
    import torch

    model, tok = gen._model, gen._tokenizer
    config = generation_config(gen)
    eos = set(gen._eos_ids(model, tok)) | {tok.pad_token_id}
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    tokens = 0
    clock = Clock()
    clock.start()
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            rows = [prompts[i] for i in order[start : start + batch]]
            width = max(map(len, rows))
            input_ids = torch.tensor([[tok.pad_token_id] * (width - len(r)) + r for r in rows], device=gen._device)
            mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=gen._device)
            out = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config)
            tokens += sum(1 for t in out[:, width:].flatten().tolist() if t not in eos)
    return clock.stop(tokens)


def generation_config(gen: Any) -> Any:
    """transformers' ``GenerationConfig`` for the generator's settings."""
    from transformers import GenerationConfig

    tok = gen._tokenizer
    sample = gen.temperature > 0
    return GenerationConfig(
        max_new_tokens=gen.max_tokens,
        do_sample=sample,
        temperature=gen.temperature if sample else None,
        top_p=gen.top_p if sample else None,
        top_k=None,
        eos_token_id=gen._eos_ids(gen._model, tok),
        pad_token_id=tok.pad_token_id,
    )


def spread(values: list[float], digits: int = 0) -> str:
    """Median (range)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the contenders (default 3)")
    parser.add_argument("--batch", type=int, default=32, help="rows per static batch of generate() (default 32)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N prompts (default: all)")
    parser.add_argument("--max-tokens", type=int, default=None, help="new tokens per output (the generator's default)")
    parser.add_argument("--temperature", type=float, default=None, help="0: greedy (default: the generator's)")
    parser.add_argument("--page-size", type=int, default=256, help="tokens per page of transformers' paged cache")
    parser.add_argument("--max-batch-tokens", type=int, default=2048, help="tokens per step of transformers' CB")
    parser.add_argument(
        "--cb-max-requests",
        default="",
        help="requests per step of transformers' CB, comma-separated: one contender each (default: batch_size)",
    )
    parser.add_argument("--store", type=Path, default=None, help="take the prompts of the run in this store")
    parser.add_argument("--no-generate", action="store_true", help="leave generate() out")
    parser.add_argument("--no-cb", action="store_true", help="leave transformers' continuous batching out")
    parser.add_argument("--device", default="cpu", help="where the model runs: cpu, cuda, cuda:N (default cpu)")
    args = parser.parse_args(argv)
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1"})
    command = shlex.join(["python", "bench/bench_batching.py", *(argv if argv is not None else sys.argv[1:])])

    import transformers

    from redline.generators import get_generator

    conversations = default_scan_prompts(args.store)
    if args.limit:
        conversations = conversations[: args.limit]
    options: dict[str, Any] = {"device": args.device}
    if args.max_tokens is not None:
        options["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        options["temperature"] = args.temperature
    gen: Any = get_generator("smollm2", **options)
    gen._load()
    if gen.batcher is None:
        raise SystemExit("the model does not support redline's continuous batcher")
    tok = gen._tokenizer
    prompts = [tok(gen._chat_text(c), add_special_tokens=False)["input_ids"] for c in conversations]
    num_blocks = gen.option_values["cache_mb"] * 2**20 // (gen.batcher.token_bytes * args.page_size)

    runners: dict[str, Callable[[], Timed]] = {"redline `ContinuousBatcher`": lambda: run_redline(gen, prompts)}
    for requests in [] if args.no_cb else [int(v) for v in args.cb_max_requests.split(",") if v] or [gen.batch_size]:
        cb_options: dict[str, Any] = {
            "page_size": args.page_size,
            "num_blocks": num_blocks,  # the generator's cache_mb, as redline's batcher gets
            "max_batch_tokens": args.max_batch_tokens,
            "max_requests_per_batch": requests,
            "seed": gen.seed,
        }
        label = f"transformers CB, {requests} requests per step"
        runners[label] = functools.partial(run_transformers_cb, gen, prompts, cb_options)
    if not args.no_generate:
        runners[f"transformers `generate()`, batches of {args.batch}"] = lambda: run_generate(gen, prompts, args.batch)
    names = list(runners)
    results: dict[str, list[Timed]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            timed = runners[name]()
            results[name].append(timed)
            print(
                f"round {round_ + 1}, {name}: {timed.tokens} tokens in {timed.wall:.1f} s (CPU {timed.cpu:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

    print(f"`{command}`  ")
    print(
        f"transformers {transformers.__version__}, torch {__import__('torch').__version__}; {os.cpu_count()} CPUs, "
        f"device {args.device}; "
        f"{len(prompts)} prompts of {min(map(len, prompts))}–{max(map(len, prompts))} tokens; "
        f"max_tokens {gen.max_tokens}, temperature {gen.temperature}, top_p {gen.top_p}; {args.rounds} rounds, "
        f"interleaved; transformers CB: page_size {args.page_size}, num_blocks {num_blocks}, "
        f"max_batch_tokens {args.max_batch_tokens}\n"
    )
    print("| | tokens/s (wall), median (range) | tokens per CPU-second, median (range) | wall, median | tokens |")
    print("|---|---|---|---|---|")
    for name in names:
        runs = results[name]
        print(
            f"| {name} | {spread([r.tokens / r.wall for r in runs], 1)} | {spread([r.tokens / r.cpu for r in runs], 1)} "
            f"| {statistics.median(r.wall for r in runs):.1f} s | {statistics.median(r.tokens for r in runs):.0f} |"
        )
    ours = names[0]
    print()
    for name in names[1:]:
        wall = [a.tokens / a.wall / (b.tokens / b.wall) for a, b in zip(results[ours], results[name])]
        cpu = [a.tokens / a.cpu / (b.tokens / b.cpu) for a, b in zip(results[ours], results[name])]
        print(f"- redline / {name}: {spread(wall, 2)}x by wall time, {spread(cpu, 2)}x by CPU time (per round)")
    setups = [r.setup for name in names for r in results[name] if r.setup]
    if setups:
        print(f"- transformers CB manager setup, not timed above: median {statistics.median(setups):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
