"""``redline lve verify``: agreement with recorded verdicts, disagreements, skips and errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redline.cli.lve import app
from redline.lve.verify import verify

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "lve-samples"
A_PLUS_B = "dummy/math/a_plus_b/openai--gpt-35-turbo"


@pytest.fixture
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.skip("shared/lve-samples is not next to the repository")
    return SAMPLES


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_verify_agrees_with_every_recorded_verdict_in_the_samples(samples):
    report = verify(samples)
    assert report.lves == 6
    assert report.as_dict() == {"total": 23, "agree": 23, "disagree": [], "skipped": [], "errors": []}


def test_verify_cli_json_on_the_samples(samples):
    result = cli("verify", str(samples), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"total": 23, "agree": 23, "disagree": [], "skipped": [], "errors": []}


def test_verify_cli_table_on_one_lve(samples):
    result = cli("verify", str(samples / A_PLUS_B))
    assert result.exit_code == 0
    assert "1 LVEs, 8 recorded instances" in result.stdout and "agree" in result.stdout


def _copy(samples: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(samples, repo)
    return repo


def test_a_flipped_verdict_is_reported_with_file_and_line(samples, tmp_path):
    repo = _copy(samples, tmp_path)
    path = repo / A_PLUS_B / "instances" / "two_digits.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["passed"] = not record["passed"]
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    result = cli("verify", str(repo), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["total"], data["agree"]) == (23, 22)
    assert data["disagree"] == [{"file": path.as_posix(), "line": 2, "expected": False, "got": True, "checker": "LambdaChecker"}]
    table = cli("verify", str(repo))
    assert table.exit_code == 1 and "two_digits.jsonl:2" in table.stdout


def test_broken_lves_are_reported_and_the_others_verified(samples, tmp_path):
    repo = _copy(samples, tmp_path)
    (repo / A_PLUS_B / "test.json").write_text('{"description": "x",\n "model": \n}')
    with (repo / "dummy/strings/car_plates_regex/openai--gpt-35-turbo/instances/random.jsonl").open("a") as handle:
        handle.write('{"args": {}, "response": "ZH 1"}\n')
    result = cli("verify", str(repo), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["total"] == 23 - 8 and data["agree"] == 15
    reasons = [e["reason"] for e in data["errors"]]
    assert len(reasons) == 2
    assert any("a_plus_b/openai--gpt-35-turbo/test.json:3: bad JSON" in r for r in reasons)
    assert any("random.jsonl:9: missing field 'passed'" in r for r in reasons)
    assert all("\n" not in r for r in reasons)
    text = cli("verify", str(repo))
    assert "error: " in text.stderr and "random.jsonl:9" in text.stderr


def test_a_malicious_lambda_in_a_shared_file_is_refused_and_never_runs(tmp_path, samples):
    repo = _copy(samples, tmp_path)
    marker = tmp_path / "pwned"
    test_path = repo / A_PLUS_B / "test.json"
    test = json.loads(test_path.read_text())
    test["checker_args"]["func"] = f"lambda r, a, b: __import__('os').system('touch {marker}') or True"
    test_path.write_text(json.dumps(test, indent=4))
    result = cli("verify", str(repo), "--json")
    assert result.exit_code == 1 and not marker.exists()
    data = json.loads(result.stdout)
    (error,) = data["errors"]
    assert "refused lambda in 'func': name '__import__' is forbidden" in error["reason"]
    assert error["file"] == test_path.as_posix() and isinstance(error["line"], int)
    assert data["agree"] == 15  # the other LVEs were verified


def test_a_templated_lambda_is_checked_after_substitution(tmp_path):
    lve = tmp_path / "t"
    (lve / "instances").mkdir(parents=True)
    (lve / "test.json").write_text(json.dumps({
        "description": "d", "model": "m", "prompt": "say {word}", "prompt_parameters": ["word"],
        "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, word: r == '{word}'"},
    }))
    rows = [
        {"args": {"word": "hi"}, "response": "hi", "passed": True},
        {"args": {"word": "x' or __import__('os').system('id') or '"}, "response": "?", "passed": True},
    ]
    (lve / "instances" / "i.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = verify(lve)
    assert report.agree == 1
    (error,) = report.errors
    assert error["line"] == 2 and "'__import__' is forbidden" in error["reason"]


CUSTOM = '''
from lve.checkers import BaseChecker

class EvenLengthChecker(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return len(response) % 2 == 0
'''


def test_custom_checkers_are_skipped_without_trust_code(tmp_path):
    lve = tmp_path / "dummy" / "custom" / "even"
    (lve / "checker").mkdir(parents=True)
    (lve / "instances").mkdir()
    (lve / "checker" / "checker.py").write_text(CUSTOM)
    (lve / "test.json").write_text(json.dumps({"description": "d", "model": "m", "prompt": "x", "checker_args": {"checker_name": "EvenLengthChecker"}}))
    rows = [{"args": {}, "response": "ab", "passed": True}, {"args": {}, "response": "abc", "passed": False}]
    (lve / "instances" / "i.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = cli("verify", str(tmp_path), "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0
    assert data["total"] == 2 and data["agree"] == 0 and data["errors"] == []
    assert [(s["line"], "--trust-code" in s["reason"]) for s in data["skipped"]] == [(1, True), (2, True)]
    table = cli("verify", str(tmp_path))
    assert "skipped: custom checker EvenLengthChecker" in table.stdout
    trusted = cli("verify", str(tmp_path), "--json", "--trust-code")
    assert json.loads(trusted.stdout) == {"total": 2, "agree": 2, "disagree": [], "skipped": [], "errors": []}


def test_multi_run_and_multi_variable_responses_must_fit_the_prompt(samples, tmp_path):
    repo = _copy(samples, tmp_path)
    multirun = repo / "dummy/math/a_plus_b_multirun/openai--gpt-35-turbo/instances/instances.jsonl"
    multirun.write_text('{"args": {"a": "3", "b": "1"}, "response": ["4"], "passed": true}\n')
    mono = repo / "reliability/consistency/monotonicity/openai--gpt-35-turbo/instances/instances.jsonl"
    mono.write_text('{"args": {"year1": "1", "year2": "2", "year3": "3", "year4": "4", "year5": "5"}, "response": {"answer1": "1"}, "passed": true}\n')
    report = verify(repo)
    reasons = sorted(e["reason"] for e in report.errors)
    assert "must be a list of 2 responses" in reasons[0]
    assert "no value for the variable 'answer2'" in reasons[1]


def test_verify_of_a_missing_path_is_one_line(tmp_path):
    result = cli("verify", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {tmp_path / 'nope'}: no such file or folder"
