"""A key written in the query string of an endpoint's URL is refused before the run stores the URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engine import ConfigError, build_scan_config, load_config, parse_gen_opts


def test_a_key_in_the_query_of_the_base_url_flag_is_refused_without_being_repeated() -> None:
    with pytest.raises(
        ConfigError, match=r"^--base-url: base_url: the query parameter 'api-key' of the URL looks like a secret"
    ) as caught:
        build_scan_config({}, {"model": "openai:m"}, {"base_url": "http://127.0.0.1:9/v1?api-key=sk-query-secret"})
    assert "sk-query-secret" not in str(caught.value)


@pytest.mark.parametrize("name", ["key", "access_token", "api_key", "sig", "Code"])
def test_a_key_in_the_query_of_a_gen_opt_url_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"^--gen-opt: base_url: the query parameter '{name}'"):
        parse_gen_opts([f"base_url=http://127.0.0.1:9/v1?a=1&{name}=AIza-secret-value"])


def test_a_key_in_the_query_of_a_rest_url_in_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "scan.yaml"
    path.write_text('model: rest:x\ngenerator:\n  url: "http://127.0.0.1:9/x?token=abcdefgh"\n')
    with pytest.raises(ConfigError, match=r"scan.yaml: generator: url: the query parameter 'token'"):
        load_config(path)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/v1?api-version=2024-06-01",
        "http://127.0.0.1:9/x?token=${TOKEN}",
        "http://127.0.0.1:9/v1?key=",
    ],
)
def test_a_harmless_query_or_a_key_named_by_an_environment_variable_is_accepted(url: str) -> None:
    assert parse_gen_opts([f"url={url}"])["url"] == url
    assert build_scan_config({}, {"model": "rest:x"}, {"base_url": url}).generator_options["base_url"] == url


def test_a_generator_flag_is_checked_as_its_option_is() -> None:
    with pytest.raises(ConfigError, match=r"^--api-key-env: api_key_env must be the name of an environment variable"):
        build_scan_config({}, {"model": "openai:m"}, {"api_key_env": "A=B;$(x)"})
