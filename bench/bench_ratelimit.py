"""Benchmark: ``redline scan`` against a rate-limited provider, without ``--rpm`` or ``--tpm``.

Starts an OpenAI-compatible mock provider (aiohttp, its own process, 127.0.0.1) that answers every
request after a set latency and enforces a limit with a *sliding window*: a request is admitted
when the requests (or the tokens) it admitted in the last ``--window`` seconds leave room for it,
and refused with HTTP 429 otherwise (a refused request counts for nothing). Then it runs the real
CLI, as a user would, on a JSONL dataset of ``--prompts`` prompts of varied lengths::

    OPENAI_API_KEY=dummy redline scan -m openai:bench --base-url http://127.0.0.1:PORT/v1 \
        --dataset prompts.jsonl --store bench.db

and prints, from the provider's own count: the requests it served per second (answers 200, from
the first request it received to the last it answered) against the rate it allows (the ratio),
the share of requests it answered 429, and, from the store, the attempts that ended errored.

The limit, one of:

- requests (the default): ``--rps R`` requests per second, at most ``R × window`` admitted in any
  ``window`` seconds;
- tokens (``--tpm T``): at most ``T × window / 60`` tokens admitted in any ``window`` seconds; a
  request's tokens are its prompt's (4 characters a token) plus the answer's ``completion_tokens``,
  as its ``usage`` reports them. Without ``--tpm`` the tokens mode (``--mode tokens``) picks the
  budget that allows ``--rps`` requests per second of the dataset's mean size.

Each 429 carries ``Retry-After: 1`` (``--no-retry-after``: none). With ``--headers`` every answer
carries OpenAI's ``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests`` and
``x-ratelimit-reset-requests`` (the ``-tokens`` variants in the tokens mode): the window's budget,
what is left of it now, and the time until the window is empty again (``"850ms"``, ``"1s"``).

    python bench/bench_ratelimit.py                                 # the four cases below
    python bench/bench_ratelimit.py --case requests --prompts 600   # one short case
    python bench/bench_ratelimit.py --case requests --rps 50 --no-retry-after --headers

Cases (``--case``, several allowed; all four by default): ``requests`` (429 with Retry-After),
``no-retry-after``, ``headers`` (x-ratelimit-* headers) and ``tokens`` (a tokens budget). This is a
benchmark, not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

COMPLETION_TOKENS = 16
ANSWER = "I'm sorry, but I can't help with that."


def prompt_tokens(text: str) -> int:
    """The tokens the mock provider counts for a prompt: 4 characters a token."""
    return max(1, len(text) // 4)


# -- the provider (runs in its own process: python bench_ratelimit.py --serve ...) -------------------


class Window:
    """What was admitted in the last ``seconds``: a sliding window of (time, tokens)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.admitted: deque[tuple[float, int]] = deque()
        self.tokens = 0

    def expire(self, now: float) -> None:
        while self.admitted and self.admitted[0][0] <= now - self.seconds:
            self.tokens -= self.admitted.popleft()[1]

    def admit(self, now: float, tokens: int) -> None:
        self.admitted.append((now, tokens))
        self.tokens += tokens

    def reset_in(self, now: float) -> float:
        """Seconds until the window is empty again."""
        return max(0.0, self.admitted[-1][0] + self.seconds - now) if self.admitted else 0.0


