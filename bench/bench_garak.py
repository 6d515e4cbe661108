"""Benchmark: the same work done by garak and by redline in the same run, in attempts/s.

Needs garak (``pip install 'redline[bench-garak]'``, or a separate environment named with
``--garak-python``); without it this prints one line and exits 0. CI does not run it.

The probes: by default the five encodings both tools have, so that both send the same kind of
prompt and run the same kind of detector: garak's ``encoding.InjectBase64,InjectBase32,InjectHex,
InjectROT13,InjectMorse`` (256 prompts each, garak's prompt cap: 1,280 attempts) and redline's
``encoding.Base64,Base32,Hex,ROT13,Morse`` (84 items). redline runs its items ``-r N`` times
(``N`` = garak's attempts / redline's items, rounded: about as many attempts as garak), with
``--no-cache`` so that every repetition is sent. ``--garak-probes probes.encoding
--redline-probes encoding`` compares the whole families (garak's active encoding probes: up to 256
attempts each, several thousand per setting, minutes each).

HTTP (the default): one OpenAI-compatible mock server (``bench_throughput.py``'s, on 127.0.0.1,
with ``--latency-ms`` per answer, 200 by default) serves both tools in turn:

* garak through its OpenAI-compatible generator, once per ``--parallel-attempts`` setting (its
  best is kept)::

      python -m garak --target_type openai.OpenAICompatible --target_name bench \\
          --generator_options '{"openai": {"OpenAICompatible": {"uri": URL, "api_key": "dummy"}}}' \\
          --spec probes.encoding.InjectBase64,... --generations 1 --parallel_attempts N \\
          --report_prefix garak

* redline against the same server, once per ``--concurrency`` setting (64 and 256 by default;
  its best is kept)::

      OPENAI_API_KEY=dummy redline scan -m openai:bench --base-url URL \\
          -p encoding.Base64,... -r N --no-cache -c C --store bench.db

Each is timed as a whole process (start-up included). Attempts are counted in what each stored
(garak's report: attempts with status 2; the redline store); the ``requests`` column is what the
mock answered during that run, the check that both really sent their attempts to it. The target
is redline's best setting ≥ 10× garak's best setting at 200 ms.

Local model (``--local``): garak's ``huggingface.Model`` generator on redline's converted copy of
its embedded SmolLM2 (the folder ``SmolLM2Generator().converted_copy()``, made by any earlier
``redline scan -m smollm2``; ``--hf-model`` names another folder) against redline's ``smollm2``,
on this machine's CPU, both with ``HF_HUB_OFFLINE=1`` and their default 150 new tokens (the target
is ≥ 5×). Nothing is downloaded. garak's plain ``huggingface`` (Pipeline) generator is not used:
garak 0.17 wants transformers < 5.20, and on later ones that generator fails ("'TextGeneration
Pipeline' object has no attribute 'generation_config'"). garak generates one
prompt at a time (minutes per dozen on a CPU), so ``--local`` caps both at ``--prompt-cap`` 2
prompts per probe (garak's ``soft_probe_prompt_cap`` in a run config, redline's ``--sample``).

    python bench/bench_garak.py                                   # HTTP, 200 ms
    python bench/bench_garak.py --latency-ms 0 --parallel-attempts 16,32
    python bench/bench_garak.py --local
    python bench/bench_garak.py --garak-python /tmp/garak-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import MockServer, compile_bytecode, redline_command, stored_counts

SHARED = ("Base64", "Base32", "Hex", "ROT13", "Morse")
GARAK_PROBES = ",".join(f"encoding.Inject{name}" for name in SHARED)
REDLINE_PROBES = ",".join(f"encoding.{name}" for name in SHARED)


def garak_available(python: str) -> bool:
    """Whether ``python`` can import garak (checked in a child: garak's imports are heavy)."""
    try:
        check = subprocess.run([python, "-c", "import garak"], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return check.returncode == 0


def garak_version(python: str) -> str:
    check = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('garak'))"], capture_output=True, text=True
    )
    return check.stdout.strip() or "?"


