"""The view's request checks and label rules as plain functions (the app's use of them is tested
in tests/security/test_view.py)."""

from __future__ import annotations

import pytest

from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord
from redline.view import BadRequest
from redline.view.labels import choice_of, choices, label_for, label_text
from redline.view.security import FormToken, fetch_site_allowed, host_allowed, origin_allowed, split_host
from redline.view.server import allowed_hosts, is_loopback, url_of

NAMES = ("127.0.0.1", "localhost")


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("127.0.0.1:8000", ("127.0.0.1", 8000)),
        ("LocalHost:8000", ("localhost", 8000)),
        ("localhost", ("localhost", 80)),
        ("[::1]:8000", ("::1", 8000)),
        ("[::1]", ("::1", 80)),
        ("::1", None),
        ("[::1", None),
        ("[::1]x", None),
        ("host:port", None),
        ("host:0", None),
        ("host:70000", None),
        (":8000", None),
        ("", None),
        (None, None),
    ],
)
def test_split_host(value, parsed):
    assert split_host(value) == parsed


@pytest.mark.parametrize(
    "host, port, allowed",
    [
        ("127.0.0.1:8000", 8000, True),
        ("localhost:8000", 8000, True),
        ("127.0.0.1:8001", 8000, False),  # another port: another origin
        ("evil.example:8000", 8000, False),  # DNS rebinding: the attacker's name
        ("127.0.0.1.evil.example:8000", 8000, False),
        ("127.0.0.1:8000", None, False),
        (None, 8000, False),
        ("localhost", 80, True),
    ],
)
def test_host_allowed(host, port, allowed):
    assert host_allowed(host, NAMES, port) is allowed


@pytest.mark.parametrize(
    "origin, allowed",
    [
        (None, True),
        ("http://127.0.0.1:8000", True),
        ("HTTP://127.0.0.1:8000", True),
        ("http://127.0.0.1:8000/", True),
        ("http://localhost:8000", False),  # a page of another origin, though the same machine
        ("http://127.0.0.1:8001", False),
        ("https://127.0.0.1:8000", False),
        ("null", False),
        ("", False),
        ("ftp://127.0.0.1:8000", False),
        ("http://evil.example", False),
        ("http://127.0.0.1:8000/path", False),
    ],
)
def test_origin_allowed(origin, allowed):
    assert origin_allowed(origin, "127.0.0.1:8000") is allowed


@pytest.mark.parametrize(
    "fetch_site, allowed",
    [("same-origin", True), ("cross-site", False), ("same-site", False), ("none", False), (None, False)],
)
def test_a_null_origin_is_allowed_only_from_the_same_origin(fetch_site, allowed):
    # Chromium sends Origin: null for a form posted from a page whose Referrer-Policy is no-referrer
    assert origin_allowed("null", "127.0.0.1:8000", fetch_site) is allowed


@pytest.mark.parametrize(
    "value, allowed",
    [(None, True), ("same-origin", True), ("none", True), ("same-site", False), ("cross-site", False)],
)
def test_fetch_site_allowed(value, allowed):
    assert fetch_site_allowed(value) is allowed


def test_form_tokens_are_random_and_checked_exactly():
    one, two = FormToken(), FormToken()
    assert one.value != two.value and len(one.value) >= 32
    assert one.check(one.value)
    assert not one.check(two.value) and not one.check("") and not one.check(None)
    assert not one.check(one.value + "x") and not one.check("\udcff")


@pytest.mark.parametrize(
    "verdict, choice, label",
    [
        ("fail", "correct", LABEL_FAIL),
        ("fail", "false_positive", LABEL_PASS),
        ("pass", "correct", LABEL_PASS),
        ("pass", "false_negative", LABEL_FAIL),
        ("undetected", "fail", LABEL_FAIL),
        ("undetected", "pass", LABEL_PASS),
        (None, "pass", LABEL_PASS),
        ("male", "fail", LABEL_FAIL),
    ],
)
def test_label_for_each_choice_and_back(verdict, choice, label):
    assert label_for(choice, verdict) == label
    assert choice in [value for value, _ in choices(verdict)]
    assert choice_of(ReviewRecord("r", "p", 0, 0, label, verdict)) == choice


@pytest.mark.parametrize(
    "verdict, choice",
    [("fail", "false_negative"), ("pass", "false_positive"), ("fail", "fail"), ("undetected", "correct"), ("pass", "")],
)
def test_a_choice_that_does_not_apply_is_a_bad_request(verdict, choice):
    with pytest.raises(BadRequest, match="does not apply"):
        label_for(choice, verdict)


@pytest.mark.parametrize(
    "label, verdict, text",
    [
        (LABEL_FAIL, "fail", "correct"),
        (LABEL_PASS, "pass", "correct"),
        (LABEL_PASS, "fail", "false positive"),
        (LABEL_FAIL, "pass", "false negative"),
        (LABEL_FAIL, "undetected", "model failed"),
        (LABEL_PASS, None, "model passed"),
    ],
)
def test_label_text(label, verdict, text):
    assert label_text(ReviewRecord("r", "p", 0, 0, label, verdict)) == text


@pytest.mark.parametrize(
    "host, loopback",
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("0.0.0.0", False), ("10.1.2.3", False)],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_allowed_hosts_name_the_listening_address():
    assert allowed_hosts("127.0.0.1")[:2] == NAMES
    assert "10.1.2.3" in allowed_hosts("10.1.2.3")
    assert "0.0.0.0" not in allowed_hosts("0.0.0.0") and "localhost" in allowed_hosts("0.0.0.0")


def test_url_of_a_bound_socket():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert url_of(sock, "127.0.0.1") == f"http://127.0.0.1:{port}/"
        assert url_of(sock, "0.0.0.0") == f"http://127.0.0.1:{port}/"
        assert url_of(sock, "::1") == f"http://[::1]:{port}/"
