"""Attachments (images, audio) of prompts: stored by content, checked against what a model takes.

* :func:`attach` — a :class:`~redline.attempt.Message` carrying ``data`` written once under its
  sha256 in the attachment folder (``<sha256>.<ext>``), with ``data_path`` (that name, relative
  to the folder, so a store moved with its folder still finds it), ``data_type`` and
  ``data_checksum`` set, so a resumed run, the response cache, exports and ``redline view`` read
  the same bytes.
* :func:`stored_file` / :func:`stored_image` — where a stored ``data_path`` is: inside the
  attachment folder, else one :class:`AttachmentError` line (a store written by someone else
  cannot make redline read another local file).
* :func:`attachment_dir` / :func:`use_attachment_dir` — that folder: ``$REDLINE_ATTACHMENTS``,
  else the one a scan set (beside its store, :func:`beside_store`), else one in the temporary
  folder (a run in memory).
* :func:`check_conversation` — before a request: each attachment is readable, of a MIME type the
  generator takes and within its size limit, else one :class:`AttachmentError` line naming it.
* :func:`prepare_scan` / :func:`unsupported` — before a scan: the one line saying that a probe sends attachments the
  generator cannot take (``None`` when it can). A generator declares what it takes in its
  ``attachment_types`` class attribute (MIME types, ``image/*`` for any image); a probe or
  converter in its ``attachment_types`` what it sends.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from redline.attempt import AttemptError, Conversation, Message
from redline.errors import RedlineError

__all__ = [
    "ATTACHMENTS_ENV",
    "AttachmentError",
    "accepts",
    "attach",
    "attachment_dir",
    "attachment_types_of",
    "beside_store",
    "check_conversation",
    "prepare_scan",
    "stored_file",
    "stored_image",
    "unsupported",
    "use_attachment_dir",
]

#: The environment variable naming the attachment folder (it wins over a scan's own).
ATTACHMENTS_ENV = "REDLINE_ATTACHMENTS"

_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "audio/wav": ".wav", "audio/mpeg": ".mp3"}

_chosen: Path | None = None

_log = logging.getLogger(__name__)

#: The name :func:`attach` gives a file: its sha256 and extension (looked up in the attachment folder).
_STORED_NAME = re.compile(r"[0-9a-f]{64}\.[a-z0-9]{1,8}")


class AttachmentError(RedlineError, ValueError):
    """An attachment that cannot be sent: unreadable, of a type the model does not take, too large."""


def attachment_dir() -> Path:
    """The folder attachments are written to (see the module doc); created when missing."""
    given = os.environ.get(ATTACHMENTS_ENV)
    folder = Path(given) if given else _chosen or Path(tempfile.gettempdir()) / "redline-attachments"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def use_attachment_dir(folder: str | os.PathLike | None) -> None:
    """Write attachments to ``folder`` from now on (``None``: back to the default)."""
    global _chosen
    _chosen = Path(folder).resolve() if folder is not None else None


def beside_store(store_path: str | os.PathLike) -> Path | None:
    """The attachment folder of the store file ``store_path``: ``NAME.attachments`` beside it
    (``None`` for a store in memory)."""
    text = str(store_path)
    if not text or text == ":memory:" or text.startswith("file::memory:"):
        return None
    path = Path(store_path)
    return path.with_name(path.stem + ".attachments")


def attach(text: str | None, data: bytes, mime: str, *, lang: str | None = None, notes: dict | None = None) -> Message:
    """A message with ``text`` and ``data`` (of MIME type ``mime``) attached, the bytes written to
    ``<attachment_dir>/<sha256><ext>`` unless already there."""
    checksum = hashlib.sha256(data).hexdigest()
    ext = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"
    path = attachment_dir() / f"{checksum}{ext}"
    if not path.exists() or path.stat().st_size != len(data):
        partial = path.with_name(f".{path.name}.{os.getpid()}.part")
        partial.write_bytes(data)
        os.replace(partial, path)  # whole or absent: a reader never sees half a file
    message = Message(
        text=text, lang=lang, data_path=path.name, data_type=(mime, None), data_checksum=checksum, notes=notes
    )
    message.data = data  # already in memory: sent without reading the file back
    return message


def stored_file(data_path: str, folder: str | os.PathLike | None = None) -> Path:
    """The file a stored ``data_path`` names inside ``folder`` (default: :func:`attachment_dir`):
    a relative path is taken from the folder; one that leads outside it (``..``, a link, an
    absolute path elsewhere) raises :class:`AttachmentError`."""
    root = Path(folder) if folder is not None else attachment_dir()
    root = root.resolve()
    candidate = Path(data_path)
    resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not resolved.is_relative_to(root):
        raise AttachmentError(f"stored attachment path {data_path!r} points outside the attachment folder {root}")
    return resolved


def stored_image(message: Message, folder: str | os.PathLike | None) -> Path | None:
    """The file of ``message``'s stored image inside ``folder``, for showing it (``None`` when it
    has none, or when its path leads outside the folder: that one line is logged as a warning)."""
    path = message.data_path
    mime = (message.data_type or (None, None))[0] or ""
    if not path or folder is None or not mime.startswith("image/") or path.startswith(("http:", "https:", "data:")):
        return None
    try:
        return stored_file(path, folder)
    except AttachmentError as exc:
        _log.warning("%s", exc)
        return None


def _load(message: Message, path: Path) -> None:
    """Give ``message`` the bytes of its attachment from ``path`` (checked against its recorded
    checksum), so that sending it does not look for its relative name elsewhere."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise AttachmentError(f"cannot read attachment {path}: {exc.strerror}") from None
    checksum = hashlib.sha256(raw).hexdigest()
    if message.data_checksum is not None and checksum != message.data_checksum:
        raise AttachmentError(f"attachment {path} changed: sha256 {checksum} != recorded {message.data_checksum}")
    message.data = raw


