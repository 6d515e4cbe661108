"""The base class's ``generate``: exactly ``n`` outputs from a backend's ``_generate`` requests,
whether the backend gives fewer, ignores ``n`` or gives more; and generators that override
``generate`` themselves (the original interface) keep working, cached or not."""

from __future__ import annotations

import asyncio

import pytest

from redline.attempt import Conversation, Message, Turn
from redline.errors import RedlineError
from redline.generators import GeneratorError, GeneratorUnavailable
from redline.generators.base import Generator
from redline.generators.cache import CachedGenerator
from redline.store import Store


def conv(text: str = "hi") -> Conversation:
    return Conversation([Turn("user", Message(text))])


class Scripted(Generator):
    """A backend whose request for ``n`` outputs gives ``answer(n)`` of them; records each ``n``
    asked for and the most requests in flight at once."""

    family = "test.scripted"

    def __init__(self, answer, supports_n: bool = True) -> None:
        super().__init__("m")
        self.answer = answer
        self.supports_n = supports_n
        self.asked: list[int] = []
        self.started = 0
        self.in_flight = 0
        self.peak = 0

    async def start(self) -> None:
        self.started += 1

    async def _generate(self, conversation, n):
        assert self.started, "start() comes before the first request"
        self.asked.append(n)
        number = len(self.asked)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0)  # let the other requests of the same call begin
        self.in_flight -= 1
        return [Message(f"{number}.{i}") for i in range(self.answer(n))]


async def test_a_backend_that_gives_fewer_than_asked_gets_single_requests_for_the_rest():
    gen = Scripted(lambda n: n - 1 if n > 1 else 1)
    outputs = await gen.generate(conv(), 4)
    assert len(outputs) == 4 and all(isinstance(o, Message) for o in outputs)
    assert gen.asked == [4, 1]
    assert [o.text for o in outputs[:3]] == ["1.0", "1.1", "1.2"] and outputs[3].text == "2.0"
    assert gen.supports_n  # it gave several: still worth asking for n at once
    await gen.generate(conv(), 3)
    assert gen.asked == [4, 1, 3, 1]


async def test_a_backend_that_ignores_n_is_asked_one_by_one_concurrently_and_remembered():
    gen = Scripted(lambda n: 1)
    outputs = await gen.generate(conv(), 3)
    assert [o.text for o in outputs] == ["1.0", "2.0", "3.0"]
    assert gen.asked == [3, 1, 1] and gen.peak == 2  # the two missing outputs were asked for together
    assert gen.supports_n is False
    gen.asked.clear()
    gen.peak = 0
    outputs = await gen.generate(conv(), 3)
    assert len(outputs) == 3 and gen.asked == [1, 1, 1] and gen.peak == 3
    assert Scripted(lambda n: 1).supports_n is True  # remembered per generator, not per class


async def test_a_backend_that_gives_more_than_asked_is_cut_to_n():
    gen = Scripted(lambda n: n + 2)
    assert [o.text for o in await gen.generate(conv(), 2)] == ["1.0", "1.1"]
    assert [o.text for o in await gen.generate(conv(), 1)] == ["2.0"]
    single = Scripted(lambda n: 3, supports_n=False)
    assert [o.text for o in await single.generate(conv(), 2)] == ["1.0", "2.0"]  # first of each answer
    assert single.asked == [1, 1]


async def test_without_supports_n_every_output_is_a_single_request_sent_together():
    gen = Scripted(lambda n: n, supports_n=False)
    outputs = await gen.generate(conv(), 3)
    assert len(outputs) == 3 and gen.asked == [1, 1, 1] and gen.peak == 3


async def test_an_empty_answer_is_a_missing_output_and_zero_outputs_cost_nothing():
    gen = Scripted(lambda n: 0)
    assert await gen.generate(conv(), 2) == [None, None]
    assert gen.asked == [2, 1, 1] and gen.supports_n is False
    gen.asked.clear()
    assert await gen.generate(conv(), 0) == [] and gen.asked == []


async def test_an_error_of_any_request_propagates():
    class Failing(Scripted):
        async def _generate(self, conversation, n):
            if n == 1:
                raise GeneratorError("HTTP 500 (after 5 tries)")
            return await super()._generate(conversation, n)

    with pytest.raises(GeneratorError, match="after 5 tries"):
        await Failing(lambda n: 1).generate(conv(), 2)


class OwnGenerate(Generator):
    """A third-party generator written against the original interface: ``generate`` only."""

    family = "acme.own"

    async def generate(self, conversation, n=1):
        return [Message(f"own {i}") for i in range(n)]


async def test_a_generator_that_overrides_generate_keeps_working_and_caches(tmp_path):
    gen = OwnGenerate("v1")
    assert [o.text for o in await gen.generate(conv(), 2)] == ["own 0", "own 1"]
    store = Store(tmp_path / "c.db")
    cached = CachedGenerator(gen, store)
    assert [o.text for o in await cached.generate(conv(), 2)] == ["own 0", "own 1"]
    assert [o.text for o in await cached.generate(conv(), 3)] == ["own 0", "own 1", "own 0"]
    assert cached.hits == 2 and cached.misses == 3
    store.close()


async def test_the_cache_asks_a_base_class_backend_only_for_the_missing_outputs(tmp_path):
    inner = Scripted(lambda n: 1)  # ignores n
    store = Store(tmp_path / "c.db")
    cached = CachedGenerator(inner, store)
    first = [o.text for o in await cached.generate(conv(), 2)]
    again = [o.text for o in await cached.generate(conv(), 3)]
    assert again[:2] == first and len(again) == 3
    assert inner.asked == [2, 1, 1]  # n=2 (one given, one single), then one single for the third
    store.close()


async def test_a_generator_with_neither_generate_nor_backend_says_so():
    with pytest.raises(NotImplementedError, match="implements neither _generate nor generate"):
        await Generator("m").generate(conv(), 1)


def test_generator_errors_are_redline_errors_and_still_runtime_errors():
    for cls in (GeneratorError, GeneratorUnavailable):
        assert issubclass(cls, RedlineError) and issubclass(cls, RuntimeError)
