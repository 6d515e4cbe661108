"""The response cache: identical requests (model, settings, messages, generation index,
repetition) are answered from the store; a re-run spends nothing twice; --no-cache turns it off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Tool, ToolCall, Turn
from redline.engine import ScanConfig, scan
from redline.generators import GeneratorError, get_generator
from redline.generators.base import Generator
from redline.generators.cache import CACHE_SCOPE, CachedGenerator, key_text, request_keys
from redline.report.summary import run_summary
from redline.store import Store


class Numbered(Generator):
    """Answers ``"<prompt> #k"`` with a global counter k, so every fresh output is distinct."""

    family = "test.numbered"

    def __init__(self, model: str = "", **options):
        super().__init__(model, **options)
        self.calls: list[int] = []
        self.counter = 0
        self.fail = False

    async def generate(self, conversation, n=1):
        if self.fail:
            raise GeneratorError("HTTP 500 (after 3 tries)")
        self.calls.append(n)
        out = []
        for _ in range(n):
            self.counter += 1
            out.append(Message(f"{conversation.last_message('user').text} #{self.counter}"))
        return out


def conv(text: str) -> Conversation:
    return Conversation([Turn("user", Message(text))])


async def test_identical_requests_are_answered_from_the_store(tmp_path):
    store = Store(tmp_path / "c.db")
    inner = Numbered(temperature=0.7)
    gen = CachedGenerator(inner, store)
    first = [m.text for m in await gen.generate(conv("a"), 1)]
    again = [m.text for m in await gen.generate(conv("a"), 1)]
    assert first == again == ["a #1"] and inner.calls == [1]
    # generations=3 after generations=1 reuses output 0 and asks for the two missing ones
    three = [m.text for m in await gen.generate(conv("a"), 3)]
    assert three == ["a #1", "a #2", "a #3"] and inner.calls == [1, 2]
    assert gen.hits == 2 and gen.misses == 3
    # other messages, other answer-changing settings, another repetition: not the same request
    await gen.generate(conv("b"), 1)
    await CachedGenerator(Numbered(temperature=0.0), store).generate(conv("a"), 1)
    token = CACHE_SCOPE.set("1")
    try:
        await gen.generate(conv("a"), 1)
    finally:
        CACHE_SCOPE.reset(token)
    assert inner.calls == [1, 2, 1, 1]
    # transport settings do not change answers: still a hit
    other = Numbered(temperature=0.7, timeout=3, max_retries=9, concurrency=2)
    assert [m.text for m in await CachedGenerator(other, store).generate(conv("a"), 1)] == ["a #1"]
    assert other.calls == []


async def test_errors_are_not_cached(tmp_path):
    store = Store(tmp_path / "c.db")
    inner = Numbered()
    gen = CachedGenerator(inner, store)
    inner.fail = True
    with pytest.raises(GeneratorError):
        await gen.generate(conv("x"), 1)
    inner.fail = False
    assert [m.text for m in await gen.generate(conv("x"), 1)] == ["x #1"]


async def test_a_rerun_spends_nothing_and_no_cache_spends_again(tmp_path):
    store = Store(tmp_path / "r.db")
    gen = Numbered()
    config = ScanConfig(model="test.numbered", probes="harmful.Requests", generations=2)
    first = await scan(config, store, generator=gen)
    assert sum(gen.calls) == 48
    second = await scan(config, store, generator=gen)
    assert sum(gen.calls) == 48  # everything came from the cache
    texts = lambda run: [[o.text for o in a.outputs] for a in store.iter_attempts(run)]
    assert texts(first) == texts(second)
    assert run_summary(store, first)["probes"][0]["failed"] == run_summary(store, second)["probes"][0]["failed"]
    await scan(
        ScanConfig(model="test.numbered", probes="harmful.Requests", generations=2, cache=False), store, generator=gen
    )
    assert sum(gen.calls) == 96


async def test_repetitions_stay_independent_samples(tmp_path):
    store = Store(tmp_path / "r.db")
    gen = Numbered()
    run = await scan(
        ScanConfig(model="test.numbered", probes="harmful.Requests", sample=2, num_repetitions=3), store, generator=gen
    )
    outputs = [a.outputs[0].text for a in store.iter_attempts(run)]
    assert len(outputs) == 6 and len(set(outputs)) == 6  # three repetitions, three fresh answers each
    await scan(
        ScanConfig(model="test.numbered", probes="harmful.Requests", sample=2, num_repetitions=3), store, generator=gen
    )
    assert len(gen.calls) == 6  # and the re-run reuses all six


def test_cli_rerun_sends_no_request_and_no_cache_does(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with MockOpenAI() as server:

        def run(*extra):
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "redline",
                    "scan",
                    "--model",
                    "openai:m",
                    "--base-url",
                    server.base_url,
                    "--probes",
                    "harmful.Requests",
                    "--sample",
                    "6",
                    "--store",
                    str(tmp_path / "cli.db"),
                    "--json",
                    *extra,
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout)

        first = run()
        assert len(server.requests) == 6
        second = run()
        assert len(server.requests) == 6
        assert first["probes"][0]["failed"] == second["probes"][0]["failed"]
        run("--no-cache")
        assert len(server.requests) == 12


class LocalModel(Numbered):
    """A local generator whose start() is expensive (counted)."""

    family = "test.local"
    local = True

    def __init__(self, model: str = "", **options):
        super().__init__(model, **options)
        self.starts = 0

    async def start(self):
        self.starts += 1


async def test_a_cached_rerun_does_not_load_a_local_model(tmp_path):
    store = Store(tmp_path / "l.db")
    config = ScanConfig(model="test.local", probes="harmful.Requests", sample=3)
    first = LocalModel()
    await scan(config, store, generator=first)
    assert first.starts == 1 and len(first.calls) == 3
    again = LocalModel()
    await scan(config, store, generator=again)
    assert again.starts == 0 and again.calls == []  # everything answered from the cache
    await scan(ScanConfig(model="test.local", probes="harmful.Requests", sample=3, cache=False), store, generator=again)
    assert again.starts == 1


async def test_outputs_from_a_cache_filled_before_masking_are_masked(tmp_path, monkeypatch):
    """A store written by an earlier version may hold a key an endpoint echoed: a hit is masked
    with the generator's secrets as a fresh output is."""
    key = "sk-cached-echo-0123456789"
    monkeypatch.setenv("CACHE_TEST_KEY", key)
    with MockOpenAI(responder=lambda messages, body: "fresh") as server:
        inner = get_generator("openai:m", base_url=server.base_url, api_key_env="CACHE_TEST_KEY")
        store = Store(tmp_path / "c.db")
        cached = CachedGenerator(inner, store)
        (fresh,) = await cached.generate(conv("p"), 1)
        (cache_key,) = [row[0] for row in store._db.execute("SELECT key FROM cache")]
        store.cache_put(cache_key, [Message(f"leaked {key}").as_dict()])  # as an old version stored it
        (hit,) = await cached.generate(conv("p"), 1)
        await cached.aclose()
        store.close()
    assert fresh.text == "fresh" and hit.text == "leaked ***" and cached.hits == 1