def accepts(accepted: Iterable[str], mime: str | None) -> bool:
    """Whether a MIME type ``mime`` is among ``accepted`` (which may hold ``type/*``)."""
    if not mime:
        return False
    kind = mime.split("/")[0] + "/*"
    return any(a in (mime, kind) for a in accepted)


def check_conversation(conversation: Conversation, accepted: Sequence[str], max_bytes: int | None, model: str) -> None:
    """Raise :class:`AttachmentError` naming the first attachment ``model`` cannot take: unreadable,
    of a MIME type outside ``accepted``, or above ``max_bytes``. Remote URLs are left to the model."""
    for turn in conversation.turns:
        message = turn.content
        path = message.data_path
        if path is None or path.startswith(("http://", "https://")):
            continue
        mime = (message.data_type or (None, None))[0]
        if path.startswith("data:"):
            mime = path[5:].split(";")[0].split(",")[0] or mime
        if not accepts(accepted, mime):
            takes = ", ".join(accepted) if accepted else "no attachments"
            raise AttachmentError(
                f"{model} cannot take attachment {_short(path)} of type {mime or 'unknown'} (it takes {takes})"
            )
        if path.startswith("data:"):
            continue
        loaded = getattr(message, "_data", None)
        in_folder = loaded is None and _STORED_NAME.fullmatch(path) is not None  # a name attach() gave
        file = stored_file(path) if in_folder else Path(path)
        try:
            size = len(loaded) if loaded is not None else file.stat().st_size  # not read when too large
        except OSError as exc:
            raise AttachmentError(f"cannot read attachment {path}: {exc.strerror}") from None
        if max_bytes is not None and size > max_bytes:
            raise AttachmentError(f"attachment {path} is {size} bytes, above the {max_bytes}-byte limit of {model}")
        if in_folder:
            _load(message, file)
        try:
            data = message.data or b""
        except AttemptError as exc:
            raise AttachmentError(str(exc)) from None
        if mime is not None and mime.startswith("image/") and not _looks_like(data, mime):
            raise AttachmentError(f"attachment {path} is not a readable {mime} image")


_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}


def _looks_like(data: bytes, mime: str) -> bool:
    """Whether ``data`` starts as a ``mime`` file does (types without a known signature pass)."""
    if mime == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    signatures = _MAGIC.get(mime)
    return signatures is None or data.startswith(signatures)


def _short(path: str) -> str:
    return path if not path.startswith("data:") else path[:40] + "…"


def attachment_types_of(probe: Any) -> set[str]:
    """The MIME types ``probe`` sends: its own ``attachment_types``, those of the probe it wraps
    and of its converters."""
    types: set[str] = set()
    seen: set[int] = set()
    while probe is not None and id(probe) not in seen:
        seen.add(id(probe))
        own = vars(probe) if hasattr(probe, "__dict__") else {}
        types.update(getattr(type(probe), "attachment_types", ()) or ())
        types.update(own.get("attachment_types") or ())
        for converter in getattr(own.get("chain"), "converters", ()) or ():
            types.update(getattr(converter, "attachment_types", ()) or ())
        probe = own.get("inner")
    return types


def unsupported(generator: Any, probes: Iterable[Any]) -> str | None:
    """The one line saying which selected probes send attachments ``generator`` does not take
    (``None`` when it takes all of them)."""
    accepted = tuple(getattr(generator, "attachment_types", ()) or ())
    refused: dict[str, list[str]] = {}
    for probe in probes:
        for mime in sorted(attachment_types_of(probe)):
            if not accepts(accepted, mime):
                refused.setdefault(mime, []).append(probe.name)
    if not refused:
        return None
    name = getattr(generator, "name", "the model")
    what = "; ".join(f"{mime} from {', '.join(names)}" for mime, names in refused.items())
    takes = f"it takes {', '.join(accepted)}" if accepted else "it takes text only"
    return (
        f"{name} cannot take the attachments these probes send ({what}); {takes} "
        "(use a multimodal chat model, e.g. openai:gpt-4o, leave these probes out, or --skip-unavailable)"
    )


def prepare_scan(generator: Any, probes: Iterable[Any], store: Any, *, skip: bool = False) -> None:
    """Before a scan creates its run: when ``generator`` cannot take what some probes send, raise
    :class:`AttachmentError` (the one line of :func:`unsupported`), or with ``skip``
    (``--skip-unavailable``) give those probes that line as their ``skip_reason`` (reported "not
    measured"). Then write attachments beside ``store``'s file (see :func:`beside_store`)."""
    probes = list(probes)
    refused = unsupported(generator, probes)
    if refused is not None and not skip:
        raise AttachmentError(refused)
    if refused is not None:
        accepted = tuple(getattr(generator, "attachment_types", ()) or ())
        for probe in probes:
            if not all(accepts(accepted, mime) for mime in attachment_types_of(probe)):
                probe.skip_reason = unsupported(generator, [probe])
    path = getattr(store, "path", None)
    use_attachment_dir(beside_store(path) if path is not None else None)
