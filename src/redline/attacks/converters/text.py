"""Text obfuscation converters: the text stays readable but changes its surface form.

``leetspeak`` (letters → look-alike digits), ``upper`` and ``random-case`` (casing), ``spacing``
(a separator between every character). ``random-case`` is seeded by the converter's seed and
the text itself, so the same prompt always converts the same way (resumable runs).
"""

from __future__ import annotations

import random

from redline.attacks.converters.base import Converter

__all__ = ["LEET", "Leetspeak", "RandomCase", "Spacing", "Upper"]

LEET: dict[str, str] = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7", "g": "9", "b": "8"}


class Leetspeak(Converter):
    name = "leetspeak"
    description = "letters replaced by look-alike digits (a→4, e→3, i→1, o→0, s→5, t→7, g→9, b→8)"

    def transform(self, text: str) -> str:
        return "".join(LEET.get(ch.lower(), ch) for ch in text)


class Upper(Converter):
    name = "upper"
    description = "the text in upper case"

    def transform(self, text: str) -> str:
        return text.upper()


class RandomCase(Converter):
    name = "random-case"
    description = "each letter randomly upper or lower case (seeded, reproducible)"

    def transform(self, text: str) -> str:
        rng = random.Random(f"{self.seed}:{text}")
        return "".join(ch.upper() if rng.random() < 0.5 else ch.lower() for ch in text)


class Spacing(Converter):
    name = "spacing"
    description = "a space (or the given separator, spacing:SEP) between every character"
    argument = "the separator put between characters (default: a space)"

    def transform(self, text: str) -> str:
        separator = self.arg if self.arg is not None else " "
        return separator.join(text)
