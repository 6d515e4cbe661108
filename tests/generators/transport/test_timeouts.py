"""Timeouts never start a storm: a timeout halves the tries in flight (once per burst), answers
raise the cap again one at a time, a timed-out request's next try waits longer and for a place, so
retries queue behind the cap instead of multiplying the requests a slow server works on."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.test_utils import TestServer

from redline.attempt import Conversation, Message, Turn
from redline.generators import get_generator
from redline.generators.transport.ratelimit import AdaptiveConcurrency, RateLimiter
from redline.generators.transport.retry import TIMEOUT_GROWTH, RetryPolicy, TransientFailure

NO_WAIT = RetryPolicy(max_retries=3, backoff_base=0.0, backoff_cap=0.0, max_retry_after=0.0)


def conv(text: str = "hi") -> Conversation:
    return Conversation(turns=[Turn("user", Message(text=text))])


async def test_a_burst_of_timeouts_halves_the_tries_in_flight_once():
    now = [0.0]
    slots = AdaptiveConcurrency(clock=lambda: now[0])
    for _ in range(8):
        await slots.enter()
    now[0] = 1.0
    assert slots.timed_out(sent_at=0.0) is True
    assert slots.limit == 4
    for _ in range(7):  # the other tries of the burst left before the cut: no further cut
        assert slots.timed_out(sent_at=0.0) is False
    assert slots.limit == 4 and slots.cuts == 1
    for _ in range(8):
        slots.leave()
    for _ in range(4):
        await slots.enter()
    now[0] = 2.0
    assert slots.timed_out(sent_at=1.5) is True  # a try sent after the cut that times out cuts again
    assert slots.limit == 2


async def test_answers_raise_the_cap_one_place_for_as_many_answers_as_it_allows():
    slots = AdaptiveConcurrency(clock=lambda: 0.0)
    for _ in range(4):
        await slots.enter()
    slots.timed_out(sent_at=0.0)
    assert slots.limit == 2
    slots.answered()
    assert slots.limit == 2
    slots.answered()
    assert slots.limit == 3
    for _ in range(3):
        slots.answered()
    assert slots.limit == 4


async def test_a_try_waits_for_a_place_while_the_cap_is_full():
    slots = AdaptiveConcurrency(clock=lambda: 0.0)
    await slots.enter()
    await slots.enter()
    slots.timed_out(sent_at=0.0)  # two in flight: the cap is one
    slots.leave()
    waiting = asyncio.ensure_future(slots.enter())
    await asyncio.sleep(0)
    assert not waiting.done()  # one still in flight
    slots.leave()
    await asyncio.wait_for(waiting, 5)
    assert slots.in_flight == 1


async def test_a_storm_of_timeouts_lowers_the_tries_in_flight_instead_of_multiplying_them():
    limiter = RateLimiter()
    release = asyncio.Event()
    first_wave: list[int] = []
    tries = 0
    in_flight = 0
    most_on_retry = 0

    def request():
        async def attempt(index: int) -> str:
            nonlocal in_flight, most_on_retry, tries
            tries += 1
            in_flight += 1
            try:
                if index == 0:
                    first_wave.append(index)
                    if len(first_wave) == 8:
                        release.set()
                    await release.wait()  # all eight in flight, then all time out together
                    raise TransientFailure("no answer within 1 s", timed_out=True)
                most_on_retry = max(most_on_retry, in_flight)
                for _ in range(3):
                    await asyncio.sleep(0)  # let the others in, if the cap allowed them
                return "answer"
            finally:
                in_flight -= 1

        return NO_WAIT.call(attempt, limiter)

    answers = await asyncio.wait_for(asyncio.gather(*(request() for _ in range(8))), 10)
    assert answers == ["answer"] * 8
    assert limiter.slots.cuts == 1 and most_on_retry <= 4
    assert tries == 16  # no request was sent more than twice: eight first tries, eight retries


def test_a_try_after_a_timeout_of_the_same_request_waits_longer():
    assert RetryPolicy.timeout(10.0, 0) == 10.0
    assert RetryPolicy.timeout(10.0, 1) == RetryPolicy.timeout(10.0, 3) == 10.0 * TIMEOUT_GROWTH


async def test_a_slow_server_sees_fewer_requests_at_once_after_its_first_timeouts():
    """Eight requests hang until redline gives up on them; their retries reach the server at
    most four at a time (the cap halved), each is answered, and none is sent a third time."""
    seen = 0
    retried_in_flight = 0
    most_retried = 0
    retries_started = 0
    all_retried = asyncio.Event()
    stop = asyncio.Event()

    async def handler(request: web.Request) -> web.Response:
        nonlocal seen, retried_in_flight, most_retried, retries_started
        body = await request.json()
        seen += 1
        if seen <= 8:
            await stop.wait()  # never answered: the client times out
        retries_started += 1
        retried_in_flight += 1
        most_retried = max(most_retried, retried_in_flight)
        if retries_started == 8:
            all_retried.set()
        try:  # hold each retry a while, so that retries the cap should hold back would overlap
            await asyncio.wait_for(all_retried.wait(), 0.3)
        except TimeoutError:
            pass
        finally:
            retried_in_flight -= 1
        text = body["messages"][-1]["content"]
        return web.json_response({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"data": []})

    app.router.add_get("/v1/models", models)
    async with TestServer(app, host="127.0.0.1") as server:
        gen = get_generator(
            "openai:m", base_url=str(server.make_url("/v1")), timeout=1.0, max_retries=2, backoff_base=0.0
        )
        try:
            outputs = await asyncio.gather(*(gen.generate(conv(f"q{i}"), 1) for i in range(8)))
        finally:
            stop.set()
            await gen.aclose()
    assert sorted(out[0].text for out in outputs) == sorted(f"q{i}" for i in range(8))
    assert seen == 16 and most_retried <= 4
    assert gen.limiter.slots.cuts == 1
