"""TLS of HTTPGenerator against real HTTPS servers on 127.0.0.1 with a test CA: certificates are
checked by default, ``ca_bundle`` adds a CA, ``client_cert`` / ``client_key`` give a client
certificate, and a file that cannot be used is one line naming the option and the path."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable
from redline.generators.openai import OpenAIGenerator

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}


def _name(common_name: str):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key, path: Path, password: bytes | None = None) -> str:
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return str(path)


@pytest.fixture
def pki(tmp_path) -> dict[str, str]:
    """A test CA, a server certificate for localhost and 127.0.0.1, a client certificate, and the
    client key encrypted: their PEM files by name."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("redline test CA"))
        .issuer_name(_name("redline test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital_signature, key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common_name: str, usage, names: list | None = None):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server, server_key = leaf(
        "localhost",
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client, client_key = leaf("redline", ExtendedKeyUsageOID.CLIENT_AUTH)
    files = {}
    for name, cert in (("ca.pem", ca), ("server.pem", server), ("client.pem", client)):
        (tmp_path / name).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        files[name] = str(tmp_path / name)
    files["server.key"] = _write_key(server_key, tmp_path / "server.key")
    files["client.key"] = _write_key(client_key, tmp_path / "client.key")
    files["client-encrypted.key"] = _write_key(client_key, tmp_path / "client-encrypted.key", b"passphrase")
    return files


def server_context(pki: dict[str, str], client_certificate: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki["server.pem"], pki["server.key"])
    if client_certificate:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(pki["ca.pem"])
    return context


@asynccontextmanager
async def https_server(context: ssl.SSLContext) -> AsyncIterator[str]:
    """An aiohttp HTTPS server on 127.0.0.1 answering the OpenAI chat API; yields its base URL."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        return web.json_response(ANSWER)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"data": []})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock, ssl_context=context)
    await site.start()
    try:
        yield f"https://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        await runner.cleanup()


def _drain(sock: socket.socket) -> None:
    """Half-close ``sock`` and read what the client already sent, so that closing it sends FIN
    after the alert rather than a reset that would discard the alert on the client's side."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        while sock.recv(65536):
            pass
    except OSError:
        pass


@contextmanager
def alerting_server(context: ssl.SSLContext) -> Iterator[str]:
    """A blocking HTTPS server in a thread: unlike asyncio's, its TLS sends the alert that says
    why a handshake failed (as common servers do). Yields its base URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener was closed
                return
            tls = context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
            try:
                tls.do_handshake()
                tls.recv(65536)
                body = json.dumps(ANSWER).encode()
                tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
            except OSError:  # the client sent no certificate: the alert is on its way
                _drain(tls)
            finally:
                tls.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the thread
        listener.close()
        thread.join(timeout=5)


def conversation() -> Conversation:
    return Conversation(turns=[Turn(role="user", content=Message(text="hi"))])


async def ask(base_url: str, **options) -> str | None:
    gen = OpenAIGenerator("m", base_url=base_url, max_retries=1, backoff_base=0.01, backoff_cap=0.01, **options)
    try:
        (out,) = await gen.generate(conversation(), 1)
    finally:
        await gen.aclose()
    return out.text if out is not None else None


# -- the server's certificate -----------------------------------------------------------------------
async def test_a_certificate_of_an_unknown_ca_is_refused_naming_the_problem(pki):
    async with https_server(server_context(pki, client_certificate=False)) as url:
        with pytest.raises(GeneratorUnavailable) as info:
            await ask(url)
    message = str(info.value)
    assert message.startswith(f"cannot connect to {url}: its TLS certificate was refused (")
    assert "(unable to get local issuer certificate): set the generator option ca_bundle" in message
    assert "\n" not in message and "_ssl.c" not in message


async def test_ca_bundle_makes_the_test_ca_trusted(pki):
    async with https_server(server_context(pki, client_certificate=False)) as url:
        assert await ask(url, ca_bundle=pki["ca.pem"]) == "ok"


# -- client certificates ----------------------------------------------------------------------------
async def test_a_server_wanting_a_client_certificate_accepts_client_cert_and_client_key(pki):
    async with https_server(server_context(pki, client_certificate=True)) as url:
        text = await ask(url, ca_bundle=pki["ca.pem"], client_cert=pki["client.pem"], client_key=pki["client.key"])
    assert text == "ok"


async def test_a_server_wanting_a_client_certificate_refuses_a_request_without(pki):
    async with https_server(server_context(pki, client_certificate=True)) as url:
        with pytest.raises(GeneratorError) as info:  # asyncio's server hangs up without saying why
            await ask(url, ca_bundle=pki["ca.pem"])
    assert str(info.value).startswith(f"connection to {url} dropped (")
    assert str(info.value).endswith("(after 2 tries)")


def test_a_refused_client_certificate_alert_is_unavailable_naming_it(pki):
    import asyncio

    with alerting_server(server_context(pki, client_certificate=True)) as url:
        with pytest.raises(GeneratorUnavailable) as info:
            asyncio.run(ask(url, ca_bundle=pki["ca.pem"]))
        accepted = asyncio.run(
            ask(url, ca_bundle=pki["ca.pem"], client_cert=pki["client.pem"], client_key=pki["client.key"])
        )
    assert str(info.value).startswith(f"cannot connect to {url}: TLS failed (tlsv13 alert certificate required)")
    assert "client_cert" in str(info.value)
    assert accepted == "ok"


# -- the options ------------------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["ca_bundle", "client_cert"])
async def test_a_missing_file_is_unavailable_naming_the_option_and_the_path(tmp_path, option):
    missing = str(tmp_path / "nowhere.pem")
    gen = OpenAIGenerator("m", base_url="https://127.0.0.1:9/v1", **{option: missing})
    with pytest.raises(GeneratorUnavailable) as info:
        await gen.start()
    assert str(info.value) == f"openai: generator option {option}: cannot read {missing}: No such file or directory"


async def test_a_file_that_is_not_pem_is_unavailable_naming_the_option(tmp_path, pki):
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    gen = OpenAIGenerator("m", base_url="https://127.0.0.1:9/v1", ca_bundle=str(junk))
    with pytest.raises(GeneratorUnavailable, match=rf"^openai: generator option ca_bundle: {junk} holds no PEM CA"):
        await gen.start()


async def test_an_encrypted_client_key_is_refused_without_asking_for_a_passphrase(pki):
    gen = OpenAIGenerator(
        "m", base_url="https://127.0.0.1:9/v1", client_cert=pki["client.pem"], client_key=pki["client-encrypted.key"]
    )
    with pytest.raises(GeneratorUnavailable, match="is encrypted: give it without a passphrase"):
        await gen.start()


async def test_a_client_key_alone_is_unavailable():
    gen = OpenAIGenerator("m", base_url="https://127.0.0.1:9/v1", client_key="/tmp/key.pem")
    with pytest.raises(GeneratorUnavailable, match="client_key needs client_cert"):
        await gen.start()


def test_the_settings_hold_the_paths_not_the_files(pki):
    gen = OpenAIGenerator(
        "m", base_url="https://h/v1", ca_bundle=pki["ca.pem"], client_cert=pki["client.pem"], client_key="~/k.pem"
    )
    settings = gen.settings()
    assert (settings["ca_bundle"], settings["client_cert"], settings["client_key"]) == (
        pki["ca.pem"],
        pki["client.pem"],
        "~/k.pem",
    )
