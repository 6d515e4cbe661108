"""A small W3C WebDriver client of our own for tests that drive a real headless Chromium.

It starts Debian's ``chromedriver`` on a free 127.0.0.1 port, opens one session of headless
``chromium`` (own temporary profile, no background networking, no proxy) and speaks the W3C
protocol over httpx: :class:`Browser` (``get``, ``find``, ``find_all``, ``execute``, ``title``,
``current_url``, ``wait``, ``quit``) and :class:`Element` (``click``, ``send_keys``, ``clear``,
``text``, ``attribute``, ``prop``, ``select``). No selenium, nothing fetched from the network.

A test module starts one browser for all its tests (a module-scoped fixture) and skips itself with
:data:`MISSING` as the reason when Chromium or its driver is not installed::

    pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

__all__ = [
    "CHROMEDRIVER",
    "CHROMIUM",
    "MISSING",
    "Browser",
    "Element",
    "NoSuchElement",
    "StaleElement",
    "WebDriverError",
    "css_string",
    "wait_until",
]

T = TypeVar("T")


def _first(*candidates: str | None) -> str | None:
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


#: The browser and its driver (Debian: ``apt-get install chromium chromium-driver``).
CHROMIUM = _first(shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
CHROMEDRIVER = _first(shutil.which("chromedriver"), "/usr/bin/chromedriver")

#: Why browser tests cannot run here (``None`` when they can): the skip reason.
MISSING: str | None = (
    None
    if CHROMIUM and CHROMEDRIVER
    else "headless Chromium tests need chromium and chromedriver "
    f"(missing: {', '.join(n for n, p in (('chromium', CHROMIUM), ('chromedriver', CHROMEDRIVER)) if not p)}; "
    "apt-get install -y chromium chromium-driver)"
)

#: Chromium's flags: headless, no sandbox (containers), a fixed window, and nothing that talks to
#: the network on its own (updates, sync, metrics, safe browsing, translation, a system proxy).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-proxy-server",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-extensions",
    "--metrics-recording-only",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    "--hide-scrollbars",
    "--mute-audio",
)

#: The key of an element reference in the W3C protocol.
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"

#: Seconds to wait for the driver to start and the browser to open.
START_TIMEOUT = 30.0


class WebDriverError(RuntimeError):
    """The driver answered a command with an error (``error`` is the W3C error code)."""

    def __init__(self, error: str, message: str, command: str) -> None:
        super().__init__(f"{command}: {error}: {message.splitlines()[0] if message else ''}")
        self.error = error


class NoSuchElement(WebDriverError):
    """No element matches the selector."""


class StaleElement(WebDriverError):
    """The element is no longer in the page (it was replaced, or the page changed)."""


_ERRORS: dict[str, type[WebDriverError]] = {
    "no such element": NoSuchElement,
    "stale element reference": StaleElement,
}


def css_string(value: str) -> str:
    """``value`` as a quoted CSS string (for attribute selectors: ``[value=...]``)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ") + '"'


def wait_until(
    check: Callable[[], T],
    timeout: float = 10.0,
    what: str = "condition",
    interval: float = 0.05,
) -> T:
    """Poll ``check`` until it returns something truthy and return that. A missing or stale
    element counts as "not yet"; after ``timeout`` seconds an AssertionError says what was awaited
    and the last value (or error) seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = check()
        except (NoSuchElement, StaleElement) as exc:
            last = exc
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


class Element:
    """An element of the current page (a W3C element reference)."""

    def __init__(self, browser: Browser, element_id: str) -> None:
        self.browser = browser
        self.id = element_id

    def __repr__(self) -> str:
        return f"<Element {self.id}>"

    def _url(self, tail: str = "") -> str:
        return f"element/{self.id}{tail}"

    def find(self, css: str) -> Element:
        """The first descendant matching ``css`` (:class:`NoSuchElement` when none)."""
        value = self.browser._command("POST", self._url("/element"), {"using": "css selector", "value": css})
        return Element(self.browser, value[ELEMENT_KEY])

    def find_all(self, css: str) -> list[Element]:
        """Every descendant matching ``css``, in document order."""
        values = self.browser._command("POST", self._url("/elements"), {"using": "css selector", "value": css})
        return [Element(self.browser, v[ELEMENT_KEY]) for v in values]

    def click(self) -> None:
        self.browser._command("POST", self._url("/click"), {})

    def clear(self) -> None:
        self.browser._command("POST", self._url("/clear"), {})

    def send_keys(self, text: str) -> None:
        """Type ``text`` into the element (an input or a textarea)."""
        self.browser._command("POST", self._url("/value"), {"text": text})

    @property
    def text(self) -> str:
        """The element's rendered text (as a person sees it: hidden parts left out)."""
        return self.browser._command("GET", self._url("/text"))

    @property
    def content(self) -> str:
        """The element's ``textContent`` (as in the markup: untouched by CSS, hidden parts included)."""
        return self.prop("textContent")

    @property
    def tag_name(self) -> str:
        return self.browser._command("GET", self._url("/name"))

    def attribute(self, name: str) -> str | None:
        """The element's attribute ``name`` (``None`` when it has none)."""
        return self.browser._command("GET", self._url(f"/attribute/{name}"))

    def prop(self, name: str) -> Any:
        """The DOM property ``name`` (``value``, ``checked``, ``href`` as resolved, ...)."""
        return self.browser._command("GET", self._url(f"/property/{name}"))

    def select(self, value: str) -> None:
        """Choose the option whose value is ``value`` in this ``<select>`` (by clicking it)."""
        self.find(f"option[value={css_string(value)}]").click()


