"""YAML scan configurations and --gen-opt: validation with one-line errors, CLI precedence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import redline.engine.config_file as config_file
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


# -- hostile files: bounded reading and probe_options ------------------------------------------------
def alias_bomb(key: str = "probes") -> str:
    """Nine anchors, each a list of nine aliases of the one before: ~500 bytes standing for 9**9."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + f"\n{key}: *i\n"


def config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


def test_an_alias_bomb_fails_fast_naming_file_and_line(tmp_path):
    bomb = alias_bomb()
    assert len(bomb) < 600
    path = write(tmp_path, bomb)
    message = config_error(path)
    # refused at the first anchor past the budget: "f" stands for 9**5 * 10 values
    assert message == f"{path}: line 6: the YAML stands for more than 100000 values once its aliases are expanded"


def test_a_recursive_alias_and_deep_nesting_are_refused(tmp_path):
    assert "an alias refers to a collection that holds it" in config_error(write(tmp_path, "probes: &p [*p]\n"))
    deep = write(tmp_path, "generator: {extra_body: " + "[" * 70 + "]" * 70 + "}\n")
    assert "line 1: values nested more than 64 levels deep" in config_error(deep)


def test_the_file_size_is_capped(tmp_path, monkeypatch):
    assert config_file.MAX_CONFIG_BYTES == 1024 * 1024
    path = write(tmp_path, "seed: 1\n")
    monkeypatch.setattr(config_file, "MAX_CONFIG_BYTES", 8)
    assert load_config(path) == {"seed": 1}  # 8 bytes: at the limit
    path.write_text("seed: 12\n")
    assert config_error(path) == f"{path}: too large (more than 8 bytes)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"seed: 1\nmodel: caf\xe9\n", "line 2: not UTF-8 text (byte 0xe9 at column 11)"),
        (b"seed: 1\x00\n", "line 1: a NUL byte in text"),
        (b"seed: " + b"1" * 5000 + b"\n", "line 1: invalid YAML: cannot read this value (Exceeds the limit"),
        (b"model: !!binary aGk=\n", "line 1: invalid YAML: the tag 'tag:yaml.org,2002:binary' is not supported here"),
        (b"seed: 2001-01-01\n", "seed must be an integer, not '2001-01-01'"),
    ],
)
def test_bad_bytes_and_odd_values_are_one_line(tmp_path, content, message):
    path = tmp_path / "scan.yaml"
    path.write_bytes(content)
    assert message in config_error(path)


def test_a_gen_opt_alias_bomb_is_refused_and_plain_text_stays_text():
    with pytest.raises(ConfigError) as info:
        parse_gen_opts(["stop=" + alias_bomb("x")])
    assert str(info.value).startswith("--gen-opt stop: line 6: the YAML stands for more than 100000 values")
    assert parse_gen_opts(["stop=[*undefined]", "x=2001-01-01"]) == {"stop": "[*undefined]", "x": "2001-01-01"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("{encoding.Hexx: {sample: 2}}", "probe_options: unknown probe 'encoding.Hexx' (did you mean 'encoding.Hex'?)"),
        (
            "{encoding.Hex: {smaple: 2}}",
            "probe_options.encoding.Hex: unknown option 'smaple' (did you mean 'sample'? "
            "options: detectors, num_repetitions, sample, seed)",
        ),
        ("{encoding.Hex: {evaluator: x}}", "probe_options.encoding.Hex: unknown option 'evaluator'"),
        ("{jailbreak.ManyShot: {shot: 3}}", "unknown option 'shot' (did you mean 'shots'?"),
        ("{bias.ForcedChoice: {resample: 3}}", "unknown option 'resample' (did you mean 'resamples'?"),
        ("{encoding.Hex: {1: 2}}", "probe_options.encoding.Hex: 1 is not an option name"),
        ("{encoding.Hex: [1]}", "probe_options.encoding.Hex must be a mapping of options, not [1]"),
        ("{encoding.Hex: {sample: abc}}", "probe_options.encoding.Hex.sample must be an integer >= 1, not 'abc'"),
        ("{encoding.Hex: {num_repetitions: 0}}", "num_repetitions must be an integer >= 1, not 0"),
        ("{encoding.Hex: {seed: [1]}}", "probe_options.encoding.Hex.seed must be an integer, not [1]"),
        ("{encoding.Hex: {detectors: 5}}", "probe_options.encoding.Hex.detectors must be a name"),
        ("{encoding.Hex: {detectors: [nope.Nope]}}", "probe_options.encoding.Hex.detectors: unknown detector"),
        ("{jailbreak.Persona: {dataset_columns: 5}}", "dataset_columns must be a mapping of field: column"),
        ("{jailbreak.Persona: {dataset_columns: {prompt: a, what: b}}}", "has an unknown field 'what'"),
    ],
)
def test_probe_options_are_checked_naming_probe_and_option(tmp_path, options, message):
    assert message in config_error(write(tmp_path, f"probe_options: {options}\n"))


def test_good_probe_options_are_normalised(tmp_path):
    values = load_config(
        write(
            tmp_path,
            """
            probe_options:
              encoding.Hex: {sample: 2, detectors: "encoding.DecodedPayload, refusal.Keywords"}
              bias.ForcedChoice: {resamples: 50}
              dataset.Prompts: {dataset_columns: {prompt: goal}}
            """,
        )
    )
    assert values["probe_options"] == {
        "encoding.Hex": {"sample": 2, "detectors": ["encoding.DecodedPayload", "refusal.Keywords"]},
        "bias.ForcedChoice": {"resamples": 50},
        "dataset.Prompts": {"dataset_columns": {"prompt": "goal"}},
    }
