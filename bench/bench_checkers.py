"""Benchmark: what judging LVE checkers in worker processes costs.

``redline lve verify`` runs every untrusted checker (lambdas, regexes, custom checkers) in a
worker process, one per LVE (:mod:`redline.lve.isolation`). This measures that against the
ceiling measured in the same run: the same checkers judging the same recorded instances in the
scanning process itself, with no process boundary (what verify did before isolation).

Two repositories are generated in a temporary folder in the LVE repository format: ``--lves``
LVEs of ``--instances`` recorded instances each, and a tenth as many LVEs with ten times the
instances, cycling through the lambda, number, regex, exact
match and multi-run lambda checkers. ``--repo PATH`` adds a real repository (such as
``../shared/lve-samples``) as a second row.

    python bench/bench_checkers.py [--lves 200] [--instances 10] [--workers N] [--repo PATH] [--json FILE]

Prints one Markdown table: instances, seconds in process (ceiling), seconds isolated, the
ratio ceiling/isolated (1.0 = no cost), workers started and the cost per LVE in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redline.lve import Instance, find_lves, load_lve
from redline.lve.isolation import CheckerLimits, CheckerPool
from redline.lve.verify import recorded_chats, verify

CHECKERS: list[tuple[dict[str, Any], str]] = [
    ({"checker_name": "LambdaChecker", "func": "lambda r, a, b: int(r) == int(a) + int(b)"}, "single"),
    ({"checker_name": "NumberChecker", "expected_value_func": "lambda a, b: int(a) + int(b)"}, "single"),
    ({"checker_name": "RegexChecker", "pattern": "^[0-9]+$", "match_safe": True}, "single"),
    ({"checker_name": "ExactMatchChecker", "pattern": "{a}{b}"}, "single"),
    (
        {
            "checker_name": "MultiRunLambdaChecker",
            "func": "lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)",
        },
        "multi",
    ),
]


def build_repository(root: Path, lves: int, instances: int) -> None:
    """``lves`` LVEs under ``root`` in the LVE repository format."""
    for number in range(lves):
        checker, kind = CHECKERS[number % len(CHECKERS)]
        folder = root / "bench" / f"lve_{number:04d}" / "model"
        (folder / "instances").mkdir(parents=True)
        test: dict[str, Any] = {
            "description": "benchmark LVE",
            "model": "model",
            "prompt_parameters": ["a", "b"],
            "checker_args": checker,
        }
        prompt = [{"role": "user", "content": "What is {a} plus {b}?"}]
        if kind == "multi":
            test["multi_run_prompt"] = [{"name": "ask", "prompt": prompt, "repetitions": 2}]
        else:
            test["prompt"] = prompt
        (folder / "test.json").write_text(json.dumps(test), encoding="utf-8")
        lines = []
        for index in range(instances):
            a, b = index, number % 7
            answer = str(a + b) if index % 3 else str(a + b + 1)
            response: Any = [answer, answer] if kind == "multi" else answer
            lines.append(json.dumps({"args": {"a": a, "b": b}, "response": response, "passed": True}))
        (folder / "instances" / "bench.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def in_process(root: Path) -> int:
    """Judge every instance in this process (the ceiling); returns the instances judged."""
    judged = 0
    for test_path in find_lves(root):
        lve = load_lve(test_path, root=root)
        for item in lve.instances():
            if not isinstance(item, Instance):
                continue
            try:
                params = lve.param_values(item.args, item.where)
                checker = lve.checker(args=item.args)
                prompts_in, prompts_out = recorded_chats(lve, params, item.response, item.where)
                if lve.is_multi_run:
                    checker.invoke_check(prompts_in, prompts_out, params)
                else:
                    checker.invoke_check(prompts_in[0], prompts_out[0], params)
            except Exception:  # counted like verify counts an error: judged, not agreed
                pass
            judged += 1
    return judged


def measure(root: Path, workers: int) -> dict[str, Any]:
    """One row: the same repository judged in process and in workers."""
    started = time.perf_counter()
    judged = in_process(root)
    ceiling = time.perf_counter() - started
    with CheckerPool(CheckerLimits(workers=workers)) as pool:
        started = time.perf_counter()
        report = verify(root, pool=pool)
        isolated = time.perf_counter() - started
        spawned = pool.started
    if report.total != judged:
        raise SystemExit(f"{root}: verify judged {report.total} instances, the in-process loop {judged}")
    lves = report.lves or 1
    return {
        "repository": str(root),
        "lves": report.lves,
        "instances": report.total,
        "in_process_s": round(ceiling, 3),
        "isolated_s": round(isolated, 3),
        "ratio": round(ceiling / isolated, 3) if isolated else None,
        "workers_started": spawned,
        "cost_per_lve_ms": round(1000 * (isolated - ceiling) / lves, 2),
        "agree": report.agree,
        "errors": len(report.errors),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lves", type=int, default=200)
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--workers", type=int, default=CheckerLimits.workers)
    parser.add_argument("--repo", type=Path, help="a real LVE repository to measure too")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    shapes = [(args.lves, args.instances), (max(1, args.lves // 10), args.instances * 10)]
    for lves, instances in shapes:  # many small LVEs, then fewer with more instances each
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            build_repository(root, lves, instances)
            rows.append(measure(root, args.workers) | {"repository": f"generated, {instances} instances per LVE"})
    if args.repo is not None:
        rows.append(measure(args.repo, args.workers))
    print(f"cores: {os.cpu_count()}, workers: {args.workers}\n")
    print(
        "| repository | LVEs | instances | in process (s) | isolated (s) | ratio | workers started | cost per LVE (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['repository']} | {row['lves']} | {row['instances']} | {row['in_process_s']:.3f} | "
            f"{row['isolated_s']:.3f} | {row['ratio']:.2f} | {row['workers_started']} | {row['cost_per_lve_ms']:.1f} |"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
