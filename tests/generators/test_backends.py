"""Ollama, LiteLLM and llama.cpp backends, and the transformers device choice. The optional
packages are replaced by small fake modules, so these tests need neither litellm nor
llama-cpp-python (nor a model)."""

from __future__ import annotations

import sys
import types

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator
from redline.generators.ollama import OLLAMA_BASE_URL


def conv(text: str = "hi") -> Conversation:
    return Conversation([Turn("user", Message(text))])


# -- Ollama ------------------------------------------------------------------------------------------
async def test_ollama_speaks_openai_without_a_key_and_asks_one_output_per_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with MockOpenAI() as server:
        gen = get_generator("ollama:llama3.2:1b", base_url=server.base_url)
        outputs = await gen.generate(conv("x"), 2)
        await gen.aclose()
    assert [o.text for o in outputs] == ["x", "x"]
    assert [r["model"] for r in server.requests] == ["llama3.2:1b"] * 2 and "n" not in server.requests[0]
    assert "Authorization" not in server.headers[0]
    assert get_generator("ollama:m").base_url == OLLAMA_BASE_URL


async def test_ollama_not_running_says_so():
    with MockOpenAI() as server:
        port = server.port
    gen = get_generator("ollama:m")
    gen.base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(GeneratorUnavailable, match="cannot reach"):
        await gen.start()


# -- LiteLLM ----------------------------------------------------------------------------------------
class FakeLiteLLMError(Exception):
    def __init__(self, message, status_code=None, headers=None):
        super().__init__(message)
        self.status_code = status_code
        self.response = types.SimpleNamespace(headers=headers or {})


def fake_litellm(script):
    """A stand-in for the litellm module: ``script(call_index, kwargs)`` returns a response dict or
    raises."""
    module = types.ModuleType("litellm")
    module.calls = []

    async def acompletion(**kwargs):
        module.calls.append(kwargs)
        return script(len(module.calls) - 1, kwargs)

    module.acompletion = acompletion
    return module


def litellm_response(texts):
    return {"choices": [{"message": {"content": t}} for t in texts], "usage": {"total_tokens": 12}}


def named(name, base=FakeLiteLLMError):
    return type(name, (base,), {})


async def test_litellm_calls_acompletion_with_our_options(monkeypatch):
    module = fake_litellm(lambda i, kw: litellm_response([kw["messages"][-1]["content"]] * kw.get("n", 1)))
    monkeypatch.setitem(sys.modules, "litellm", module)
    monkeypatch.setenv("MY_PROVIDER_KEY", "k-1")
    gen = get_generator(
        "litellm:anthropic/claude-x",
        max_tokens=20,
        temperature=0.1,
        api_key_env="MY_PROVIDER_KEY",
        base_url="http://proxy.local",
        timeout=5,
        extra_body={"metadata": {"a": 1}},
    )
    outputs = await gen.generate(conv("hello"), 2)
    assert [o.text for o in outputs] == ["hello", "hello"]
    (call,) = module.calls
    assert call["model"] == "anthropic/claude-x" and call["n"] == 2 and call["max_tokens"] == 20
    assert call["api_key"] == "k-1" and call["api_base"] == "http://proxy.local" and call["num_retries"] == 0
    assert call["metadata"] == {"a": 1}
    assert "k-1" not in str(gen.settings())


async def test_litellm_retries_transient_errors_and_stops_on_fatal_ones(monkeypatch):
    RateLimitError = named("RateLimitError")
    attempts = []

    def script(i, kw):
        attempts.append(i)
        if i == 0:
            raise RateLimitError("slow down", 429, {"retry-after": "0.01"})
        if i == 1:
            raise FakeLiteLLMError("upstream 503", 503)
        return litellm_response(["fine"])

    monkeypatch.setitem(sys.modules, "litellm", fake_litellm(script))
    gen = get_generator("litellm:p/m", max_retries=3, backoff_base=0.01)
    (out,) = await gen.generate(conv(), 1)
    assert out.text == "fine" and attempts == [0, 1, 2]

    BadRequestError = named("BadRequestError")
    monkeypatch.setitem(
        sys.modules, "litellm", fake_litellm(lambda i, kw: (_ for _ in ()).throw(BadRequestError("too long", 400)))
    )
    with pytest.raises(GeneratorError, match="BadRequestError"):
        await get_generator("litellm:p/m", max_retries=3).generate(conv(), 1)

    AuthenticationError = named("AuthenticationError")
    monkeypatch.setitem(
        sys.modules, "litellm", fake_litellm(lambda i, kw: (_ for _ in ()).throw(AuthenticationError("bad key", 401)))
    )
    with pytest.raises(GeneratorUnavailable, match="refused the key"):
        await get_generator("litellm:p/m").generate(conv(), 1)

    module = fake_litellm(lambda i, kw: {"nope": 1})
    monkeypatch.setitem(sys.modules, "litellm", module)
    with pytest.raises(GeneratorError, match=r"malformed response from litellm p/m: no choices \(after 3 tries\)"):
        await get_generator("litellm:p/m", max_retries=2, backoff_base=0.01).generate(conv(), 1)
    assert len(module.calls) == 3  # retried like a transient failure

    module = fake_litellm(lambda i, kw: {"nope": 1} if i == 0 else litellm_response(["fine"]))
    monkeypatch.setitem(sys.modules, "litellm", module)
    (out,) = await get_generator("litellm:p/m", max_retries=2, backoff_base=0.01).generate(conv(), 1)
    assert out.text == "fine" and len(module.calls) == 2


