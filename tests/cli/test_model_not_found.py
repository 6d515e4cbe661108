"""A model the endpoint does not serve (HTTP 404 "model not found") stops the scan with one line
that names the model and what to check, and offers no ``--resume`` that could not succeed."""

from __future__ import annotations

import json

import pytest

from helpers.cli import CliRun, cli_runner
from helpers.mock_openai import MockOpenAI

NOT_FOUND = json.dumps({"error": {"message": "The model `gpt-nope` does not exist", "code": "model_not_found"}})


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return cli_runner(monkeypatch, capsys)


def test_an_unknown_model_is_one_line_naming_it_with_no_resume_hint(cli, tmp_path):
    with MockOpenAI(faults=lambda index, body: (404, {}, NOT_FOUND)) as server:
        code, out, err = cli(
            "scan", "-m", "openai:gpt-nope", "--base-url", server.base_url, "-p", "encoding.Hex", "--sample", "2",
            "--store", str(tmp_path / "s.db"),
        )  # fmt: skip
    assert code == 1 and out == ""
    (line,) = [line for line in err if line.startswith("error:")]
    assert "model 'gpt-nope' is not served at" in line and "-m/--model" in line and "redline list" in line
    assert not any("--resume" in line for line in err), err


def test_an_unknown_path_is_one_line_with_no_resume_hint(cli, tmp_path):
    with MockOpenAI(faults=lambda index, body: (404, {}, "no such route")) as server:
        code, _, err = cli(
            "scan", "-m", "openai:m", "--base-url", server.base_url + "/extra", "-p", "encoding.Hex", "--sample", "2",
            "--store", str(tmp_path / "s.db"),
        )  # fmt: skip
    assert code == 1
    assert any(line.startswith("error:") and "not found (HTTP 404): check --base-url" in line for line in err), err
    assert not any("--resume" in line for line in err), err
