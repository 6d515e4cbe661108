"""What every remote generator shares: the base class that reads the transport options
(:mod:`.remote`), the HTTP client (:mod:`.http`), the retry policy with backoff and
``Retry-After`` (:mod:`.retry`), client-side rate limits (:mod:`.ratelimit`), the declarations of
the shared options (:mod:`.options`) and secret handling (:mod:`.secrets`). Backends only map a
conversation to a request and an answer to outputs."""

from redline.generators.transport.http import HTTPGenerator
from redline.generators.transport.options import TRANSPORT_OPTIONS, number_option, read_transport_options
from redline.generators.transport.ratelimit import RateLimiter, estimate_tokens
from redline.generators.transport.remote import RemoteGenerator
from redline.generators.transport.retry import (
    RETRY_STATUSES,
    MalformedResponse,
    RetryPolicy,
    TransientFailure,
    is_transient_status,
    parse_retry_after,
    retry_delay,
)
from redline.generators.transport.secrets import (
    ENV_REFERENCE,
    MASK,
    env_references,
    expand_env,
    has_masked_userinfo,
    header_safe,
    mask_url,
    redact,
    redact_data,
    url_secrets,
)

__all__ = [
    "ENV_REFERENCE",
    "MASK",
    "RETRY_STATUSES",
    "TRANSPORT_OPTIONS",
    "HTTPGenerator",
    "MalformedResponse",
    "RateLimiter",
    "RemoteGenerator",
    "RetryPolicy",
    "TransientFailure",
    "env_references",
    "estimate_tokens",
    "expand_env",
    "has_masked_userinfo",
    "header_safe",
    "is_transient_status",
    "mask_url",
    "number_option",
    "parse_retry_after",
    "read_transport_options",
    "redact",
    "redact_data",
    "retry_delay",
    "url_secrets",
]
