"""``redline view``: a local web app over the store (runs, a run's summary, its attempts with
filters, one attempt with every score and a form to label it, two runs compared).

:mod:`.app` builds the Starlette app (:func:`create_app`), :mod:`.server` binds and serves it,
:mod:`.pages` and :mod:`.attempts` read what each page shows, :mod:`.labels` turns a reviewer's
choice into a stored label, :mod:`.security` holds the response headers and request checks.
Starlette, Jinja2 and uvicorn load only when the app is built or served.
"""

from redline.view.app import create_app
from redline.view.errors import BadRequest, Forbidden, NotFound, ViewError
from redline.view.server import allowed_hosts, bind, serve

__all__ = ["BadRequest", "Forbidden", "NotFound", "ViewError", "allowed_hosts", "bind", "create_app", "serve"]
