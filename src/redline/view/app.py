"""The ``redline view`` web app: :func:`create_app` builds the Starlette application over one
store file.

Every request opens the store for itself and closes it before answering (SQLite in WAL mode:
reading never blocks a scan that writes, and a scan's commits show on the next request); no run
lock is taken. Pages are rendered by Jinja2 with autoescaping, and the finished page passes
through :func:`redline.textsafety.inert`, as the HTML report does, so controls, bidi overrides and
lone surrogates in model text are shown as escapes. :mod:`.security` holds the headers every
response carries and the checks on who may ask.

Starlette, Jinja2 (and uvicorn, in :mod:`.server`) are imported when the app is built, not when
the CLI starts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from redline.errors import RedlineError
from redline.report.html import environment
from redline.store import ReviewRecord, RowDamaged, Store
from redline.textsafety import inert
from redline.view.attempts import find_attempt, parse_seq
from redline.view.errors import BadRequest, Forbidden, NotFound, ViewError
from redline.view.index import IndexCache
from redline.view.labels import REVIEWER, label_for
from redline.view.pages import (
    attempt_context,
    attempts_context,
    compare_context,
    find_run,
    run_context,
    run_state,
    runs_context,
)
from redline.view.security import (
    SECURITY_HEADERS,
    FormToken,
    fetch_site_allowed,
    host_allowed,
    origin_allowed,
)

__all__ = ["DEFAULT_HOST_NAMES", "MAX_FORM_BYTES", "MAX_NOTE_CHARS", "create_app"]

DEFAULT_HOST_NAMES = ("127.0.0.1", "localhost")
"""The ``Host`` names a local server answers to."""

MAX_FORM_BYTES = 64 * 1024
"""The largest label form accepted."""

MAX_NOTE_CHARS = 4000
"""The longest note accepted with a label."""

_STATIC = {
    "view.css": "text/css; charset=utf-8",
    "view.js": "text/javascript; charset=utf-8",
}


def _static_files() -> dict[str, tuple[bytes, str]]:
    """Our stylesheet and script, and the HTML report's stylesheet (``report.css``), read once."""
    folder = Path(__file__).with_name("static")
    files = {name: ((folder / name).read_bytes(), kind) for name, kind in _STATIC.items()}
    report_css = environment().get_template("_style.css.j2").render()
    files["report.css"] = (report_css.encode(), "text/css; charset=utf-8")
    return files


def _templates() -> Any:
    """The report's Jinja2 environment (autoescape, strict undefined, its filters) looking up the
    view's templates first."""
    import jinja2  # loaded when the app is built, not at CLI start

    env = environment()
    env.loader = jinja2.ChoiceLoader([jinja2.PackageLoader("redline.view", "templates"), env.loader])
    env.filters["dotted"] = dotted
    return env


def dotted(name: str) -> Any:
    """``name`` (a probe's, escaped) with a line-break opportunity after each dot: a long name
    wraps at its dots, never inside a word (``td.name`` in ``view.css``)."""
    from markupsafe import Markup

    return Markup(".<wbr>").join(str(name).split("."))  # each part escaped by join


def _server_port(scope: dict[str, Any]) -> int | None:
    server = scope.get("server")
    return int(server[1]) if server and server[1] is not None else None


