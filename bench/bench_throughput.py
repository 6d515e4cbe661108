"""Benchmark: ``redline scan`` against an OpenAI-compatible mock, next to a bare aiohttp client on
the same server in the same run; and peak memory as attempts grow.

Starts an OpenAI-compatible mock server (raw asyncio, its own process, 127.0.0.1) with a set
latency (a completion's: the model list answers at once, as a real server's does) and fault rate,
then runs the real CLI as a subprocess on a JSONL dataset of ``--attempts`` prompts::

    OPENAI_API_KEY=dummy redline scan -m openai:bench --base-url http://127.0.0.1:PORT/v1 -c 64 \\
        --dataset prompts.jsonl --store bench.db

timed as a whole process (start-up, generation, detection, store, phase 4, summary), with the peak
resident memory of its process tree. Its ceilings, measured in the same round:

* a bare aiohttp client run as a whole process for the same requests (:data:`AIOHTTP_PROCESS`:
  interpreter start, aiohttp's import, one pooled session, the requests), and that client's
  request loop alone inside this process (the stricter ceiling);
* with a latency, also the ideal rate ``concurrency / latency``, which the bare client's own
  process is compared with too (how near the ideal a client can get on this server and machine).

A case runs in rounds (``--repeat N``); each round measures its scan and its ceilings next to
each other (ceilings first in even rounds, after the scan in odd ones), and a case's ratio is the
median of its rounds' ratios, with their range.

    python bench/bench_throughput.py                      # the suite
    python bench/bench_throughput.py --attempts 3000 --latency-ms 200 --concurrency 64 [--fault-rate 0.05] [--repeat 3]

The suite: 3,000 prompts at 0 ms (three rounds), 5,000 prompts at 200 ms and concurrency 64,
100,000 prompts at 0 ms (peak memory), and 3,000 prompts with 5% injected 500/429 answers (every
attempt stored, none errored after retries). This is a benchmark, not a test: the figures depend
on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
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
    """HTTP/1.1 keep-alive, one request at a time per connection (as aiohttp and httpx send them)."""

    posts = 0  # POSTs answered by this server process

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
            self.respond(head.startswith(b"get"), body_len, head.startswith(b"get /__posts"))

    def respond(self, is_get: bool, body_len: int, count: bool = False) -> None:
        if count:  # how many POSTs this server has answered (bench_garak.py counts requests so)
            response = _http(200, "OK", json.dumps({"posts": MockProtocol.posts}).encode())
        elif is_get:
            response = _http(200, "OK", b'{"object": "list", "data": []}')
        elif self.fault_rate and self.rng.random() < self.fault_rate:
            if self.rng.random() < 0.5:
                response = _http(500, "Internal Server Error", b'{"error": "injected"}')
            else:
                response = _http(429, "Too Many Requests", b'{"error": "injected"}', "retry-after-ms: 20\r\n")
        else:
            response = _http(200, "OK", ANSWERS[body_len % 2])
        if not is_get:
            MockProtocol.posts += 1
        if self.latency and not is_get:  # the latency is a completion's: a model list is at hand
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

    def posts(self) -> int:
        """POST requests the server has answered so far."""
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/__posts", timeout=10) as answer:
            return int(json.loads(answer.read())["posts"])

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


# -- the ceilings ------------------------------------------------------------------------------------


def _body(i: int) -> bytes:
    return json.dumps(
        {"model": "bench", "messages": [{"role": "user", "content": f"Request {i}: explain tides."}]}
    ).encode()


async def aiohttp_loop(base_url: str, requests: int, concurrency: int) -> float:
    """Requests/s of a bare aiohttp loop: ``concurrency`` workers on one pooled session."""
    import aiohttp

    url = base_url + "/chat/completions"
    headers = {"content-type": "application/json", "authorization": "Bearer dummy"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), headers=headers) as session:

        async def run(count: int) -> float:
            counter = iter(range(count))

            async def worker() -> None:
                for i in counter:
                    async with session.post(url, data=_body(i)) as response:
                        json.loads(await response.read())

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return count / (time.perf_counter() - started)

        await run(min(requests, concurrency * 4))  # open the pool
        return await run(requests)


#: :func:`aiohttp_loop` as a script of its own, timed as a whole process like the CLI.
#: Arguments: base URL, requests, concurrency.
AIOHTTP_PROCESS = """
import asyncio, json, sys
import aiohttp
url, requests, concurrency = sys.argv[1] + "/chat/completions", int(sys.argv[2]), int(sys.argv[3])
headers = {"content-type": "application/json", "authorization": "Bearer dummy"}
async def main():
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), headers=headers) as session:
        counter = iter(range(requests))
        async def worker():
            for i in counter:
                message = {"role": "user", "content": f"Request {i}: explain tides."}
                body = json.dumps({"model": "bench", "messages": [message]}).encode()
                async with session.post(url, data=body) as response:
                    json.loads(await response.read())
        await asyncio.gather(*(worker() for _ in range(concurrency)))
