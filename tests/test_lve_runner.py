"""Running and recording LVEs against generators, and the ``lve run`` / ``lve record`` CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redline.attempt import Message
from redline.cli.lve import app
from redline.lve.model import load_lve
from redline.lve.runner import complete_chat, record_lve, run_lve
from redline.lve.verify import verify

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "lve-samples"
A_PLUS_B = "dummy/math/a_plus_b/openai--gpt-35-turbo"
MULTIRUN = "dummy/math/a_plus_b_multirun/openai--gpt-35-turbo"
MONOTONIC = "reliability/consistency/monotonicity/openai--gpt-35-turbo"


@pytest.fixture
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.skip("shared/lve-samples is not next to the repository")
    return SAMPLES


class Scripted:
    """A generator answering from a list, recording the conversations it was given."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.seen: list[list[tuple[str, str | None]]] = []

    async def generate(self, conversation, n=1):
        self.seen.append([(t.role, t.content.text) for t in conversation.turns])
        return [Message(text=self.answers.pop(0)) for _ in range(n)]

    async def aclose(self) -> None:
        pass


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


async def test_run_fills_parameters_and_judges(samples):
    lve = load_lve(samples / A_PLUS_B)
    generator = Scripted(["5", "6"])
    run = await run_lve(lve, generator, {"a": "2", "b": "3"}, model_args={"temperature": 0.0})
    assert run.safe is True and run.response == "5" and run.params == {"a": "2", "b": "3"}
    assert generator.seen == [[("user", "Compute 2 + 3. Write a single number.")]]
    assert (await run_lve(lve, generator, {"a": "2", "b": "3"})).safe is False


async def test_multi_variable_prompt_is_filled_turn_by_turn(samples):
    lve = load_lve(samples / MONOTONIC)
    generator = Scripted([f"[Answer={v}]" for v in ("9.5", "9.4", "9.3", "9.2", "9.6")])
    params = {f"year{i}": str(2030 + 10 * i) for i in range(1, 6)}
    run = await run_lve(lve, generator, params)
    assert list(run.response) == [f"answer{i}" for i in range(1, 6)]
    assert run.response["answer2"] == "[Answer=9.4]"
    # each question sees the earlier answers
    assert len(generator.seen) == 5
    assert generator.seen[1][-3:] == [("user", generator.seen[0][-1][1]), ("assistant", "[Answer=9.5]"), ("user", generator.seen[1][-1][1])]
    assert run.safe is False  # desc expected, but 2080 answered 9.6


async def test_multi_run_lve_runs_each_prompt(samples):
    lve = load_lve(samples / MULTIRUN)
    generator = Scripted(["4", "4"])
    run = await run_lve(lve, generator, {"a": "3", "b": "1"})
    assert run.safe is True and run.response == ["4", "4"]
    assert [s[-1][1] for s in generator.seen] == ["Compute 3 + 1. Write a single number.", "Compute 1 + 3. Write a single number."]


async def test_complete_chat_appends_a_response_slot():
    from redline.lve.prompt import LVEMessage, Role

    chat = await complete_chat(Scripted(["ok"]), [LVEMessage(Role.user, "hi")])
    assert [(m.role, m.content, m.variable) for m in chat] == [(Role.user, "hi", None), (Role.assistant, "ok", "response")]


async def test_recorded_instances_verify(samples, tmp_path):
    folder = tmp_path / "lve"
    shutil.copytree(samples / A_PLUS_B, folder)
    shutil.rmtree(folder / "instances")
    lve = load_lve(folder)
    results = await record_lve(lve, Scripted(["3", "4"]), [{"a": 1, "b": 2}, {"a": 1, "b": 2}], model="scripted", model_args={"temperature": 0.5})
    assert [r.safe for r, _ in results] == [True, False]
    lines = [json.loads(l) for l in (folder / "instances" / "redline.jsonl").read_text().splitlines()]
    assert lines[0]["args"] == {"temperature": 0.5, "a": 1, "b": 2}
    assert lines[0]["run_info"]["model"] == "scripted" and lines[1]["passed"] is False
    assert verify(folder).as_dict() == {"total": 2, "agree": 2, "disagree": [], "skipped": [], "errors": []}


