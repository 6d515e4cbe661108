"""The HTML report in a real browser (headless Chromium): injected markup does not run, nothing
is requested from the "attacker" host the outputs point at, our own script runs under the CSP,
and a screenshot is taken (also copied to /tmp/redline-report.png for people to look at).

The second line of defence is tested on its own: markup injected *unescaped* into the page
(as if escaping had failed) is still blocked by the Content-Security-Policy — and the same
injection without the policy does run and does reach the attacker, so these tests can fail.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers.hostile_run import build_hostile_run
from redline.report.html import render_report

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium chromium-driver)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--virtual-time-budget=3000",
]


class Attacker:
    """An HTTP server on 127.0.0.1 that serves nothing and records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Attacker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def chromium(page: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess:
    profile = workdir / f"profile-{len(list(workdir.glob('profile-*')))}"
    profile.mkdir()
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
    )


class DomSummary(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""  # the document's title (the first <title>; SVG charts have their own)
        self.tags: list[tuple[str, dict]] = []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_title = tag == "title" and [t for t, _ in self.tags].count("title") == 1

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def dump_dom(page: Path, workdir: Path) -> DomSummary:
    proc = chromium(page, workdir, "--dump-dom")
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    dom = DomSummary()
    dom.feed(proc.stdout)
    return dom


@pytest.fixture(scope="module")
def attacker():
    with Attacker() as server:
        yield server


@pytest.fixture(scope="module")
def page(tmp_path_factory, attacker):
    folder = tmp_path_factory.mktemp("browser")
    store, run_id = build_hostile_run(folder / "r.db", attacker=attacker.url)
    html = render_report(store, run_id)
    store.close()
    assert attacker.url in html  # the hostile outputs do point at the attacker
    path = folder / "report.html"
    path.write_text(html, encoding="utf-8")
    return path, html, run_id


def test_report_in_chromium_runs_nothing_injected_and_loads_nothing(page, attacker, tmp_path):
    path, _html, run_id = page
    before = len(attacker.requests)
    dom = dump_dom(path, tmp_path)
    assert dom.title == f"redline report · scripted:hostile-demo · {run_id}"
    assert "PWNED" not in dom.title
    html_attrs = next(attrs for tag, attrs in dom.tags if tag == "html")
    assert html_attrs.get("data-js") == "on"  # our nonce'd script ran under the CSP
    names = [tag for tag, _ in dom.tags]
    assert names.count("script") == 1
    for tag in ("img", "iframe", "link", "object", "embed", "base", "foreignobject"):
        assert tag not in names, tag
    assert all(not n.startswith("on") for _, attrs in dom.tags for n in attrs)
    # the filter script hid everything but the hits (default outcome "fail")
    details = [attrs for tag, attrs in dom.tags if tag == "details"]
    shown = [d for d in details if "hidden" not in d]
    assert shown and all("fail" in d["data-outcomes"] for d in shown) and len(shown) < len(details)
    assert attacker.requests[before:] == []


def test_screenshot(page, attacker, tmp_path):
    path, _, _ = page
    before = len(attacker.requests)
    shot = tmp_path / "redline-report.png"
    proc = chromium(path, tmp_path, "--window-size=1400,4400", f"--screenshot={shot}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    try:
        shutil.copyfile(shot, "/tmp/redline-report.png")
    except OSError:
        pass
    assert attacker.requests[before:] == []


def _inject(html: str, attacker: str) -> str:
    raw = (
        "<script>document.title='PWNED'</script>"
        f'<img src="{attacker}/raw-img.png">'
        "<img src=x onerror=\"document.title='PWNED-ONERROR'\">"
    )
    return html.replace('<main class="wrap">', '<main class="wrap">' + raw, 1)


def test_csp_blocks_markup_even_if_escaping_failed(page, attacker, tmp_path):
    _, html, run_id = page
    broken = tmp_path / "broken.html"
    broken.write_text(_inject(html, attacker.url), encoding="utf-8")
    before = len(attacker.requests)
    dom = dump_dom(broken, tmp_path)
    assert dom.title == f"redline report · scripted:hostile-demo · {run_id}"
    assert attacker.requests[before:] == []


def test_without_the_csp_the_same_injection_runs(page, attacker, tmp_path):
    """Control: proves the two tests above would catch an injection that runs or loads."""
    _, html, _ = page
    start = html.index('<meta http-equiv="Content-Security-Policy"')
    unprotected = html[:start] + html[html.index(">", start) + 1 :]
    control = tmp_path / "control.html"
    control.write_text(_inject(unprotected, attacker.url), encoding="utf-8")
    before = len(attacker.requests)
    dom = dump_dom(control, tmp_path)
    assert dom.title.startswith("PWNED")
    assert "/raw-img.png" in attacker.requests[before:]
