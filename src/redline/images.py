"""Images made from text at run time (Pillow, its bundled font), and perturbations of them.

* :func:`render_text` — text on a plain background, wrapped to the width (a typographic prompt).
* :func:`render_page` — a document or web-page-like screenshot: a title bar, paragraphs, and one
  extra line placed as ``hiding`` says (``small``, ``low-contrast``, ``corner``, ``footer``,
  ``plain``).
* :func:`render_chart` — a bar chart whose title, bar labels, legend or source note can carry one
  extra line (``CHART_PLACES``).
* :func:`perturb` — ``noise``, ``rotate``, ``contrast`` (lowered) or ``scale``, seeded.
* :func:`thumbnail_uri` — a stored attachment redrawn as a small PNG ``data:`` URI, for reports.

Every function returns PNG bytes and gives the same bytes for the same arguments, so a run's
attachments are the same on resume (the drawings are kept in memory for the next probe instance). Pillow is imported inside the functions that draw.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redline.errors import RedlineError

__all__ = [
    "CHART_PLACES",
    "HIDINGS",
    "PERTURBATIONS",
    "ImageError",
    "perturb",
    "render_chart",
    "render_page",
    "render_text",
    "thumbnail_uri",
]

#: How :func:`render_page` places its extra line.
HIDINGS = ("plain", "small", "low-contrast", "corner", "footer")
#: Where :func:`render_chart` writes its extra line.
CHART_PLACES = ("axis-title", "bar-label", "legend", "source-note")
#: What :func:`perturb` can do.
PERTURBATIONS = ("noise", "rotate", "contrast", "scale")

Colour = tuple[int, int, int]


class ImageError(RedlineError):
    """An image that cannot be made (Pillow missing, an unknown perturbation)."""


def _pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise ImageError("images need Pillow: pip install pillow") from None
    return Image, ImageDraw, ImageFont


def _font(size: int) -> Any:
    return _pil()[2].load_default(size=size)


def _wrap(text: str, font: Any, width: int) -> list[str]:
    """``text`` as lines no wider than ``width`` pixels (a word wider than that is cut)."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if font.getlength(candidate) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
            while font.getlength(word) > width and len(word) > 1:
                cut = len(word)
                while cut > 1 and font.getlength(word[:cut]) > width:
                    cut -= 1
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return lines


def _png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


@functools.lru_cache(maxsize=128)
def render_text(
    text: str,
    *,
    width: int = 768,
    font_size: int = 28,
    margin: int = 24,
    foreground: Colour = (0, 0, 0),
    background: Colour = (255, 255, 255),
) -> bytes:
    """``text`` drawn on a ``width``-pixel-wide image as tall as the wrapped text needs."""
    image_mod, draw_mod, _ = _pil()
    font = _font(font_size)
    lines = _wrap(text, font, width - 2 * margin)
    step = int(font_size * 1.35)
    image = image_mod.new("RGB", (width, 2 * margin + step * max(1, len(lines))), background)
    draw = draw_mod.Draw(image)
    for i, line in enumerate(lines):
        draw.text((margin, margin + i * step), line, fill=foreground, font=font)
    return _png(image)


def render_page(
    title: str, paragraphs: Sequence[str], extra: str, *, hiding: str = "plain", width: int = 800, height: int = 600
) -> bytes:
    """A screenshot-like page: a grey title bar with ``title``, ``paragraphs`` in dark text, and
    ``extra`` placed as ``hiding`` says (see :data:`HIDINGS`)."""
    if hiding not in HIDINGS:
        raise ImageError(f"unknown hiding {hiding!r} (known: {', '.join(HIDINGS)})")
    return _page(title, tuple(paragraphs), extra, hiding, width, height)


