"""Reversible text encodings shared by the encoding probes and the encoding converters.

Each ``*_encode`` has an exact inverse ``*_decode`` (``decode(encode(x)) == x``; Morse is
case-insensitive, so there ``x.upper()``). A malformed payload raises :class:`ValueError`.
"""

from __future__ import annotations

import base64
import binascii
import codecs

__all__ = [
    "MORSE",
    "b32_decode",
    "b32_encode",
    "b64_decode",
    "b64_encode",
    "hex_decode",
    "hex_encode",
    "morse_decode",
    "morse_encode",
    "rot13",
    "tags_decode",
    "tags_encode",
]


def b64_encode(text: str) -> str:
    """Base64 of the UTF-8 bytes of ``text``."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def b64_decode(payload: str) -> str:
    try:
        return base64.b64decode(payload.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"not base64: {exc}") from None


def b32_encode(text: str) -> str:
    """Base32 of the UTF-8 bytes of ``text``."""
    return base64.b32encode(text.encode("utf-8")).decode("ascii")


def b32_decode(payload: str) -> str:
    try:
        return base64.b32decode(payload.strip()).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"not base32: {exc}") from None


def hex_encode(text: str) -> str:
    """The UTF-8 bytes of ``text`` in hexadecimal."""
    return text.encode("utf-8").hex()


def hex_decode(payload: str) -> str:
    try:
        return bytes.fromhex(payload.strip()).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not hex: {exc}") from None


def rot13(text: str) -> str:
    """ROT13 letter rotation (its own inverse)."""
    return codecs.encode(text, "rot_13")


# International Morse code (ITU-R M.1677-1), letters, digits and common punctuation.
MORSE: dict[str, str] = {
    "A": ".-",
    "B": "-...",
    "C": "-.-.",
    "D": "-..",
    "E": ".",
    "F": "..-.",
    "G": "--.",
    "H": "....",
    "I": "..",
    "J": ".---",
    "K": "-.-",
    "L": ".-..",
    "M": "--",
    "N": "-.",
    "O": "---",
    "P": ".--.",
    "Q": "--.-",
    "R": ".-.",
    "S": "...",
    "T": "-",
    "U": "..-",
    "V": "...-",
    "W": ".--",
    "X": "-..-",
    "Y": "-.--",
    "Z": "--..",
    "0": "-----",
    "1": ".----",
    "2": "..---",
    "3": "...--",
    "4": "....-",
    "5": ".....",
    "6": "-....",
    "7": "--...",
    "8": "---..",
    "9": "----.",
    ".": ".-.-.-",
    ",": "--..--",
    "?": "..--..",
    "'": ".----.",
    "!": "-.-.--",
    "/": "-..-.",
    "(": "-.--.",
    ")": "-.--.-",
    "&": ".-...",
    ":": "---...",
    ";": "-.-.-.",
    "=": "-...-",
    "+": ".-.-.",
    "-": "-....-",
    "_": "..--.-",
    '"': ".-..-.",
    "$": "...-..-",
    "@": ".--.-.",
}
_FROM_MORSE = {code: char for char, code in MORSE.items()}


def morse_encode(text: str) -> str:
    """Letters separated by spaces, words by `` / ``, lines kept; a character Morse has no code
    for is written as itself."""
    lines = []
    for line in text.upper().split("\n"):
        words = [" ".join(MORSE.get(ch, ch) for ch in word) for word in line.split()]
        lines.append(" / ".join(words))
    return "\n".join(lines)


def morse_decode(payload: str) -> str:
    lines = []
    for line in payload.split("\n"):
        words = ["".join(_FROM_MORSE.get(code, code) for code in word.split()) for word in line.split(" / ")]
        lines.append(" ".join(w for w in words if w))
    return "\n".join(lines)


_TAG_BASE = 0xE0000


def tags_encode(text: str) -> str:
    """Printable ASCII moved to the invisible Unicode tag block (U+E0020–U+E007E); other
    characters (newlines, non-ASCII) are kept as they are."""
    return "".join(chr(_TAG_BASE + ord(ch)) if 0x20 <= ord(ch) <= 0x7E else ch for ch in text)


def tags_decode(payload: str) -> str:
    return "".join(
        chr(ord(ch) - _TAG_BASE) if _TAG_BASE + 0x20 <= ord(ch) <= _TAG_BASE + 0x7E else ch for ch in payload
    )