class Browser:
    """One headless Chromium session driven through its own ``chromedriver`` process.

    ``workdir`` holds the browser's profile and the driver's log (a temporary folder when not
    given, removed by :meth:`quit`). Use it as a context manager, or call :meth:`quit`."""

    def __init__(self, workdir: Path | None = None, *, extra_flags: tuple[str, ...] = ()) -> None:
        if MISSING is not None:
            raise RuntimeError(MISSING)
        assert CHROMIUM and CHROMEDRIVER
        self._own_dir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="redline-browser-")) if workdir is None else workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / "chromedriver.log"
        self._driver = subprocess.Popen(
            [CHROMEDRIVER, "--port=0", f"--log-path={self.log_path}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its browser is in the same group: quit can end both
            text=True,
        )
        self.session: str | None = None
        try:
            port = self._driver_port()
            self._http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0, trust_env=False)
            profile = self.workdir / "profile"
            profile.mkdir(exist_ok=True)
            options = {"binary": CHROMIUM, "args": [*FLAGS, f"--user-data-dir={profile}", *extra_flags]}
            capabilities = {
                "browserName": "chrome",
                "pageLoadStrategy": "normal",
                "timeouts": {"implicit": 0, "pageLoad": 30_000, "script": 10_000},
                "goog:chromeOptions": options,
            }
            answer = self._request("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}}, "new session")
            self.session = answer["sessionId"]
        except BaseException:
            self._stop_driver()
            raise

    def _driver_port(self) -> int:
        """Read the port the driver chose from its first lines ("... started successfully on port N.")."""
        assert self._driver.stdout is not None
        found: list[int] = []
        lines: list[str] = []
        ready = threading.Event()
        stream = self._driver.stdout

        def read() -> None:  # also drains the pipe for the driver's whole life
            for line in stream:
                if not found:
                    lines.append(line)
                    match = re.search(r"started successfully on port (\d+)", line)
                    if match:
                        found.append(int(match.group(1)))
                        ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True, name="chromedriver-output").start()
        if not ready.wait(START_TIMEOUT) or not found:
            raise RuntimeError(f"chromedriver did not start: {''.join(lines)[-2000:]!r}")
        return found[0]

    # -- protocol --------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: dict | None, command: str) -> Any:
        response = self._http.request(method, path, json=body)
        try:
            payload = response.json()
        except ValueError:
            raise WebDriverError("invalid answer", response.text[:500], command) from None
        value = payload.get("value") if isinstance(payload, dict) else None
        if response.is_error:
            error = value.get("error", "unknown error") if isinstance(value, dict) else "unknown error"
            message = value.get("message", "") if isinstance(value, dict) else response.text[:500]
            raise _ERRORS.get(error, WebDriverError)(error, message, command)
        return value

    def _command(self, method: str, tail: str, body: dict | None = None) -> Any:
        if self.session is None:
            raise RuntimeError("the browser session is closed")
        path = f"/session/{self.session}/{tail}" if tail else f"/session/{self.session}"
        return self._request(method, path, body, f"{method} {tail or 'session'}")

    def _wrap(self, value: Any) -> Any:
        """Element references in a script's result as :class:`Element` (recursively)."""
        if isinstance(value, dict):
            if set(value) == {ELEMENT_KEY}:
                return Element(self, value[ELEMENT_KEY])
            return {k: self._wrap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        return value

    @staticmethod
    def _unwrap(value: Any) -> Any:
        if isinstance(value, Element):
            return {ELEMENT_KEY: value.id}
        if isinstance(value, (list, tuple)):
            return [Browser._unwrap(v) for v in value]
        if isinstance(value, dict):
            return {k: Browser._unwrap(v) for k, v in value.items()}
        return value

    # -- commands --------------------------------------------------------------------------------
    def get(self, url: str) -> None:
        """Open ``url`` and wait until the page has loaded (its ``load`` event)."""
        self._command("POST", "url", {"url": url})

    @property
    def title(self) -> str:
        return self._command("GET", "title")

    @property
    def current_url(self) -> str:
        return self._command("GET", "url")

    def back(self) -> None:
        self._command("POST", "back", {})

    def find(self, css: str) -> Element:
        """The first element matching ``css`` (:class:`NoSuchElement` when none; no implicit wait)."""
        value = self._command("POST", "element", {"using": "css selector", "value": css})
        return Element(self, value[ELEMENT_KEY])

    def find_all(self, css: str) -> list[Element]:
        """Every element matching ``css``, in document order."""
        return [
            Element(self, v[ELEMENT_KEY])
            for v in self._command("POST", "elements", {"using": "css selector", "value": css})
        ]

    def execute(self, script: str, *args: Any) -> Any:
        """Run ``script`` (a function body: ``return ...``; ``arguments[i]`` are ``args``, elements
        allowed) in the page and return its result, elements as :class:`Element`."""
        return self._wrap(self._command("POST", "execute/sync", {"script": script, "args": self._unwrap(args)}))

    def wait(self, check: Callable[[], T], timeout: float = 10.0, what: str = "condition") -> T:
        """:func:`wait_until` (polls ``check``; missing or stale elements count as "not yet")."""
        return wait_until(check, timeout=timeout, what=what)

    def wait_find(self, css: str, timeout: float = 10.0) -> Element:
        """The first element matching ``css``, waiting up to ``timeout`` seconds for one."""
        return wait_until(lambda: self.find(css), timeout=timeout, what=f"an element {css!r} on {self.current_url}")

    def wait_url(self, check: Callable[[str], bool], timeout: float = 10.0, what: str = "the URL") -> str:
        """The current URL once ``check`` accepts it (a click's navigation may still be going on)."""

        def arrived() -> str:
            url = self.current_url
            return url if check(url) and self.ready() else ""

        return wait_until(arrived, timeout=timeout, what=what)

    def new_page(self, action: Callable[[], object], timeout: float = 10.0, what: str = "a new page") -> str:
        """Do ``action`` (a click, a submit) and wait until it has led to a new document that has
        finished loading, whatever its URL; return that URL."""
        self.execute("window.__redlineOldPage = true")
        action()
        wait_until(
            lambda: self.execute("return !window.__redlineOldPage && document.readyState === 'complete'"),
            timeout=timeout,
            what=what,
        )
        return self.current_url

    def status(self) -> int | None:
        """The HTTP status of the current document's response (``None`` when the browser does not
        say, as for a ``data:`` page)."""
        return self.execute(
            "const n = performance.getEntriesByType('navigation')[0]; return n ? n.responseStatus || null : null"
        )

    def ready(self) -> bool:
        """Whether the current document has finished loading."""
        return self.execute("return document.readyState") == "complete"

    # -- ending ----------------------------------------------------------------------------------
    def quit(self) -> None:
        """Close the session, then the driver (and the browser with it); safe to call twice."""
        if self.session is not None:
            try:
                self._command("DELETE", "")
            except (WebDriverError, httpx.HTTPError):
                pass
            self.session = None
        if hasattr(self, "_http"):
            self._http.close()
        self._stop_driver()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_driver(self) -> None:
        if self._driver.poll() is None:
            self._driver.terminate()
            try:
                self._driver.wait(5)
            except subprocess.TimeoutExpired:
                pass
        try:  # a browser the driver left behind: the group we started (the driver's own)
            os.killpg(self._driver.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._driver.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.quit()
