"""The OpenAI-compatible generators (chat and completions) and their HTTP machinery: retries,
Retry-After, timeouts, dropped connections, malformed answers, concurrency cap, connection reuse."""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import subprocess
import sys
import time

import pytest
from multidict import CIMultiDict

from helpers.mock_openai import DROP, HANG, MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator
from redline.generators.openai import render_plain
from redline.generators.transport import parse_retry_after, retry_delay

FAST = {"backoff_base": 0.01, "backoff_cap": 0.05}


def conv(text: str = "hello", system: str | None = None) -> Conversation:
    turns = [Turn("system", Message(system))] if system else []
    return Conversation(turns + [Turn("user", Message(text))])


async def test_completions_family_sends_a_plain_prompt_and_reads_text():
    with MockOpenAI(responder=lambda msgs, body: "completed: " + msgs[-1]["content"][:5]) as server:
        gen = get_generator("openai-completions:base-model", base_url=server.base_url, max_tokens=9)
        (one,) = await gen.generate(conv("hello"), 1)
        two = await gen.generate(conv("question", system="be brief"), 2)
        await gen.aclose()
    assert one.text == "completed: hello"
    assert [o.text for o in two] == ["completed: Syste"] * 2
    assert server.paths == ["/v1/completions", "/v1/completions"]
    assert server.requests[0] == {"model": "base-model", "prompt": "hello", "max_tokens": 9}
    assert server.requests[1]["prompt"] == "System: be brief\n\nUser: question\n\nAssistant:"
    assert server.requests[1]["n"] == 2


async def test_api_option_switches_openai_to_completions_and_rejects_nonsense():
    with MockOpenAI() as server:
        gen = get_generator("openai:m", base_url=server.base_url, api="completions")
        (out,) = await gen.generate(conv("x"), 1)
        await gen.aclose()
    assert out.text == "x" and server.paths == ["/v1/completions"]
    with pytest.raises(GeneratorUnavailable, match="api must be"):
        get_generator("openai:m", api="embeddings")


def test_render_plain_keeps_a_lone_prompt_verbatim():
    assert render_plain(conv("just this")) == "just this"


async def test_passthrough_parameters_and_extra_body_reach_the_request():
    with MockOpenAI() as server:
        gen = get_generator(
            "openai:m", base_url=server.base_url, seed=7, stop=["END"], top_p=0.5, extra_body={"logprobs": False}
        )
        await gen.generate(conv(), 1)
        await gen.aclose()
    body = server.requests[0]
    assert body["seed"] == 7 and body["stop"] == ["END"] and body["top_p"] == 0.5 and body["logprobs"] is False


async def test_429_with_retry_after_is_honoured_then_succeeds():
    faults = lambda i, body: (429, {"retry-after": "0.3"}, '{"error": "slow down"}') if i == 0 else None
    with MockOpenAI(faults=faults) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=2, **FAST)
        started = time.monotonic()
        (out,) = await gen.generate(conv("ok"), 1)
        elapsed = time.monotonic() - started
        await gen.aclose()
    assert out.text == "ok" and len(server.requests) == 2
    assert elapsed >= 0.28  # waited as told, not the 10 ms backoff


async def test_a_429_delays_the_refused_request_not_the_others_of_the_generator():
    faults = lambda i, body: (429, {"retry-after": "30"}, "{}") if i == 0 else None
    with MockOpenAI(faults=faults, latency=0.0) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=2, **FAST)
        first = asyncio.ensure_future(gen.generate(conv("first"), 1))  # refused, then waits 30 s

        async def refused() -> None:
            while not gen.limiter.status().refused:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(refused(), 10)
        assert gen.limiter.status().limited
        (second,) = await asyncio.wait_for(gen.generate(conv("second"), 1), 10)
        assert second.text == "second" and not first.done()
        first.cancel()
        await gen.aclose()


async def test_5xx_dropped_connection_and_hang_are_retried():
    script = {0: (500, {}, "{}"), 1: DROP, 2: HANG, 3: (503, {}, "{}")}
    with MockOpenAI(faults=lambda i, body: script.get(i), hang_seconds=1.0) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=4, timeout=0.3, **FAST)
        (out,) = await gen.generate(conv("survived"), 1)
        await gen.aclose()
    assert out.text == "survived" and len(server.requests) == 5
    assert gen.retries == 4  # the 500, the dropped connection, the hang and the 503


async def test_after_the_retries_the_request_is_an_error_naming_the_cause():
    with MockOpenAI(faults=lambda i, body: HANG, hang_seconds=1.0) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=1, timeout=0.2, **FAST)
        # the try after a timeout waits twice as long (a slow server is still busy with the first)
        with pytest.raises(GeneratorError, match=r"within 0.4 s \(after 2 tries\)"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    with MockOpenAI(faults=lambda i, body: (502, {}, "bad gateway")) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=2, **FAST)
        with pytest.raises(GeneratorError, match=r"HTTP 502 .*bad gateway \(after 3 tries\)"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    "body, message",
    [
        ("not json", "malformed response from .*: not JSON: 'not json'"),
        ('{"choices": [{"message": {"content": "cut', "malformed response from .*: not JSON"),
        ("[" * 100_000, "malformed response from .*: not JSON"),  # nested too deeply to parse
        ('{"choices": "nope"}', "malformed response from .*: no choices"),
        ('{"choices": [{"message": {"content": 5}}]}', "malformed response from .*: no choices"),
        ('{"nothing": 1}', "malformed response from .*: no choices"),
    ],
)
async def test_malformed_answers_are_retried_then_recorded_naming_the_problem(body, message):
    with MockOpenAI(faults=lambda i, b: (200, {}, body)) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=3, **FAST)
        with pytest.raises(GeneratorError, match=message + r".* \(after 4 tries\)$"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert len(server.requests) == 4  # the same budget as a 5xx
    assert gen.retries == 3


async def test_a_malformed_answer_then_a_good_one_is_an_output():
    bodies = ["<html>502 bad gateway</html>", '{"choices": []', '{"id": "x"}']  # then the real answer
    with MockOpenAI(faults=lambda i, b: (200, {}, bodies[i]) if i < len(bodies) else None) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=3, **FAST)
        (out,) = await gen.generate(conv("fine"), 1)
        await gen.aclose()
    assert out.text == "fine" and len(server.requests) == 4


