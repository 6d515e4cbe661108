"""The ``test.*`` generators declare their options and refuse any other, as every built-in family does."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from redline.attempt import Conversation
from redline.engine import ConfigError, build_scan_config, parse_gen_opts
from redline.generators import get_generator

TEST_FAMILIES = ["test.echo", "test.blank", "test.repeat:hello"]


@pytest.mark.parametrize("model", TEST_FAMILIES)
def test_an_unknown_gen_opt_is_refused_with_what_the_family_takes(model):
    family = model.split(":")[0]
    with pytest.raises(ConfigError) as info:
        build_scan_config({}, {"model": model}, parse_gen_opts(["whatever=1"]))
    assert str(info.value) == (
        f"--gen-opt: the {family} generator does not take option 'whatever' "
        "(it takes: delay, exit_once, max_tokens, seed, temperature, top_p)"
    )


def test_a_remote_option_is_refused_naming_its_flag():
    with pytest.raises(ConfigError, match=r"^--timeout: the test.echo generator does not take option 'timeout'"):
        build_scan_config({}, {"model": "test.echo"}, {"timeout": 5.0})


def test_a_config_file_option_is_refused_too(tmp_path):
    with pytest.raises(ConfigError, match=r"generator: the test.blank generator does not take option 'url'"):
        build_scan_config({"model": "test.blank", "generator": {"url": "http://127.0.0.1:1/x"}}, {}, {})


def test_a_typo_of_delay_is_caught():
    with pytest.raises(ConfigError, match=r"unknown generator option 'dealy' \(did you mean 'delay'\?\)"):
        build_scan_config({}, {"model": "test.echo"}, parse_gen_opts(["dealy=1"]))


def test_delay_and_the_sampling_options_are_taken_and_sampling_changes_nothing():
    config = build_scan_config(
        {}, {"model": "test.echo"}, parse_gen_opts(["delay=0", "max_tokens=1", "temperature=2", "top_p=0.1", "seed=7"])
    )
    assert config.generator_options == {"delay": 0, "max_tokens": 1, "temperature": 2, "top_p": 0.1, "seed": 7}
    conversation = Conversation.from_openai([{"role": "user", "content": "say it back, all of it"}])
    tuned = get_generator("test.echo", **config.generator_options)
    plain = get_generator("test.echo")
    assert [m.text for m in asyncio.run(tuned.generate(conversation, 2))] == ["say it back, all of it"] * 2
    assert [m.text for m in asyncio.run(plain.generate(conversation, 2))] == ["say it back, all of it"] * 2


def test_the_cli_refuses_an_unknown_gen_opt_in_one_line(tmp_path):
    db = tmp_path / "r.db"
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "scan", "-m", "test.echo", "--gen-opt", "bogus=1", "--store", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: --gen-opt: the test.echo generator does not take option 'bogus' "
        "(it takes: delay, exit_once, max_tokens, seed, temperature, top_p)"
    ]
    assert not db.exists()


def test_exit_once_ends_only_the_first_process_that_asks(tmp_path):
    marker = tmp_path / "died"
    code = (
        "import asyncio, sys; from redline.generators import get_generator; from redline.attempt import Conversation;"
        f"g = get_generator('test.echo', exit_once={str(marker)!r});"
        "print(asyncio.run(g.generate(Conversation.from_openai([{'role': 'user', 'content': 'hi'}]), 1))[0].text)"
    )
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "PATH": ""}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert (first.returncode, first.stdout) == (1, "") and marker.exists()
    assert (second.returncode, second.stdout.strip()) == (0, "hi")
