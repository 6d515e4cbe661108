"""``redline lve verify``: agreement with recorded verdicts, disagreements, skips and errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers.lve_repos import over_repos
from redline.cli.lve import app
from redline.lve.verify import verify

A_PLUS_B = "dummy/math/a_plus_b/openai--gpt-35-turbo"
CAR_PLATES = "dummy/strings/car_plates_regex/openai--gpt-35-turbo"
# our fixture (tests/data/lves)
MULTIPLY = "dummy/arithmetic/multiply/hf--smollm2-135m-instruct"
API_KEY = "security/secrets/live_api_key/openai--gpt-4o-mini"
WORD_BUDGET = "reliability/format/word_budget/hf--smollm2-135m-instruct"
CUSTOM_SKIPPED = [(f"{WORD_BUDGET}/instances/instances.jsonl", 1), (f"{WORD_BUDGET}/instances/instances.jsonl", 2)]

# root, number of LVEs, the report without "skipped", the skipped (file below root, line)
WHOLE_REPOSITORY = over_repos(
    (8, {"total": 35, "agree": 33, "disagree": [], "errors": []}, CUSTOM_SKIPPED),
    (6, {"total": 23, "agree": 23, "disagree": [], "errors": []}, []),
)


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def _skipped(root: Path, skipped: list[dict]) -> list[tuple[str, int]]:
    assert all("runs only with --trust-code" in s["reason"] for s in skipped)
    return [(Path(s["file"]).relative_to(root).as_posix(), s["line"]) for s in skipped]


@pytest.mark.parametrize(("root", "lves", "expected", "skipped"), WHOLE_REPOSITORY)
def test_verify_agrees_with_every_recorded_verdict(root, lves, expected, skipped):
    report = verify(root)
    assert report.lves == lves
    data = report.as_dict()
    assert _skipped(root, data.pop("skipped")) == skipped
    assert data == expected


@pytest.mark.parametrize(("root", "lves", "expected", "skipped"), WHOLE_REPOSITORY)
def test_verify_cli_json(root, lves, expected, skipped):
    result = cli("verify", str(root), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert _skipped(root, data.pop("skipped")) == skipped
    assert data == expected


@pytest.mark.parametrize(("root", "total"), over_repos(35, 23))
def test_verify_with_trust_code_runs_the_custom_checkers_too(root, total):
    result = cli("verify", str(root), "--json", "--trust-code")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"total": total, "agree": total, "disagree": [], "skipped": [], "errors": []}


@pytest.mark.parametrize(("root", "lve", "instances"), over_repos((MULTIPLY, 9), (A_PLUS_B, 8)))
def test_verify_cli_table_on_one_lve(root, lve, instances):
    result = cli("verify", str(root / lve))
    assert result.exit_code == 0
    assert f"1 LVE, {instances} recorded instances" in result.stdout and "agree" in result.stdout


def _copy(samples: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(samples, repo)
    return repo


@pytest.mark.parametrize(
    ("root", "lve", "file", "line", "recorded", "total", "agree"),
    over_repos(
        (MULTIPLY, "two_digits.jsonl", 3, False, 35, 32),  # "three hundred and sixty-one": int() raises, unsafe
        (A_PLUS_B, "two_digits.jsonl", 2, True, 23, 22),
    ),
)
def test_a_flipped_verdict_is_reported_with_file_and_line(root, lve, file, line, recorded, total, agree, tmp_path):
    repo = _copy(root, tmp_path)
    path = repo / lve / "instances" / file
    lines = path.read_text().splitlines()
    record = json.loads(lines[line - 1])
    assert record["passed"] is recorded
    record["passed"] = not record["passed"]
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    result = cli("verify", str(repo), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["total"], data["agree"]) == (total, agree)
    assert data["disagree"] == [
        {"file": path.as_posix(), "line": line, "expected": not recorded, "got": recorded, "checker": "LambdaChecker"}
    ]
    table = cli("verify", str(repo))
    assert table.exit_code == 1 and f"{file}:{line}" in table.stdout


@pytest.mark.parametrize(
    ("root", "lambda_lve", "regex_file", "total", "agree"),
    over_repos(
        (MULTIPLY, f"{API_KEY}/instances/sampled.jsonl", 35 - 9, 35 - 9 - 2),
        (A_PLUS_B, f"{CAR_PLATES}/instances/random.jsonl", 23 - 8, 15),
    ),
)
def test_broken_lves_are_reported_and_the_others_verified(root, lambda_lve, regex_file, total, agree, tmp_path):
    repo = _copy(root, tmp_path)
    (repo / lambda_lve / "test.json").write_text('{"description": "x",\n "model": \n}')
    instances = repo / regex_file
    bad_line = len(instances.read_text().splitlines()) + 1
    with instances.open("a") as handle:
        handle.write('{"args": {}, "response": "ZH 1"}\n')
    result = cli("verify", str(repo), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["total"] == total and data["agree"] == agree and data["disagree"] == []
    reasons = [e["reason"] for e in data["errors"]]
    assert len(reasons) == 2
    assert any(f"{lambda_lve}/test.json:3: bad JSON" in r for r in reasons)
    assert any(f"{instances.name}:{bad_line}: missing field 'passed'" in r for r in reasons)
    assert all("\n" not in r for r in reasons)
    text = cli("verify", str(repo))
    assert "error: " in text.stderr and f"{instances.name}:{bad_line}" in text.stderr


@pytest.mark.parametrize(
    ("root", "lve", "params", "agree"), over_repos((MULTIPLY, "x, y", 35 - 9 - 2), (A_PLUS_B, "a, b", 15))
)
def test_a_malicious_lambda_in_a_shared_file_is_refused_and_never_runs(root, lve, params, agree, tmp_path):
    repo = _copy(root, tmp_path)
    marker = tmp_path / "pwned"
    test_path = repo / lve / "test.json"
    test = json.loads(test_path.read_text())
    test["checker_args"]["func"] = f"lambda r, {params}: __import__('os').system('touch {marker}') or True"
    test_path.write_text(json.dumps(test, indent=4))
    result = cli("verify", str(repo), "--json")
    assert result.exit_code == 1 and not marker.exists()
    data = json.loads(result.stdout)
    (error,) = data["errors"]
    assert "refused lambda in 'func': name '__import__' is forbidden" in error["reason"]
    assert error["file"] == test_path.as_posix() and isinstance(error["line"], int)
    assert data["agree"] == agree  # the other LVEs were verified


def test_a_templated_lambda_is_checked_after_substitution(tmp_path):
    lve = tmp_path / "t"
    (lve / "instances").mkdir(parents=True)
    (lve / "test.json").write_text(
        json.dumps(
            {
                "description": "d",
                "model": "m",
                "prompt": "say {word}",
                "prompt_parameters": ["word"],
                "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, word: r == '{word}'"},
            }
        )
    )
    rows = [
        {"args": {"word": "hi"}, "response": "hi", "passed": True},
        {"args": {"word": "x' or __import__('os').system('id') or '"}, "response": "?", "passed": True},
    ]
    (lve / "instances" / "i.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = verify(lve)
    assert report.agree == 1
    (error,) = report.errors
    assert error["line"] == 2 and "'__import__' is forbidden" in error["reason"]


CUSTOM = """
from lve.checkers import BaseChecker

