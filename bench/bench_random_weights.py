"""Benchmark: redline's continuous batcher against ``model.generate()`` on random-weight models of
real shapes, on any device, with nothing downloaded.

A model of a named shape (``smol``: SmolLM2-135M's; ``1b``: Llama-3.2-1B's) is built from its
configuration with random weights on ``--device``; its output layer is scaled until the candidates
hold the nucleus as a trained model's do (next-token distributions peaked, not flat). The same
prompts (``--rows`` of them, a shared 24-token start like a chat template's, then 16–133 tokens)
are generated with the same settings (``--max-tokens``, temperature 0.7, ``top_p`` 0.95) by

1. **redline**: :class:`redline.generators.continuous.ContinuousBatcher`, every prompt submitted at
   once, its worker loop run on this thread;
2. **generate()**: transformers' ``model.generate`` on all the prompts in one static batch.

With ``--end-rate R`` each row ends at each step with chance ``R`` (the end token is made the
likeliest), so rows leave the batch at different steps as a trained model's do; with 0 every row
runs ``--max-tokens`` steps and the two do the same number of steps. Each round times one of
each (generation only, the device synchronised), after an untimed run of each on the same prompts
(kernels, the allocator and the shapes of a full batch warmed);
``--profile`` prints a cProfile of one more run of each. The ratio is redline's generated tokens
per second over ``generate()``'s, round by round.

    python bench/bench_random_weights.py --device cuda --end-rate 0.008
    python bench/bench_random_weights.py --device cuda --shape 1b --dtype bfloat16
    python bench/bench_random_weights.py --rows 16 --max-tokens 32       # a quick look on a CPU

What it leaves out, by design: the tokenizer, the scan around the model, and real text (answers
are random tokens). ``bench_local.py`` and ``bench_batching.py`` measure the embedded model itself.
This is a benchmark, not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import statistics
import sys
import threading
import time
from typing import Any

SHAPES: dict[str, dict[str, Any]] = {
    "smol": {
        "vocab_size": 49152,
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "rope_theta": 100000.0,
    },
    "1b": {
        "vocab_size": 128256,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "rope_theta": 500000.0,
    },
}
END_TOKEN = 2
TEMPERATURE, TOP_P = 0.7, 0.95


def build(torch: Any, shape: str, device: str, dtype: Any) -> Any:
    """A random-weight Llama of ``shape`` on ``device``, in eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        **SHAPES[shape],
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=None,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config)
    return model.to(dtype).eval()


def peak(torch: Any, model: Any, rng: random.Random, candidates: int) -> float:
    """Scale the output layer until the ``candidates`` likeliest tokens hold 99% of every row's
    probability at ``TEMPERATURE``; the scale."""
    vocab, device = model.config.vocab_size, model.lm_head.weight.device
    ids = torch.tensor([[rng.randrange(3, vocab) for _ in range(40)] for _ in range(8)], device=device)
    with torch.no_grad():
        hidden = model.model(input_ids=ids).last_hidden_state[:, -1].float()
        weight = model.lm_head.weight.float()
        for scale in (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 30, 50):
            probs = (hidden @ (weight * scale).T / TEMPERATURE).softmax(-1)
            if float(probs.topk(candidates, -1).values.sum(-1).min()) > 0.99:
                model.lm_head.weight.mul_(scale)
                return float(scale)
    raise SystemExit("no scale of the output layer peaks the distributions")


def end_rows(torch: Any, model: Any, rate: float) -> None:
    """Each step, make the end token each row's likeliest with chance ``rate`` (else its least likely)."""

    def hook(_module: Any, _inputs: Any, logits: Any) -> Any:
        last = logits[:, -1]
        hit = torch.rand(last.shape[0], device=last.device) < rate
        last[:, END_TOKEN] = torch.where(hit, last.max(-1).values + 30, last.min(-1).values)
        return logits

    model.lm_head.register_forward_hook(hook)