@functools.lru_cache(maxsize=128)
def _page(title: str, paragraphs: tuple[str, ...], extra: str, hiding: str, width: int, height: int) -> bytes:
    image_mod, draw_mod, _ = _pil()
    image = image_mod.new("RGB", (width, height), (255, 255, 255))
    draw = draw_mod.Draw(image)
    draw.rectangle((0, 0, width, 56), fill=(232, 234, 237))
    draw.text((20, 14), title, fill=(32, 33, 36), font=_font(26))
    body = _font(20)
    y = 80
    for paragraph in paragraphs:
        for line in _wrap(paragraph, body, width - 40):
            draw.text((20, y), line, fill=(40, 40, 40), font=body)
            y += 28
        y += 14
    if hiding == "plain":
        for line in _wrap(extra, body, width - 40):
            draw.text((20, y), line, fill=(40, 40, 40), font=body)
            y += 28
    elif hiding == "small":
        small = _font(9)
        for line in _wrap(extra, small, width - 40):
            draw.text((20, y), line, fill=(90, 90, 90), font=small)
            y += 11
    elif hiding == "low-contrast":
        for line in _wrap(extra, body, width - 40):
            draw.text((20, y), line, fill=(246, 246, 246), font=body)
            y += 28
    elif hiding == "corner":
        small = _font(11)
        lines = _wrap(extra, small, width // 3)
        top = height - 14 * len(lines) - 6
        for i, line in enumerate(lines):
            draw.text((width - width // 3 - 8, top + 14 * i), line, fill=(150, 150, 150), font=small)
    else:  # footer
        draw.line((20, height - 60, width - 20, height - 60), fill=(210, 210, 210))
        small = _font(12)
        for i, line in enumerate(_wrap(extra, small, width - 40)):
            draw.text((20, height - 52 + 15 * i), line, fill=(120, 120, 120), font=small)
    return _png(image)


def render_chart(
    title: str,
    bars: Sequence[tuple[str, float]],
    extra: str,
    *,
    place: str = "source-note",
    width: int = 800,
    height: int = 560,
) -> bytes:
    """A bar chart of ``bars`` (label, value) under ``title``, with ``extra`` written as ``place``
    says (see :data:`CHART_PLACES`): as the y-axis title, as the last bar's label, in the legend
    box or as the source note under the chart."""
    if place not in CHART_PLACES:
        raise ImageError(f"unknown chart place {place!r} (known: {', '.join(CHART_PLACES)})")
    if not bars:
        raise ImageError("a chart needs at least one bar")
    return _chart(title, tuple((str(label), float(value)) for label, value in bars), extra, place, width, height)


@functools.lru_cache(maxsize=64)
def _chart(title: str, bars: tuple[tuple[str, float], ...], extra: str, place: str, width: int, height: int) -> bytes:
    image_mod, draw_mod, _ = _pil()
    image = image_mod.new("RGB", (width, height), (255, 255, 255))
    draw = draw_mod.Draw(image)
    draw.text((20, 14), title, fill=(20, 20, 20), font=_font(24))
    small, label_font = _font(12), _font(14)  # label_font: the values above the bars
    left, top, right, bottom = 90, 70, width - 30, height - 130
    if place == "legend":
        right = width - 250
        lines = _wrap(extra, small, 200)
        draw.rectangle((right + 15, top, width - 20, top + 30 + 15 * len(lines)), outline=(180, 180, 180))
        draw.rectangle((right + 25, top + 10, right + 37, top + 22), fill=(66, 133, 244))
        for i, line in enumerate(lines):
            draw.text((right + 45, top + 9 + 15 * i), line, fill=(60, 60, 60), font=small)
    draw.line((left, top, left, bottom), fill=(40, 40, 40), width=2)
    draw.line((left, bottom, right, bottom), fill=(40, 40, 40), width=2)
    peak = max(value for _, value in bars) or 1.0
    slot = (right - left) / len(bars)
    for i, (label, value) in enumerate(bars):
        x0 = left + slot * i + slot * 0.2
        x1 = left + slot * (i + 1) - slot * 0.2
        y0 = bottom - (bottom - top - 20) * max(0.0, value) / peak
        draw.rectangle((x0, y0, x1, bottom), fill=(66, 133, 244))
        draw.text((x0, y0 - 18), f"{value:g}", fill=(20, 20, 20), font=label_font)
        text = f"{label}: {extra}" if place == "bar-label" and i == len(bars) - 1 else label
        for j, line in enumerate(_wrap(text, small, int(slot * 0.95))[:8]):
            draw.text((left + slot * i + slot * 0.05, bottom + 8 + 16 * j), line, fill=(40, 40, 40), font=small)
    if place == "axis-title":
        lines = _wrap(extra, small, bottom - top)
        strip = image_mod.new("RGB", (bottom - top, 15 * len(lines) + 4), (255, 255, 255))
        strip_draw = draw_mod.Draw(strip)
        for i, line in enumerate(lines):
            strip_draw.text((0, 2 + 15 * i), line, fill=(70, 70, 70), font=small)
        rotated = strip.rotate(90, expand=True)
        image.paste(rotated, (max(0, left - 10 - rotated.size[0]), top))
    elif place == "source-note":
        for i, line in enumerate(_wrap(f"Source: {extra}", small, width - 40)):
            draw.text((20, height - 60 + 14 * i), line, fill=(130, 130, 130), font=small)
    return _png(image)


def perturb(png: bytes, kind: str, amount: float, seed: int = 0) -> bytes:
    """``png`` changed by ``kind`` (see :data:`PERTURBATIONS`) of strength ``amount``: the share
    of noise (0–1), the angle in degrees, the contrast kept (0–1) or the scale factor."""
    if kind not in PERTURBATIONS:
        raise ImageError(f"unknown image perturbation {kind!r} (known: {', '.join(PERTURBATIONS)})")
    image_mod, _, _ = _pil()
    from PIL import ImageEnhance

    image = image_mod.open(io.BytesIO(png)).convert("RGB")
    if kind == "noise":
        rng = random.Random(seed)
        noise = image_mod.frombytes("L", image.size, rng.randbytes(image.size[0] * image.size[1])).convert("RGB")
        image = image_mod.blend(image, noise, max(0.0, min(1.0, amount)))
    elif kind == "rotate":
        image = image.rotate(amount, resample=image_mod.Resampling.BICUBIC, expand=True, fillcolor=(255, 255, 255))
    elif kind == "contrast":
        image = ImageEnhance.Contrast(image).enhance(max(0.0, amount))
    else:
        size = (max(1, round(image.size[0] * amount)), max(1, round(image.size[1] * amount)))
        image = image.resize(size, resample=image_mod.Resampling.LANCZOS)
    return _png(image)


def thumbnail_uri(message: Any, file: Any, size: int = 240) -> str | None:
    """A ``data:image/png`` URI of a thumbnail of ``message``'s image attachment, read from ``file``
    (where the caller found it, e.g. :func:`redline.attachments.stored_image`) and redrawn by Pillow
    (``None`` when there is none to show: no file, not a file redline stored by its sha256, a file
    whose bytes changed or that Pillow cannot read)."""

    checksum = getattr(message, "data_checksum", None)
    mime = (getattr(message, "data_type", None) or (None, None))[0] or ""
    if file is None or not checksum or not mime.startswith("image/") or Path(file).stem != checksum:
        return None
    path = file
    try:
        image_mod = _pil()[0]
    except ImageError:
        return None
    try:
        data = Path(path).read_bytes()
        if hashlib.sha256(data).hexdigest() != checksum:
            return None
        with image_mod.open(io.BytesIO(data)) as source:
            image = source.convert("RGB")
        image.thumbnail((size, size))
    except (OSError, ValueError, image_mod.DecompressionBombError):
        return None
    return "data:image/png;base64," + base64.b64encode(_png(image)).decode("ascii")
