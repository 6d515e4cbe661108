"""Every remote request carries an output length: the default, a probe's larger need, or
``--max-tokens`` over both; the request's timeout stretches with it, and the response cache keeps
outputs asked for at a raised length apart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, get_generator
from redline.generators.cache import CachedGenerator
from redline.generators.output import DEFAULT_MAX_TOKENS, needing, output_need
from redline.probes import get_probe


def conv(text: str = "hi") -> Conversation:
    return Conversation(turns=[Turn("user", Message(text=text))])


@pytest.mark.parametrize("family", ["openai", "openai-completions", "ollama"])
async def test_every_request_of_an_openai_style_family_carries_the_default_max_tokens(family):
    with MockOpenAI() as server:
        gen = get_generator(f"{family}:m", base_url=server.base_url)
        await gen.generate(conv(), 1)
        await gen.generate(conv("again"), 2)
        await gen.aclose()
    assert server.requests and all(body["max_tokens"] == DEFAULT_MAX_TOKENS for body in server.requests)


async def test_max_tokens_given_is_sent_as_given_even_where_a_probe_needs_more():
    with MockOpenAI() as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_tokens=40)
        with needing(1000):
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert [body["max_tokens"] for body in server.requests] == [40]


async def test_a_probe_that_needs_a_longer_output_asks_for_it_and_only_for_its_own_requests():
    with MockOpenAI() as server:
        gen = get_generator("openai:m", base_url=server.base_url)
        await get_probe("consumption.Repetition", sample=2).run(gen)
        await get_probe("harmful.Requests", sample=2).run(gen)
        await gen.aclose()
    asked = {body["messages"][-1]["content"]: body["max_tokens"] for body in server.requests}
    repetition = {
        a.prompt_view().to_openai()[-1]["content"]
        for a in get_probe("consumption.Repetition", sample=2).create_attempts()
    }
    assert repetition and all(asked[text] == 512 for text in repetition)
    others = [tokens for text, tokens in asked.items() if text not in repetition]
    assert others and set(others) == {DEFAULT_MAX_TOKENS}
    assert output_need() is None  # nothing leaks out of the probe's requests


async def test_a_rest_template_receives_the_max_tokens_of_the_request():
    template = {"model": "{model}", "messages": "{messages}", "max_tokens": "{max_tokens}"}
    with MockOpenAI() as server:
        gen = get_generator(
            "rest:x",
            url=server.base_url + "/chat/completions",
            body=template,
            response_path="choices.0.message.content",
        )
        await gen.generate(conv(), 1)
        with needing(700):
            await gen.generate(conv("long"), 1)
        await gen.aclose()
    assert [body["max_tokens"] for body in server.requests] == [DEFAULT_MAX_TOKENS, 700]


def test_a_litellm_call_carries_max_tokens_and_a_timeout_that_fits_it():
    gen = get_generator("litellm:openai/m")
    assert gen._kwargs(conv(), 1)["max_tokens"] == DEFAULT_MAX_TOKENS
    with needing(DEFAULT_MAX_TOKENS * 2):
        kwargs = gen._kwargs(conv(), 1)
    assert kwargs["max_tokens"] == DEFAULT_MAX_TOKENS * 2 and kwargs["timeout"] == 2 * gen.timeout
    assert get_generator("litellm:openai/m", max_tokens=9)._kwargs(conv(), 1)["max_tokens"] == 9


def test_the_timeout_stretches_with_the_output_asked_for_unless_one_is_given():
    gen = get_generator("openai:m")
    assert gen.request_timeout(DEFAULT_MAX_TOKENS) == gen.request_timeout(10) == 60.0
    assert gen.request_timeout(DEFAULT_MAX_TOKENS * 3) == 180.0
    assert get_generator("openai:m", timeout=5).request_timeout(DEFAULT_MAX_TOKENS * 3) == 5.0


async def test_an_endpoint_that_wants_max_completion_tokens_gets_it_from_then_on():
    def refuse(i: int, body: dict) -> Any:
        if "max_tokens" in body:
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'"
            )
            return (400, {}, '{"error": {"message": "' + message + '"}}')
        return None

    with MockOpenAI(faults=refuse) as server:
        gen = get_generator("openai:o-model", base_url=server.base_url)
        together = await asyncio.gather(gen.generate(conv("one"), 1), gen.generate(conv("two"), 1))
        (later,) = await gen.generate(conv("three"), 1)
        await gen.aclose()
    assert [out.text for (out,) in together] == ["one", "two"] and later.text == "three"
    refused = [body for body in server.requests if "max_tokens" in body]
    assert len(refused) == 2  # the two sent together, each sent once more with the other field
    sent = [body for body in server.requests if "max_tokens" not in body]
    assert [body["max_completion_tokens"] for body in sent] == [DEFAULT_MAX_TOKENS] * 3


async def test_another_refusal_of_a_bad_request_is_not_retried_with_another_field():
    with MockOpenAI(faults=lambda i, body: (400, {}, '{"error": {"message": "bad prompt"}}')) as server:
        gen = get_generator("openai:m", base_url=server.base_url)
        with pytest.raises(GeneratorError, match="bad prompt"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert len(server.requests) == 1


class DictCache:
    def __init__(self) -> None:
        self.entries: dict[str, list[Any]] = {}

    def cache_get(self, key: str) -> list[Any] | None:
        return self.entries.get(key)

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        self.entries[key] = outputs


async def test_outputs_asked_for_at_a_raised_length_are_cached_apart():
    backend = DictCache()
    with MockOpenAI() as server:
        gen = CachedGenerator(get_generator("openai:m", base_url=server.base_url), backend)
        await gen.generate(conv(), 1)
        with needing(DEFAULT_MAX_TOKENS * 2):
            await gen.generate(conv(), 1)
            await gen.generate(conv(), 1)
        await gen.generate(conv(), 1)
        await gen.aclose()
    assert [body["max_tokens"] for body in server.requests] == [DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS * 2]
    assert gen.hits == 2 and gen.misses == 2