async def test_an_error_object_in_a_200_answer_is_an_error_at_once():
    with MockOpenAI(faults=lambda i, b: (200, {}, '{"error": {"message": "model overloaded"}}')) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=3, **FAST)
        with pytest.raises(GeneratorError, match="answered with an error: model overloaded"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert len(server.requests) == 1


async def test_client_errors_are_not_retried_and_fatal_ones_stop_the_run():
    with MockOpenAI(faults=lambda i, b: (400, {}, '{"error": "context too long"}')) as server:
        gen = get_generator("openai:m", base_url=server.base_url, max_retries=3)
        with pytest.raises(GeneratorError, match="HTTP 400"):
            await gen.generate(conv(), 1)
        await gen.aclose()
    assert len(server.requests) == 1
    for status, message in ((401, "refused the key"), (404, "not found")):
        with MockOpenAI(faults=lambda i, b, s=status: (s, {}, "{}")) as server:
            gen = get_generator("openai:m", base_url=server.base_url)
            with pytest.raises(GeneratorUnavailable, match=message):
                await gen.generate(conv(), 1)
            await gen.aclose()


async def test_unreachable_endpoint_is_unavailable_before_any_request():
    with MockOpenAI() as server:
        port = server.port
    gen = get_generator("openai:m", base_url=f"http://127.0.0.1:{port}/v1", timeout=1)
    with pytest.raises(GeneratorUnavailable, match="cannot reach"):
        await gen.start()


def test_parse_retry_after_reads_seconds_milliseconds_and_dates():
    assert parse_retry_after(CIMultiDict({"Retry-After": "2"})) == 2.0  # as aiohttp gives them
    assert parse_retry_after(CIMultiDict({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after(CIMultiDict({"retry-after": future})) <= 31
    assert parse_retry_after(CIMultiDict({"retry-after": "soon"})) is None
    assert parse_retry_after(CIMultiDict({})) is None


def test_backoff_is_exponential_with_full_jitter_and_capped():
    for attempt in range(8):
        delays = [retry_delay(attempt, None, base=0.5, cap=4.0) for _ in range(200)]
        assert all(0 <= d <= min(4.0, 0.5 * 2**attempt) for d in delays)
        assert max(delays) > 0.6 * min(4.0, 0.5 * 2**attempt)  # jitter spreads over the range
    assert retry_delay(3, 1.5) == 1.5


async def test_concurrency_option_caps_requests_in_flight_and_connections_are_reused():
    import threading

    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def slow(messages, body):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return "ok"

    peers = set()
    with MockOpenAI(responder=slow) as server:
        handler = server.server.RequestHandlerClass
        original = handler.handle_one_request

        def tracking(self):
            peers.add(self.client_address)
            return original(self)

        handler.handle_one_request = tracking
        gen = get_generator("openai:m", base_url=server.base_url, concurrency=3)
        await asyncio.gather(*(gen.generate(conv(str(i)), 1) for i in range(12)))
        await gen.aclose()
    assert len(server.requests) == 12
    assert state["peak"] == 3
    assert len(peers) <= 4  # 3 kept-alive connections (+1 for the reachability check)


async def test_settings_leave_out_the_key_and_name_the_transport():
    os.environ["REDLINE_TEST_KEY"] = "sk-secret-value"
    try:
        gen = get_generator(
            "openai:m",
            base_url="http://127.0.0.1:9/v1",
            api_key_env="REDLINE_TEST_KEY",
            timeout=5,
            max_retries=2,
            rpm=60,
        )
        settings = gen.settings()
    finally:
        del os.environ["REDLINE_TEST_KEY"]
    assert "sk-secret-value" not in json.dumps(settings)
    assert settings["timeout"] == 5 and settings["max_retries"] == 2 and settings["rpm"] == 60


def test_bad_option_values_are_one_line_errors():
    with pytest.raises(GeneratorUnavailable, match=r"^openai:m: option timeout must be a number > 0, not 'soon'$"):
        get_generator("openai:m", timeout="soon")
    with pytest.raises(GeneratorUnavailable, match=r"^openai:m: option max_retries must be an integer >= 0, not -1$"):
        get_generator("openai:m", max_retries=-1)


def test_cli_scan_completions_with_gen_opts_prints_the_summary(tmp_path):
    with MockOpenAI(responder=lambda msgs, body: "I'm sorry, but I can't help with that.") as server:
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "redline",
                "scan",
                "--model",
                "openai-completions:any",
                "--base-url",
                server.base_url,
                "--probes",
                "harmful.Requests",
                "--sample",
                "5",
                "--store",
                str(tmp_path / "c.db"),
                "--json",
                "--timeout",
                "5",
                "--max-retries",
                "1",
                "--gen-opt",
                "top_p=0.9",
                "--gen-opt",
                "stop=[END]",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    (entry,) = summary["probes"]
    assert summary["model"] == "openai-completions:any" and entry["attempts"] == 5 and entry["failed"] == 0
    assert all(r["top_p"] == 0.9 and r["stop"] == ["END"] and "prompt" in r for r in server.requests)
