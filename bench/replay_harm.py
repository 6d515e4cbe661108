"""Benchmark: the headline harm rate of ``redline scan --dataset`` on recorded, human-labelled
answers, against the people's rate.

A local OpenAI-compatible server (aiohttp, its own process, 127.0.0.1) answers each prompt with
the recorded answers of a labelled file, each answer served once; ``redline scan`` runs as a user
runs it on the file's prompts::

    OPENAI_API_KEY=dummy redline scan -m openai:replay --base-url http://127.0.0.1:PORT/v1 \\
        --dataset prompts.jsonl [--harm-judge JUDGE] --no-cache --store replay.db --json

and the script prints the scan's headline (the harm rate of ``dataset.Prompts``, raw and corrected
for its judge's error, with the compliance rate beside it) next to the labelled rate,
and each answer's verdict against its label (accuracy, precision, recall, F1), matched by prompt
and answer text.

The labelled file is JSONL with ``prompt``, ``response`` and ``label`` (1 = the answer delivers
harm), or CSV with those columns named by ``--columns PROMPT,RESPONSE,LABEL``::

    python bench/replay_harm.py --labels ../shared/judge-dev/saferlhf_mini.csv --columns question,answer,label
    python bench/replay_harm.py --labels answers.jsonl --harm-judge llm-harm:openai:my-judge --limit 500

This is a benchmark, not a test: it reads data from outside the project and writes nothing into it.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import csv
import json
import math
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

Row = tuple[str, str, int]


def read_labels(path: Path, columns: tuple[str, str, str]) -> list[Row]:
    """The ``(prompt, response, label)`` rows of a JSONL or CSV file."""
    prompt, response, label = columns
    rows: list[Row] = []
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as handle:
            records: Any = [json.loads(line) for line in handle if line.strip()]
    else:
        csv.field_size_limit(1 << 24)
        with path.open(encoding="utf-8", newline="") as handle:
            records = list(csv.DictReader(handle))
    for record in records:
        text, answer = str(record[prompt]).strip(), str(record[response])
        if text and answer.strip():
            rows.append((text, answer, 1 if str(record[label]).strip() in ("1", "1.0", "true", "True") else 0))
    return rows


# -- the replay server (its own process: python replay_harm.py --serve ANSWERS.json) ---------------


def serve(answers_file: Path) -> None:
    """Answer each chat completion with the next recorded answer of its prompt."""
    from aiohttp import web

    queues: dict[str, collections.deque[str]] = collections.defaultdict(collections.deque)
    for prompt, response in json.loads(answers_file.read_text(encoding="utf-8")):
        queues[prompt].append(response)

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = str(body["messages"][-1]["content"]).strip()
        queue = queues.get(prompt)
        text = queue.popleft() if queue else ""
        message = {"role": "assistant", "content": text}
        return web.json_response(
            {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
        )

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "replay", "object": "model"}]})

    app = web.Application(client_max_size=1 << 24)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)

    async def main() -> None:
        runner = web.AppRunner(app)
        await runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(runner, sock).start()
        print(sock.getsockname()[1], flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


# -- the comparison ----------------------------------------------------------------------------------


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval for ``k`` of ``n``."""
    if n == 0:
        return (0.0, 1.0)
    z, p = 1.959964, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def verdicts(store: Path) -> dict[tuple[str, str], list[int]]:
    """``(prompt, answer) -> [1 if judged failed else 0, ...]`` of the scan's judged outputs."""
    found: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        for (data,) in db.execute("SELECT data FROM attempts"):
            attempt = json.loads(data)
            prompt = attempt["prompt"]["turns"][-1]["content"]["text"].strip()
            for output, judgment in zip(attempt["outputs"], attempt["notes"].get("evaluation", []), strict=False):
                if judgment in ("fail", "pass"):
                    found[(prompt, (output.get("text") or "").strip())].append(1 if judgment == "fail" else 0)
    return found


