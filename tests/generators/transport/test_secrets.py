"""Secrets in URLs and in answers: masked in messages, settings and every output, where outputs
enter redline (RemoteGenerator.generate), against a local server that echoes the request."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator
from redline.generators.transport.secrets import (
    has_masked_userinfo,
    mask_url,
    redact,
    redact_data,
    url_secrets,
)

KEY = "sk-test-echoed-key-0123456789"
HEADER_SECRET = "hdr-secret-abcdef987654"
PASSWORD = "pw-hunter2-secret"


def conv(text: str = "hi") -> Conversation:
    return Conversation([Turn("user", Message(text))])


def test_mask_url_masks_passwords_and_lone_tokens_anywhere_in_a_text():
    assert mask_url("http://bob:pw@127.0.0.1:80/v1") == "http://bob:***@127.0.0.1:80/v1"
    assert (
        mask_url("cannot reach https://bob:p@ss@host/v1 (refused)") == "cannot reach https://bob:***@host/v1 (refused)"
    )
    assert mask_url("https://ghp_token@host/x and http://h/a@b") == "https://***@host/x and http://h/a@b"
    assert mask_url("mail bob@example.com, http://host/v1") == "mail bob@example.com, http://host/v1"
    assert mask_url("http://bob:@host/") == "http://bob:@host/"  # no password: nothing to hide


def test_has_masked_userinfo():
    assert has_masked_userinfo("http://bob:***@host/v1") and has_masked_userinfo("http://***@host")
    assert not has_masked_userinfo("http://bob:pw@host/v1") and not has_masked_userinfo("http://host/v1")


def test_url_secrets_include_the_decoded_password_and_basic_credentials():
    found = url_secrets("http://bob:p%40ss@host/v1")
    assert "p%40ss" in found and "p@ss" in found
    assert base64.b64encode(b"bob:p@ss").decode() in found
    assert url_secrets("http://host/v1") == [] and url_secrets(None) == []


def test_redact_masks_the_longest_secret_first_and_skips_short_ones():
    assert redact("key sk-abcdefgh and sk-abcd", ["sk-abcd", "sk-abcdefgh"]) == "key *** and ***"
    assert redact("a test of test", ["test"], minimum=8) == "a test of test"
    assert redact_data({"k": [f"x {KEY}", 3, None]}, [KEY]) == {"k": ["x ***", 3, None]}


async def test_outputs_that_echo_the_key_a_header_and_the_url_password_are_masked(monkeypatch):
    monkeypatch.setenv("ECHO_KEY", KEY)
    monkeypatch.setenv("ECHO_HEADER", HEADER_SECRET)
    server = MockOpenAI(responder=lambda messages, body: json.dumps(server.headers[-1]))
    with server:
        plain = get_generator(
            "openai:m", base_url=server.base_url, api_key_env="ECHO_KEY", headers={"X-Custom": "${ECHO_HEADER}"}
        )
        (out,) = await plain.generate(conv(), 1)
        await plain.aclose()
        assert server.headers[-1]["Authorization"] == f"Bearer {KEY}"  # sent, echoed...
        assert KEY not in out.text and HEADER_SECRET not in out.text and out.text.count("***") == 2  # ...masked

        with_password = server.base_url.replace("http://", f"http://bob:{PASSWORD}@")
        gen = get_generator("openai:m", base_url=with_password)
        outputs = await gen.generate(conv(), 2)
        await gen.aclose()
    basic = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    assert server.headers[-1]["Authorization"] == f"Basic {basic}"
    for message in outputs:
        assert message is not None and basic not in message.text and "Basic ***" in message.text
    assert gen.settings()["base_url"] == mask_url(with_password)
    assert PASSWORD not in json.dumps(gen.settings())


async def test_short_placeholder_keys_and_the_models_own_credentials_are_kept_in_outputs(monkeypatch):
    monkeypatch.setenv("PLACEHOLDER_KEY", "test")
    answer = "this is a test: ftp://anonymous:guest-password@ftp.example.com"
    with MockOpenAI(responder=lambda messages, body: answer) as server:
        gen = get_generator("openai:m", base_url=server.base_url, api_key_env="PLACEHOLDER_KEY")
        (out,) = await gen.generate(conv(), 1)
        await gen.aclose()
    assert out.text == answer


async def test_error_messages_never_hold_the_url_password(monkeypatch):
    real_sleep = asyncio.sleep
    monkeypatch.setattr(asyncio, "sleep", lambda delay: real_sleep(0))  # the reachability check's pauses
    gen = get_generator("openai:m", base_url=f"http://bob:{PASSWORD}@127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(GeneratorUnavailable) as info:
        await gen.start()
    assert PASSWORD not in str(info.value) and "bob:***@127.0.0.1:9" in str(info.value)

    with MockOpenAI(faults=lambda i, body: (200, {}, json.dumps({"nothing": "here"}))) as server:
        url = server.base_url.replace("http://", f"http://bob:{PASSWORD}@")
        gen = get_generator("openai:m", base_url=url, max_retries=0)
        with pytest.raises(GeneratorError) as error:
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert "malformed response from http://bob:***@127.0.0.1" in str(error.value)
    assert PASSWORD not in str(error.value)