asyncio.run(main())
"""


def aiohttp_process(base_url: str, requests: int, concurrency: int) -> float:
    """Requests/s of :data:`AIOHTTP_PROCESS` over its whole process."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", AIOHTTP_PROCESS, base_url, str(requests), str(concurrency)],
        check=True,
        capture_output=True,
    )
    return requests / (time.perf_counter() - started)


def ceilings(base_url: str, attempts: int, concurrency: int) -> dict[str, float]:
    """One round's ceilings: the bare client's whole process and its loop alone."""
    return {
        "process": aiohttp_process(base_url, attempts, concurrency),
        "loop": asyncio.run(aiohttp_loop(base_url, min(attempts, 5000), concurrency)),
    }


# -- the CLI, as a user runs it ---------------------------------------------------------------------

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


def write_dataset(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for seq in range(count):
            text = f"Request {seq}: explain {TOPICS[seq % len(TOPICS)]} to a curious student in a few sentences."
            out.write(json.dumps({"prompt": text}) + "\n")


def redline_command() -> list[str]:
    """The ``redline`` console script of this interpreter (``python -m redline`` without one)."""
    script = Path(sys.executable).parent / "redline"
    return [str(script)] if script.exists() else [sys.executable, "-m", "redline"]


def _tree_rss(pid: int) -> int:
    """Bytes resident in process ``pid`` and its children, now (Linux; 0 elsewhere)."""
    total, page = 0, os.sysconf("SC_PAGE_SIZE")
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for each in [str(pid), *children]:
            total += int(Path(f"/proc/{each}/statm").read_text().split()[1]) * page
    except (OSError, ValueError, IndexError):  # gone meanwhile, or not Linux
        pass
    return total


def _stored(store: Path) -> int:
    """Attempts in ``store`` now (0 while it cannot be read)."""
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.01) as db:
            return int(db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
    except sqlite3.Error:
        return 0


class TreeMemory:
    """Sampled on a thread every 50 ms: the peak resident memory of a process and its children
    together, and when the scan's store first and last grew (seconds since ``started``)."""

    def __init__(self, pid: int, store: Path, started: float) -> None:
        self.pid, self.peak, self.store, self.started = pid, 0, store, started
        self.first_stored: float | None = None
        self.last_stored: float | None = None
        self._count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _tree_rss(self.pid))
            count = _stored(self.store)
            if count > self._count:
                self._count = count
                self.last_stored = time.perf_counter() - self.started
                self.first_stored = self.first_stored or self.last_stored

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def compile_bytecode() -> None:
    """Compile redline's modules to bytecode, as ``pip install`` does for a package."""
    package = Path(importlib.util.find_spec("redline").origin).parent  # type: ignore[arg-type, union-attr]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=False)


