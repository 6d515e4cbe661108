"""Every backend as a new user meets it: from the command line and from a YAML file, against
local servers, a tiny locally built transformers model and fake litellm / llama_cpp modules.
Secrets never reach the store; mistakes are one ``error:`` line and leave no empty run behind."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.engine import ConfigError, ScanConfig, build_scan_config, load_config, parse_gen_opts, scan
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator
from redline.store import Store

SECRET = "sk-test-very-secret-4711"


def conv(text: str = "hi") -> Conversation:
    return Conversation([Turn("user", Message(text))])


def run_cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "redline", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**base, **(env or {})},
    )


def store_text(db: Path) -> str:
    """Everything in the store file (and its WAL), as text: for "the secret is not there"."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*")).decode("latin-1")


def run_count(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


# -- secrets ---------------------------------------------------------------------------------------
async def test_a_key_with_a_trailing_newline_works_and_one_with_a_line_break_inside_is_refused(monkeypatch):
    with MockOpenAI() as server:
        monkeypatch.setenv("MY_KEY", SECRET + "\n")
        gen = get_generator("openai:m", base_url=server.base_url, api_key_env="MY_KEY")
        (out,) = await gen.generate(conv("x"), 1)
        await gen.aclose()
        assert out.text == "x" and server.headers[-1]["Authorization"] == f"Bearer {SECRET}"

        monkeypatch.setenv("MY_KEY", "sk-abc\ndef-secret")
        gen = get_generator("openai:m", base_url=server.base_url, api_key_env="MY_KEY")
        with pytest.raises(GeneratorUnavailable) as info:
            await gen.start()
        assert "$MY_KEY" in str(info.value) and "secret" not in str(info.value).replace("MY_KEY", "")


async def test_an_answer_that_echoes_the_key_is_recorded_without_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", SECRET)
    with MockOpenAI(
        faults=lambda i, body: (400, {}, json.dumps({"detail": f"bad request with key {SECRET}"}))
    ) as server:
        gen = get_generator("openai:m", base_url=server.base_url, api_key_env="MY_KEY")
        with pytest.raises(GeneratorError) as info:
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert SECRET not in str(info.value) and "***" in str(info.value)


def test_cli_scan_keeps_every_key_and_header_secret_out_of_the_store(tmp_path):
    db = tmp_path / "s.db"
    env = {"MY_KEY": SECRET + "\n", "TEAM_TOKEN": "tok-" + SECRET}
    with MockOpenAI(faults=lambda i, body: (500, {}, f"upstream saw {SECRET}") if i == 0 else None) as server:
        config = tmp_path / "scan.yaml"
        config.write_text(
            textwrap.dedent(f"""
            model: openai:m
            generator:
              base_url: {server.base_url}
              api_key_env: MY_KEY
              headers: {{X-Team-Token: "${{TEAM_TOKEN}}", X-Team: red}}
              max_retries: 0
            probes: harmful.Requests
            sample: 3
        """)
        )
        proc = run_cli("scan", "--config", str(config), "--store", str(db), "--json", env=env)
    assert proc.returncode == 5, proc.stderr  # complete with errors: one attempt errored
    assert {h["Authorization"] for h in server.headers} == {f"Bearer {SECRET}"}
    assert {h["X-Team-Token"] for h in server.headers} == {"tok-" + SECRET}
    summary = json.loads(proc.stdout)
    assert summary["probes"][0]["errored"] == 1  # the 500 (no retries) is recorded...
    text = store_text(db)
    assert "upstream saw ***" in text and SECRET not in text  # ...without the key it echoed
    assert "${TEAM_TOKEN}" in text  # the header is stored as its template
    assert SECRET not in proc.stdout + proc.stderr


def test_cli_missing_header_variable_is_one_line_and_creates_no_run(tmp_path):
    db = tmp_path / "s.db"
    with MockOpenAI() as server:
        proc = run_cli(
            "scan",
            "-m",
            "rest:inhouse",
            "--base-url",
            server.base_url + "/generate",
            "--gen-opt",
            "response_path=choices.0.message.content",
            "--gen-opt",
            "headers={X-Api-Key: '${REDLINE_TEST_ABSENT_VAR}'}",
            "-p",
            "harmful.Requests",
            "--sample",
            "2",
            "--store",
            str(db),
        )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "error: rest:inhouse header X-Api-Key needs the environment variable REDLINE_TEST_ABSENT_VAR, which is not set"
    )
    assert run_count(db) == 0 and server.requests == []


