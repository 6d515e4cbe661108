"""Generator options are declared once (``option_specs``): the constructor reads them with their
defaults, ``accepted_options`` is derived from them, and a scan configuration is checked against
them, with one clear line for a bad value or an option the family does not take."""

from __future__ import annotations

import os

import pytest

from redline.engine import ConfigError, build_scan_config, parse_gen_opts
from redline.generators import (
    BUILTIN_GENERATORS,
    GeneratorOption,
    GeneratorUnavailable,
    generators,
    get_generator,
    known_generator_options,
)
from redline.generators.base import Generator
from redline.generators.output import DEFAULT_MAX_TOKENS
from redline.generators.transport import TRANSPORT_OPTIONS, number_option, read_transport_options


# -- the declaration ---------------------------------------------------------------------------------
def test_accepted_options_are_the_declared_ones():
    for family in BUILTIN_GENERATORS:
        cls = generators.load(family)
        declared = {spec.name for spec in cls.option_specs}
        assert cls.accepted_options == declared, family
        if family.startswith("test."):  # delay, exit_once, and a model's sampling options (which change nothing)
            assert declared == {"delay", "exit_once", "max_tokens", "temperature", "top_p", "seed"}, family
    openai = generators.load("openai").accepted_options
    assert {"timeout", "rpm", "headers", "api", "extra_body", "stop", "seed"} <= openai
    assert generators.load("litellm").accepted_options == openai - {"headers", "api"}
    assert generators.load("rest").accepted_options >= {"url", "method", "body", "response_path", "headers"}
    assert "base_url" not in generators.load("hf").accepted_options


def test_an_option_declared_by_several_families_is_checked_the_same_way_in_each():
    seen: dict[str, tuple] = {}
    for family in BUILTIN_GENERATORS:
        for spec in generators.load(family).option_specs:
            rule = (spec.kind, spec.minimum, spec.exclusive, spec.choices, spec.pattern)
            assert seen.setdefault(spec.name, rule) == rule, (family, spec.name)
    assert set(seen) == set(known_generator_options())


def test_a_family_cannot_declare_an_option_twice_and_third_party_families_take_anything():
    with pytest.raises(TypeError, match="declares the option"):

        class Twice(Generator):
            option_specs = (GeneratorOption("a", "int"), GeneratorOption("a", "number"))

    class ThirdParty(Generator):
        family = "acme.tp"
        option_specs = (GeneratorOption("depth", "int", 3, minimum=1),)

    class Strict(Generator):
        accepted_options = frozenset({"x"})

    class StrictChild(Strict):
        pass

    assert ThirdParty.accepted_options is None
    assert ThirdParty("m", depth="5", other=1).option_values == {"depth": 5}
    assert StrictChild.accepted_options == frozenset({"x"})  # set by hand: inherited as it is


# -- the constructor ---------------------------------------------------------------------------------
def test_defaults_are_applied_when_an_option_is_not_given():
    hf = get_generator("hf:some/model")
    assert (hf.max_tokens, hf.temperature, hf.top_p, hf.batch_size, hf.device, hf.seed) == (
        150,
        0.7,
        0.95,
        128,
        "cpu",
        0,
    )
    assert hf.batch_wait == 0.05 and hf.system_prompt is None
    assert get_generator("smollm2").batch_size == 128 and get_generator("smollm2", batch_size=8).batch_size == 8
    assert get_generator("smollm2").option_values["cache_mb"] == 1536
    openai = get_generator("openai:m")
    assert (openai.timeout, openai.max_retries, openai.backoff_base, openai.backoff_cap) == (60.0, 4, 0.5, 30.0)
    assert openai.max_tokens == DEFAULT_MAX_TOKENS and openai.concurrency is None and openai.limiter.rpm is None
    assert openai.api == "chat" and get_generator("openai-completions:m").api == "completions"
    assert get_generator("llamacpp:/m.gguf").n_threads == (os.cpu_count() or 1)
    rest = get_generator("rest:x", url="http://h/x", response_path="a")
    assert rest.method == "POST" and rest.body_template == {"prompt": "{prompt}"} and rest.response_format == "json"
    assert get_generator("test.echo").delay == 0.0


def test_values_are_read_as_their_kind_and_settings_stay_as_before():
    gen = get_generator("hf:some/model", max_tokens="12", temperature=0, seed=3)
    assert gen.max_tokens == 12 and isinstance(gen.temperature, float) and gen.seed == 3
    # settings() feed the cache key: their values and types must not drift between versions
    assert gen.settings() == {
        "max_tokens": 12,
        "temperature": 0.0,
        "top_p": 0.95,
        "batch_size": 128,
        "device": "cpu",
        "seed": 3,
    }
    assert get_generator("rest:x", url="http://h/x", response_path="a", method="put").method == "PUT"
    assert get_generator("openai:m", api="Completions").api == "completions"


