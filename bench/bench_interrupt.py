"""Benchmark: Ctrl-C of a scan over HTTP (in worker processes from 2,000 attempts), then resume.

Against the 0 ms mock of ``bench_throughput.py``, ``redline scan`` of ``--attempts`` prompts
(default 100,000) gets SIGINT after ``--after`` seconds (default 3), ``--repeat`` times (default
2). Prints, for each: the exit status and how long the scan took to exit after the signal, the
progress line's count next to what the store holds (every attempt once), and whether
``redline scan --resume`` ran the rest with no attempt twice.

    python bench/bench_interrupt.py [--attempts 100000] [--after 3] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_throughput import MockServer, redline_command, write_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    env = dict(os.environ, OPENAI_API_KEY="dummy")
    with MockServer(0, 0) as server, tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "prompts.jsonl"
        write_dataset(data, args.attempts)
        for turn in range(args.repeat):
            db = Path(tmp) / f"run{turn}.db"
            command = redline_command() + ["scan", "-m", "openai:bench", "--base-url", server.base_url, "-c", "64"]
            command += ["--dataset", str(data), "--store", str(db)]
            proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(args.after)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate()
            took = time.monotonic() - sent
            shown = re.findall(r"stopped at ([\d,]+)/", err)
            with sqlite3.connect(db) as con:
                stored, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT seq) FROM attempts").fetchone()
                run_id, status = con.execute("SELECT run_id, status FROM runs").fetchone()
            print(
                f"SIGINT after {args.after:g} s: exit {proc.returncode} after {took:.2f} s; progress "
                f"{shown[0] if shown else '?'}, stored {stored:,} ({distinct:,} distinct); run {status}"
            )
            resumed = subprocess.run(
                redline_command() + ["scan", "--resume", run_id, "--store", str(db)],
                env=env,
                capture_output=True,
                text=True,
            )
            with sqlite3.connect(db) as con:
                stored, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT seq) FROM attempts").fetchone()
            print(
                f"  --resume: exit {resumed.returncode}; stored {stored:,} ({distinct:,} distinct) of {args.attempts:,}"
            )


if __name__ == "__main__":
    main()
