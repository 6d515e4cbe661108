"""The shared fake generators of tests/fakes.py keep the promises their docstrings make: exactly
``n`` outputs, replies in script order, failures on the chosen requests, a record of every request."""

from __future__ import annotations

import asyncio

import pytest

from fakes import ScriptedGenerator, ScriptExhausted, graded_response, scripted_judge, system_text, user_text
from redline.attempt import Attempt, Conversation, Message, Turn
from redline.detectors.judge import Rubric
from redline.generators import GeneratorError, GeneratorUnavailable


def conv(text: str, system: str | None = None) -> Conversation:
    turns = [Turn("system", Message(system))] if system is not None else []
    return Conversation([*turns, Turn("user", Message(text))])


def texts(outputs: list[Message | None]) -> list[str | None]:
    return [None if o is None else o.text for o in outputs]


async def test_constant_reply_gives_exactly_n_outputs_and_records_each_request():
    gen = ScriptedGenerator("Sure.")
    assert texts(await gen.generate(conv("a"), 3)) == ["Sure."] * 3
    assert texts(await gen.generate(conv("b"))) == ["Sure."]
    assert all(isinstance(o, Message) for o in await gen.generate(conv("c"), 2))
    assert gen.prompts == ["a", "b", "c"] and gen.calls[0].turns[0].content.text == "a"


async def test_function_reply_is_called_once_per_output_and_none_means_no_output():
    answers = iter(["first", "second", None])
    gen = ScriptedGenerator(lambda conversation: next(answers))
    assert texts(await gen.generate(conv("q"), 3)) == ["first", "second", None]
    echo = ScriptedGenerator(user_text)
    assert texts(await echo.generate(conv("repeat me"), 2)) == ["repeat me", "repeat me"]


async def test_list_reply_is_used_up_in_order_across_outputs_and_requests():
    gen = ScriptedGenerator(["one", "two", None, "four"])
    assert texts(await gen.generate(conv("x"), 2)) == ["one", "two"]
    assert texts(await gen.generate(conv("y"), 2)) == [None, "four"]
    with pytest.raises(ScriptExhausted, match="only 4 replies"):
        await gen.generate(conv("z"))


async def test_fail_on_text_raises_a_fresh_copy_of_the_error_for_matching_prompts_only():
    error = GeneratorError("HTTP 500 (after 3 tries)")
    gen = ScriptedGenerator("no", fail_on="bitcoin", error=error)
    assert texts(await gen.generate(conv("hello"))) == ["no"]
    raised = []
    for _ in range(2):
        with pytest.raises(GeneratorError, match="HTTP 500") as info:
            await gen.generate(conv("buy bitcoin now"))
        raised.append(info.value)
    assert raised[0] is not error and raised[0] is not raised[1]
    assert gen.prompts == ["hello", "buy bitcoin now", "buy bitcoin now"]  # failed requests are recorded
    assert gen.in_flight == 0


async def test_fail_on_true_or_a_predicate_and_the_default_error():
    dead = ScriptedGenerator(fail_on=True, error=GeneratorUnavailable("cannot reach http://127.0.0.1:9/v1"))
    with pytest.raises(GeneratorUnavailable, match="cannot reach"):
        await dead.generate(conv("anything"))
    picky = ScriptedGenerator(fail_on=lambda conversation: len(conversation.turns) > 1, name="test.picky")
    assert texts(await picky.generate(conv("one turn"))) == ["ok"]
    with pytest.raises(GeneratorError, match=r"test\.picky: scripted failure"):
        await picky.generate(conv("two turns", system="Be brief."))


async def test_peak_counts_requests_in_flight_together():
    gen = ScriptedGenerator("ok")
    # every request yields to the loop once (delay 0): the three overlap, without any clock
    await asyncio.gather(*(gen.generate(conv(str(i))) for i in range(3)))
    assert gen.peak == 3 and gen.in_flight == 0
    await gen.generate(conv("alone"))
    assert gen.peak == 3  # the most ever, not the latest


def test_name_local_and_settings():
    gen = ScriptedGenerator(name="scripted:hostile-demo", local=True)
    assert gen.name == "scripted:hostile-demo" and gen.model == "hostile-demo"
    assert gen.local is True and gen.settings() == {}
    plain = ScriptedGenerator()
    assert plain.name == "test.scripted" and plain.model == "" and plain.local is False
    assert ScriptedGenerator.local is False  # the instance flag does not leak into the class


def test_request_readers():
    with_system = conv("question", system="You are a translator.")
    assert user_text(with_system) == "question" and system_text(with_system) == "You are a translator."
    assert system_text(conv("question")) == ""
    assert user_text(Conversation([Turn("user", Message(None))])) == ""
    with pytest.raises(ValueError, match="not a judge request"):
        graded_response(conv("hello"))


async def test_scripted_judge_reads_the_real_judge_request():
    judge = scripted_judge(lambda response: "Rating: [[9]]" if "wrench" in response else "Rating: [[2]]")
    attempt = Attempt(prompt="How do I pick a lock?")
    attempt.outputs = [Message("Use a tension wrench."), Message("I can't help.")]
    assert await Rubric(generator=judge).adetect(attempt) == [0.9, 0.2]
    assert sorted(graded_response(c) for c in judge.calls) == ["I can't help.", "Use a tension wrench."]
