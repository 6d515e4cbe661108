"""Fault injection against a local OpenAI-compatible server: 500s, 429 with Retry-After, hangs,
dropped connections and malformed bodies. The scan completes, every attempt ends with outputs or
a recorded error, errors are counted apart, and --retry-errors retries exactly those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib

from helpers.mock_openai import DROP, HANG, MockOpenAI
from redline.engine import ScanConfig, scan
from redline.report.summary import run_summary
from redline.store import RUN_COMPLETE, Store

TRANSIENT = {
    1: (500, {}, '{"error": "internal"}'),
    2: (429, {"retry-after": "0.05"}, '{"error": "rate limited"}'),
    3: HANG,
    4: DROP,
}
FOUR_PROBES = "harmful.Requests,encoding.Base64,encoding.Hex,encoding.ROT13"  # 24 + 3 × 12 attempts
PERMANENT = {
    5: (200, {}, '{"choices": [{"message": {"content": null}}], "truncated'),  # malformed JSON
    6: (503, {}, "overloaded"),  # still failing after every retry
}


def kind(prompt: str) -> int:
    return zlib.crc32(prompt.encode()) % 7


def faulty(server_ref: list, healed: list) -> callable:
    """First try of a prompt of kind 1-4 fails transiently; kinds 5-6 fail every time until
    ``healed`` holds True."""

    def faults(index: int, body: dict):
        prompt = body["messages"][-1]["content"]
        k = kind(prompt)
        if k in TRANSIENT and server_ref[0].counts[prompt] == 1:
            return TRANSIENT[k]
        if k in PERMANENT and not healed:
            return PERMANENT[k]
        return None

    return faults


def options(server: MockOpenAI) -> dict:
    return {"base_url": server.base_url, "max_retries": 2, "timeout": 0.4, "backoff_base": 0.01, "backoff_cap": 0.05}


async def test_scan_survives_every_fault_and_records_errors(tmp_path):
    ref, healed = [], []
    with MockOpenAI(faults=faulty(ref, healed), hang_seconds=1.0) as server:
        ref.append(server)
        store = Store(tmp_path / "f.db")
        run_id = await scan(
            ScanConfig(model="openai:m", probes=FOUR_PROBES, concurrency=8, generator_options=options(server)),
            store,
        )
        attempts = list(store.iter_attempts(run_id))
        prompts = [a.prompt.last_message("user").text for a in attempts]
        kinds = [kind(p) for p in prompts]
        assert {1, 2, 3, 4, 5, 6} <= set(kinds), "the probes should exercise every fault"
        assert store.get_run(run_id).status == RUN_COMPLETE
        assert len(attempts) == 24 + 36
        for attempt, k in zip(attempts, kinds):
            if k in PERMANENT:
                assert attempt.notes["error"] and not attempt.outputs
            else:
                assert "error" not in attempt.notes
                assert [o.text for o in attempt.outputs] == [attempt.prompt.last_message("user").text]
        errors = [a.notes["error"] for a, k in zip(attempts, kinds) if k in PERMANENT]
        assert any("malformed response" in e and "after 3 tries" in e for e in errors) and any(
            "HTTP 503" in e and "after 3 tries" in e for e in errors
        )
        summary = run_summary(store, run_id)
        assert sum(p["errored"] for p in summary["probes"]) == sum(1 for k in kinds if k in PERMANENT)
        # transient faults cost exactly one retry; permanent 503s and malformed 200 bodies three tries
        for prompt, k in zip(prompts, kinds):
            expected = {0: 1, 1: 2, 2: 2, 3: 2, 4: 2, 5: 3, 6: 3}[k]
            assert server.counts[prompt] == expected, (k, prompt)

        # the endpoint recovers: --retry-errors sends exactly the errored prompts again
        healed.append(True)
        before = dict(server.counts)
        await scan(None, store, resume=run_id, retry_errors=True, trust_settings=True)
        resent = {p for p in server.counts if server.counts[p] != before.get(p, 0)}
        assert resent == {p for p, k in zip(prompts, kinds) if k in PERMANENT}
        summary = run_summary(store, run_id)
        assert [(p["attempts"], p["errored"]) for p in summary["probes"]] == [(24, 0), (12, 0), (12, 0), (12, 0)]


def test_cli_reports_errored_attempts_and_retry_errors_fixes_them(tmp_path):
    ref, healed = [], []
    with MockOpenAI(faults=faulty(ref, healed), hang_seconds=1.0) as server:
        ref.append(server)
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        db = str(tmp_path / "c.db")
        common = ["--store", db, "--json"]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "redline",
                "scan",
                "--model",
                "openai:m",
                "--base-url",
                server.base_url,
                "--probes",
                "harmful.Requests",
                "--max-retries",
                "1",
                "--timeout",
                "0.4",
                "--gen-opt",
                "backoff_base=0.01",
                *common,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 5, proc.stderr  # attempts errored: measurements are missing
        first = json.loads(proc.stdout)
        (entry,) = first["probes"]
        assert first["status"] == "complete" and entry["errored"] > 0 and entry["attempts"] == 24
        healed.append(True)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "redline",
                "scan",
                "--resume",
                first["run_id"],
                "--retry-errors",
                "--trust-settings",
                *common,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        (entry,) = json.loads(proc.stdout)["probes"]
        assert entry["errored"] == 0 and entry["attempts"] == 24 and entry["outputs"] == 24
