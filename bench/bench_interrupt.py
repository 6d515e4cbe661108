"""Benchmark: Ctrl-C of a scan, then resume: over HTTP, or of the embedded model (``--local``).

Against the 0 ms mock of ``bench_throughput.py``, ``redline scan`` of ``--attempts`` prompts
(default 100,000) gets SIGINT after ``--after`` seconds (default 3), ``--repeat`` times (default
2). With ``--local``, the default scan (``redline scan``: SmolLM2, 76 attempts) gets SIGINT once
its store holds ``--after-stored`` attempts (default 10). Prints, for each: the exit status and
how long the scan took to exit after the signal, the progress line's count next to what the
store holds (every attempt once), and whether ``redline scan --resume`` ran the rest with no
attempt twice.

    python bench/bench_interrupt.py [--attempts 100000] [--after 3] [--repeat 2]
    python bench/bench_interrupt.py --local [--after-stored 10] [--repeat 2]
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
    parser.add_argument("--local", action="store_true", help="the default scan of the embedded model")
    parser.add_argument("--after-stored", type=int, default=10, help="with --local: attempts stored first")
    args = parser.parse_args()
    env = dict(os.environ, OPENAI_API_KEY="dummy")
    with MockServer(0, 0) as server, tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "prompts.jsonl"
        write_dataset(data, args.attempts)
        for turn in range(args.repeat):
            db = Path(tmp) / f"run{turn}.db"
            command = redline_command() + ["scan", "--store", str(db)]
            if not args.local:
                command += ["-m", "openai:bench", "--base-url", server.base_url, "-c", "64", "--dataset", str(data)]
            proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if args.local:
                while proc.poll() is None and stored_attempts(db)[0] < args.after_stored:
                    time.sleep(0.05)
                when = f"its {args.after_stored}th stored attempt"
            else:
                time.sleep(args.after)
                when = f"{args.after:g} s"
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate()
            took = time.monotonic() - sent
            shown = re.findall(r"stopped at ([\d,]+)/", err)
            stored, distinct = stored_attempts(db)
            with sqlite3.connect(db) as con:
                run_id, status = con.execute("SELECT run_id, status FROM runs").fetchone()
            print(
                f"SIGINT after {when}: exit {proc.returncode} after {took:.2f} s; progress "
                f"{shown[0] if shown else '?'}, stored {stored:,} ({distinct:,} distinct); run {status}"
            )
            resumed = subprocess.run(
                redline_command() + ["scan", "--resume", run_id, "--store", str(db)],
                env=env,
                capture_output=True,
                text=True,
            )
            stored, distinct = stored_attempts(db)
            said = re.findall(r"of ([\d,]+) already stored", resumed.stderr)  # the run's total, as it says
            total = said[0] if args.local and said else f"{args.attempts:,}"
            print(f"  --resume: exit {resumed.returncode}; stored {stored:,} ({distinct:,} distinct) of {total}")


def stored_attempts(db: Path) -> tuple[int, int]:
    """(attempts, distinct (probe, seq)) in the store at ``db``; (0, 0) before it has any."""
    try:
        with sqlite3.connect(db, timeout=10) as con:
            found = con.execute("SELECT COUNT(*), COUNT(DISTINCT probe || ':' || seq) FROM attempts").fetchone()
    except sqlite3.Error:  # not created yet
        return 0, 0
    return int(found[0]), int(found[1])


if __name__ == "__main__":
    main()