# -- family options ----------------------------------------------------------------------------------
def test_an_option_the_family_does_not_read_is_an_error_not_silently_ignored(tmp_path):
    path = tmp_path / "scan.yaml"
    path.write_text("model: openai:m\ngenerator: {temperature: 0, logprobs: true}\n")
    with pytest.raises(ConfigError) as info:
        build_scan_config(load_config(path), {}, {})
    message = str(info.value)
    assert message.startswith(f"{path}: generator: the openai generator does not take option 'logprobs'")
    assert "extra_body" in message and "\n" not in message
    with pytest.raises(ConfigError, match=r"^--base-url: the hf generator does not take option 'base_url'"):
        build_scan_config({}, {"model": "hf:/models/x"}, {"base_url": "http://127.0.0.1:1/v1"})
    with pytest.raises(ConfigError, match=r"^--gen-opt: the llamacpp generator does not take option 'batch_size'"):
        build_scan_config({}, {"model": "llamacpp:/m.gguf"}, parse_gen_opts(["batch_size=4"]))
    # every family takes what its docstring promises; third-party families take anything
    for model, options in [
        ("openai:m", ["stop=[END]", "seed=1", "api=completions", "headers={X-A: b}", "max_retry_after=5"]),
        ("rest:n", ["url=http://h/x", "body={q: '{prompt}'}", "response_path=a", "method=PUT", "rpm=60"]),
        ("litellm:p/m", ["stop=[x]", "seed=2", "extra_body={a: 1}", "max_retry_after=3"]),
        ("llamacpp:/m.gguf", ["n_ctx=512", "n_threads=2", "n_gpu_layers=0", "chat_format=chatml"]),
        ("hf:/m", ["device=cpu", "batch_size=4", "batch_wait=0", "gguf_file=m.gguf", "system_prompt=hi"]),
        ("test.echo", ["delay=0.1", "max_tokens=8", "temperature=0", "top_p=1", "seed=3"]),
    ]:
        build_scan_config({}, {"model": model}, parse_gen_opts(options))


# -- optional extras and local models: one line, before a run exists --------------------------------
@pytest.mark.parametrize(
    "model, message",
    [
        ("litellm:anthropic/claude-3-haiku", "error: litellm is not installed: pip install 'redline[litellm]'"),
        ("llamacpp:{tmp}/model.gguf", "error: llama-cpp-python is not installed: pip install 'redline[llamacpp]'"),
        ("hf:{tmp}/absent-model", "error: hf: no model at {tmp}/absent-model (no such file or folder)"),
        ("rest:x", "error: rest:x: set response_path to where the text is in the answer"),  # printed verbatim
    ],
)
def test_unusable_backends_are_one_error_line_and_leave_no_run(tmp_path, model, message):
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    db = tmp_path / "s.db"
    proc = run_cli(
        "scan",
        "-m",
        model.format(tmp=tmp_path),
        "-p",
        "harmful.Requests",
        "--sample",
        "1",
        "--store",
        str(db),
        timeout=60,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message.format(tmp=tmp_path)), proc.stderr
    assert run_count(db) == 0


async def test_litellm_through_the_harness_with_passthrough_options(tmp_path, monkeypatch):
    calls = []

    async def acompletion(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            error = type("RateLimitError", (Exception,), {})("slow down")
            error.status_code = 429
            error.response = types.SimpleNamespace(headers={"retry-after": "3600"})  # capped below
            raise error
        if kwargs.get("api_key") and len(calls) == 2:
            raise type("BadRequestError", (Exception,), {})(f"invalid request for key {kwargs['api_key']}")
        return {"choices": [{"message": {"content": "no"}}]}

    monkeypatch.setitem(sys.modules, "litellm", types.SimpleNamespace(acompletion=acompletion))
    monkeypatch.setenv("PROVIDER_KEY", SECRET)
    store = Store(tmp_path / "s.db")
    config = ScanConfig(
        model="litellm:p/m",
        probes="harmful.Requests",
        sample=3,
        concurrency=1,
        generator_options={
            "stop": ["END"],
            "seed": 5,
            "api_key_env": "PROVIDER_KEY",
            "max_retry_after": 0.01,
            "backoff_base": 0.01,
        },
    )
    run_id = await scan(config, store)
    assert {c["stop"] == ["END"] and c["seed"] == 5 for c in calls} == {True}
    errors = [a["notes"].get("error") for a in store.iter_attempt_dicts(run_id)]
    assert sum(e is not None for e in errors) == 1
    assert SECRET not in json.dumps(errors) and "***" in json.dumps(errors)
    assert SECRET not in store_text(tmp_path / "s.db")
    store.close()


async def test_llamacpp_through_the_harness_with_a_fake_module(tmp_path, monkeypatch):
    class Llama:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

        def create_chat_completion(self, messages, **kwargs):
            return {"choices": [{"message": {"content": "I cannot help with that."}}]}

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=Llama))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    store = Store(tmp_path / "s.db")
    config = build_scan_config(
        {},
        {"model": f"llamacpp:{model}", "probes": "harmful.Requests", "sample": 2},
        parse_gen_opts(["n_ctx=256", "chat_format=chatml"]),
    )
    run_id = await scan(config, store)
    attempts = list(store.iter_attempt_dicts(run_id))
    assert len(attempts) == 2 and all(a["outputs"][0]["text"] == "I cannot help with that." for a in attempts)
    store.close()