def create_app(store_path: Path, *, host_names: tuple[str, ...] = DEFAULT_HOST_NAMES) -> Any:
    """The Starlette app serving the store at ``store_path`` to requests whose ``Host`` is one of
    ``host_names`` with the server's port. Raises :class:`ViewError` when there is no store there,
    :class:`~redline.store.StoreError` when the file is not one."""
    # web stack loaded when the app is built, not at CLI start
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import Headers, MutableHeaders
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    store_path = Path(store_path)
    if not store_path.is_file():
        raise ViewError(f"no store at {store_path} (run 'redline scan' first, or pass --store PATH)")
    with Store(store_path):  # a file that is no store: one StoreError line now, not a 500 on every page
        pass
    templates = _templates()
    static = _static_files()
    token = FormToken()
    index = IndexCache()

    def page(name: str, context: dict[str, Any], status: int = 200) -> Any:
        html = templates.get_template(name).render(**context)
        return HTMLResponse(inert(html), status_code=status)

    def problem(status: int, message: str) -> Any:
        titles = {400: "bad request", 403: "forbidden", 404: "not found", 405: "method not allowed", 422: "damaged row"}
        title = titles.get(status, "error")
        return page("error.html.j2", {"title": title, "status": status, "message": message}, status)

    def open_store() -> Store:
        if not store_path.is_file():
            raise ViewError(f"the store {store_path} is gone")
        return Store(store_path)

    def read(build: Callable[[Store], Any]) -> Any:
        """``build(store)`` with the store opened for this request only."""
        with open_store() as store:
            return build(store)

    # -- pages -----------------------------------------------------------------------------------
    def runs(request: Request) -> Any:
        return page("runs.html.j2", read(runs_context))

    def run(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        return page("run.html.j2", read(lambda s: run_context(s, run_id)))

    def attempts(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        params = dict(request.query_params)
        return page("attempts.html.j2", read(lambda s: attempts_context(s, run_id, params, index)))

    def attempt(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        probe = request.query_params.get("probe") or ""
        seq = parse_seq(request.query_params.get("seq"))
        return page("attempt.html.j2", read(lambda s: attempt_context(s, run_id, probe, seq, token.value)))

    def compare(request: Request) -> Any:
        a, b = request.query_params.get("a") or "", request.query_params.get("b") or ""
        if not a or not b:
            raise BadRequest("compare needs two runs: /compare?a=RUN&b=RUN")
        return page("compare.html.j2", read(lambda s: compare_context(s, a, b)))

    def api_run(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        return JSONResponse(read(lambda s: run_state(s, find_run(s, run_id))))

    def static_file(request: Request) -> Any:
        found = static.get(request.path_params["name"])
        if found is None:
            raise NotFound(f"no static file {request.path_params['name']!r}")
        body, kind = found
        return Response(body, media_type=kind)

    # -- the one request that writes -------------------------------------------------------------
    async def save_review(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        fetch_site = request.headers.get("sec-fetch-site")
        if not origin_allowed(request.headers.get("origin"), request.headers.get("host"), fetch_site):
            raise Forbidden("refused: the request comes from another site (Origin)")
        if not fetch_site_allowed(fetch_site):
            raise Forbidden("refused: the request comes from another site (Sec-Fetch-Site)")
        form = await _form(request)
        if not token.check(form.get("csrf")):
            raise Forbidden("refused: the form token is missing or wrong (reload the page and try again)")
        probe = form.get("probe") or ""
        seq = parse_seq(form.get("seq"))
        output = parse_seq(form.get("output"), "output")
        choice = (form.get("label") or "").strip()
        note = inert((form.get("note") or "").strip()) or None
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise BadRequest(f"the note is longer than {MAX_NOTE_CHARS} characters")

        def save(store: Store) -> None:
            find_run(store, run_id)
            found = find_attempt(store, run_id, probe, seq)
            verdicts = [str(v) for v in found.notes.get("evaluation") or []]
            if not 0 <= output < len(found.outputs):
                raise NotFound(f"attempt {seq} of probe {probe!r} has no output {output}")
            verdict = verdicts[output] if output < len(verdicts) else None
            label = label_for(choice, verdict)
            store.save_reviews([ReviewRecord(run_id, probe, seq, output, label, verdict, note, REVIEWER)])

        await run_in_threadpool(read, save)
        where = f"/runs/{quote(run_id, safe='')}/attempt?{urlencode({'probe': probe, 'seq': seq})}#output-{output}"
        return RedirectResponse(where, status_code=303)

    async def _form(request: Request) -> dict[str, str]:
        """The urlencoded form of ``request`` (the first value of each field), at most
        :data:`MAX_FORM_BYTES`."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise BadRequest("send the label as a form (application/x-www-form-urlencoded)")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise BadRequest(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB")
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {key: values[0] for key, values in fields.items()}

    # -- errors ----------------------------------------------------------------------------------
    def view_error(request: Request, exc: Exception) -> Any:
        """A :class:`ViewError` with its status; a damaged row 422 (the page of that row); any
        other :class:`RedlineError` (a damaged store) 500."""
        status = exc.status if isinstance(exc, ViewError) else 422 if isinstance(exc, RowDamaged) else 500
        return problem(status, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)

    def http_error(request: Request, exc: Exception) -> Any:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = {404: f"no page {request.url.path}", 405: f"{request.method} is not allowed here"}
        return problem(status, message.get(status, str(getattr(exc, "detail", "")) or "error"))

    def crash(request: Request, exc: Exception) -> Any:
        """A bug: one line, with the security headers (this answer skips the middleware)."""
        response = problem(500, f"internal error {type(exc).__name__} (see the terminal running redline view)")
        response.headers.update(SECURITY_HEADERS)
        return response

    class Guard:
        """Adds :data:`SECURITY_HEADERS` to every response and refuses (403) a request whose
        ``Host`` is not this server's."""

        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await self.app(scope, receive, send)
                return

            async def send_secured(message: Any) -> None:
                if message["type"] == "http.response.start":
                    MutableHeaders(scope=message).update(SECURITY_HEADERS)
                await send(message)

            host = Headers(scope=scope).get("host")
            if not host_allowed(host, host_names, _server_port(scope)):
                refused = problem(403, f"refused: this server does not answer to host {host or '(none)'!r}")
                await refused(scope, receive, send_secured)
                return
            await self.app(scope, receive, send_secured)

    return Starlette(
        routes=[
            Route("/", runs),
            Route("/runs/{run_id}", run),
            Route("/runs/{run_id}/attempts", attempts),
            Route("/runs/{run_id}/attempt", attempt),
            Route("/runs/{run_id}/reviews", save_review, methods=["POST"]),
            Route("/compare", compare),
            Route("/api/runs/{run_id}", api_run),
            Route("/static/{name}", static_file),
        ],
        middleware=[Middleware(Guard)],
        exception_handlers={
            RedlineError: view_error,
            HTTPException: http_error,
            Exception: crash,
        },
    )
