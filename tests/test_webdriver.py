"""Our WebDriver client (tests/helpers/webdriver.py) against static pages on 127.0.0.1: every
command the browser tests use does what they rely on, in one headless Chromium session."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from helpers.webdriver import MISSING, Browser, NoSuchElement, wait_until

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

FORM = """<!doctype html><html><head><title>form page</title></head><body>
<form id=f method=GET action=/done>
  <select name=outcome><option value="">any</option><option value=fail>fail</option>
    <option value='say "hi"'>quoted</option></select>
  <input name=q value=start><input type=checkbox name=disagree value=1>
  <textarea name=note></textarea><button type=submit>go</button>
</form>
<p id=greeting data-x="1 &amp; 2">Hello <b>there</b><span hidden>secret</span></p>
<ul><li>a</li><li>b</li><li>c</li></ul>
<a id=next href="/done?from=link">next</a>
</body></html>"""


class Pages:
    """Serves :data:`FORM` at ``/`` and a page echoing nothing at ``/done``; records each path."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = (FORM if self.path == "/" else "<title>done</title><p id=done>done</p>").encode()
                self.send_response(404 if self.path.startswith("/missing") else 200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def pages() -> Iterator[Pages]:
    server = Pages()
    yield server
    server.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    with Browser(tmp_path_factory.mktemp("webdriver")) as b:
        yield b


def test_commands_on_a_static_page(browser: Browser, pages: Pages):
    browser.get(pages.url + "/")
    assert browser.title == "form page"
    assert browser.current_url == pages.url + "/"
    greeting = browser.find("#greeting")
    assert greeting.text == "Hello there"  # rendered text: the hidden span is left out
    assert greeting.attribute("data-x") == "1 & 2"
    assert greeting.attribute("missing") is None
    assert greeting.tag_name == "p"
    assert [li.text for li in browser.find("ul").find_all("li")] == ["a", "b", "c"]
    assert browser.find_all("table") == []
    with pytest.raises(NoSuchElement):
        browser.find("#nothing")
    assert browser.execute("return arguments[0].id + document.title", greeting) == "greetingform page"
    assert [e.tag_name for e in browser.execute("return document.querySelectorAll('li')")] == ["li"] * 3

    form = browser.find("form#f")
    form.find("select[name=outcome]").select("fail")
    assert form.find("select[name=outcome]").prop("value") == "fail"
    form.find("select[name=outcome]").select('say "hi"')  # quotes in a value
    assert form.find("select[name=outcome]").prop("value") == 'say "hi"'
    q = form.find("input[name=q]")
    q.clear()
    q.send_keys("Needle & <b>")
    form.find("input[name=disagree]").click()
    assert form.find("input[name=disagree]").prop("checked") is True
    form.find("textarea").send_keys("line one\nline two")
    url = browser.new_page(form.find("button[type=submit]").click, what="the form's target")
    assert urlsplit(url).path == "/done" and browser.status() == 200
    assert parse_qs(urlsplit(url).query) == {
        "outcome": ['say "hi"'],
        "q": ["Needle & <b>"],
        "disagree": ["1"],
        "note": ["line one\r\nline two"],
    }
    assert browser.wait_find("#done").text == "done"

    browser.back()
    browser.wait_url(lambda u: u == pages.url + "/", what="the first page again")
    browser.find("a#next").click()
    assert browser.wait_url(lambda u: u.endswith("/done?from=link")) and browser.title == "done"
    browser.get(pages.url + "/missing")
    assert browser.status() == 404


def test_wait_until_polls_and_times_out():
    start = time.monotonic()
    calls: list[int] = []

    def third_call() -> bool:
        calls.append(1)
        return len(calls) >= 3

    assert wait_until(third_call, timeout=5, interval=0.001) is True
    assert len(calls) == 3

    def missing() -> None:
        raise NoSuchElement("no such element", "gone", "find")

    with pytest.raises(AssertionError, match="waiting for the thing"):
        wait_until(missing, timeout=0.05, what="the thing", interval=0.01)
    assert time.monotonic() - start < 5