# -- a tiny transformers model built here -----------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    from helpers.tiny_lm import build_tiny_lm

    return build_tiny_lm(tmp_path_factory.mktemp("tiny") / "tiny-lm")


async def test_hf_local_folder_batches_concurrent_requests_with_its_chat_template(tiny_lm):
    import asyncio

    gen = get_generator(
        f"hf:{tiny_lm}",
        max_tokens=3,
        temperature=0,
        batch_size=8,
        batch_wait=0.2,
        device="cpu",
        system_prompt="Be brief.",
    )
    batches: list[int] = []
    texts: list[str] = []
    try:
        await gen.start()
        assert gen.batcher is not None  # a Llama: continuous batching
        chat_text, decode = gen._chat_text, gen.batcher._decode

        def spy_text(conversation):
            texts.append(chat_text(conversation))
            return texts[-1]

        def spy_decode():
            batches.append(gen.batcher.running)
            decode()

        gen._chat_text, gen.batcher._decode = spy_text, spy_decode
        results = await asyncio.gather(*(gen.generate(conv(f"prompt {i}"), 2) for i in range(3)))
    finally:
        await gen.aclose()
    assert [len(r) for r in results] == [2, 2, 2] and all(isinstance(o.text, str) for r in results for o in r)
    assert batches and max(batches) == 6  # three concurrent requests × 2 generations: one batch of 6 rows
    assert (
        texts[0]
        == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nprompt 0<|im_end|>\n<|im_start|>assistant\n"
    )
    assert results[0][0].text == results[0][1].text  # greedy: the same answer twice


def test_cli_hf_from_a_yaml_config(tiny_lm, tmp_path, capsys):
    """``redline scan --config`` in this process (torch is already imported: the test stays fast)."""
    from redline.cli.main import main

    config = tmp_path / "local.yaml"
    config.write_text(
        textwrap.dedent(f"""
        model: hf:{tiny_lm}
        generator: {{max_tokens: 4, temperature: 0, device: cpu, batch_size: 4}}
        probes: [harmful.Requests]
        sample: 3
        generations: 2
    """)
    )
    db = tmp_path / "s.db"
    with pytest.raises(SystemExit) as exit_info:
        main(["scan", "--config", str(config), "--store", str(db), "--json"])
    captured = capsys.readouterr()
    assert exit_info.value.code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["model"] == f"hf:{tiny_lm}" and summary["status"] == "complete"
    assert summary["probes"][0]["attempts"] == 3 and summary["probes"][0]["outputs"] == 6
    assert summary["probes"][0]["errored"] == 0
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM cache").fetchone()[0] == 6


async def test_hf_dtype_loads_the_weights_in_that_precision_and_the_model_answers(tiny_lm):
    import torch

    gen = get_generator(f"hf:{tiny_lm}", max_tokens=3, temperature=0, device="cpu", dtype="bfloat16")
    try:
        await gen.start()
        assert {p.dtype for p in gen._model.parameters()} == {torch.bfloat16}
        (output,) = await gen.generate(conv("hello"), 1)
    finally:
        await gen.aclose()
    assert isinstance(output.text, str)
    assert get_generator(f"hf:{tiny_lm}").dtype == "float32"


def test_hf_dtype_refuses_a_type_it_does_not_know_with_one_line():
    with pytest.raises(GeneratorUnavailable, match="dtype must be float32, bfloat16 or float16"):
        get_generator("hf:some/model", dtype="int8")
