"""Benchmark: ``redline scan`` against an OpenAI-compatible mock, as a user runs it, next to a bare
aiohttp client on the same server in the same run; and peak memory as attempts grow.

Starts a fast OpenAI-compatible mock server (raw asyncio, its own process, 127.0.0.1) with a set
latency and fault rate, then in the same run:

1. the *ceilings*: a bare aiohttp client run as a whole process for the same requests
   (:data:`AIOHTTP_PROCESS`, at 0 ms: timed as the CLI is, the target's ceiling), and its loop
   alone inside a running process (``concurrency`` workers posting chat requests on one pooled
   session; no start-up: the stricter ceiling) on the standard event loop and on uvloop (the
   event loop redline runs a scan on); for the record of the choice of client, bare loops of httpx
   and of redline's own HTTP/1.1 client (:mod:`redline.generators.transport.wire`), printed in a
   second table;
2. the real CLI as a subprocess, on a JSONL dataset of ``--attempts`` prompts::

       OPENAI_API_KEY=dummy redline scan -m openai:bench --base-url http://127.0.0.1:PORT/v1 -c 64 \
           --dataset prompts.jsonl --store bench.db

   timed as a whole process (start-up, probes, generation, detection, store, phase 4, summary),
   with its peak RSS: of all its processes together (the scan's worker processes, sampled every
   50 ms) and of the largest one (``os.wait4`` of that child); and the peak of their proportional
   set size together (sampled every 250 ms), which counts once the pages a forked worker still
   shares with the scan's process.

A case runs in rounds (``--repeat N``: N rounds): each round times one scan and the ceilings right
next to it, before the scan in even rounds and after it in odd ones, and its ratios compare the
two (this machine's speed drifts by a third from one minute to the next, so a ceiling taken
minutes apart from the scan would measure the machine as much as redline). It prints a Markdown
table: the CLI's attempts/s over its whole process and over its scan phase (the rate its own
last progress line reports: from the first attempt to the last one stored, without start-up and
phase 4), the ceilings' requests/s (the median of the rounds') and the ratios (the median of the
rounds', the whole-process one followed by their range), the ratio to the ideal
``concurrency / latency`` when a latency is set, peak RSS and PSS, and what the store holds
(attempts, errored), with the exact command of each case; the rates, memory and store shown are
those of the scan of median wall time. redline's modules are compiled to bytecode first, as an
installed package's are. At 0 ms a third table gives the target's ratio: the CLI's whole process
against the bare aiohttp client's whole process for the same requests (:data:`AIOHTTP_PROCESS`),
both in every round.

    python bench/bench_throughput.py                      # the suite below, one table
    python bench/bench_throughput.py --attempts 3000 --latency-ms 200 --concurrency 64 [--fault-rate 0.05] [--repeat 3]

The suite: 3,000 and 30,000 prompts at 0 ms, five and three rounds (target: the scan's whole
process at ≥ 0.5 of a bare aiohttp client's, both timed as whole processes; against the client's
loop alone, the stricter ceiling, 3,000 prompts sit near 0.5: their start-up and summary are not
amortised); 5,000 prompts at 200 ms and concurrency 64 (target ≥ 0.9 of the ideal 320/s); 10,000
(three scans) and 100,000 prompts at 0 ms (peak RSS flat, 100,000 under 300 MB); 3,000 prompts
with 5% injected 500/429 answers (every attempt stored, none errored after retries). This is a
benchmark, not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import re
import shlex
import shutil
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

    def posts(self) -> int:
        """POST requests the server has answered so far."""
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/__posts", timeout=10) as answer:
            return int(json.loads(answer.read())["posts"])

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


# -- the ceilings: bare client loops -----------------------------------------------------------------


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


#: The loop of :func:`aiohttp_loop` as a script of its own, for the whole-process comparison: a
#: bare aiohttp client run as a process (the interpreter's start, aiohttp's import, its session
#: and the requests), timed like the CLI. Arguments: base URL, requests, concurrency.
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
    """Requests/s of :data:`AIOHTTP_PROCESS` over its whole process (the target's ceiling for the
    CLI's whole-process rate; the loop's own rate is the stricter one)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", AIOHTTP_PROCESS, base_url, str(requests), str(concurrency)],
        check=True,
        capture_output=True,
    )
    return requests / (time.perf_counter() - started)