def duration(seconds: float) -> str:
    """``seconds`` as OpenAI writes its reset times: ``"850ms"``, ``"1s"``, ``"1.5s"``, ``"6m0s"``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{rest_text}" if minutes else rest_text


def serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    window = Window(args.window)
    budget = args.rps * args.window if args.mode == "requests" else args.tpm * args.window / 60
    latency = args.latency_ms / 1000
    counts = {"posts": 0, "ok": 0, "refused": 0, "tokens": 0, "first": None, "last": None}

    def limit_headers(now: float) -> dict[str, str]:
        if not args.headers:
            return {}
        kind = "requests" if args.mode == "requests" else "tokens"
        used = len(window.admitted) if kind == "requests" else window.tokens
        return {
            f"x-ratelimit-limit-{kind}": str(int(budget)),
            f"x-ratelimit-remaining-{kind}": str(max(0, int(budget - used))),
            f"x-ratelimit-reset-{kind}": duration(window.reset_in(now)),
        }

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        now = time.monotonic()
        counts["posts"] += 1
        if counts["first"] is None:
            counts["first"] = now
        window.expire(now)
        tokens = prompt_tokens(prompt) + COMPLETION_TOKENS
        room = len(window.admitted) + 1 <= budget if args.mode == "requests" else window.tokens + tokens <= budget
        if room:
            window.admit(now, tokens)
        headers = limit_headers(now)
        await asyncio.sleep(latency)
        if not room:
            counts["refused"] += 1
            if args.retry_after:
                headers["retry-after"] = "1"
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
            return web.json_response(error, status=429, headers=headers)
        counts["ok"] += 1
        counts["tokens"] += tokens
        counts["last"] = time.monotonic()
        usage = {"prompt_tokens": tokens - COMPLETION_TOKENS, "completion_tokens": COMPLETION_TOKENS}
        usage["total_tokens"] = tokens
        answer = {
            "id": "b",
            "object": "chat.completion",
            "model": "bench",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}],
            "usage": usage,
        }
        return web.json_response(answer, headers=headers)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": []})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(counts)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", completions)
        app.router.add_get("/v1/models", models)
        app.router.add_get("/__stats", stats)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
        await site.start()
        print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


class Provider:
    """The mock provider in a subprocess; ``base_url`` once started."""

    def __init__(self, args: list[str]) -> None:
        self.args = [sys.executable, __file__, "--serve", *args]

    def __enter__(self) -> Provider:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def stats(self) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/__stats", timeout=10) as answer:
            return json.loads(answer.read())

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


# -- the scan ----------------------------------------------------------------------------------------

TOPICS = ["volcanoes", "bread baking", "the stock market", "tides", "honey bees", "glaciers", "jazz", "radar"]


def write_dataset(path: Path, count: int, seed: int = 0) -> float:
    """``count`` prompts of varied lengths; returns the mean tokens a request costs the provider."""
    rng = random.Random(seed)
    total = 0
    with path.open("w", encoding="utf-8") as out:
        for seq in range(count):
            text = f"Request {seq}: explain {TOPICS[seq % len(TOPICS)]} to a curious student."
            text += " Please be thorough." * rng.randint(0, 12)
            total += prompt_tokens(text) + COMPLETION_TOKENS
            out.write(json.dumps({"prompt": text}) + "\n")
    return total / count


def redline_command() -> list[str]:
    """The ``redline`` console script of this interpreter (``python -m redline`` without one)."""
    script = Path(sys.executable).parent / "redline"
    if script.exists():
        return [str(script)]
    found = shutil.which("redline")
    return [found] if found else [sys.executable, "-m", "redline"]


def stored_counts(store: Path) -> tuple[int, int]:
    from redline.store import Store

    db = Store(store)
    try:
        runs = db.list_runs()
        counts = db.attempt_counts(runs[0].run_id)
        return sum(c.attempts for c in counts.values()), sum(c.errored for c in counts.values())
    finally:
        db.close()


CASES = {
    "requests": [],
    "no-retry-after": ["--no-retry-after"],
    "headers": ["--headers"],
    "tokens": ["--mode", "tokens"],
}


def run_case(name: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "prompts.jsonl"
        store = Path(tmp) / "bench.db"
        mean_tokens = write_dataset(dataset, args.prompts)
        extra = list(CASES[name])
        if args.no_retry_after and "--no-retry-after" not in extra:
            extra.append("--no-retry-after")
        if args.headers and "--headers" not in extra:
            extra.append("--headers")
        mode = "tokens" if "tokens" in extra else "requests"
        tpm = args.tpm or round(args.rps * mean_tokens * 60)
        server_args = ["--rps", str(args.rps), "--tpm", str(tpm), "--window", str(args.window)]
        server_args += ["--latency-ms", str(args.latency_ms), *extra]
        with Provider(server_args) as provider:
            cli = ["scan", "-m", "openai:bench", "--base-url", provider.base_url, "--dataset", str(dataset)]
            cli += ["--store", str(store), *args.scan_arg]
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["OPENAI_API_KEY"] = "dummy"
            env.setdefault("REDLINE_HEARTBEAT", "5")
            started = time.perf_counter()
            proc = subprocess.run(redline_command() + cli, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - started
            stats = provider.stats()
        attempts, errored = stored_counts(store) if proc.returncode in (0, 3) else (0, 0)
    span = (stats["last"] or 0) - (stats["first"] or 0)
    served = stats["ok"] / span if span > 0 else 0.0
    tokens_served = stats["tokens"] / span if span > 0 else 0.0
    shown = " ".join(shlex.quote(a) for a in ["redline", *cli])
    shown = re.sub(r"--base-url \S+", "--base-url http://127.0.0.1:PORT/v1", shown)
    shown = shown.replace(str(dataset), dataset.name).replace(str(store), store.name)
    progress = [line for line in proc.stderr.splitlines() if line.startswith("progress:")]
    command = ["python bench/bench_ratelimit.py --case", name, f"--prompts {args.prompts} --rps {args.rps:g}"]
    added = [flag for flag in ("--headers", "--no-retry-after") if flag in extra and flag not in CASES[name]]
    command += added + ([f"--tpm {args.tpm:g}"] if args.tpm else [])
    command += [f"--window {args.window:g}"] if args.window != 1 else []
    command += [f"--latency-ms {args.latency_ms:g}"] if args.latency_ms != 100 else []
    command += [f"--scan-arg {shlex.quote(a)}" for a in args.scan_arg]
    return {
        "case": " ".join([name, *added]),
        "exit": proc.returncode,
        "wall_s": wall,
        "served_rps": served,
        "ratio": served / args.rps if mode == "requests" else tokens_served / (tpm / 60),
        "tokens_per_s": tokens_served,
        "allowed": f"{args.rps:g} requests/s" if mode == "requests" else f"{tpm / 60:,.0f} tokens/s",
        "posts": stats["posts"],
        "refused_share": stats["refused"] / stats["posts"] if stats["posts"] else 0.0,
        "attempts": attempts,
        "errored": errored,
        "progress": progress[-3:],
        "stderr": "" if proc.returncode in (0, 3) else proc.stderr[-2000:],
        "command": " ".join(command),
        "scan": f"OPENAI_API_KEY=dummy {shown}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="a case (repeatable; default all)")
    parser.add_argument("--prompts", type=int, default=3000, help="prompts in the scan (default 3000)")
    parser.add_argument("--rps", type=float, default=100.0, help="requests per second allowed (default 100)")
    parser.add_argument("--tpm", type=float, default=None, help="tokens per minute allowed (tokens mode)")
    parser.add_argument("--window", type=float, default=1.0, help="seconds of the sliding window (default 1)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="latency of every answer (default 100)")
    parser.add_argument("--mode", choices=("requests", "tokens"), default="requests", help=argparse.SUPPRESS)
    parser.add_argument("--no-retry-after", dest="retry_after", action="store_false", help="429 without Retry-After")
    parser.add_argument("--headers", action="store_true", help="send x-ratelimit-* headers")
    parser.add_argument("--scan-arg", action="append", default=[], help="one more argument for redline scan")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return
    args.no_retry_after = not args.retry_after
    results = [run_case(name, args) for name in (args.case or list(CASES))]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| case | allowed | served | of the allowed rate | answered 429 | attempts (errored) | wall |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        served = f"{r['served_rps']:.1f} requests/s" + (
            f", {r['tokens_per_s']:,.0f} tokens/s" if "tokens" in r["allowed"] else ""
        )
        print(
            f"| {r['case']} | {r['allowed']} | {served} | {r['ratio']:.2f} | {r['refused_share']:.1%} "
            f"| {r['attempts']:,} ({r['errored']}) | {r['wall_s']:.1f} s |"
        )
    for r in results:
        print(f"\n{r['case']}: {r['command']}\n  {r['scan']}")
        for line in r["progress"]:
            print(f"  {line}")
        if r["exit"] not in (0, 3):
            print(f"  exit {r['exit']}: {r['stderr']}")


if __name__ == "__main__":
    main()
