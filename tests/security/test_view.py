"""``redline view`` against hostile model output and hostile sites (see tests/view for the pages
themselves): output is escaped and inert on every page, every response carries the strict
Content-Security-Policy and its companions, and a label cannot be written by a request from
another origin, without the form's token, or through a foreign Host (DNS rebinding)."""

from __future__ import annotations

import shutil

import pytest
from starlette.testclient import TestClient

from helpers.hostile_run import CONTROL_CHARS, build_control_run, build_hostile_run
from helpers.html_dom import parse
from helpers.view_runs import BASE, client_for
from redline.store import Store
from redline.view import create_app
from redline.view.security import CSP

ATTACKER = "http://attacker.invalid"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("view-security") / "hostile.db"
    store, run_id = build_hostile_run(path, attacker=ATTACKER)
    store.close()
    return path, run_id


@pytest.fixture
def writable(hostile, tmp_path):
    path, run_id = hostile
    copy = tmp_path / "hostile.db"
    shutil.copyfile(path, copy)
    return copy, run_id


def every_page(path, run_id) -> list[str]:
    with Store(path) as store:
        attempts = [(a.probe_classname, a.seq) for a in store.iter_attempts(run_id)]
        probes = sorted({p for p, _ in attempts})
    urls = ["/", f"/runs/{run_id}", f"/runs/{run_id}/attempts", f"/compare?a={run_id}&b={run_id}"]
    urls += [f"/runs/{run_id}/attempts?probe={p}" for p in probes]
    urls += [f"/runs/{run_id}/attempts?page=2", f"/runs/{run_id}/attempts?q=%3Cscript%3E"]
    urls += [f"/runs/{run_id}/attempt?probe={p}&seq={s}" for p, s in attempts]
    return urls


def assert_inert(html: str, url: str) -> None:
    """No markup of the model's: no script but ours, no element that loads from elsewhere, no
    event handler, no inline style, no javascript: link."""
    doc = parse(html)
    for node in doc.iter():
        for name, value in node.attrs.items():
            assert not name.startswith("on"), (url, node.tag, name)
            assert name != "style", (url, node.tag)
            assert "javascript:" not in (value or "").lower(), (url, node.tag, name)
            assert ATTACKER not in (value or ""), (url, node.tag, name)
        assert node.tag not in ("iframe", "img", "svg", "style", "object", "embed", "base", "form") or (
            node.tag == "form" and (node.get("action") or "").startswith("/")
        ), (url, node.tag)
    metas = [m.attrs for m in doc.select("meta")]
    assert metas == [{"charset": "utf-8"}, {"name": "referrer", "content": "no-referrer"}, metas[2]], url
    assert metas[2].get("name") == "viewport", url
    assert [s.get("src") for s in doc.select("script")] == ["/static/view.js"], url
    assert [link.get("href") for link in doc.select("link")] == ["data:,", "/static/report.css", "/static/view.css"]


def test_hostile_output_is_escaped_and_inert_on_every_page(hostile):
    path, run_id = hostile
    client = client_for(path)
    shown = 0
    for url in every_page(path, run_id):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_inert(response.text, url)
        if "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in response.text:
            shown += 1
            assert "<script>document.title" not in response.text
    assert shown >= 5  # the hostile outputs are there, as text


def test_hostile_text_reads_as_written(hostile):
    path, run_id = hostile
    with Store(path) as store:
        hit = next(
            a for a in store.iter_attempts(run_id, "harmful.Requests") if "<script>" in (a.outputs[0].text or "")
        )
    doc = parse(client_for(path).get(f"/runs/{run_id}/attempt?probe=harmful.Requests&seq={hit.seq}").text)
    assert doc.one("section.output[data-output=0] .text").text == hit.outputs[0].text


def test_control_characters_are_shown_as_escapes(tmp_path):
    store, run_id = build_control_run(tmp_path / "control.db")
    seq = next(iter(store.finished_seqs(run_id, "harmful.Requests")))
    store.close()
    client = client_for(tmp_path / "control.db")
    for url in (
        "/",
        f"/runs/{run_id}",
        f"/runs/{run_id}/attempts",
        f"/runs/{run_id}/attempt?probe=harmful.Requests&seq={seq}",
    ):
        text = client.get(url).text
        for char in CONTROL_CHARS:
            assert char not in text, (url, repr(char))
    assert "\\x1b[31mred" in text and "\\u202eevil" in text


def assert_secured(response, what: str) -> None:
    headers = response.headers
    assert headers.get("content-security-policy") == CSP, what
    assert headers.get("x-content-type-options") == "nosniff", what
    assert headers.get("referrer-policy") == "no-referrer", what