@pytest.mark.parametrize(
    "spec, options, message",
    [
        ("openai:m", {"timeout": "soon"}, "openai:m: option timeout must be a number > 0, not 'soon'"),
        ("openai:m", {"rpm": 0}, "openai:m: option rpm must be a number > 0, not 0"),
        ("openai:m", {"api": "embeddings"}, "openai:m: option api must be chat or completions, not 'embeddings'"),
        ("openai:m", {"headers": "X-A: b"}, "openai:m: option headers must be a mapping, not 'X-A: b'"),
        ("litellm:p/m", {"extra_body": [1]}, "litellm:p/m: option extra_body must be a mapping, not [1]"),
        ("hf:x", {"device": "gpu"}, "hf:x: option device must be cpu, cuda, cuda:N, mps or auto, not 'gpu'"),
        ("hf:x", {"batch_size": 0}, "hf:x: option batch_size must be an integer >= 1, not 0"),
        ("llamacpp:/m.gguf", {"n_ctx": 8}, "llamacpp:/m.gguf: option n_ctx must be an integer >= 16, not 8"),
        ("rest:x", {"method": "GET"}, "rest:x: option method must be POST or PUT, not 'GET'"),
        ("rest:x", {"body": 5}, "rest:x: option body must be JSON text or a mapping, not 5"),
        ("test.echo", {"delay": "long"}, "test.echo: option delay must be a number, not 'long'"),
    ],
)
def test_a_bad_value_is_one_line_naming_generator_option_and_value(spec, options, message):
    with pytest.raises(GeneratorUnavailable) as info:
        get_generator(spec, **options)
    assert str(info.value) == message


def test_the_helpers_of_earlier_versions_read_the_same_declarations():
    assert {"max_tokens", "timeout", "rpm"} <= TRANSPORT_OPTIONS
    assert number_option({"n": "7"}, "n", 1, int, 1) == 7 and number_option({}, "n", 1, int) == 1
    with pytest.raises(GeneratorUnavailable, match="generator option n must be an integer >= 1, not 0"):
        number_option({"n": 0}, "n", 1, int, 1)
    target = type("Target", (), {})()
    read_transport_options(target, {"timeout": 5, "rpm": 60})
    assert target.timeout == 5.0 and target.max_retries == 4 and target.limiter.rpm == 60


# -- the scan configuration --------------------------------------------------------------------------
def test_an_option_the_family_does_not_declare_is_refused_with_what_it_takes():
    with pytest.raises(ConfigError) as info:
        build_scan_config({}, {"model": "hf:/m"}, parse_gen_opts(["backoff_base=1"]))
    message = str(info.value)
    assert message.startswith("--gen-opt: the hf generator does not take option 'backoff_base' (it takes: batch_size, ")
    assert "\n" not in message
    with pytest.raises(ConfigError, match="does not take option 'n_ctx'"):
        build_scan_config({}, {"model": "openai:m"}, parse_gen_opts(["n_ctx=512"]))
    build_scan_config({}, {"model": "test.echo"}, parse_gen_opts(["delay=0", "max_tokens=5", "temperature=0"]))
    with pytest.raises(ConfigError, match=r"^--gen-opt: the test.echo generator does not take option 'whatever'"):
        build_scan_config({}, {"model": "test.echo"}, parse_gen_opts(["delay=0", "whatever=1"]))


@pytest.mark.parametrize(
    "item, message",
    [
        ("max_tokens=many", "--gen-opt: max_tokens must be an integer >= 1, not 'many'"),
        ("max_tokens=2.5", "--gen-opt: max_tokens must be an integer >= 1, not 2.5"),
        ("temperature=true", "--gen-opt: temperature must be a number >= 0, not True"),
        ("n_ctx=8", "--gen-opt: n_ctx must be an integer >= 16, not 8"),
        ("device=gpu", "--gen-opt: device must be cpu, cuda, cuda:N, mps or auto, not 'gpu'"),
        ("api=embeddings", "--gen-opt: api must be chat or completions, not 'embeddings'"),
        ("presence_penalty=high", "--gen-opt: presence_penalty must be a number, not 'high'"),
        ("api_key_env=MY-KEY", "--gen-opt: api_key_env must be the name of an environment variable"),
    ],
)
def test_a_bad_gen_opt_value_is_one_line(item, message):
    with pytest.raises(ConfigError) as info:
        parse_gen_opts([item])
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_configuration_gives_values_as_the_generator_takes_them():
    assert parse_gen_opts(["method=put", "api=CHAT", "device= cuda:1 ", "stop=[a]"]) == {
        "method": "PUT",
        "api": "chat",
        "device": "cuda:1",
        "stop": ["a"],
    }


def test_every_option_describes_itself_in_one_line():
    known = known_generator_options()
    assert known["timeout"].describe() == "timeout (number > 0, default 60.0): seconds per request"
    assert known["stop"].describe() == "stop (any value): stop sequence(s), sent as given"
    assert all("\n" not in spec.describe() and spec.help for spec in known.values())
