"""The generic REST generator: body templates, ${ENV} headers, response paths, faults."""

from __future__ import annotations

import json

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator
from redline.generators.rest import extract, parse_path, render_body
from redline.store.sqlite import _check_no_secrets


def conv(text: str, system: str | None = None) -> Conversation:
    turns = [Turn("system", Message(system))] if system else []
    return Conversation(turns + [Turn("user", Message(text))])


class Inhouse(MockOpenAI):
    """An in-house API: {"input": ..., "history": [...]} → {"result": {"outputs": [{"text": ...}]}}."""

    def answer(self, path, body):
        return {"result": {"outputs": [{"text": "echo " + str(body.get("input"))}, {"text": "second"}]}}


def test_text_template_json_escapes_every_placeholder():
    template = '{"q": "{prompt}", "sys": "{system}", "history": {messages}, "max": {max_tokens}, "m": "{model}"}'
    values = {
        "prompt": 'say "hi"\n\\ now',
        "system": "",
        "messages": [{"role": "user", "content": 'say "hi"'}],
        "model": "bot",
        "max_tokens": None,
        "temperature": 0.5,
    }
    body = json.loads(render_body(template, values))
    assert body == {"q": 'say "hi"\n\\ now', "sys": "", "history": values["messages"], "max": None, "m": "bot"}


def test_structured_template_puts_values_in_place():
    template = {"input": "Q: {prompt}", "history": "{messages}", "params": {"t": "{temperature}"}, "n": 1}
    values = {
        "prompt": "x",
        "system": "",
        "messages": [{"role": "user", "content": "x"}],
        "model": "m",
        "max_tokens": 5,
        "temperature": 0.2,
    }
    assert json.loads(render_body(template, values)) == {
        "input": "Q: x",
        "history": values["messages"],
        "params": {"t": 0.2},
        "n": 1,
    }


@pytest.mark.parametrize(
    "path, expected",
    [
        ("choices.0.message.content", ["a"]),
        ("$.choices[0].message.content", ["a"]),
        ("choices[*].message.content", ["a", "b"]),
        ("meta['odd.key']", [1]),
        ("choices.5.message", []),
        ("missing.path", []),
    ],
)
def test_response_paths(path, expected):
    data = {"choices": [{"message": {"content": "a"}}, {"message": {"content": "b"}}], "meta": {"odd.key": 1}}
    assert extract(data, parse_path(path)) == expected


def test_unreadable_path_is_rejected():
    with pytest.raises(ValueError, match="cannot read"):
        parse_path("a..b")


async def test_rest_generator_end_to_end_with_env_headers(monkeypatch):
    monkeypatch.setenv("INHOUSE_TOKEN", "tok-123")
    with Inhouse() as server:
        gen = get_generator(
            "rest:inhouse",
            url=f"http://127.0.0.1:{server.port}/generate",
            body='{"input": "{prompt}", "history": {messages}}',
            headers={"Authorization": "Bearer ${INHOUSE_TOKEN}", "X-Team": "red"},
            response_path="result.outputs[0].text",
            max_retries=0,
        )
        outputs = await gen.generate(conv('a "quoted" prompt', system="sys"), 2)
        await gen.aclose()
    assert [o.text for o in outputs] == ['echo a "quoted" prompt'] * 2
    assert len(server.requests) == 2  # one request per output
    assert server.requests[0]["history"][0] == {"role": "system", "content": "sys"}
    assert server.headers[0]["Authorization"] == "Bearer tok-123" and server.headers[0]["X-Team"] == "red"
    settings = gen.settings()
    assert "tok-123" not in json.dumps(settings) and settings["headers"]["Authorization"] == "Bearer ${INHOUSE_TOKEN}"
    _check_no_secrets({"scan": {"generator_options": {"headers": settings["headers"]}}})  # storable


async def test_wildcard_path_gives_several_outputs_from_one_answer():
    with Inhouse() as server:
        gen = get_generator(
            "rest:x", url=server.base_url + "/gen", body={"input": "{prompt}"}, response_path="result.outputs[*].text"
        )
        outputs = await gen.generate(conv("p"), 2)
        await gen.aclose()
    assert [o.text for o in outputs] == ["echo p", "second"] and len(server.requests) == 1


