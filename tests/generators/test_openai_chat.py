"""The OpenAI-compatible generator against a server the test starts on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator


def conv(text="hello"):
    return Conversation([Turn("system", Message("be brief")), Turn("user", Message(text))])


async def test_generate_sends_chat_messages_and_returns_n_outputs():
    with MockOpenAI(responder=lambda msgs, body: f"re: {msgs[-1]['content']}") as server:
        gen = get_generator("openai:mock-model", base_url=server.base_url, max_tokens=17, temperature=0.3)
        outputs = await gen.generate(conv(), 3)
        await gen.aclose()
    assert [o.text for o in outputs] == ["re: hello"] * 3
    body = server.requests[0]
    assert body["model"] == "mock-model" and body["n"] == 3 and body["max_tokens"] == 17
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]


async def test_servers_ignoring_n_get_one_request_per_missing_output():
    with MockOpenAI(supports_n=False) as server:
        gen = get_generator("openai:m", base_url=server.base_url)
        outputs = await gen.generate(conv("x"), 3)
        await gen.aclose()
    assert [o.text for o in outputs] == ["x", "x", "x"] and len(server.requests) == 3


async def test_key_is_sent_as_bearer_from_the_named_variable(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test-123")
    with MockOpenAI() as server:
        gen = get_generator("openai:m", base_url=server.base_url, api_key_env="MY_KEY")
        await gen.generate(conv(), 1)
        await gen.aclose()
    assert server.headers[0].get("Authorization") == "Bearer sk-test-123"
    assert "sk-test-123" not in json.dumps(gen.settings())


async def test_retries_then_records_an_error_for_a_malformed_or_failing_server():
    with MockOpenAI(faults=lambda i, body: (200, {}, "not json")) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=1)
        with pytest.raises(GeneratorError, match="malformed response"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    with MockOpenAI(faults=lambda i, body: (503, {"retry-after": "0"}, "{}") if i < 2 else None) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=3)
        (out,) = await gen.generate(conv("ok"), 1)
        await gen.aclose()
    assert out.text == "ok" and len(server.requests) == 3


async def test_missing_key_for_the_default_endpoint_is_unavailable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(GeneratorUnavailable, match="missing API key"):
        await get_generator("openai:gpt-4o-mini").start()


def test_cli_scan_against_a_local_openai_compatible_server(tmp_path):
    refusal = "I'm sorry, but I can't help with that."
    with MockOpenAI(
        responder=lambda msgs, body: refusal if "bomb" in msgs[-1]["content"] else "Sure, here it is."
    ) as server:
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "redline",
                "scan",
                "--model",
                "openai:any",
                "--base-url",
                server.base_url,
                "--probes",
                "harmful.Requests",
                "--store",
                str(tmp_path / "o.db"),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["model"] == "openai:any"
    (entry,) = summary["probes"]
    bomb_prompts = sum(1 for r in server.requests if "bomb" in r["messages"][-1]["content"])
    complied = entry["metrics"]["compliance_rate"]
    assert entry["attempts"] == 24 and entry["measure"] == "harm"
    assert complied["value"] == pytest.approx((24 - bomb_prompts) / 24, abs=1e-6) and complied["n"] == 24
    assert entry["failed"] == 0  # "Sure, here it is." complies and delivers nothing


async def test_images_are_sent_as_content_parts_and_text_only_models_refuse_them(tmp_path):
    import base64

    png = tmp_path / "cat.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    conversation = Conversation(
        [
            Turn("user", Message("What is in the picture?", data_path=str(png))),
            Turn("assistant", Message("A cat.")),
            Turn("user", Message("And here?", data_path="https://example.org/dog.jpg")),
        ]
    )
    with MockOpenAI(responder=lambda msgs, body: "seen") as server:
        gen = get_generator("openai:vision", base_url=server.base_url)
        (output,) = await gen.generate(conversation, 1)
        await gen.aclose()
    assert output.text == "seen"
    first, answer, last = server.requests[0]["messages"]
    assert first["content"] == [
        {"type": "text", "text": "What is in the picture?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()},
        },
    ]
    assert answer == {"role": "assistant", "content": "A cat."}
    assert last["content"][1] == {"type": "image_url", "image_url": {"url": "https://example.org/dog.jpg"}}

    # a text-only backend must not silently drop the image
    from redline.attempt import AttemptError

    with pytest.raises(AttemptError, match="takes text only"):
        conversation.to_openai()
    with pytest.raises(AttemptError, match="not an image"):
        Conversation([Turn("user", Message("read", data_path=str(tmp_path / "notes.txt")))]).to_openai(attachments=True)
