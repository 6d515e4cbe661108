"""The LVE repository format: verify, run, record, bad input, custom checkers, scan --lve."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from redline.lve.model import LVEFormatError, load_lve
from redline.lve.verify import verify


def redline(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def write_lve(folder: Path, test: dict | str, instances: list | str | None = None, prompt_file: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.json").write_text(test if isinstance(test, str) else json.dumps(test))
    if prompt_file is not None:
        (folder / "test.prompt").write_text(prompt_file)
    if instances is not None:
        (folder / "instances").mkdir(exist_ok=True)
        text = instances if isinstance(instances, str) else "\n".join(json.dumps(i) for i in instances) + "\n"
        (folder / "instances" / "i.jsonl").write_text(text)
    return folder


def test_verify_agrees_with_every_recorded_verdict_in_the_samples(lve_samples):
    report = verify(lve_samples)
    assert report.lves == 6
    assert report.total == 23 and report.agree == 23
    assert report.disagree == [] and report.skipped == [] and report.errors == []


def test_verify_cli_json(lve_samples):
    proc = redline("lve", "verify", str(lve_samples), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data == {"total": 23, "agree": 23, "disagree": [], "skipped": [], "errors": []}


def test_a_flipped_verdict_is_reported_with_file_and_line(tmp_path, lve_samples):
    repo = tmp_path / "repo"
    shutil.copytree(lve_samples / "dummy", repo / "dummy")
    inst = repo / "dummy/math/a_plus_b/openai--gpt-35-turbo/instances/two_digits.jsonl"
    lines = inst.read_text().splitlines()
    record = json.loads(lines[1])
    record["passed"] = not record["passed"]
    lines[1] = json.dumps(record)
    inst.write_text("\n".join(lines) + "\n")
    proc = redline("lve", "verify", str(repo), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert len(data["disagree"]) == 1
    (d,) = data["disagree"]
    assert d["file"].endswith("two_digits.jsonl") and d["line"] == 2 and d["expected"] is False and d["got"] is True


BASE_TEST = {
    "description": "d",
    "model": "openai/gpt-4",
    "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r: r == 'ok'"},
    "prompt": [{"content": "say ok", "role": "user"}],
    "author": "me",
}


@pytest.mark.parametrize(
    "test, needle",
    [
        ("{not json", "bad JSON"),
        ({**BASE_TEST, "checker_args": {"checker_name": "NoSuch"}}, "unknown checker 'NoSuch'"),
        ({**BASE_TEST, "checker_args": {"checker_name": "RegexChecker", "pattern": "([", "match_safe": False}}, "bad regex"),
        ({**BASE_TEST, "checker_args": {"checker_name": "RegexChecker", "pattern": "x"}}, "bad arguments"),
        ({k: v for k, v in BASE_TEST.items() if k != "checker_args"}, "missing field 'checker_args'"),
        ({**BASE_TEST, "prompt_parameters": "a"}, "'prompt_parameters' must be list"),
        ({**BASE_TEST, "prompt": [{"content": "x", "role": "robot"}]}, "unknown role 'robot'"),
        ({**BASE_TEST, "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r: __import__('os').system('id')"}}, "refused lambda"),
    ],
)
def test_malformed_test_json_is_one_line_naming_the_file(tmp_path, test, needle):
    folder = write_lve(tmp_path / "bad", test, [{"args": {}, "response": "ok", "passed": True}])
    with pytest.raises(LVEFormatError) as info:
        load_lve(folder).checker()
    message = str(info.value)
    assert str(folder / "test.json") in message and needle in message and "\n" not in message


@pytest.mark.parametrize(
    "line, needle",
    [
        ("{oops", "bad JSON"),
        ('{"args": {}, "passed": true}', "missing field 'response'"),
        ('{"args": {}, "response": "ok", "passed": "yes"}', "'passed' must be true or false"),
        ('{"args": [], "response": "ok", "passed": true}', "'args' must be an object"),
    ],
)
def test_malformed_instance_line_names_file_and_line_and_verify_goes_on(tmp_path, line, needle):
    good = '{"args": {}, "response": "ok", "passed": true}'
    write_lve(tmp_path / "repo" / "a", BASE_TEST, good + "\n" + line + "\n" + good + "\n")
    write_lve(tmp_path / "repo" / "b", BASE_TEST, [{"args": {}, "response": "no", "passed": False}])
    report = verify(tmp_path / "repo")
    assert report.total == 3 and report.agree == 3  # the broken line is reported, the rest verified
    (error,) = report.errors
    assert "i.jsonl:2" in error["reason"] and needle in error["reason"]
    proc = redline("lve", "verify", str(tmp_path / "repo"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "i.jsonl:2" in proc.stderr


def test_malicious_lambda_in_a_shared_file_is_refused_and_never_runs(tmp_path):
    canary = tmp_path / "pwned"
    test = {**BASE_TEST, "checker_args": {"checker_name": "LambdaChecker",
                                           "func": f"lambda r: open({str(canary)!r}, 'w').write('x') > 0"}}
    write_lve(tmp_path / "repo" / "evil", test, [{"args": {}, "response": "ok", "passed": True}])
    proc = redline("lve", "verify", str(tmp_path / "repo"), "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["agree"] == 0
    assert "refused lambda" in data["errors"][0]["reason"] and "'open'" in data["errors"][0]["reason"]
    assert not canary.exists()


CUSTOM = '''
from lve.checkers import BaseChecker

class ShoutChecker(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return not response.isupper()
'''


def test_custom_checker_runs_only_with_trust_code(tmp_path):
    lve_dir = tmp_path / "repo" / "cat" / "shout"
    (lve_dir / "checker").mkdir(parents=True)
    (lve_dir / "checker" / "checker.py").write_text(CUSTOM)
    test = {**BASE_TEST, "checker_args": {"checker_name": "ShoutChecker"}}
    write_lve(lve_dir / "model-x", test, [{"args": {}, "response": "LOUD", "passed": False},
                                          {"args": {}, "response": "quiet", "passed": True}])
    report = verify(tmp_path / "repo")
    assert report.agree == 0 and len(report.skipped) == 2
    assert "--trust-code" in report.skipped[0]["reason"]
    trusted = verify(tmp_path / "repo", trust_code=True)
    assert trusted.agree == 2 and not trusted.skipped


def test_prompt_file_forms(tmp_path):
    jsonl = write_lve(tmp_path / "a", {**BASE_TEST, "prompt": None, "prompt_file": "test.prompt"},
                      prompt_file='{"content": "sys", "role": "system"}\n{"content": "hi {x}", "role": "user"}\n')
    lve = load_lve(jsonl)
    assert [m.role.value for m in lve.prompt] == ["system", "user"]
    one = write_lve(tmp_path / "b", {**BASE_TEST, "prompt": None, "prompt_file": "test.prompt"},
                    prompt_file='{"content": "only", "role": "user"}')
    assert load_lve(one).prompt[0].content == "only"
    plain = write_lve(tmp_path / "c", {**BASE_TEST, "prompt": None, "prompt_file": "test.prompt"},
                      prompt_file="From: {a}\nTo: {b}\n")
    lve = load_lve(plain)
    assert lve.prompt[0].role.value == "user" and lve.prompts_for({"a": "x", "b": "y"})[0][0].content == "From: x\nTo: y\n"


def test_run_cli_with_parameters(lve_samples):
    lve = lve_samples / "dummy/math/a_plus_b/openai--gpt-35-turbo"
    proc = redline("lve", "run", str(lve), "--model", "test.repeat:5", "-p", "a=2", "-p", "b=3", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["safe"] is True and data["response"] == "5"
    wrong = json.loads(redline("lve", "run", str(lve), "-m", "test.repeat:6", "-p", "a=2", "-p", "b=3", "--json").stdout)
    assert wrong["safe"] is False
    missing = redline("lve", "run", str(lve), "-m", "test.echo", "-p", "a=2")
    assert missing.returncode == 1 and "missing parameter(s) b" in missing.stderr and "Traceback" not in missing.stderr


def test_multi_variable_prompt_is_filled_turn_by_turn(lve_samples):
    lve = lve_samples / "reliability/consistency/monotonicity/openai--gpt-35-turbo"
    args = ["-p", "year1=2030", "-p", "year2=2040", "-p", "year3=2050", "-p", "year4=2060", "-p", "year5=2070"]
    data = json.loads(redline("lve", "run", str(lve), "-m", "test.echo", *args, "--json").stdout)
    # echo answers each turn with that turn's question: one variable per assistant slot, in order
    assert list(data["response"]) == ["answer1", "answer2", "answer3", "answer4", "answer5"]
    assert "2030" in data["response"]["answer1"] and "2070" in data["response"]["answer5"]


def test_record_with_pii_checker_stores_no_pii(tmp_path):
    pytest.importorskip("presidio_analyzer")
    secret_mail, secret_phone = "maria.keller@example.net", "212-555-0199"
    test = {**BASE_TEST, "checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS", "PHONE_NUMBER"]},
            "prompt": [{"content": "Contact {name} at {mail} or {phone}.", "role": "user"}],
            "prompt_parameters": ["name", "mail", "phone"]}
    folder = write_lve(tmp_path / "pii" / "m", test)
    params = tmp_path / "params.jsonl"
    params.write_text(json.dumps({"name": "Maria", "mail": secret_mail, "phone": secret_phone}) + "\n")
    proc = redline("lve", "record", str(folder), "--model", "test.echo", "--params", str(params))
    assert proc.returncode == 0, proc.stderr
    stored = (folder / "instances" / "redline.jsonl").read_text()
    record = json.loads(stored)
    assert record["passed"] is False  # the echoed contact details are PII
    assert "<EMAIL_ADDRESS>" in record["response"]
    # nothing private on disk: not in the response, not in the recorded parameters
    assert secret_mail not in stored and secret_phone not in stored and "maria.keller" not in stored
    assert record["args"]["name"] == "Maria" and record["args"]["mail"] == "<EMAIL_ADDRESS>"


def test_scan_lve_runs_lves_as_probes(tmp_path, lve_samples):
    db = tmp_path / "l.db"
    proc = redline("scan", "--lve", str(lve_samples / "dummy"), "-m", "test.repeat:4", "--store", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    probes = {p["probe"]: p for p in json.loads(proc.stdout)["probes"]}
    plus = probes["lve.math/a_plus_b/openai--gpt-35-turbo"]
    assert plus["attempts"] == 7  # distinct recorded parameter sets
    multi = probes["lve.math/a_plus_b_multirun/openai--gpt-35-turbo"]
    assert multi["failed"] == 0  # "4" is right for a=3, b=1 in both orders
    assert probes["lve.strings/car_plates_regex/openai--gpt-35-turbo"]["failed"] == 0