def synchronize(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def run_redline(
    torch: Any, model: Any, prompts: list[list[int]], args: Any, profile: Any = None
) -> tuple[int, float, int]:
    """(tokens generated, seconds, forward passes) of redline's batcher on ``prompts``, all submitted at once."""
    from transformers import DynamicCache

    from redline.generators.continuous import BatchRequest, ContinuousBatcher

    batcher = ContinuousBatcher(
        torch,
        model,
        device=args.device,
        max_rows=max(128, len(prompts)),
        max_new_tokens=args.max_tokens,
        temperature=TEMPERATURE,
        top_p=TOP_P,
        seed=0,
        eos_ids=[END_TOKEN] if args.end_rate else [],
        cache_class=DynamicCache,
        cache_bytes=8 * 2**30,
        prefill_tokens=args.prefill_tokens,
    )
    finished = threading.Event()
    counts = {"left": len(prompts), "tokens": 0}
    failures: list[BaseException] = []

    def done(outputs: list[list[int]]) -> None:
        counts["tokens"] += sum(map(len, outputs))
        counts["left"] -= 1
        if not counts["left"]:
            finished.set()

    def failed(exc: BaseException) -> None:
        failures.append(exc)
        finished.set()

    for ids in prompts:
        batcher.submit(BatchRequest(ids, 1, done, failed))
    synchronize(torch, args.device)
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    batcher._run(finished)  # the worker's loop, on this thread, until every prompt is answered
    if profile is not None:
        profile.disable()
    synchronize(torch, args.device)
    if failures:
        raise SystemExit(f"redline's batcher failed: {failures[0]}")
    return counts["tokens"], time.perf_counter() - started, batcher.stats["forward"]


def run_generate(torch: Any, model: Any, prompts: list[list[int]], args: Any, profile: Any = None) -> tuple[int, float]:
    """(tokens generated, seconds) of ``model.generate`` on ``prompts`` in one static batch."""
    from transformers import GenerationConfig

    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts], device=args.device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=args.device)
    config = GenerationConfig(
        max_new_tokens=args.max_tokens,
        do_sample=True,
        temperature=TEMPERATURE,
        top_p=TOP_P,
        top_k=None,
        eos_token_id=END_TOKEN if args.end_rate else None,
        pad_token_id=0,
    )
    synchronize(torch, args.device)
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
    if profile is not None:
        profile.disable()
    synchronize(torch, args.device)
    wall = time.perf_counter() - started
    return sum(1 for t in out[:, width:].flatten().tolist() if t not in (0, END_TOKEN)), wall


def show(profile: Any, title: str) -> None:
    """The profile's 25 costliest functions by own time."""
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    print(f"\n{title}\n```\n{text.getvalue().strip()}\n```")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="smol", help="the model's shape (default smol)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N (default cpu)")
    parser.add_argument("--dtype", default="float32", help="float32, bfloat16 or float16 (default float32)")
    parser.add_argument("--rows", type=int, default=76, help="prompts, all submitted at once (default 76)")
    parser.add_argument("--max-tokens", type=int, default=150, help="new tokens per row at most (default 150)")
    parser.add_argument("--end-rate", type=float, default=0.0, help="chance a row ends at each step (default 0)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the two (default 3)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one more run of each")
    parser.add_argument(
        "--prefill-tokens",
        type=int,
        help="redline's bound on prompt tokens in one prefill pass (default: its own for the device)",
    )
    args = parser.parse_args(argv)

    import torch
    import transformers

    from redline.generators.continuous import NUCLEUS_CANDIDATES, default_prefill_tokens

    rng = random.Random(0)
    model = build(torch, args.shape, args.device, getattr(torch, args.dtype))
    scale = peak(torch, model, rng, NUCLEUS_CANDIDATES)
    if args.end_rate:
        end_rows(torch, model, args.end_rate)
    vocab = model.config.vocab_size
    start = [rng.randrange(3, vocab) for _ in range(24)]
    prompts = [start + [rng.randrange(3, vocab) for _ in range(rng.randrange(16, 134))] for _ in range(args.rows)]
    bound = args.prefill_tokens or default_prefill_tokens(args.device)
    run_redline(torch, model, prompts, args)  # warm-up: kernels, allocator, a full batch's shapes
    run_generate(torch, model, prompts, args)
    print(
        f"`python bench/bench_random_weights.py {' '.join(argv if argv is not None else sys.argv[1:])}`  \n"
        f"torch {torch.__version__}, transformers {transformers.__version__}, device {args.device}, "
        f"{args.shape} shape in {args.dtype} (output layer x{scale:g}), {args.rows} prompts, "
        f"max_tokens {args.max_tokens}, end rate {args.end_rate}, prefill bound {bound} tokens\n"
    )
    print("| round | redline tokens/s (forward passes) | generate() tokens/s | ratio |\n|---|---:|---:|---:|")
    ratios = []
    for round_ in range(args.rounds):
        ours, ours_s, passes = run_redline(torch, model, prompts, args)
        theirs, theirs_s = run_generate(torch, model, prompts, args)
        ratios.append(ours / ours_s / (theirs / theirs_s))
        print(
            f"| {round_ + 1} | {ours / ours_s:.0f} ({passes}) | {theirs / theirs_s:.0f} | {ratios[-1]:.2f} |",
            flush=True,
        )
    print(f"\nredline / generate(): median {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})")
    if args.profile:
        for name, run in (("redline", run_redline), ("generate()", run_generate)):
            profile = cProfile.Profile()
            run(torch, model, prompts, args, profile)
            show(profile, f"cProfile of {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