def timed(command: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict[str, Any]:
    """Run ``command``; its exit status, wall time and the tail of its output."""
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        code, output = proc.returncode, (proc.stdout + proc.stderr)[-1500:]
    except subprocess.TimeoutExpired:
        code, output = 124, f"timed out after {timeout:g} s"
    return {"exit": code, "wall_s": time.perf_counter() - started, "output": output}


def garak_attempts(report_dir: Path) -> int | None:
    """Finished attempts (status 2: answered and evaluated) in the garak report(s) under
    ``report_dir`` (garak writes each attempt twice, with status 1 and then 2)."""
    reports = list(report_dir.rglob("*.report.jsonl"))
    if not reports:
        return None
    count = 0
    for report in reports:
        with report.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("entry_type") == "attempt" and entry.get("status") == 2:
                    count += 1
    return count


def garak_spec(probes: str) -> str:
    """garak's ``--spec`` for a comma-separated probe list (``--probes`` is deprecated)."""
    names = [name.strip() for name in probes.split(",") if name.strip()]
    return ",".join(name if name.startswith("probes.") else f"probes.{name}" for name in names)


def run_garak(
    python: str, target: list[str], parallel: int | None, probes: str, cap: int | None, tmp: Path, timeout: float
) -> dict:
    home = tmp / f"garak-{parallel or 'serial'}"
    home.mkdir()
    config = []
    if cap:  # garak's prompts per probe (256 by default), set in a run config (no flag for it)
        (home / "cap.json").write_text(json.dumps({"run": {"soft_probe_prompt_cap": cap}}), encoding="utf-8")
        config = ["--config", "cap.json"]
    # garak writes its config, cache and reports under XDG folders: a fresh set per run.
    env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"))
    env.update(XDG_CONFIG_HOME=str(home / "config"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    command = [python, "-m", "garak", *config, *target, "--spec", garak_spec(probes), "--generations", "1"]
    command += ["--report_prefix", "garak"]
    if parallel:
        command += ["--parallel_attempts", str(parallel)]
    result = timed(command, env, home, timeout)
    result["attempts"] = garak_attempts(home) if result["exit"] == 0 else None
    result["setting"] = f"--parallel_attempts {parallel}" if parallel else "serial"
    result["command"] = " ".join(shlex.quote(part) for part in ["python", *command[1:]])
    return result


def redline_items(probes: str) -> int:
    """How many items redline's ``probes`` make (one attempt each per repetition)."""
    code = (
        "import sys\nfrom redline.probes import get_probe, resolve_probes\n"
        "print(sum(len(get_probe(n).probe_items) for n in resolve_probes(sys.argv[1])))"
    )
    found = subprocess.run([sys.executable, "-c", code, probes], capture_output=True, text=True, check=True)
    return int(found.stdout)


def run_redline(model: list[str], probes: str, options: list[str], tmp: Path, timeout: float) -> dict:
    store = tmp / "redline.db"
    args = ["scan", *model, "-p", probes, *options, "--store", str(store)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as a user runs it
    env.update(OPENAI_API_KEY="dummy", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    result = timed(redline_command() + args, env, tmp, timeout)
    if result["exit"] == 0:
        result["attempts"], result["errored"] = stored_counts(store)
    shown = " ".join(shlex.quote(part) for part in ["redline", *args]).replace(str(store), "bench.db")
    result["command"] = ("OPENAI_API_KEY=dummy " if model[1].startswith("openai:") else "") + shown
    return result


def rate(result: dict) -> float | None:
    attempts = result.get("attempts")
    if result["exit"] != 0 or not attempts:
        return None
    return attempts / result["wall_s"]


def speed_text(speed: float) -> str:
    return f"{speed:,.1f}" if speed >= 10 else f"{speed:.3g}"


def table(rows: list[tuple[str, dict, float | None]]) -> str:
    lines = [
        "| tool | setting | attempts | requests | wall | attempts/s | command |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for tool, result, speed in rows:
        shown = speed_text(speed) if speed else f"failed (exit {result['exit']})"
        requests = result.get("requests")
        lines.append(
            f"| {tool} | {result.get('setting', '')} | {result.get('attempts') or '–'} "
            f"| {'–' if requests is None else requests} | {result['wall_s']:.1f} s "
            f"| {shown} | `{result['command']}` |"
        )
    return "\n".join(lines)


def sample(args: argparse.Namespace) -> list[str]:
    """redline's ``--sample`` for ``--prompt-cap`` (as many items per probe as garak's prompts)."""
    return ["--sample", str(args.cap)] if args.cap else []


def repetitions(args: argparse.Namespace, rows: list[tuple[str, dict, float | None]]) -> int:
    """redline's ``-r``: ``--repetitions``, or about garak's attempts over redline's items."""
    if args.repetitions:
        return int(args.repetitions)
    if args.cap:  # garak's cap is below redline's items per probe (12 or 24): the same count
        return 1
    garak = max((result.get("attempts") or 0 for _, result, _ in rows), default=0)
    return max(1, round(garak / redline_items(args.redline_probes)))


def http_case(args: argparse.Namespace, tmp: Path) -> list[tuple[str, dict, float | None]]:
    rows: list[tuple[str, dict, float | None]] = []
    with MockServer(args.latency_ms, 0.0) as server:
        options = {"openai": {"OpenAICompatible": {"uri": server.base_url, "api_key": "dummy"}}}
        target = ["--target_type", "openai.OpenAICompatible", "--target_name", "bench"]
        target += ["--generator_options", json.dumps(options)]
        for parallel in args.parallel_attempts:
            before = server.posts()
            result = run_garak(args.garak_python, target, parallel, args.garak_probes, args.cap, tmp, args.timeout)
            result["requests"] = server.posts() - before
            rows.append(("garak", result, rate(result)))
        model = ["-m", "openai:bench", "--base-url", server.base_url]
        reps = repetitions(args, rows)
        for concurrency in args.concurrency:
            options_ = [*sample(args), "-r", str(reps), "--no-cache", "-c", str(concurrency)]
            before = server.posts()
            result = run_redline(model, args.redline_probes, options_, tmp, args.timeout)
            result["requests"] = server.posts() - before
            result["setting"] = f"-c {concurrency}, -r {reps}"
            rows.append(("redline", result, rate(result)))
    return rows


def local_model(args: argparse.Namespace) -> str:
    """garak's ``--target_name`` for ``--local``: ``--hf-model``, or redline's converted copy."""
    if args.hf_model:
        return str(args.hf_model)
    code = "from redline.generators.huggingface import SmolLM2Generator\nprint(SmolLM2Generator().converted_copy())"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return found.stdout.strip()


def local_case(args: argparse.Namespace, tmp: Path) -> list[tuple[str, dict, float | None]]:
    model = local_model(args)
    if not (Path(model) / "config.json").is_file():
        raise SystemExit(f"no model folder at {model}: run 'redline scan -m smollm2' once, or name one with --hf-model")
    # garak's plain ``huggingface`` (Pipeline) generator fails on transformers >= 5.20 (its pipeline
    # has no ``generation_config``); ``huggingface.Model`` calls the model's generate() itself.
    target = ["--target_type", "huggingface.Model", "--target_name", model]
    result = run_garak(args.garak_python, target, None, args.garak_probes, args.cap, tmp, args.timeout)
    rows = [("garak", result, rate(result))]
    reps = repetitions(args, rows)
    options = [*sample(args), "-r", str(reps), "--no-cache"]
    mine = run_redline(["-m", "smollm2"], args.redline_probes, options, tmp, args.timeout)
    mine["setting"] = f"embedded smollm2, -r {reps}"
    rows.append(("redline", mine, rate(mine)))
    return rows


def best(rows: list[tuple[str, dict, float | None]], tool: str) -> tuple[float, str] | None:
    """``tool``'s fastest run among ``rows``: its attempts/s and setting (``None`` if none finished)."""
    runs = [(speed, str(result.get("setting"))) for name, result, speed in rows if name == tool and speed]
    return max(runs) if runs else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", action="store_true", help="compare on a local model instead of HTTP")
    parser.add_argument("--garak-python", default=sys.executable, help="the interpreter garak is installed in")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="the mock server's latency (HTTP case)")
    parser.add_argument(
        "--concurrency",
        default="64,256",
        help="redline's -c settings to try, comma-separated (HTTP case; its best is compared)",
    )
    parser.add_argument(
        "--parallel-attempts",
        default="16,32,64",
        help="garak's --parallel_attempts settings to try, comma-separated (its best is compared)",
    )
    parser.add_argument("--garak-probes", default=GARAK_PROBES, help="garak's probes (default: %(default)s)")
    parser.add_argument("--redline-probes", default=REDLINE_PROBES, help="redline's probes (default: %(default)s)")
    parser.add_argument(
        "--repetitions", type=int, default=0, help="redline's -r (default: garak's attempts / redline's items)"
    )
    parser.add_argument(
        "--prompt-cap",
        type=int,
        default=0,
        help="prompts per probe: garak's soft_probe_prompt_cap and redline's --sample "
        "(default: garak's 256 over HTTP, 2 with --local)",
    )
    parser.add_argument("--hf-model", default="", help="garak's model folder for --local (default: redline's copy)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds each run may take")
    args = parser.parse_args()
    if not garak_available(args.garak_python):
        print(f"garak is not installed for {args.garak_python} (pip install 'redline[bench-garak]'): skipped")
        return
    compile_bytecode()  # redline's modules, as an installed package has them (garak's were at its install)
    args.cap = args.prompt_cap or (2 if args.local else None)
    args.parallel_attempts = [int(p) for p in str(args.parallel_attempts).split(",") if p.strip()]
    args.concurrency = [int(c) for c in str(args.concurrency).split(",") if c.strip()]
    with tempfile.TemporaryDirectory() as folder:
        rows = local_case(args, Path(folder)) if args.local else http_case(args, Path(folder))
    where = "local model" if args.local else f"HTTP at {args.latency_ms:g} ms"
    print(f"garak {garak_version(args.garak_python)}, {where}")
    cap = "garak's default cap of 256 prompts per probe"
    if args.cap:
        cap = f"{args.cap} prompts per probe: cap.json is {{'run': {{'soft_probe_prompt_cap': {args.cap}}}}}"
    print(f"garak probes: {args.garak_probes} ({cap})\nredline probes: {args.redline_probes}\n")
    print(table(rows))
    garak_best = best(rows, "garak")
    redline = best(rows, "redline")
    if garak_best and redline:
        target = 5 if args.local else 10
        print(
            f"\n{where}: redline's best {speed_text(redline[0])} att/s ({redline[1]}), garak's best "
            f"{speed_text(garak_best[0])} att/s ({garak_best[1]}): {redline[0] / garak_best[0]:.1f}x "
            f"(target >= {target}x)"
        )
    for tool, result, speed in rows:
        if not speed:
            print(f"\n{tool} ({result.get('setting')}) failed:\n{result['output']}", file=sys.stderr)


if __name__ == "__main__":
    main()
