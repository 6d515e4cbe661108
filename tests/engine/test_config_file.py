"""YAML scan configurations and --gen-opt: validation with one-line errors, CLI precedence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.mock_openai import MockOpenAI
from redline.engine import ConfigError, build_scan_config, load_config, parse_gen_opts


def write(tmp_path: Path, text: str, name: str = "scan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_full_file_loads_and_normalises(tmp_path):
    path = write(
        tmp_path,
        """
        model: openai:gpt-4o-mini
        generator:
          base_url: http://127.0.0.1:8000/v1
          api_key_env: MY_KEY
          max_tokens: 64
          temperature: 0.2
          rpm: 100
          headers: {Authorization: "Bearer ${MY_KEY}"}
        probes: [harmful, encoding]
        generations: 3
        concurrency: 8
        sample: 4
        seed: 7
        num_repetitions: 2
        cache: false
        lve: [lves]
        probe_options: {harmful.Requests: {}}
    """,
    )
    values = load_config(path)
    assert values["probes"] == "harmful,encoding" and values["repetitions"] == 2 and values["cache"] is False
    assert values["lve"] == [str((tmp_path / "lves").resolve())]
    config = build_scan_config(values, {}, {})
    assert config.model == "openai:gpt-4o-mini" and config.generations == 3 and config.concurrency == 8
    assert config.sample == 4 and config.seed == 7 and config.num_repetitions == 2 and config.cache is False
    assert config.generator_options["max_tokens"] == 64 and config.generator_options["rpm"] == 100


def test_command_line_overrides_the_file(tmp_path):
    values = load_config(
        write(tmp_path, "model: openai:a\ngenerations: 3\ngenerator: {temperature: 0.9, max_tokens: 5}\n")
    )
    config = build_scan_config(
        values,
        {"model": "openai:b", "generations": None, "seed": None},
        {"temperature": 0.0, "max_tokens": None, **parse_gen_opts(["top_p=0.5"])},
    )
    assert config.model == "openai:b" and config.generations == 3
    assert config.generator_options == {"temperature": 0.0, "max_tokens": 5, "top_p": 0.5}
    defaults = build_scan_config({}, {}, {})
    assert defaults.model == "smollm2" and defaults.generations == 1 and defaults.cache is True
    assert defaults.generator_options == {"seed": 0}  # local models get the run's seed


@pytest.mark.parametrize(
    "text, message",
    [
        ("modle: x\n", "unknown key 'modle' (did you mean 'model'?)"),
        ("bogus: 1\n", "unknown key 'bogus' (known keys: model, generator"),
        ("generations: two\n", "generations must be an integer >= 1, not 'two'"),
        ("generations: 0\n", "generations must be an integer >= 1, not 0"),
        ("cache: maybe\n", "cache must be true or false"),
        ("probes: 5\n", "probes must be a name"),
        ("generator: [1, 2]\n", "generator must be a mapping"),
        ("generator: {temperature: hot}\n", "generator: temperature must be a number >= 0, not 'hot'"),
        ("generator: {timeout: 0}\n", "generator: timeout must be a number > 0"),
        ("generator: {base_url: localhost:8000}\n", "base_url must be a URL starting with http://"),
        ("generator: {api_key: sk-123}\n", "api_key: secrets do not belong in configuration"),
        (
            "generator: {headers: {X-Api-Key: abc123}}\n",
            "headers.X-Api-Key looks like a secret: write it as ${ENV_VAR}",
        ),
        ("generator: {max_tokns: 5}\n", "unknown generator option 'max_tokns' (did you mean 'max_tokens'?)"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("model: [unclosed\n", "line 2: invalid YAML"),
    ],
)
def test_mistakes_are_one_line_naming_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(str(path)) and message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_bad_gen_opts(tmp_path):
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="--gen-opt 'temperature': expected KEY=VALUE"):
        parse_gen_opts(["temperature"])
    with pytest.raises(ConfigError, match="--gen-opt: max_retries must be an integer >= 0, not -1"):
        parse_gen_opts(["max_retries=-1"])
    assert parse_gen_opts(["stop=[a, b]", "custom_flag=yes", "label=plain text", "empty="]) == {
        "stop": ["a", "b"],
        "custom_flag": True,
        "label": "plain text",
        "empty": "",
    }
    assert load_config(write(tmp_path, "")) == {}


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "redline", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
    )


def test_cli_scan_from_a_config_file_with_overrides(tmp_path):
    with MockOpenAI() as server:
        path = write(
            tmp_path,
            f"""
            model: openai:from-file
            generator: {{base_url: "{server.base_url}", max_tokens: 11, temperature: 0.5}}
            probes: harmful
            sample: 3
            generations: 2
        """,
        )
        proc = run_cli("scan", "--config", str(path), "--temperature", "0", "--store", str(tmp_path / "s.db"), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["model"] == "openai:from-file" and summary["generations"] == 2
    assert summary["probes"][0]["attempts"] == 3
    assert {(r["max_tokens"], r["temperature"], r["n"]) for r in server.requests} == {(11, 0.0, 2)}


def test_cli_bad_config_is_one_error_line(tmp_path):
    path = write(tmp_path, "generations: -1\n")
    proc = run_cli("scan", "--config", str(path), "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {path}: generations must be an integer >= 1, not -1"
    proc = run_cli("scan", "--model", "test.echo", "--gen-opt", "oops", "--store", str(tmp_path / "s.db"))
    assert (
        proc.returncode == 1
        and proc.stderr.strip().startswith("error: --gen-opt 'oops'")
        and "Traceback" not in proc.stderr
    )