async def test_litellm_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "litellm", None)  # import litellm raises ImportError
    with pytest.raises(GeneratorUnavailable, match=r"litellm is not installed: pip install 'redline\[litellm\]'"):
        await get_generator("litellm:openai/gpt-4o-mini").start()


def test_litellm_refuses_tls_files_it_could_not_pass_on():
    gen = get_generator("litellm:openai/gpt-4o-mini", ca_bundle="ca.pem", client_cert="me.pem")
    with pytest.raises(GeneratorUnavailable, match="ca_bundle, client_cert is not passed on to LiteLLM"):
        gen.preflight()


# -- llama.cpp --------------------------------------------------------------------------------------
async def test_llamacpp_runs_a_gguf_file_through_llama_cpp(monkeypatch, tmp_path):
    created = []

    class Llama:
        def __init__(self, **kwargs):
            created.append(kwargs)

        def create_chat_completion(self, messages, **kwargs):
            return {
                "choices": [
                    {"message": {"role": "assistant", "content": f" {messages[-1]['content']}!{kwargs['max_tokens']} "}}
                ]
            }

    module = types.ModuleType("llama_cpp")
    module.Llama = Llama
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    gen = get_generator(f"llamacpp:{model}", max_tokens=7, n_ctx=512, seed=3)
    assert gen.local
    outputs = await gen.generate(conv("yo"), 2)
    assert [o.text for o in outputs] == ["yo!7", "yo!7"]
    assert created == [
        {
            "model_path": str(model),
            "n_ctx": 512,
            "n_threads": created[0]["n_threads"],
            "n_gpu_layers": 0,
            "seed": 3,
            "verbose": False,
        }
    ]
    await gen.aclose()


async def test_llamacpp_missing_package_or_file_is_a_clear_error(monkeypatch, tmp_path):
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(
        GeneratorUnavailable, match=r"llama-cpp-python is not installed: pip install 'redline\[llamacpp\]'"
    ):
        await get_generator(f"llamacpp:{model}").start()
    with pytest.raises(GeneratorUnavailable, match="no GGUF file at"):
        await get_generator(f"llamacpp:{tmp_path / 'absent.gguf'}").start()


# -- transformers device ----------------------------------------------------------------------------
def fake_torch(cuda: int = 0, mps: bool = False):
    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_available=lambda: cuda > 0, device_count=lambda: cuda),
        backends=types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: mps)),
    )


def test_hf_device_choice():
    def device(option, torch):
        return get_generator("hf:some/model", device=option).resolve_device(torch)

    assert device("cpu", fake_torch()) == "cpu"
    assert device("auto", fake_torch()) == "cpu"
    assert device("auto", fake_torch(mps=True)) == "mps"
    assert device("auto", fake_torch(cuda=1, mps=True)) == "cuda"
    assert device("cuda:1", fake_torch(cuda=2)) == "cuda:1"
    with pytest.raises(GeneratorUnavailable, match="torch sees no CUDA GPU"):
        device("cuda", fake_torch())
    with pytest.raises(GeneratorUnavailable, match="does not exist"):
        device("cuda:2", fake_torch(cuda=2))
    with pytest.raises(GeneratorUnavailable, match="mps was asked for"):
        device("mps", fake_torch())
    with pytest.raises(GeneratorUnavailable, match="device must be cpu, cuda"):
        get_generator("hf:some/model", device="gpu")


def test_hf_hub_id_offline_fails_at_once_with_one_line(monkeypatch):
    import redline.hub
    from redline.generators import GeneratorUnavailable, get_generator

    gen = get_generator("hf:someorg/not-cached-model")
    monkeypatch.setattr(redline.hub, "hub_reachable", lambda timeout=1.5: False)
    with pytest.raises(GeneratorUnavailable, match="hub cannot be reached"):
        gen.preflight()
    # with the hub reachable, a hub id passes the preflight (it is downloaded when loading)
    monkeypatch.setattr(redline.hub, "hub_reachable", lambda timeout=1.5: True)
    gen.preflight()