def agreement(rows: list[Row], found: dict[tuple[str, str], list[int]]) -> dict[str, float]:
    """Accuracy, precision, recall and F1 of the verdicts against the labels (matched rows only)."""
    tp = fp = tn = fn = 0
    for prompt, response, label in rows:
        judged = found.get((prompt, response.strip()))
        if not judged:
            continue
        verdict = judged.pop()
        tp += verdict and label
        fp += verdict and not label
        tn += (not verdict) and (not label)
        fn += (not verdict) and label
    n = tp + fp + tn + fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"matched": n, "accuracy": (tp + tn) / n if n else 0.0, "precision": precision, "recall": recall, "f1": f1}


def run(rows: list[Row], judge: str | None, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        answers = Path(tmp) / "answers.json"
        answers.write_text(json.dumps([[p, r] for p, r, _ in rows]), encoding="utf-8")
        dataset = Path(tmp) / "prompts.jsonl"
        with dataset.open("w", encoding="utf-8") as handle:
            for prompt, _, _ in rows:
                handle.write(json.dumps({"prompt": prompt}) + "\n")
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(answers)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            store = Path(tmp) / "replay.db"
            env = {**os.environ, "OPENAI_API_KEY": "dummy"}
            command = [sys.executable, "-m", "redline", "scan", "-m", "openai:replay"]
            command += ["--base-url", f"http://127.0.0.1:{port}/v1", "--dataset", str(dataset)]
            command += ["--harm-judge", judge] if judge else []
            command += ["--no-cache", "--store", str(store), "-c", str(concurrency), "--json"]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode not in (0, 3):
                raise SystemExit(f"redline scan failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
            summary = json.loads(done.stdout)
            found = verdicts(store)
        finally:
            server.kill()
            server.wait()
    (probe,) = summary["probes"]
    labelled = sum(label for _, _, label in rows)
    return {
        "answers": len(rows),
        "judge": probe.get("judge") or judge or "the default harm judge",
        "measure": probe.get("measure", "failure"),
        "headline": probe.get("failure_rate"),
        "compliance": (probe.get("metrics") or {}).get("compliance_rate", {}).get("value"),
        "correction_note": probe.get("correction_note"),
        "ci95": probe.get("ci95"),
        "corrected": probe.get("corrected_rate"),
        "corrected_ci95": probe.get("corrected_ci95"),
        "people": labelled / len(rows),
        "people_ci95": wilson(labelled, len(rows)),
        **agreement(rows, found),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, help="JSONL or CSV of prompt, response, label")
    parser.add_argument("--columns", default="prompt,response,label", help="PROMPT,RESPONSE,LABEL column names")
    parser.add_argument("--harm-judge", help="the harm judge of the scan (--harm-judge; default: the scan's own)")
    parser.add_argument("--limit", type=int, default=0, help="a seeded sample of this many rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.labels is None:
        parser.error("--labels is required")
    prompt, response, label = args.columns.split(",")
    rows = read_labels(args.labels, (prompt, response, label))
    if args.limit and args.limit < len(rows):
        rows = random.Random(args.seed).sample(rows, args.limit)
    result = run(rows, args.harm_judge, args.concurrency)
    if args.json:
        print(json.dumps(result))
        return
    low, high = result["ci95"] or (float("nan"), float("nan"))
    inside = low <= result["people"] <= high
    print(f"{args.labels.name}: {result['answers']} answers, judge {result['judge']} (measure: {result['measure']})")
    print(f"  headline {result['headline']:.3f} (95% CI {low:.3f}-{high:.3f}) vs people {result['people']:.3f}")
    if result["corrected"] is not None:
        c_low, c_high = result["corrected_ci95"]
        print(
            f"  corrected {result['corrected']:.3f} (95% CI {c_low:.3f}-{c_high:.3f}): "
            f"|corrected - people| = {abs(result['corrected'] - result['people']):.3f}; "
            f"people inside the interval: {c_low <= result['people'] <= c_high}"
        )
    elif result["correction_note"]:
        print(f"  not corrected: {result['correction_note']}")
    if result["compliance"] is not None:
        print(f"  compliance rate beside it: {result['compliance']:.3f}")
    print(
        f"  |headline - people| = {abs(result['headline'] - result['people']):.3f}; people inside the interval: {inside}"
    )
    print(
        f"  per answer ({result['matched']} matched): accuracy {result['accuracy']:.3f}, precision "
        f"{result['precision']:.3f}, recall {result['recall']:.3f}, F1 {result['f1']:.3f}"
    )


if __name__ == "__main__":
    main()
