"""The errors of ``redline view``: each is answered with one line (a page or the CLI's ``error:``)."""

from __future__ import annotations

from redline.errors import RedlineError

__all__ = ["BadRequest", "Forbidden", "NotFound", "ViewError"]


class ViewError(RedlineError):
    """``redline view`` cannot start or answer (a missing store, a port in use). A page answers
    it with :attr:`status`."""

    status = 500


class NotFound(ViewError, LookupError):
    """No such run, probe, attempt or output in the store (404)."""

    status = 404


class BadRequest(ViewError, ValueError):
    """A query or form value that cannot be used (400), e.g. a label that does not apply to the
    output's verdict."""

    status = 400


class Forbidden(ViewError, PermissionError):
    """A request refused for its origin: a foreign ``Host``, another site's ``Origin``, or a
    missing or wrong form token (403)."""

    status = 403