def run_cli(base_url: str, dataset: Path, store: Path, concurrency: int, fault_rate: float) -> dict:
    """Run ``redline scan`` on ``dataset``: its exit, wall time, peak RSS and command."""
    args = ["scan", "-m", "openai:bench", "--base-url", base_url, "-c", str(concurrency)]
    args += ["--dataset", str(dataset), "--store", str(store)]
    if fault_rate:  # short backoff: the mock's faults are not an overloaded server
        args += ["--max-retries", "8", "--gen-opt", "backoff_base=0.02", "--gen-opt", "backoff_cap=0.5"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OPENAI_API_KEY"] = "dummy"
    started = time.perf_counter()
    proc = subprocess.Popen(
        redline_command() + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    memory = TreeMemory(proc.pid, store, started)
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    tree_peak = memory.stop()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    shown = " ".join(["redline", *args]).replace(str(dataset), dataset.name).replace(str(store), store.name)
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "stderr": stderr[-2000:],
        "wall_s": wall,
        "peak_rss_mb": max(usage.ru_maxrss * 1024, tree_peak) / 2**20,
        "first_stored_s": memory.first_stored,
        "last_stored_s": memory.last_stored,
        "command": f"OPENAI_API_KEY=dummy {shown}",
    }


def stored_counts(store: Path) -> tuple[int, int]:
    """Attempts stored and errored in the store's one run."""
    from redline.store import Store

    db = Store(store)
    try:
        counts = db.attempt_counts(db.list_runs()[0].run_id)
        return sum(c.attempts for c in counts.values()), sum(c.errored for c in counts.values())
    finally:
        db.close()


def measure(attempts: int, latency_ms: float, concurrency: int, fault_rate: float, repeat: int = 1) -> dict:
    """One case: ``repeat`` rounds of a scan and, without faults, its ceilings."""
    with MockServer(latency_ms, fault_rate) as server, tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "prompts.jsonl"
        write_dataset(dataset, attempts)
        with_ceilings = not fault_rate  # the bare client does not retry faults
        if with_ceilings and not latency_ms:  # a process's first loop runs slow: warm up once, unmeasured
            asyncio.run(aiohttp_loop(server.base_url, min(attempts, 5000), concurrency))
        rounds: list[tuple[dict, Path, dict[str, float]]] = []
        for index in range(repeat):
            store = Path(tmp) / f"bench-{index}.db"
            before = with_ceilings and index % 2 == 0
            ceiling = ceilings(server.base_url, attempts, concurrency) if before else {}
            cli = run_cli(server.base_url, dataset, store, concurrency, fault_rate)
            if with_ceilings and not before:
                ceiling = ceilings(server.base_url, attempts, concurrency)
            rounds.append((cli, store, ceiling))
        return summarise(attempts, latency_ms, concurrency, rounds)


def summarise(attempts: int, latency_ms: float, concurrency: int, rounds: list) -> dict:
    """A case's result: the median scan's figures and the median of the rounds' ratios."""
    cli, store, _ = sorted(rounds, key=lambda entry: entry[0]["wall_s"])[len(rounds) // 2]
    result: dict[str, Any] = {"attempts": attempts, "latency_ms": latency_ms, "concurrency": concurrency, **cli}
    result["cli_rate"] = attempts / cli["wall_s"]
    if cli["exit"] == 0:
        result["stored"], result["errored"] = stored_counts(store)
    for name in ("process", "loop"):
        ratios = [attempts / run["wall_s"] / c[name] for run, _, c in rounds if name in c]
        if ratios:
            result[f"{name}_rate"] = statistics.median(c[name] for _, _, c in rounds)
            result[f"ratio_to_{name}"] = statistics.median(ratios)
            result[f"ratios_to_{name}"] = ratios
    if latency_ms:
        result["ideal_rate"] = concurrency / (latency_ms / 1000)
        result["ratio_to_ideal"] = result["cli_rate"] / result["ideal_rate"]
        if "process_rate" in result:
            result["process_to_ideal"] = result["process_rate"] / result["ideal_rate"]
    return result


HEADER = (
    "| case | prompts | latency | c | redline (whole process) | bare aiohttp process | ratio "
    "| bare aiohttp loop | ratio | ideal c/latency | ratio | peak RSS | stored (errored) |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def spread(ratios: list[float]) -> str:
    """`` (lowest–highest)`` of the rounds' ratios when there are several."""
    return f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""


def row(title: str, r: dict) -> str:
    """One Markdown row of the table."""

    def cell(key: str, unit: str = "/s") -> str:
        return f"{r[key]:,.0f}{unit}" if key in r else "–"

    def ratio(name: str) -> str:
        return (
            f"{r[f'ratio_to_{name}']:.2f}{spread(r.get(f'ratios_to_{name}', []))}" if f"ratio_to_{name}" in r else "–"
        )

    stored = f"{r['stored']:,} ({r['errored']})" if "stored" in r else f"exit {r['exit']}"
    return (
        f"| {title} | {r['attempts']:,} | {r['latency_ms']:g} ms | {r['concurrency']} | "
        f"{r['cli_rate']:,.0f} att/s ({r['wall_s']:.1f} s) | {cell('process_rate', ' req/s')} | {ratio('process')} | "
        f"{cell('loop_rate', ' req/s')} | {ratio('loop')} | {cell('ideal_rate')} | "
        f"{ratio('ideal') if 'ratio_to_ideal' in r else '–'} | {r['peak_rss_mb']:.0f} MB | {stored} |"
    )


SUITE = [
    ("0 ms (target ≥ 0.5 of a bare aiohttp process)", ["--attempts", "3000", "--latency-ms", "0", "--repeat", "3"]),
    ("200 ms (target ≥ 0.95 of c/latency)", ["--attempts", "5000", "--latency-ms", "200"]),
    ("memory, 100,000 (target < 300 MB)", ["--attempts", "100000", "--latency-ms", "0"]),
    ("5% faults (500/429)", ["--attempts", "3000", "--latency-ms", "0", "--fault-rate", "0.05"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, help="one case of this many prompts (default: the suite)")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the case (medians shown)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print each result as JSON")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.latency_ms, args.fault_rate, args.seed))
        return
    compile_bytecode()
    cases = SUITE
    if args.attempts is not None:
        case = ["--attempts", str(args.attempts), "--latency-ms", str(args.latency_ms)]
        case += ["--fault-rate", str(args.fault_rate), "--repeat", str(args.repeat)]
        cases = [(f"{args.attempts} prompts", case)]
    if not args.json:
        print(HEADER, flush=True)
    commands: list[str] = []
    timelines: list[str] = []
    for title, case in cases:
        options = dict(zip(case[::2], case[1::2]))
        result = measure(
            int(options["--attempts"]),
            float(options["--latency-ms"]),
            args.concurrency,
            float(options.get("--fault-rate", 0)),
            int(options.get("--repeat", 1)),
        )
        if result["exit"] != 0:
            print(f"{title}: redline exited {result['exit']}\n{result['stderr']}", file=sys.stderr, flush=True)
        print(json.dumps(result) if args.json else row(title, result), flush=True)
        if result.get("first_stored_s") is not None and result.get("last_stored_s") is not None:
            between = result["last_stored_s"] - result["first_stored_s"]
            timeline = f"first attempt stored at {result['first_stored_s']:.2f} s, last at {result['last_stored_s']:.2f} s, exit at {result['wall_s']:.2f} s"
            if between > 0:
                timeline += f" ({(result['attempts'] - 1) / between:,.0f} att/s in between)"
            if "process_to_ideal" in result:
                timeline += f"; the bare aiohttp process ran at {result['process_to_ideal']:.2f} of the ideal"
            timelines.append(f"- {title}: {timeline}")
        commands.append(f"- {title}: `python bench/bench_throughput.py {' '.join(case)}` runs `{result['command']}`")
    if not args.json:
        print("\n" + "\n".join(commands))
        print("\nTimeline of the median scan (its store polled every 50 ms):\n" + "\n".join(timelines))


if __name__ == "__main__":
    main()