def test_run_cli_with_test_echo(samples):
    result = cli("run", str(samples / A_PLUS_B), "--model", "test.echo", "-p", "a=1", "-p", "b=2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["safe"] is False and data["response"] == "Compute 1 + 2. Write a single number."
    plain = cli("run", str(samples / A_PLUS_B), "-m", "test.repeat:3", "-p", "a=1", "-p", "b=2")
    assert plain.exit_code == 0 and "SAFE (LambdaChecker)" in plain.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-p", "a=1"], "missing prompt parameter(s) b"),
        (["-p", "a=1", "-p", "b=2", "-p", "c=3"], "unknown parameter(s) c"),
        (["-p", "a"], "bad parameter 'a'"),
        (["-p", "a=1", "-p", "b=2", "--model", "nosuchfamily"], "unknown generator 'nosuchfamily'"),
    ],
)
def test_run_cli_user_errors_are_one_line(samples, args, needle):
    argv = ["run", str(samples / A_PLUS_B)] + (args if "--model" in args else ["--model", "test.echo", *args])
    result = cli(*argv)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr


def test_run_cli_on_a_repository_or_missing_path(samples, tmp_path):
    many = cli("run", str(samples), "--model", "test.echo")
    assert many.exit_code == 1 and "holds 6 LVEs" in many.stderr
    missing = cli("run", str(tmp_path / "none"), "--model", "test.echo")
    assert missing.exit_code == 1 and missing.stderr.count("\n") == 1


def test_record_cli_appends_instances(samples, tmp_path):
    folder = tmp_path / "lve"
    shutil.copytree(samples / A_PLUS_B, folder)
    params = tmp_path / "params.jsonl"
    params.write_text('{"a": 2, "b": 2}\n\n{"a": "10", "b": "5"}\n')
    result = cli("record", str(folder), "--model", "test.repeat:4", "--params", str(params), "--author", "me", "--temperature", "0")
    assert result.exit_code == 0, result.output
    assert "recorded 2 instance(s), 1 unsafe" in result.stdout
    lines = [json.loads(l) for l in (folder / "instances" / "redline.jsonl").read_text().splitlines()]
    assert [(l["response"], l["passed"], l["author"], l["args"]["temperature"]) for l in lines] == [("4", True, "me", 0.0), ("4", False, "me", 0.0)]
    assert verify(folder).agree == 8 + 2

    params.write_text('{"a": 1}\n')
    bad = cli("record", str(folder), "--model", "test.echo", "--params", str(params))
    assert bad.exit_code == 1 and bad.stderr.strip() == f"error: {params}:1: missing parameter(s) b"
    params.write_text("{nope\n")
    assert "params.jsonl:1: bad JSON" in cli("record", str(folder), "--model", "test.echo", "--params", str(params)).stderr


def test_custom_checker_lve_refuses_to_run_without_trust(tmp_path):
    folder = tmp_path / "c"
    (folder / "checker").mkdir(parents=True)
    (folder / "checker" / "checker.py").write_text(
        "from lve.checkers.base import BaseChecker\n\nclass Yes(BaseChecker):\n    def is_safe(self, prompt, response, param_values=None):\n        return True\n"
    )
    (folder / "test.json").write_text(json.dumps({"description": "d", "model": "m", "prompt": "hi", "checker_args": {"checker_name": "Yes"}}))
    refused = cli("run", str(folder), "--model", "test.echo")
    assert refused.exit_code == 1 and "--trust-code" in refused.stderr
    trusted = cli("run", str(folder), "--model", "test.echo", "--trust-code", "--json")
    assert trusted.exit_code == 0 and json.loads(trusted.stdout)["safe"] is True


def test_redline_lve_through_the_main_entry_point(samples):
    src = Path(__file__).resolve().parents[1] / "src"
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "lve", "verify", str(samples), "--json"],
        capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(src), "PATH": ""},
    )
    if "No such command 'lve'" in proc.stderr:
        pytest.skip("the main CLI does not mount 'lve' yet")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["agree"] == 23


def test_scan_runs_lves_as_probes(samples, tmp_path):
    """``redline scan --lve`` (the harness's LVE probes) runs on this package's LVE API."""
    src = Path(__file__).resolve().parents[1] / "src"
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "scan", "--lve", str(samples / "dummy"), "-m", "test.repeat:4", "--store", str(tmp_path / "l.db"), "--json"],
        capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(src), "PATH": ""},
    )
    if "No such option: --lve" in proc.stderr:
        pytest.skip("scan --lve is not available")
    assert proc.returncode == 0, proc.stderr
    probes = {p["probe"]: p for p in json.loads(proc.stdout)["probes"]}
    assert probes["lve.math/a_plus_b/openai--gpt-35-turbo"]["attempts"] == 7  # distinct recorded parameter sets
    assert probes["lve.math/a_plus_b_multirun/openai--gpt-35-turbo"]["failed"] == 0  # 4 = 3 + 1 both ways
    assert probes["lve.strings/car_plates_regex/openai--gpt-35-turbo"]["failed"] == 0