async def test_text_responses_and_put(monkeypatch):
    class Plain(MockOpenAI):
        def answer(self, path, body):
            return "plain text answer"

    with Plain() as server:
        gen = get_generator("rest:t", url=server.base_url + "/t", method="PUT", response_format="text")
        (out,) = await gen.generate(conv("p"), 1)
        await gen.aclose()
    assert out.text == '"plain text answer"'  # the raw body, as sent


async def test_missing_text_is_a_malformed_answer_retried_like_a_5xx():
    faults = lambda i, body: (500, {}, "{}") if i == 0 else None
    with Inhouse(faults=faults) as server:
        gen = get_generator(
            "rest:x", url=server.base_url + "/g", response_path="result.nothing", backoff_base=0.01, max_retries=2
        )
        with pytest.raises(GeneratorError, match=r"nothing at response_path 'result.nothing'.* \(after 3 tries\)$"):
            await gen.generate(conv("p"), 1)
        await gen.aclose()
    assert len(server.requests) == 3


async def test_a_garbled_answer_then_a_good_one_is_an_output():
    faults = lambda i, body: (200, {}, '{"result": {"te') if i == 0 else None
    with Inhouse(faults=faults) as server:
        gen = get_generator(
            "rest:x",
            url=server.base_url + "/g",
            response_path="result.outputs[0].text",
            backoff_base=0.01,
            max_retries=2,
        )
        (out,) = await gen.generate(conv("p"), 1)
        await gen.aclose()
    assert out.text == "echo None" and len(server.requests) == 2


async def test_configuration_mistakes_are_one_line_errors(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(GeneratorUnavailable, match="set response_path"):
        get_generator("rest:x", url="http://127.0.0.1:9/x")
    with pytest.raises(GeneratorUnavailable, match="method must be POST or PUT"):
        get_generator("rest:x", url="http://127.0.0.1:9/x", response_path="a", method="DELETE")
    with pytest.raises(GeneratorUnavailable, match="set the url option"):
        await get_generator("rest:x", response_path="a").start()
    with pytest.raises(GeneratorUnavailable, match="needs a name"):
        await get_generator("rest", url="http://127.0.0.1:9/x", response_path="a").start()
    with pytest.raises(GeneratorUnavailable, match="does not give valid JSON"):
        await get_generator("rest:x", url="http://127.0.0.1:9/x", response_path="a", body='{"a": {prompt}}').start()
    with pytest.raises(GeneratorUnavailable, match="needs the environment variable NOT_SET_ANYWHERE"):
        await get_generator(
            "rest:x",
            url="http://127.0.0.1:9/x",
            response_path="a",
            headers={"Authorization": "Bearer ${NOT_SET_ANYWHERE}"},
        ).start()


async def test_env_variable_in_the_url_is_sent_but_never_recorded(monkeypatch):
    monkeypatch.setenv("INHOUSE_QUERY_KEY", "k-very-secret-123")
    # the server answers 500 with the full request line echoed back, as some servers do
    faults = lambda i, body: (500, {}, '{"error": "bad request to /g?key=k-very-secret-123"}')
    with Inhouse(faults=faults) as server:
        gen = get_generator(
            "rest:q",
            url=server.base_url + "/g?key=${INHOUSE_QUERY_KEY}",
            response_path="result.outputs.0.text",
            backoff_base=0.01,
            max_retries=1,
        )
        with pytest.raises(GeneratorError) as info:
            await gen.generate(conv("p"), 1)
        await gen.aclose()
    assert server.paths[0] == "/v1/g?key=k-very-secret-123"  # the value went to the server
    assert "k-very-secret-123" not in str(info.value)  # ...and not into the recorded error
    assert "k-very-secret-123" not in json.dumps(gen.settings())
    monkeypatch.delenv("INHOUSE_QUERY_KEY")
    with pytest.raises(GeneratorUnavailable, match="INHOUSE_QUERY_KEY"):
        await get_generator("rest:q", url="http://127.0.0.1:9/g?key=${INHOUSE_QUERY_KEY}", response_path="a").start()
