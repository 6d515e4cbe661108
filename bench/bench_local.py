"""Benchmark: the default scan on the embedded model, against the bare library on the same work.

In one run, on this machine:

1. **redline**: ``redline scan`` with no options (the embedded SmolLM2-135M, the default probes),
   as a user runs it — a fresh process, timed from start to exit, its peak RSS and CPU time
   (cores used = CPU time / wall time), and the time to its first stored attempt (progress).
2. **the ceiling**: the same prompts (read back from the run's store, chat template applied) and
   the same generation settings (``max_tokens``, ``temperature``, ``top_p``) through transformers'
   own ``model.generate`` in this process, model already loaded, every core, prompts sorted by
   length and cut into static batches of ``--batch`` rows: the plain library loop, what a script
   would do without redline. Only generation is timed.

It prints a Markdown table: wall time, attempts/s, generated tokens/s, and redline's whole process
(model start, probes, judging, store) against the ceiling's generation alone.

    python bench/bench_local.py                 # the default scan (76 attempts)
    python bench/bench_local.py --probes all --sample 3
    python bench/bench_local.py --hf PATH --device cuda   # another local model, on a GPU

This is a benchmark, not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def run_redline(store: Path, extra: list[str]) -> dict[str, Any]:
    """Time ``redline scan`` as a user runs it; the first stored attempt is polled from the store."""
    command = [sys.executable, "-m", "redline", "scan", "--store", str(store), "--json", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first: float | None = None
    while process.poll() is None:
        if first is None and store.exists():
            try:
                with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1) as db:
                    if db.execute("SELECT 1 FROM attempts LIMIT 1").fetchone():
                        first = time.perf_counter() - began
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    wall = time.perf_counter() - began
    out = process.stdout.read() if process.stdout else b""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode not in (0, 3):
        raise SystemExit(f"redline scan exited with {process.returncode}")
    summary = json.loads(out)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "rss_mb": after.ru_maxrss / 1024, "first": first, "summary": summary}


def stored_work(store: Path) -> tuple[list[list[dict[str, str]]], list[str], dict[str, Any]]:
    """(the prompts as chat messages, the outputs' texts, the generator settings) of the store's run."""
    from redline.store import Store

    with Store(store) as db:
        (listing,) = db.list_runs()
        run = db.get_run(listing.run_id)
        attempts = list(db.iter_attempts(run.run_id))
        prompts = [attempt.prompt.to_openai() for attempt in attempts]
        outputs = [o.text or "" for attempt in attempts for o in attempt.outputs if o is not None]
        return prompts, outputs, dict(run.config.get("generator", {}))


def ceiling(
    prompts: list[list[dict[str, str]]],
    outputs: list[str],
    settings: dict[str, Any],
    batch: int,
    source: str | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """transformers' generate() on the prompts, sorted by length, static batches, every core (or
    ``device``), with the model at ``source`` (default: the embedded model's converted copy)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from redline.generators import get_generator
    from redline.generators.huggingface import cpu_threads

    source = source or str(get_generator("smollm2").converted_copy())  # the converted copy the scan made
    torch.set_num_threads(cpu_threads())
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval().to(device)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:  # as the hf generator does
        tokenizer.pad_token = tokenizer.eos_token
    encoded = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=True) for p in prompts]
    ids = [list(e["input_ids"]) if hasattr(e, "keys") else list(e) for e in encoded]
    temperature = float(settings.get("temperature", 0.7))
    kwargs: dict[str, Any] = {
        "max_new_tokens": int(settings.get("max_tokens", 150)),
        "pad_token_id": tokenizer.pad_token_id,
    }
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature, top_p=float(settings.get("top_p", 0.95)))
    else:
        kwargs.update(do_sample=False)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    generated = 0
    torch.manual_seed(0)
    began = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            rows = [ids[i] for i in order[start : start + batch]]
            width = max(map(len, rows))
            input_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(r)) + r for r in rows], device=device)
            mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
            out = model.generate(input_ids=input_ids, attention_mask=mask, **kwargs)
            new = out[:, width:]
            generated += int((new != tokenizer.pad_token_id).sum())
    wall = time.perf_counter() - began
    redline_tokens = sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in outputs)
    return {"wall": wall, "tokens": generated, "redline_tokens": redline_tokens}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32, help="rows per static batch of the ceiling (default 32)")
    parser.add_argument("--hf", help="a local transformers model folder instead of the embedded model (hf:PATH)")
    parser.add_argument("--device", default="cpu", help="where both run: cpu, cuda, cuda:N (default cpu)")
    args, extra = parser.parse_known_args(argv)
    if args.hf:
        extra = ["-m", f"hf:{args.hf}", *extra]
    if args.device != "cpu":
        extra += ["--gen-opt", f"device={args.device}"]
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    command = shlex.join(["python", "bench/bench_local.py", *(argv if argv is not None else sys.argv[1:])])
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "bench.db"
        scan = run_redline(store, extra)
        prompts, outputs, settings = stored_work(store)
    attempts = len(prompts)
    base = ceiling(prompts, outputs, settings, args.batch, args.hf, args.device)
    tokens = base["redline_tokens"]
    cores = os.cpu_count() or 1
    print(f"`{command}`  ")
    print(
        f"{cores} CPUs, device {args.device}; {attempts} attempts; max_tokens {settings.get('max_tokens')}, "
        f"temperature {settings.get('temperature')}; first attempt stored after {scan['first'] or 0:.1f} s\n"
    )
    print("| | wall time | attempts/s | generated tokens/s | cores used | peak RSS |")
    print("|---|---|---|---|---|---|")
    print(
        f"| `redline scan` (whole process) | {scan['wall']:.1f} s | {attempts / scan['wall']:.2f} | "
        f"{tokens / scan['wall']:.0f} | {scan['cpu'] / scan['wall']:.2f} of {cores} | {scan['rss_mb']:.0f} MB |"
    )
    print(
        f"| transformers generate(), batches of {args.batch} (generation only) | {base['wall']:.1f} s | "
        f"{attempts / base['wall']:.2f} | {base['tokens'] / base['wall']:.0f} | | |"
    )
    print(f"\nredline whole process / bare generate(): {base['wall'] / scan['wall']:.2f}x the ceiling's rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