async def httpx_loop(base_url: str, requests: int, concurrency: int) -> float:
    """Requests/s of a bare httpx loop (the client redline used before aiohttp), same shape."""
    import httpx

    url = base_url + "/chat/completions"
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"content-type": "application/json", "authorization": "Bearer dummy"}
    async with httpx.AsyncClient(limits=limits, headers=headers, timeout=httpx.Timeout(60, pool=None)) as client:

        async def run(count: int) -> float:
            counter = iter(range(count))

            async def worker() -> None:
                for i in counter:
                    (await client.post(url, content=_body(i))).json()

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return count / (time.perf_counter() - started)

        await run(min(requests, concurrency * 4))
        return await run(requests)


async def wire_loop(base_url: str, requests: int, concurrency: int) -> float:
    """Requests/s of a bare loop over redline's own HTTP/1.1 client, same shape."""
    from redline.generators.transport.wire import WireClient

    url = base_url + "/chat/completions"
    headers = {"content-type": "application/json", "authorization": "Bearer dummy"}
    client = WireClient(concurrency, headers=headers)
    try:

        async def run(count: int) -> float:
            counter = iter(range(count))

            async def worker() -> None:
                for i in counter:
                    json.loads((await client.request("POST", url, _body(i), None, 60.0)).body)

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return count / (time.perf_counter() - started)

        await run(min(requests, concurrency * 4))
        return await run(requests)
    finally:
        await client.aclose()


def _run_on(loop: str, coroutine: Any) -> Any:
    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coroutine)
    return asyncio.run(coroutine)


def uvloop_installed() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


#: The bare client loops of the second table (the choice of client).
CLIENT_LOOPS = ("aiohttp", "aiohttp-uvloop", "httpx", "redline wire client", "redline wire client on uvloop")


def bare_loops(base_url: str, requests: int, concurrency: int, with_others: bool) -> dict[str, float]:
    """Requests/s of the bare client loops: aiohttp on the standard event loop and on uvloop
    (redline's own loop), and, when
    ``with_others``, for the record of the choice of client: httpx, and redline's own
    HTTP/1.1 client (:mod:`redline.generators.transport.wire`) on either loop."""
    rates = {"aiohttp": _run_on("asyncio", aiohttp_loop(base_url, requests, concurrency))}
    if uvloop_installed():
        rates["aiohttp-uvloop"] = _run_on("uvloop", aiohttp_loop(base_url, requests, concurrency))
    if with_others:
        rates["httpx"] = _run_on("asyncio", httpx_loop(base_url, requests, concurrency))
        rates["redline wire client"] = _run_on("asyncio", wire_loop(base_url, requests, concurrency))
        if uvloop_installed():
            rates["redline wire client on uvloop"] = _run_on("uvloop", wire_loop(base_url, requests, concurrency))
    return rates


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
    if script.exists():
        return [str(script)]
    found = shutil.which("redline")
    return [found] if found else [sys.executable, "-m", "redline"]


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


def _tree_pss(pid: int) -> int:
    """Bytes of proportional set size of process ``pid`` and its children, now: each page shared
    by N of them counted 1/N in each (a forked worker shares the pages it has not written to with
    the scan's process, which the sum of their RSS counts twice). 0 where not known (not Linux)."""
    total = 0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for each in [str(pid), *children]:
            for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return total