class _RecordingBackend:
    """A cache backend that holds nothing and records the keys it is asked for."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def cache_get(self, key):
        self.keys.append(key)
        return None

    def cache_put(self, key, outputs):
        pass


# Keys computed by redline before the key text had one writer: the caches of stores written then
# must still be hit, so these may never change.
_IDENTITY = '{"generator": "openai:gpt-4o-mini", "settings": {"max_tokens": 150, "temperature": 0.7}}'
_KNOWN_KEYS = {
    "plain": (
        Conversation([Turn("system", Message("Be brief.")), Turn("user", Message("How do I pick a lock?"))]),
        "e7ce727cfd3f6d90b20134d6dcb6fc397c73160585fe10e2c1242a750ce73f0e",
    ),
    "not ascii": (
        Conversation([Turn("user", Message('Qu\u00e9 "pasa"\n\U0001f600'))]),
        "73260f5eb84fcbd76a2b454dae17169291538a19c043ba6dc806a059b3ffe86d",
    ),
    "attachment": (
        Conversation([Turn("user", Message("What is this?", data_path="img/cat.png"))]),
        "81a98ee34b80bf7704b81f20402219b5570d6c73bb4c6b6a2ba369fc478943bf",
    ),
    "tool call": (
        Conversation(
            [
                Turn("user", Message("Weather?")),
                Turn(
                    "assistant",
                    Message("", tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})]),
                ),
                Turn("tool", Message("sunny", tool_call_id="c1")),
            ]
        ),
        "c3e5dd7da76ade9e69d3915f1b41e8f659c74c2aba456be5fd6ae3263c34c33c",
    ),
    "tools offered": (
        Conversation(
            [Turn("user", Message("Search cats"))],
            tools=[
                Tool(
                    name="search",
                    description="web search",
                    parameters={"type": "object", "properties": {"q": {"type": "string"}}},
                )
            ],
        ),
        "d563ec2075eeefd57e40acf4a25c8f8479332fc318e512ad07a7e9b81351f65d",
    ),
}


@pytest.mark.parametrize("shape", sorted(_KNOWN_KEYS))
def test_a_request_has_the_key_earlier_versions_gave_it(shape):
    conversation, key = _KNOWN_KEYS[shape]
    identity = key_text({"generator": "openai:gpt-4o-mini", "settings": {"temperature": 0.7, "max_tokens": 150}})
    assert identity == _IDENTITY
    keys = request_keys(identity, conversation, 2, "1")
    assert keys[0] == key
    assert keys[1] != key  # each generation has its own key


async def test_a_cached_generator_looks_up_the_keys_earlier_versions_stored():
    backend = _RecordingBackend()
    cached = CachedGenerator(get_generator("test.repeat"), backend)
    token = CACHE_SCOPE.set("0")
    try:
        await cached.generate(_KNOWN_KEYS["plain"][0], 2)
    finally:
        CACHE_SCOPE.reset(token)
    assert backend.keys == [
        "118c9e9b11b44f472125f4f2742385e0ac6a13b703a1bb1fa28edf7261fd608d",
        "cb24e3d7902030c4c23f34613de68350204ef59f07576a474a9772710e55136d",
    ]
