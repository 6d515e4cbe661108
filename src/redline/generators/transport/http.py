"""The HTTP client every remote generator shares: :class:`HTTPGenerator`.

One :class:`aiohttp.ClientSession` per generator (a keep-alive pool, imported when the generator
starts so that ``redline --help`` stays light); a per-request timeout; retries with
exponential backoff and full jitter on 408/409/425/429, 5xx, timeouts, dropped connections and
malformed 2xx answers (not JSON, or without the fields the backend reads: :class:`MalformedResponse`),
honouring the server's ``Retry-After`` for the request it refused; client-side rate limits
(``rpm``, ``tpm``) and the pace learned from the provider's 429s and ``x-ratelimit-*`` headers
(:mod:`.ratelimit`); an optional cap on requests in flight. After
``max_retries`` a request raises :class:`GeneratorError` (the attempt is recorded as errored, the
run goes on), as does an error object in a 2xx answer, at once. A refused key (401/403), an unknown path or model (404),
an endpoint nobody answers at and a TLS certificate or handshake that fails raise
:class:`GeneratorUnavailable` (the run stops and can be resumed; after a 404, :class:`NotServed`,
resuming the run as stored cannot help). Every message it raises is
masked: it never holds the key, a ``${VAR}`` value or the password of a ``user:password@`` in
``base_url`` (an answer it quotes is masked before it is cut), and every output is masked the same
way (:meth:`RemoteGenerator.generate`): an endpoint that echoes the request cannot put a secret
into an output, the cache or a report. The stored settings hold ``base_url`` with its password
replaced by ``***``. The key and the ``headers`` option go with each request, never as the
session's default headers (aiohttp copies those into a proxy's ``CONNECT`` request), and redirects
are not followed (a 3xx answer stops the run, naming where it points): neither a proxy nor another
host receives them.

TLS: certificates and host names are checked against the system's store
(:func:`ssl.create_default_context`), plus the CA file of the ``ca_bundle`` option; ``client_cert``
and ``client_key`` give a client certificate (mutual TLS). Nothing turns the check off.

Proxies come from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``,
either case), looked up once per scheme and host. aiohttp's own ``trust_env`` is not used: it also
reads ``~/.netrc``, whose credentials aiohttp refuses to send next to the key's bearer header.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import urllib.parse
from collections.abc import Callable
from typing import Any, ClassVar

from redline import __version__, jsonio
from redline.generators.base import GeneratorError, GeneratorUnavailable
from redline.generators.options import GeneratorOption
from redline.generators.transport.remote import RemoteGenerator
from redline.generators.transport.retry import (
    MalformedResponse,
    TransientFailure,
    is_transient_status,
    parse_retry_after,
)
from redline.generators.transport.secrets import env_references, expand_env, header_safe, mask_url

__all__ = ["MAX_BODY_BYTES", "HTTPGenerator", "NotServed"]

MAX_BODY_BYTES = 64 * 2**20
"""The largest answer body read from an endpoint; a larger one fails its request only."""

_EXCERPT_BYTES = 64 * 2**10
"""The start of an answer body masked before a message quotes a part of it: far longer than the
quoted part and any secret, so that the cut never leaves part of a secret unmasked."""

#: Words of an OpenSSL alert by which a server refuses the client's certificate (or its absence)
#: after the handshake: not worth another try.
_TLS_REFUSALS = ("CERTIFICATE", "UNKNOWN_CA", "ACCESS_DENIED")

_CA_HINT = ": set the generator option ca_bundle to the PEM file of the CA that signed it"
#: What to do about a server certificate refused, by OpenSSL's verify code.
_CERTIFICATE_HINTS = {
    18: _CA_HINT,  # self-signed certificate
    19: _CA_HINT,  # self-signed certificate in the chain
    20: _CA_HINT,  # unable to get the local issuer certificate
    21: _CA_HINT,  # unable to verify the first certificate
    62: ": --base-url must name a host the certificate is for",  # host name mismatch
}


class NotServed(GeneratorUnavailable):
    """The endpoint does not serve the model or path (HTTP 404): the run cannot go on as stored,
    so no resume is offered."""


class HTTPGenerator(RemoteGenerator):
    """Base of the generators that call a model over HTTP: one aiohttp session, retries with
    backoff and ``Retry-After`` (:attr:`retry_policy`), a per-request timeout, optional rate limits
    and concurrency cap. Takes the options of :class:`RemoteGenerator` and ``headers``.

    Subclasses implement :meth:`_generate` with :meth:`post_json` (or :meth:`send`), which returns
    the parsed JSON of a successful answer or raises :class:`GeneratorError` /
    :class:`GeneratorUnavailable`.
    """

    default_base_url: ClassVar[str | None] = None
    default_key_env: ClassVar[str | None] = None
    #: When True a missing key is fatal for :attr:`default_base_url` (hosted APIs).
    key_required_for_default: ClassVar[bool] = False
    #: A path answered by a GET to check that the endpoint is there (``None``: no check).
    probe_path: ClassVar[str | None] = "/models"
    option_specs = RemoteGenerator.option_specs + (
        GeneratorOption(
            "headers", "mapping", help="headers sent with every request; ${VAR} is replaced by that variable"
        ),
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        base_url = self.option_values["base_url"] or self.default_base_url or ""
        self.base_url = str(base_url).rstrip("/")
        self.api_key_env = str(self.option_values["api_key_env"] or self.default_key_env or "")
        headers = self.option_values["headers"] or {}
        #: Extra headers as given: ``${VAR}`` references are expanded when the client is created.
        self.header_templates = {str(k): str(v) for k, v in headers.items()}
        self._session: Any = None  # an aiohttp.ClientSession once started
        self._default_headers: dict[str, str] = {}
        #: The key's header and the ``headers`` option, expanded: sent with each request, never as
        #: the session's defaults (aiohttp copies those into a proxy's CONNECT request).
        self._request_headers: dict[str, str] = {}
        self._start_lock: asyncio.Lock | None = None
        self._proxies: dict[tuple[str, str], str | None] = {}
        self._targets: dict[str, tuple[str, dict[str, str] | None]] = {}

    # -- connection ------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        """The key from :attr:`api_key_env`, without surrounding whitespace (a key pasted or read
        from a file often ends in a newline). A key with characters no HTTP header may hold is
        refused here, naming the variable only: the HTTP client would otherwise raise an error that quotes
        the header, key included, into the attempt's recorded error."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if key is None:
            return None
        key = key.strip()
        if not header_safe(key):
            raise GeneratorUnavailable(
                f"the API key in ${self.api_key_env} contains a line break or another character "
                "an HTTP header cannot hold; set it to the bare key"
            )
        return key or None

    def _secrets(self) -> list[str]:
        """Secret values this generator sends (masked in any message it records and in every
        answer): the key, the userinfo of ``base_url`` and every environment variable a header
        refers to."""
        names: list[str] = []
        for value in self.header_templates.values():
            names.extend(env_references(value))
        found = [(os.environ.get(name) or "").strip() for name in names]
        return super()._secrets() + [secret for secret in found if secret]

    def _headers(self) -> dict[str, str]:
        """Headers sent with every request: the key as a bearer token when there is one, then the
        ``headers`` option with each ``${VAR}`` replaced by that environment variable."""
        key = self._api_key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        where = f"{self.name} header"
        for name, value in self.header_templates.items():
            headers[name] = expand_env(value, f"{where} {name}")
            if not header_safe(headers[name]) or not header_safe(name):
                raise GeneratorUnavailable(f"{where} {name}: holds a line break or a non-ASCII character")
        return headers

    def _check_options(self) -> None:
        """Raise :class:`GeneratorUnavailable` for a configuration that cannot work."""
        if not self.model:
            raise GeneratorUnavailable(f"the {self.family} generator needs a model name: {self.family}:MODEL")
        if not self.base_url.startswith(("http://", "https://")):
            raise GeneratorUnavailable(
                f"{self.family}: base_url must start with http:// or https://, not {self.base_url!r}"
            )
        if (
            self.key_required_for_default
            and self.base_url == (self.default_base_url or "").rstrip("/")
            and not self._api_key()
        ):
            raise GeneratorUnavailable(
                f"missing API key: set the environment variable {self.api_key_env} "
                "(or choose another with --api-key-env)"
            )

    async def start(self) -> None:
        try:
            await self._start()
        except GeneratorUnavailable as exc:  # e.g. "cannot reach URL": the URL's password masked
            message = self.redact(str(exc))
            if message == str(exc):
                raise
            raise GeneratorUnavailable(message) from None

    async def _start(self) -> None:
        if self._session is not None:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._session is not None:
                return
            self._check_options()
            context = self._ssl_context()
            self._default_headers = {"content-type": "application/json", "user-agent": f"redline/{__version__}"}
            self._request_headers = self._headers()
            import aiohttp  # heavy: imported when the first generator starts

            # The cap on connections is the cap on requests in flight (none: the harness's
            # --concurrency bounds them); the timeout is per request.
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.concurrency or 0, ssl=context),
                headers=self._default_headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=False,  # proxies: _proxy (trust_env would also send ~/.netrc credentials)
            )
            try:
                await self._check_reachable(session)
            except BaseException:
                await session.close()
                raise
            self._session = session

    def _ssl_context(self) -> Any:
        """The TLS context of every https request: the system's CA store with host names checked,
        plus the ``ca_bundle`` option's CAs and the ``client_cert`` / ``client_key`` pair; ``True``
        (aiohttp's own verifying context, the same system store and checks) when none is given.
        :class:`GeneratorUnavailable` names the option and the file that cannot be used."""
        import ssl

        if not (self.ca_bundle or self.client_cert or self.client_key):
            return True
        if self.client_key and not self.client_cert:
            raise GeneratorUnavailable(f"{self.family}: generator option client_key needs client_cert as well")
        paths: dict[str, str] = {}
        for option in ("ca_bundle", "client_cert", "client_key"):
            given = getattr(self, option)
            if not given:
                continue
            path = os.path.expanduser(given)
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                raise GeneratorUnavailable(
                    f"{self.family}: generator option {option}: cannot read {given}: {exc.strerror or exc}"
                ) from None
            paths[option] = path
        context = ssl.create_default_context()
        if "ca_bundle" in paths:
            try:
                context.load_verify_locations(cafile=paths["ca_bundle"])
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                raise GeneratorUnavailable(
                    f"{self.family}: generator option ca_bundle: {self.ca_bundle} holds no PEM CA certificate "
                    f"({_ssl_reason(exc)})"
                ) from None
        if "client_cert" in paths:
            try:
                context.load_cert_chain(paths["client_cert"], paths.get("client_key"), password=_no_password)
            except _EncryptedKey:
                raise GeneratorUnavailable(
                    f"{self.family}: generator option client_key: the key of {self.client_key or self.client_cert} "
                    "is encrypted: give it without a passphrase"
                ) from None
            except (OSError, ValueError) as exc:
                files = f"{self.client_cert}" + (f" and {self.client_key}" if self.client_key else "")
                raise GeneratorUnavailable(
                    f"{self.family}: generator options client_cert/client_key: {files} are not a PEM certificate "
                    f"and its key ({_ssl_reason(exc)})"
                ) from None
        return context

    def _proxy(self, url: str) -> str | None:
        """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
        ``ALL_PROXY``, in either case), unless ``NO_PROXY`` exempts its host; looked up once per
        scheme and host."""
        parts = urllib.parse.urlsplit(url)
        key = (parts.scheme, parts.hostname or "")
        if key not in self._proxies:
            from urllib.request import getproxies_environment, proxy_bypass_environment  # type: ignore[attr-defined]

            proxy = None
            if not proxy_bypass_environment(key[1]):
                found = getproxies_environment()
                proxy = found.get(key[0]) or found.get("all") or None
            if len(self._proxies) < 64:  # a generator sends to one or two hosts
                self._proxies[key] = proxy
            return proxy
        return self._proxies[key]

    def _target(self, url: str) -> tuple[str, dict[str, str] | None]:
        """``url`` without a ``user:password@``, and the ``Authorization: Basic`` header that
        carries it instead (``None`` when there is none): URL credentials take the place of the
        key's bearer header."""
        found = self._targets.get(url)
        if found is not None:
            return found
        parts = urllib.parse.urlsplit(url)
        if "@" not in parts.netloc:
            found = (url, None)
        else:
            bare = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
            pair = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
            token = base64.b64encode(pair.encode("utf-8", "surrogatepass")).decode("ascii")
            found = (bare, {"Authorization": f"Basic {token}"})
        if len(self._targets) < 64:  # a generator sends to one or two URLs
            self._targets[url] = found
        return found

    def _sent_headers(self, auth: dict[str, str] | None) -> dict[str, str]:
        """The headers of one request: the key's and the ``headers`` option's, with ``auth`` (a
        URL's ``Basic`` credentials) over the key's bearer header."""
        return {**self._request_headers, **auth} if auth else self._request_headers

    def _unreachable_hint(self) -> str:
        return "check --base-url"

    async def _check_reachable(self, session: Any) -> None:
        """Fail fast on an endpoint nobody answers at, or whose TLS fails. Any HTTP answer (even
        404) is fine."""
        if self.probe_path is None:
            return
        import aiohttp

        url = self.base_url + self.probe_path
        try:
            target, auth = self._target(url)
            proxy = self._proxy(url)
        except ValueError as exc:  # e.g. "Invalid IPv6 URL"
            raise GeneratorUnavailable(
                f"{self.family}: base_url is not a usable URL ({url}: {exc}): check --base-url"
            ) from None
        timeout = aiohttp.ClientTimeout(total=min(self.timeout, 10.0))
        for attempt in range(3):
            try:
                async with session.get(
                    target, headers=self._sent_headers(auth), timeout=timeout, proxy=proxy, allow_redirects=False
                ):
                    pass  # an answer's head proves someone is there; its body (maybe endless) is not read
                return
            except aiohttp.InvalidURL as exc:  # e.g. a control character or a bad port in --base-url
                raise GeneratorUnavailable(
                    f"{self.family}: base_url is not a usable URL ({exc}): check --base-url"
                ) from None
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:  # refused, or no answer
                tls = self._tls_failure(exc)
                if tls is not None:
                    raise tls from None
                if attempt == 2:
                    raise GeneratorUnavailable(
                        f"cannot reach {self.base_url}: {_reason(exc)} ({self._unreachable_hint()})"
                    ) from None
                await asyncio.sleep(0.2 * (attempt + 1))
            except aiohttp.ClientOSError as exc:  # connected, then dropped (a TLS alert, a reset)
                tls = self._tls_failure(exc)
                if tls is not None:
                    raise tls from None
                return
            except (TimeoutError, aiohttp.ClientError, ValueError):
                return  # someone answered (or hangs): the requests themselves will say more

    def _tls_failure(self, exc: BaseException) -> GeneratorUnavailable | None:
        """:class:`GeneratorUnavailable` naming what failed when ``exc`` is a TLS failure (a
        certificate refused, a handshake that fails, a client certificate refused or missing),
        else ``None``."""
        import ssl

        import aiohttp

        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            error = exc.certificate_error
            hint = _CERTIFICATE_HINTS.get(getattr(error, "verify_code", 0), "")
            return GeneratorUnavailable(
                f"cannot connect to {self.base_url}: its TLS certificate was refused ({_ssl_reason(error)}){hint}"
            )
        cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc.__cause__
        if not isinstance(cause, ssl.SSLError):
            return None
        if isinstance(exc, aiohttp.ClientConnectorSSLError) or any(
            word in (cause.reason or "") for word in _TLS_REFUSALS
        ):
            return GeneratorUnavailable(
                f"cannot connect to {self.base_url}: TLS failed ({_ssl_reason(cause)}): check the generator "
                "options client_cert and client_key if the server wants a client certificate"
            )
        return None

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # -- one request, with retries ---------------------------------------------------------------
    async def post_json(
        self,
        url: str,
        body: Any,
        estimated_tokens: int = 0,
        parse: Callable[[Any], Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """POST ``body`` as JSON to ``url`` (absolute) and return the answer's parsed JSON, or
        ``parse(json)`` when ``parse`` is given. ``timeout``: seconds of the first try (default:
        :meth:`request_timeout`).

        Retries as described in the module docstring; a successful answer that is not JSON, or
        whose JSON ``parse`` rejects with :class:`MalformedResponse`, is retried like a 5xx. Raises
        :class:`GeneratorError` when the request fails for good (malformed every time included) or
        the server answers an error object, :class:`GeneratorUnavailable` when the endpoint refuses
        the key, does not exist or cannot be reached.
        """
        return await self.send(url, jsonio.dumps_bytes(body), estimated_tokens, parse=parse, timeout=timeout)

    async def send(
        self,
        url: str,
        content: bytes,
        estimated_tokens: int = 0,
        method: str = "POST",
        as_text: bool = False,
        parse: Callable[[Any], Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send ``content`` (JSON bytes) with ``method`` to ``url`` with retries; return the parsed
        JSON of the answer (``parse(json)`` when given), or its text when ``as_text``. ``timeout``
        and errors as for :meth:`post_json`; their messages never hold a secret (an answer that
        echoes the key is masked)."""
        try:
            return await self._send(url, content, estimated_tokens, method, as_text, parse, timeout)
        except (GeneratorError, GeneratorUnavailable) as exc:
            message = self.redact(str(exc))
            if message == str(exc):
                raise
            raise type(exc)(message) from None

    async def _send(
        self,
        url: str,
        content: bytes,
        estimated_tokens: int,
        method: str,
        as_text: bool,
        parse: Callable[[Any], Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        await self.start()
        import aiohttp

        first_timeout = timeout if timeout is not None else self.request_timeout()
        timeouts = 0  # tries of this request that timed out: the next one waits longer
        session = self._session
        assert session is not None
        semaphore = self._semaphore
        try:
            target, auth = self._target(url)
            proxy = self._proxy(url)
        except ValueError as exc:  # e.g. "Invalid IPv6 URL"
            raise GeneratorUnavailable(f"{self.family}: cannot send to {url}: {exc}") from None

        async def exchange(seconds: float) -> tuple[int, bytes, Any, str | None]:
            limit = aiohttp.ClientTimeout(total=seconds)
            async with session.request(
                method,
                target,
                data=content,
                headers=self._sent_headers(auth),
                proxy=proxy,
                timeout=limit,
                allow_redirects=False,  # a redirect would carry the headers to wherever it points
            ) as response:
                return response.status, await _read_capped(response, url), response.headers, response.charset

        async def attempt(index: int) -> Any:
            """One try: the answer, or :class:`TransientFailure` for one worth another try."""
            nonlocal timeouts
            seconds = self.retry_policy.timeout(first_timeout, timeouts)
            try:
                if semaphore is not None:
                    async with semaphore:
                        status, body, headers, charset = await exchange(seconds)
                else:
                    status, body, headers, charset = await exchange(seconds)
            except Exception as exc:
                failure = self._failure(exc, index, url, seconds)
                if failure is None:
                    raise
                if isinstance(failure, TransientFailure) and failure.timed_out:
                    timeouts += 1
                raise failure from None
            self.limiter.observe(headers)  # x-ratelimit-* headers, when the provider sends them
            if status < 300:
                if as_text:
                    return _decode(body, charset)
                data = self._json(body, charset, url)  # a truncated or garbled body: MalformedResponse, tried again
                self.limiter.settle(estimated_tokens, self._usage_tokens(data))
                return data if parse is None else parse(data)
            if status in (401, 403):
                raise GeneratorUnavailable(
                    f"{self.base_url} refused the key in {self.api_key_env or 'the request'} (HTTP {status})"
                )
            if status == 404:
                raise self._not_served(url, _one_line(self.redact(_decode(body[:_EXCERPT_BYTES], charset))))
            if 300 <= status < 400:
                raise GeneratorUnavailable(
                    f"{url} redirects (HTTP {status}) to {_one_line(self.redact(headers.get('location', '')))}: "
                    "redirects are not followed, so that the key and headers go only where --base-url says; "
                    "give the final URL with --base-url"
                )
            message = f"HTTP {status} from {url}: {_one_line(self.redact(_decode(body[:_EXCERPT_BYTES], charset)))}"
            if not is_transient_status(status):
                raise GeneratorError(message)
            raise TransientFailure(message, parse_retry_after(headers), throttled=status == 429)

        return await self.retry_policy.call(attempt, self.limiter, estimated_tokens, self._count_retry)

    def _not_served(self, url: str, answer: str) -> NotServed:
        """The one-line :class:`NotServed` for a 404 from ``url`` whose (masked) body is ``answer``:
        an unknown model when the answer speaks of a model, else an unknown path."""
        if "model" in answer.lower():
            return NotServed(
                f"model {self.model!r} is not served at {self.base_url} (HTTP 404: {answer}): check -m/--model "
                "against the server's model names ('redline list generators' lists the families)"
            )
        return NotServed(f"{url} not found (HTTP 404): check --base-url and -m/--model {self.model!r}")

    def _failure(
        self, exc: Exception, index: int, url: str, seconds: float | None = None
    ) -> GeneratorError | GeneratorUnavailable | None:
        """What an exception of aiohttp on try ``index`` to ``url`` (with a timeout of ``seconds``)
        means: :class:`TransientFailure` for a timeout (``timed_out``), a dropped connection or an
        answer that is not HTTP (and for a refused
        connection, until a few tries say that nobody is there: :class:`GeneratorUnavailable`);
        :class:`GeneratorUnavailable` for a TLS failure or a URL that cannot be sent to;
        :class:`GeneratorError` for a request the client refuses (e.g. a header); ``None`` for an
        error that is not the client's."""
        import aiohttp

        if isinstance(exc, TimeoutError):  # aiohttp's timeouts included
            seconds = self.timeout if seconds is None else seconds
            return TransientFailure(f"no answer from {url} within {seconds:g} s", timed_out=True)
        tls = self._tls_failure(exc)
        if tls is not None:
            return tls
        if isinstance(exc, aiohttp.ClientConnectorError):
            message = f"cannot connect to {self.base_url} ({_reason(exc)})"
            if index >= min(self.max_retries, 2):  # nobody there: no point in waiting longer
                return GeneratorUnavailable(message)
            return TransientFailure(message, unanswered=True)
        if isinstance(exc, aiohttp.InvalidURL):
            return GeneratorUnavailable(f"{self.family}: cannot send to {url}: not a usable URL ({exc})")
        if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
            # ServerDisconnectedError, ClientOSError, a reset, a body cut short (after an answer began)
            return TransientFailure(
                f"connection to {self.base_url} dropped ({type(exc).__name__}: {_one_line(self.redact(str(exc)))})",
                unanswered=not isinstance(exc, aiohttp.ClientPayloadError),
            )
        if isinstance(exc, aiohttp.ClientResponseError):  # a garbled status line or header
            return TransientFailure(
                f"an answer from {self.base_url} that is not HTTP "
                f"({type(exc).__name__}: {_one_line(self.redact(str(exc.message)))})"
            )
        if isinstance(exc, (ValueError, aiohttp.ClientError)):  # e.g. a header the client refuses
            return GeneratorError(f"request to {url} failed: {type(exc).__name__}: {_one_line(self.redact(str(exc)))}")
        return None

    def _json(self, body: bytes, charset: str | None, url: str) -> Any:
        try:
            data = jsonio.loads(body)
        except (ValueError, RecursionError):
            raise MalformedResponse(
                f"malformed response from {url}: not JSON: {self.excerpt(_decode(body[:_EXCERPT_BYTES], charset), 200)!r}"
            ) from None
        if isinstance(data, dict) and data.get("error") and not data.get("choices"):
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise GeneratorError(f"{url} answered with an error: {self.excerpt(str(message), 200)}")
        return data

    @staticmethod
    def _usage_tokens(data: Any) -> int | None:
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            total = usage.get("total_tokens")
            if isinstance(total, int):
                return total
        return None

    def settings(self) -> dict:
        values = {
            "base_url": mask_url(self.base_url),  # a user:password@ is stored as user:***@
            "api_key_env": self.api_key_env or None,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "rpm": self.limiter.rpm,
            "tpm": self.limiter.tpm,
            "headers": self.header_templates or None,  # templates only: ${VAR}, never the values
            "ca_bundle": self.ca_bundle,  # paths as given, not the files
            "client_cert": self.client_cert,
            "client_key": self.client_key,
        }
        return {k: v for k, v in values.items() if v is not None}


def _decode(body: bytes, charset: str | None) -> str:
    """``body`` as text in its declared ``charset`` (UTF-8 when none, or an unknown one);
    undecodable bytes become U+FFFD."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


async def _read_capped(response: Any, url: str) -> bytes:
    """The body of ``response``, refused with :class:`GeneratorError` past :data:`MAX_BODY_BYTES`."""
    if response.content_length is not None and "content-encoding" not in response.headers:
        # a plain body of declared length: aiohttp reads no more than that
        if response.content_length > MAX_BODY_BYTES:
            raise GeneratorError(f"the answer from {url} is larger than {MAX_BODY_BYTES:,} bytes")
        return await response.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise GeneratorError(f"the answer from {url} is larger than {MAX_BODY_BYTES:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class _EncryptedKey(GeneratorUnavailable):
    """Raised by :func:`_no_password`: a client key that needs a passphrase."""


def _no_password() -> str:
    """The passphrase callback of a client key: refuses (OpenSSL would otherwise ask on the terminal)."""
    raise _EncryptedKey


def _ssl_reason(exc: BaseException) -> str:
    """What OpenSSL said, without its ``[LIB: CODE]`` prefix and ``(_ssl.c:N)`` suffix."""
    text = getattr(exc, "verify_message", None) or getattr(exc, "strerror", None) or str(exc)
    text = re.sub(r"^\[[^\]]*\]\s*", "", str(text))
    return re.sub(r"\s*\(_ssl\.c:\d+\)$", "", text).strip() or type(exc).__name__


def _reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words (``connection refused`` when it says nothing)."""
    cause = getattr(exc, "os_error", None)
    text = str(getattr(cause, "strerror", None) or cause or exc).strip()
    return text or "connection refused"


def _one_line(text: str, limit: int = 200) -> str:
    """``text`` (a server's answer, a library's message) on one line, at most ``limit`` characters:
    it is quoted in an error recorded with the attempt."""
    return " ".join(text.split())[:limit]
