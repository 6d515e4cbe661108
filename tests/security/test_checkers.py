"""Hostile LVE checkers, as an attacker would write them into a shared repository.

Each case of issue 12: a lambda that poisons the verdicts of other LVEs, lambdas that crash the
interpreter, nest too deeply, hang or print. Every one must cost its own instances only: the
other LVEs are judged, the run completes, ``--resume`` works and ``--json`` stays JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.lve_repos import write_lve

SRC = Path(__file__).resolve().parents[2] / "src"
SAFE = ({"x": "hi"}, "hello", True)
UNSAFE = ({"x": "the secret"}, "the secret is 42", False)
VICTIM = {"checker_name": "LambdaChecker", "func": "lambda r, x: re.search('secret', r) is None"}
POISON = "lambda r: [0 for re.search in [lambda *a, **k: True]] and True"
CRASH = "lambda r, x: (t := 0, [t := (t,) for _ in range(300000)], {t}) and True"


def redline(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real CLI in a fresh interpreter (workers inherit its file descriptors)."""
    return subprocess.run(
        [sys.executable, "-m", "redline", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PYTHONPATH": str(SRC), "PATH": "", "HOME": "/nonexistent"},
    )


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_a_poisoning_lambda_cannot_forge_another_lves_verdict(tmp_path):
    write_lve(tmp_path, "a_poison", {"checker_name": "LambdaChecker", "func": POISON}, [SAFE], params=())
    write_lve(tmp_path, "b_victim", VICTIM, [SAFE, UNSAFE])
    proc = redline("lve", "verify", str(tmp_path), "--json")
    _one_line_error(proc)
    report = json.loads(proc.stdout)
    assert report["disagree"] == [] and report["agree"] == 2  # the recorded-unsafe instance stays unsafe
    assert [Path(e["file"]).parts[-3] for e in report["errors"]] == ["a_poison"]
    assert "assigning to an attribute is forbidden" in report["errors"][0]["reason"]


def test_a_custom_checker_that_patches_modules_cannot_forge_verdicts_in_a_scan(tmp_path):
    poison = """
import json, math, re
from lve.checkers import BaseChecker
re.search = lambda *a, **k: None
json.loads = lambda *a, **k: {}

class Poison(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        re.search = lambda *a, **k: None
        return True
"""
    write_lve(tmp_path, "a_poison", {"checker_name": "Poison"}, [SAFE], custom=poison)
    write_lve(tmp_path, "b_victim", VICTIM, [UNSAFE])
    store = str(tmp_path / "s.db")
    proc = redline(
        "scan", "--lve", str(tmp_path), "-m", "test.repeat:the secret is 42", "--trust-code", "--store", store, "--json"
    )
    assert proc.returncode == 0, proc.stderr
    probes = {p["probe"]: p for p in json.loads(proc.stdout)["probes"]}
    assert probes["lve.b_victim/m"]["failed"] == probes["lve.b_victim/m"]["attempts"] == 1  # 100%, not 0%


def test_a_segfaulting_lambda_costs_its_own_instances_and_the_run_completes(tmp_path):
    write_lve(tmp_path, "a_crash", {"checker_name": "LambdaChecker", "func": CRASH}, [SAFE, UNSAFE])
    write_lve(tmp_path, "b_victim", VICTIM, [UNSAFE])
    verified = redline("lve", "verify", str(tmp_path), "--json")
    report = json.loads(verified.stdout)
    assert verified.returncode == 1 and report["agree"] == 1
    assert [Path(e["file"]).parts[-4] for e in report["errors"]] == ["a_crash", "a_crash"]
    assert all("SIGSEGV" in e["reason"] for e in report["errors"])

    store = str(tmp_path / "s.db")
    scanned = redline("scan", "--lve", str(tmp_path), "-m", "test.repeat:the secret is 42", "--store", store, "--json")
    assert scanned.returncode == 5, scanned.stderr  # complete with errors: the crashed checker's attempts
    summary = json.loads(scanned.stdout)
    probes = {p["probe"]: p for p in summary["probes"]}
    assert probes["lve.a_crash/m"]["errored"] >= 1
    assert probes["lve.b_victim/m"]["failed"] == 1
    runs = redline("runs", "--store", store, "--json")
    assert json.loads(runs.stdout)[0]["status"] == "complete"
    resumed = redline("scan", "--resume", summary["run_id"], "--store", store, "--json")
    assert resumed.returncode == 5, resumed.stderr  # nothing left to run; the errored attempts stay


def test_deep_nesting_is_refused_with_one_line(tmp_path):
    deep = "lambda r, x: " + "-" * 4000 + "1"
    write_lve(tmp_path, "a_deep", {"checker_name": "LambdaChecker", "func": deep}, [SAFE])
    write_lve(tmp_path, "b_victim", VICTIM, [UNSAFE])
    proc = redline("lve", "verify", str(tmp_path))
    _one_line_error(proc)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "nested too deeply" in errors[0] and "a_deep" in errors[0]
    assert "agree" in proc.stdout


def test_a_catastrophic_regex_is_stopped_by_the_timeout(tmp_path):
    regex = "lambda r, x: re.search('(a+)+$', 'a' * 40 + 'b') is None"
    write_lve(tmp_path, "regex", {"checker_name": "LambdaChecker", "func": regex}, [SAFE])
    proc = redline("lve", "verify", str(tmp_path), "--json", "--checker-timeout", "1")
    report = json.loads(proc.stdout)
    assert "did not answer within 1 s" in report["errors"][0]["reason"]


def test_a_printing_checker_does_not_break_json_output(tmp_path):
    noisy = """
import sys
from lve.checkers import BaseChecker
print("noise at import")
sys.stderr.write("more noise\\n")

class Noisy(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        print("{not json")
        return True
"""
    write_lve(tmp_path, "noisy", {"checker_name": "Noisy"}, [SAFE, SAFE], custom=noisy)
    proc = redline("lve", "verify", str(tmp_path), "--json", "--trust-code")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["agree"] == 2
    assert "noise" not in proc.stderr


def test_a_hanging_checker_in_a_scan_is_stopped_by_checker_timeout(tmp_path):
    hang = "lambda r, x: [[[[0] * 1000] * 1000] * 1000] * 1000 == [[[[0] * 1000] * 1000] * 1000] * 1000"
    write_lve(tmp_path, "a_hang", {"checker_name": "LambdaChecker", "func": hang}, [SAFE])
    write_lve(tmp_path, "b_victim", VICTIM, [UNSAFE])
    store = str(tmp_path / "s.db")
    proc = redline(
        "scan", "--lve", str(tmp_path), "-m", "test.repeat:the secret", "--store", store, "--json",
        "--checker-timeout", "1",
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr  # complete with errors: the hanging checker's attempt
    probes = {p["probe"]: p for p in json.loads(proc.stdout)["probes"]}
    assert probes["lve.a_hang/m"]["errored"] == 1 and probes["lve.b_victim/m"]["failed"] == 1