def test_every_response_carries_the_security_headers(writable, monkeypatch):
    path, run_id = writable
    client = client_for(path)
    for url in every_page(path, run_id)[:6] + [
        f"/api/runs/{run_id}",
        "/static/view.js",
        "/static/view.css",
        "/static/report.css",
        "/static/none.js",
        "/nowhere",
        f"/runs/{run_id}/attempts?outcome=bad",
    ]:
        assert_secured(client.get(url), url)
    assert_secured(client.post(f"/runs/{run_id}/reviews", data={}), "POST without token")
    assert_secured(client.post("/"), "405")
    assert_secured(client.get("/", headers={"host": "evil.example:8000"}), "foreign host")
    token = parse(client.get(f"/runs/{run_id}/attempt?probe=demo.MultiTurn&seq=0").text).select("input[name=csrf]")[0]
    form = {"probe": "demo.MultiTurn", "seq": "0", "output": "0", "label": "correct", "csrf": token.get("value")}
    saved = client.post(f"/runs/{run_id}/reviews", data=form)
    assert saved.status_code == 303
    assert_secured(saved, "redirect after a label")

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("redline.view.app.runs_context", broken)
    crashing = TestClient(create_app(path), base_url=BASE, raise_server_exceptions=False)
    response = crashing.get("/")
    assert response.status_code == 500 and "internal error RuntimeError" in response.text
    assert_secured(response, "500")


# -- who may write a label -------------------------------------------------------------------------
def form_for(client, run_id: str) -> dict[str, str]:
    doc = parse(client.get(f"/runs/{run_id}/attempt?probe=demo.MultiTurn&seq=0").text)
    form = doc.one("form.review[data-output=1]")
    fields = {i.get("name"): i.get("value") for i in form.select("input[type=hidden]")}
    return {**fields, "label": "false_positive", "note": "looks fine"}


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"origin": "null", "sec-fetch-site": "cross-site"},
        {"origin": "http://127.0.0.1:8001"},
        {"origin": "https://127.0.0.1:8000"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"host": "evil.example:8000"},
        {"host": "127.0.0.1:9000"},
    ],
)
def test_a_label_from_another_origin_is_refused_and_nothing_is_written(writable, headers):
    path, run_id = writable
    client = client_for(path)
    form = form_for(client, run_id)
    response = client.post(f"/runs/{run_id}/reviews", data=form, headers=headers)
    assert response.status_code == 403
    with Store(path) as store:
        assert store.reviews(run_id) == []
    # the same form from our own page is saved (so the refusal above is the headers' doing)
    own = client.post(f"/runs/{run_id}/reviews", data=form, headers={"origin": BASE, "sec-fetch-site": "same-origin"})
    assert own.status_code == 303
    with Store(path) as store:
        assert len(store.reviews(run_id)) == 1


@pytest.mark.parametrize("token", [None, "", "wrong", "TOKEN-of-another-app"])
def test_a_label_without_the_apps_token_is_refused(writable, token):
    path, run_id = writable
    client = client_for(path)
    form = form_for(client, run_id)
    if token is None:
        del form["csrf"]
    elif token == "TOKEN-of-another-app":
        form["csrf"] = form_for(client_for(path), run_id)["csrf"]  # a second app instance: another token
    else:
        form["csrf"] = token
    response = client.post(f"/runs/{run_id}/reviews", data=form)
    assert response.status_code == 403
    assert "form token" in parse(response.text).one("#message").text
    with Store(path) as store:
        assert store.reviews(run_id) == []


def test_an_oversized_form_is_refused(writable):
    path, run_id = writable
    client = client_for(path)
    form = form_for(client, run_id)
    form["note"] = "x" * 70_000
    assert client.post(f"/runs/{run_id}/reviews", data=form).status_code == 400
    with Store(path) as store:
        assert store.reviews(run_id) == []


def test_a_note_with_controls_is_stored_inert_and_shown_escaped(writable):
    path, run_id = writable
    client = client_for(path)
    form = form_for(client, run_id)
    form["note"] = "<script>alert(1)</script>\x1b[2J\u202e"
    assert client.post(f"/runs/{run_id}/reviews", data=form).status_code == 303
    with Store(path) as store:
        (review,) = store.reviews(run_id)
    assert review.note == "<script>alert(1)</script>\\x1b[2J\\u202e"
    page = client.get(f"/runs/{run_id}/attempt?probe=demo.MultiTurn&seq=0").text
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
