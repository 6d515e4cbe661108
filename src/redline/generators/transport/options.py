"""The options every remote generator shares, declared once as
:class:`~redline.generators.options.GeneratorOption` specs: where the endpoint is
(:data:`ENDPOINT_OPTIONS`), how requests travel (:data:`TRANSPORT_OPTION_SPECS`) and the
OpenAI-style request fields passed on as given (:data:`REQUEST_FIELD_OPTIONS`). They are read by
:class:`~redline.generators.transport.remote.RemoteGenerator`, the base of every remote family."""

from __future__ import annotations

from typing import Any

from redline.generators.base import GeneratorUnavailable
from redline.generators.options import SAMPLING_OPTIONS, SEED_OPTION, GeneratorOption
from redline.generators.transport.ratelimit import RateLimiter

__all__ = [
    "ENDPOINT_OPTIONS",
    "REQUEST_FIELD_OPTIONS",
    "TLS_OPTION_SPECS",
    "TRANSPORT_OPTIONS",
    "TRANSPORT_OPTION_SPECS",
    "number_option",
    "read_transport_options",
]

ENDPOINT_OPTIONS: tuple[GeneratorOption, ...] = (
    GeneratorOption("base_url", "url", help="the endpoint's base URL (default: the family's own)"),
    GeneratorOption("api_key_env", "env", help="the environment variable that holds the API key"),
)

TLS_OPTION_SPECS: tuple[GeneratorOption, ...] = (
    GeneratorOption("ca_bundle", "text", help="a PEM file of CA certificates trusted besides the system's"),
    GeneratorOption("client_cert", "text", help="a PEM file with the client certificate (mutual TLS)"),
    GeneratorOption("client_key", "text", help="a PEM file with the client certificate's key (if not in client_cert)"),
)
"""The files of TLS: certificates are always checked; these add a CA and a client certificate."""

TRANSPORT_OPTION_SPECS: tuple[GeneratorOption, ...] = (
    GeneratorOption("timeout", "number", 60.0, "seconds per request", minimum=0, exclusive=True),
    GeneratorOption("max_retries", "int", 4, "retries of a failed request", minimum=0),
    GeneratorOption("backoff_base", "number", 0.5, "seconds of the first backoff (doubled each retry)", minimum=0),
    GeneratorOption("backoff_cap", "number", 30.0, "the longest backoff, in seconds", minimum=0),
    GeneratorOption("max_retry_after", "number", 120.0, "the longest Retry-After honoured, in seconds", minimum=0),
    GeneratorOption(
        "concurrency", "int", None, "requests in flight to the endpoint (default: no own limit)", minimum=1
    ),
    GeneratorOption("rpm", "number", None, "client-side limit of requests per minute", minimum=0, exclusive=True),
    GeneratorOption("tpm", "number", None, "client-side limit of tokens per minute", minimum=0, exclusive=True),
    *TLS_OPTION_SPECS,
)
"""How requests travel: timeout, retries and backoff, concurrency cap, rate limits and the TLS files."""

REQUEST_FIELD_OPTIONS: tuple[GeneratorOption, ...] = (
    GeneratorOption("stop", "any", help="stop sequence(s), sent as given"),
    SEED_OPTION,
    GeneratorOption("presence_penalty", "number", help="sent as given"),
    GeneratorOption("frequency_penalty", "number", help="sent as given"),
    GeneratorOption("extra_body", "mapping", help="more request fields, merged into every request"),
)
"""OpenAI-style request fields passed on to the endpoint as given (``extra_body`` merged in)."""

TRANSPORT_OPTIONS = frozenset(spec.name for spec in SAMPLING_OPTIONS + TRANSPORT_OPTION_SPECS)
"""The names of the sampling and transport options (kept for callers of earlier versions)."""


def _read(spec: GeneratorOption, options: dict) -> Any:
    value = options.get(spec.name)
    if value is None:
        return spec.default
    try:
        return spec.read(value)
    except ValueError as exc:
        raise GeneratorUnavailable(f"generator option {spec.name} {exc}, not {value!r}") from None


def number_option(
    options: dict, name: str, default: float | None, kind: type = float, minimum: float | None = None
) -> Any:
    """``options[name]`` (or ``default``) read as an ``int`` or ``float`` of at least ``minimum``;
    :class:`GeneratorUnavailable` otherwise. Kept for callers of earlier versions: a family
    declares its options as :class:`GeneratorOption` specs instead."""
    return _read(GeneratorOption(name, "int" if kind is int else "number", default, minimum=minimum), options)


def read_transport_options(target: Any, options: dict) -> None:
    """Set the sampling and transport options on ``target`` (``max_tokens`` ... ``concurrency``,
    the TLS files and a :class:`RateLimiter` from ``rpm`` / ``tpm``) as declared in :data:`SAMPLING_OPTIONS`
    and :data:`TRANSPORT_OPTION_SPECS`. Kept for callers of earlier versions: a remote family
    derives from :class:`~redline.generators.transport.remote.RemoteGenerator` instead."""
    values = {spec.name: _read(spec, options) for spec in SAMPLING_OPTIONS + TRANSPORT_OPTION_SPECS}
    target.limiter = RateLimiter(values.pop("rpm"), values.pop("tpm"))
    for name, value in values.items():
        setattr(target, name, value)
