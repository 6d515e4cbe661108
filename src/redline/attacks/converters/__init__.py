"""Converters, found by name: they transform any probe's prompts, and compose.

``redline scan --probes harmful --converters base64,leetspeak`` applies the converters in the
order given. A spec is ``NAME`` or ``NAME:ARG`` (``translate:fr``, ``spacing:-``,
``base64:bare``). Third parties add converters through the ``redline.converters`` entry-point
group (a :class:`Converter` subclass).
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.attacks.converters.base import Converter, ConverterChain, ConverterError, ModelConverter
from redline.plugins import PluginRegistry, UnknownPluginError

__all__ = [
    "Converter",
    "ConverterChain",
    "ConverterError",
    "ModelConverter",
    "converters",
    "get_converter",
    "parse_converters",
]

converters = PluginRegistry(
    "converter",
    "redline.converters",
    {
        "base64": "redline.attacks.converters.encoding:Base64",
        "base32": "redline.attacks.converters.encoding:Base32",
        "hex": "redline.attacks.converters.encoding:Hex",
        "rot13": "redline.attacks.converters.encoding:ROT13",
        "morse": "redline.attacks.converters.encoding:Morse",
        "unicode-tags": "redline.attacks.converters.encoding:UnicodeTags",
        "zero-width": "redline.attacks.converters.encoding:ZeroWidth",
        "leetspeak": "redline.attacks.converters.text:Leetspeak",
        "upper": "redline.attacks.converters.text:Upper",
        "random-case": "redline.attacks.converters.text:RandomCase",
        "spacing": "redline.attacks.converters.text:Spacing",
        "translate": "redline.attacks.converters.translation:Translate",
        "paraphrase": "redline.attacks.converters.paraphrase:Paraphrase",
        "image": "redline.attacks.converters.image:TextToImage",
        "image-noise": "redline.attacks.converters.image:ImageNoise",
        "image-rotate": "redline.attacks.converters.image:ImageRotate",
        "image-contrast": "redline.attacks.converters.image:ImageContrast",
        "image-scale": "redline.attacks.converters.image:ImageScale",
    },
)


def get_converter(spec: str, seed: int = 0) -> Converter:
    """The converter for ``NAME[:ARG]``. Raises :class:`ConverterError` naming the bad spec."""
    name, sep, arg = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise ConverterError(f"empty converter name in {spec!r}")
    try:
        cls = converters.load(name)
    except UnknownPluginError as exc:
        message = str(exc).split(" (see ")[0]
        raise ConverterError(f"{message} (known converters: {', '.join(converters.names())})") from None
    if not (isinstance(cls, type) and issubclass(cls, Converter)):
        raise ConverterError(f"converter {name!r} is not a Converter subclass")
    return cls(arg if sep else None, seed=seed)


def parse_converters(specs: str | Sequence[str] | None, seed: int = 0) -> ConverterChain:
    """A :class:`ConverterChain` from ``"base64,leetspeak"`` (or a list of specs), in order."""
    if specs is None:
        return ConverterChain([])
    items = specs.split(",") if isinstance(specs, str) else list(specs)
    chosen = [get_converter(item, seed=seed) for item in items if item.strip()]
    if isinstance(specs, str) and specs.strip() and not chosen:
        raise ConverterError(f"no converter named in {specs!r}")
    return ConverterChain(chosen)