class EvenLengthChecker(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return len(response) % 2 == 0
"""


def test_custom_checkers_are_skipped_without_trust_code(tmp_path):
    lve = tmp_path / "dummy" / "custom" / "even"
    (lve / "checker").mkdir(parents=True)
    (lve / "instances").mkdir()
    (lve / "checker" / "checker.py").write_text(CUSTOM)
    (lve / "test.json").write_text(
        json.dumps(
            {"description": "d", "model": "m", "prompt": "x", "checker_args": {"checker_name": "EvenLengthChecker"}}
        )
    )
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


@pytest.mark.parametrize(
    ("root", "multirun_lve", "multirun", "runs", "mono_lve", "mono", "missing"),
    over_repos(
        (
            "dummy/arithmetic/multiply_both_orders/hf--smollm2-135m-instruct",
            {"args": {"x": "6", "y": "7"}, "response": ["42", "42"], "passed": True},
            3,
            "reliability/consistency/boiling_point/openai--gpt-4o-mini",
            {
                "args": {"height1": "0", "height2": "900", "height3": "1800", "height4": "2700"},
                "response": {"temp1": "[T=100]", "temp3": "[T=94]"},
                "passed": True,
            },
            "temp2",
        ),
        (
            "dummy/math/a_plus_b_multirun/openai--gpt-35-turbo",
            {"args": {"a": "3", "b": "1"}, "response": ["4"], "passed": True},
            2,
            "reliability/consistency/monotonicity/openai--gpt-35-turbo",
            {
                "args": {"year1": "1", "year2": "2", "year3": "3", "year4": "4", "year5": "5"},
                "response": {"answer1": "1"},
                "passed": True,
            },
            "answer2",
        ),
    ),
)
def test_multi_run_and_multi_variable_responses_must_fit_the_prompt(
    root, multirun_lve, multirun, runs, mono_lve, mono, missing, tmp_path
):
    repo = _copy(root, tmp_path)
    (repo / multirun_lve / "instances" / "instances.jsonl").write_text(json.dumps(multirun) + "\n")
    (repo / mono_lve / "instances" / "instances.jsonl").write_text(json.dumps(mono) + "\n")
    report = verify(repo)
    reasons = sorted(e["reason"] for e in report.errors)
    assert len(reasons) == 2 and report.disagree == []
    assert f"must be a list of {runs} responses" in reasons[0]
    assert f"no value for the variable {missing!r}" in reasons[1]


def test_verify_of_a_missing_path_is_one_line(tmp_path):
    result = cli("verify", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {tmp_path / 'nope'}: no such file or folder"