class TreeMemory:
    """The peak of the resident memory of a process and its children together (a scan's worker
    processes), sampled on a thread of this process: the sum of their RSS every 50 ms (:attr:`peak`),
    and of their proportional set size every 250 ms (:attr:`peak_pss`: reading it costs more)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.peak_pss = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        tick = 0
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _tree_rss(self.pid))
            tick += 1
            if tick % 5 == 0:
                self.peak_pss = max(self.peak_pss, _tree_pss(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def compile_bytecode() -> None:
    """Compile redline's modules to bytecode, as ``pip install`` does for a package (an editable
    install leaves it to the first run): otherwise the first scan measured compiles them, and with
    ``PYTHONDONTWRITEBYTECODE`` set every scan would."""
    package = Path(importlib.util.find_spec("redline").origin).parent  # type: ignore[arg-type, union-attr]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=False)


def run_cli(base_url: str, dataset: Path, store: Path, concurrency: int, fault_rate: float) -> dict:
    """Run ``redline scan`` on ``dataset``; its wall time and peak RSS: of all its processes
    together (sampled), and of the largest one (``os.wait4``)."""
    args = ["scan", "-m", "openai:bench", "--base-url", base_url, "-c", str(concurrency)]
    args += ["--dataset", str(dataset), "--store", str(store)]
    if fault_rate:  # short backoff: the mock's faults are not an overloaded server
        args += ["--max-retries", "8", "--gen-opt", "backoff_base=0.02", "--gen-opt", "backoff_cap=0.5"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as a user runs it
    env["OPENAI_API_KEY"] = "dummy"
    started = time.perf_counter()
    proc = subprocess.Popen(
        redline_command() + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    memory = TreeMemory(proc.pid)
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    tree_peak = memory.stop()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    phase = re.search(r"progress: [\d,]+/[\d,]+ attempts? \(100%\) in [\d:]+, ([\d.]+) att/s", stderr)
    shown = " ".join(shlex.quote(a) for a in ["redline", *args]).replace(str(dataset), dataset.name)
    shown = shown.replace(str(store), store.name)
    return {
        "exit": proc.returncode,
        "stderr": stderr[-2000:],
        "wall_s": wall,
        "peak_rss_mb": max(usage.ru_maxrss * 1024, tree_peak) / 2**20,
        "largest_process_rss_mb": usage.ru_maxrss / 1024,
        "peak_pss_mb": memory.peak_pss / 2**20,
        "scan_rate": float(phase.group(1)) if phase else None,
        "command": f"OPENAI_API_KEY=dummy {shown}",
    }


def stored_counts(store: Path) -> tuple[int, int]:
    from redline.store import Store

    db = Store(store)
    try:
        runs = db.list_runs()
        counts = db.attempt_counts(runs[0].run_id)
        return sum(c.attempts for c in counts.values()), sum(c.errored for c in counts.values())
    finally:
        db.close()


def ceilings(base_url: str, attempts: int, concurrency: int, latency_ms: float) -> dict[str, float]:
    """One round's ceilings: the bare aiohttp loop on either event loop (:func:`bare_loops`) and,
    at 0 ms, a bare aiohttp client's whole process for the scan's requests."""
    requests = min(attempts, 5000) if latency_ms == 0 else min(attempts, concurrency * 15)
    rates = bare_loops(base_url, requests, concurrency, with_others=False)
    if latency_ms == 0:
        rates["aiohttp, whole process"] = aiohttp_process(base_url, attempts, concurrency)
    return rates


def measure(attempts: int, latency_ms: float, concurrency: int, fault_rate: float, repeat: int = 1) -> dict:
    """One case: ``repeat`` rounds, each a scan (into a store of its own) and the ceilings
    (:func:`ceilings`) measured right next to it, before the scan in even rounds and after it in
    odd ones. Each round's ratios compare its scan with its own ceilings, so that the machine's
    speed, which drifts by a third from minute to minute here, is the same on both sides of a
    ratio; a case's ratio is the median of its rounds', with their range. The scan of median wall
    time is the case's run (its rate, memory and store)."""
    with MockServer(latency_ms, fault_rate) as server, tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "prompts.jsonl"
        write_dataset(dataset, attempts)
        result: dict[str, Any] = {
            "attempts": attempts,
            "latency_ms": latency_ms,
            "concurrency": concurrency,
            "fault_rate": fault_rate,
        }
        loops = not fault_rate  # a fault would stop the bare loops: they do not retry
        others: dict[str, float] = {}
        if loops:
            # A first aiohttp loop in a process runs a third slower than the next ones (measured:
            # 6,454 req/s, then 9,423, 9,300, 9,919): one is run and its rate left out, so that the
            # ceiling is not measured low.
            _run_on("asyncio", aiohttp_loop(server.base_url, min(attempts, 5000), concurrency))
            if latency_ms == 0:  # the other clients, once: the record of the choice of client
                others = bare_loops(server.base_url, min(attempts, 5000), concurrency, with_others=True)
        rounds: list[tuple[dict, Path, dict[str, float]]] = []
        for index in range(repeat):
            store = Path(tmp) / ("bench.db" if index == 0 else f"bench-{index}.db")
            before = loops and index % 2 == 0
            ceiling = ceilings(server.base_url, attempts, concurrency, latency_ms) if before else {}
            cli = run_cli(server.base_url, dataset, store, concurrency, fault_rate)
            if loops and not before:
                ceiling = ceilings(server.base_url, attempts, concurrency, latency_ms)
            rounds.append((cli, store, ceiling))
        cli, store, _ = sorted(rounds, key=lambda entry: entry[0]["wall_s"])[len(rounds) // 2]
        cli["command"] = rounds[0][0]["command"]
        result["walls"] = [run["wall_s"] for run, _, _ in rounds]
        result.update(cli)
        if cli["exit"] == 0:
            result["stored"], result["errored"] = stored_counts(store)
        if loops:
            result["rounds"] = [
                {"wall_s": run["wall_s"], "scan_rate": run.get("scan_rate"), **ceiling} for run, _, ceiling in rounds
            ]
            medians = {name: statistics.median(c[name] for _, _, c in rounds) for name in rounds[0][2]}
            result["loops"] = {**others, **medians}

            def per_round(rate_of: Any, ceiling: str) -> list[float]:
                return [rate_of(run) / c[ceiling] for run, _, c in rounds if rate_of(run) and ceiling in c]

            def whole(run: dict) -> float:
                return attempts / run["wall_s"]

            result["aiohttp_rate"] = medians["aiohttp"]
            result["ratios_to_aiohttp"] = per_round(whole, "aiohttp")
            result["ratio_to_aiohttp"] = statistics.median(result["ratios_to_aiohttp"])
            scans = per_round(lambda run: run.get("scan_rate"), "aiohttp")
            if scans:
                result["scan_ratio_to_aiohttp"] = statistics.median(scans)
            if "aiohttp-uvloop" in medians:
                result["aiohttp_uvloop_rate"] = medians["aiohttp-uvloop"]
                result["ratio_to_aiohttp_uvloop"] = statistics.median(per_round(whole, "aiohttp-uvloop"))
            if "aiohttp, whole process" in medians:
                result["aiohttp_process_rate"] = medians["aiohttp, whole process"]
                result["ratios_to_aiohttp_process"] = per_round(whole, "aiohttp, whole process")
                result["ratio_to_aiohttp_process"] = statistics.median(result["ratios_to_aiohttp_process"])
    result["cli_rate"] = attempts / result["wall_s"]
    if latency_ms:
        result["ideal_rate"] = concurrency / (latency_ms / 1000)
        result["ratio_to_ideal"] = result["cli_rate"] / result["ideal_rate"]
    return result


HEADER = (
    "| case | prompts | latency | c | redline scan (whole process) | ratio to aiohttp | scan phase | ratio "
    "| bare aiohttp | bare aiohttp on uvloop | ratio to it | ideal c/latency | whole process to ideal "
    "| peak RSS, all processes (largest) | peak PSS, all processes | stored (errored) |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def spread(ratios: list[float]) -> str:
    """`` (lowest–highest)`` of the rounds' ratios when there are several (after their median)."""
    return f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""


def row(title: str, r: dict) -> str:
    def rate(key: str, unit: str = "/s") -> str:
        return f"{r[key]:,.0f}{unit}" if key in r else "–"

    def ratio(key: str) -> str:
        return f"{r[key]:.2f}" if key in r else "–"

    whole = ratio("ratio_to_aiohttp") + spread(r.get("ratios_to_aiohttp", []))

    stored = f"{r['stored']:,} ({r['errored']})" if "stored" in r else f"exit {r['exit']}"
    scan = f"{r['scan_rate']:,.0f} att/s" if r.get("scan_rate") else "–"
    pss = f"{r['peak_pss_mb']:.0f} MB" if r.get("peak_pss_mb") else "–"
    return (
        f"| {title} | {r['attempts']:,} | {r['latency_ms']:g} ms | {r['concurrency']} | "
        f"{r['cli_rate']:,.0f} att/s ({r['wall_s']:.1f} s) | {whole} | {scan} | "
        f"{ratio('scan_ratio_to_aiohttp')} | {rate('aiohttp_rate', ' req/s')} | "
        f"{rate('aiohttp_uvloop_rate', ' req/s')} | {ratio('ratio_to_aiohttp_uvloop')} | "
        f"{rate('ideal_rate')} | {ratio('ratio_to_ideal')} | {r['peak_rss_mb']:.0f} MB ({r['largest_process_rss_mb']:.0f} MB) | "
        f"{pss} | {stored} |"
    )


SUITE = [
    (
        "0 ms (target ≥ 0.5 of a bare aiohttp client)",
        ["--attempts", "3000", "--latency-ms", "0", "--concurrency", "64", "--repeat", "5"],
    ),
    ("0 ms, 30,000 prompts", ["--attempts", "30000", "--latency-ms", "0", "--concurrency", "64", "--repeat", "3"]),
    ("200 ms (target ≥ 0.9 of 320/s)", ["--attempts", "5000", "--latency-ms", "200", "--concurrency", "64"]),
    ("memory, 10,000", ["--attempts", "10000", "--latency-ms", "0", "--concurrency", "64", "--repeat", "3"]),
    ("memory, 100,000 (target < 300 MB)", ["--attempts", "100000", "--latency-ms", "0", "--concurrency", "64"]),
    (
        "5% faults (500/429)",
        ["--attempts", "3000", "--latency-ms", "0", "--concurrency", "64", "--fault-rate", "0.05"],
    ),
]


def concurrency_of(case: list[str]) -> str:
    return dict(zip(case[::2], case[1::2]))["--concurrency"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, help="one case of this many prompts (default: the suite)")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of the case, each a scan and its ceilings (medians shown)"
    )
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
        case += ["--concurrency", str(args.concurrency), "--fault-rate", str(args.fault_rate)]
        case += ["--repeat", str(args.repeat)] if args.repeat > 1 else []
        cases = [(f"{args.attempts} prompts", case)]
    if not args.json:
        print(HEADER, flush=True)
    commands, clients, processes = [], [], []
    for title, case in cases:
        options = dict(zip(case[::2], case[1::2]))
        result = measure(
            int(options["--attempts"]),
            float(options["--latency-ms"]),
            int(options["--concurrency"]),
            float(options.get("--fault-rate", 0)),
            int(options.get("--repeat", 1)),
        )
        if result["exit"] != 0:
            print(f"{title}: redline exited {result['exit']}\n{result['stderr']}", file=sys.stderr, flush=True)
        print(json.dumps(result) if args.json else row(title, result), flush=True)
        commands.append(f"- {title}: `python bench/bench_throughput.py {' '.join(case)}` runs `{result['command']}`")
        if "aiohttp_process_rate" in result:
            processes.append(
                f"| {title} | {result['aiohttp_process_rate']:,.0f} req/s ({result['attempts'] / result['aiohttp_process_rate']:.2f} s) "
                f"| {result['cli_rate']:,.0f} att/s ({result['wall_s']:.2f} s) "
                f"| {result['ratio_to_aiohttp_process']:.2f}{spread(result['ratios_to_aiohttp_process'])} |"
            )
        if len(result.get("loops", {})) > 3 and not clients:
            clients = [
                f"| {name} | {rate:,.0f} req/s |" for name, rate in result["loops"].items() if name in CLIENT_LOOPS
            ]
            clients.insert(
                0, f"Bare client loops ({title}, {concurrency_of(case)} workers):\n\n| client | rate |\n|---|---:|"
            )
    if not args.json:
        print("\n" + "\n".join(commands))
        if clients:
            print("\n" + "\n".join(clients))
        if processes:
            print(
                "\nWhole process against whole process (the target's ratio; the loop's, in the first table, "
                "is the stricter ceiling): a bare aiohttp client run as a process for the same requests "
                "(`AIOHTTP_PROCESS`: the interpreter's start, aiohttp's import, the loop; run in every "
                "round next to the scan, the median of the rounds' ratios and their range)\n\n"
                "| case | bare aiohttp, whole process | redline, whole process | ratio |\n|---|---:|---:|---:|"
            )
            print("\n".join(processes))


if __name__ == "__main__":
    main()
