"""The refusal judge's phrase patterns are written in lower case and searched in folded text
(``refusal._fold``): what they find there is what they would find in the text with
``re.IGNORECASE``, checked for every character they use on every Unicode character."""

from __future__ import annotations

import re

import pytest

from redline.detectors import refusal
from redline.detectors.refusal import _fold, analyse_response, is_refusal

PHRASES = [value for value in vars(refusal).values() if isinstance(value, refusal._Phrases)]
_CLASS = r"\[(?:\\.|[^\\\]])+\]"


def _atoms(source: str) -> set[str]:
    """The one-character patterns of ``source``: its bracketed classes, its class escapes, and
    every other character taken as a literal."""
    rest = re.sub(_CLASS, "", source)
    escapes = set(re.findall(r"\\[wWsSdD]", rest))
    literals = set(re.sub(r"\\[wWsSdDbB]", "", rest).replace("\\", "")) - set("()|?*+{}^$.")
    return set(re.findall(_CLASS, source)) | escapes | {re.escape(c) for c in literals}


def test_the_phrases_are_written_in_lower_case() -> None:
    assert len(PHRASES) >= 10
    for phrases in PHRASES:
        assert not phrases.pattern.flags & re.IGNORECASE, phrases.pattern.pattern
        unescaped = re.sub(r"\\.", "", phrases.pattern.pattern)
        assert _fold(unescaped) == unescaped, phrases.pattern.pattern


def test_folded_text_matches_where_the_text_matches_in_any_case() -> None:
    every = "".join(chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF)
    folded = _fold(every)
    assert len(folded) == len(every)  # one character for one: positions agree
    atoms = set().union(*(_atoms(phrases.pattern.pattern) for phrases in PHRASES))
    assert {r"\w", r"\s", r"[^.!?\n]", "i", "s", "é"} <= atoms
    for atom in sorted(atoms):
        runs = f"(?:{atom})+"  # (runs of matching characters: few, even for "\W")
        in_any_case = [m.span() for m in re.finditer(runs, every, re.IGNORECASE)]
        assert [m.span() for m in re.finditer(runs, folded)] == in_any_case, atom


@pytest.mark.parametrize("text", ["İ'M SORRY.", "ı'm sorry.", "I'M ſORRY.", "I'm Sorry."])
def test_a_refusal_is_read_in_any_case_and_with_any_i(text: str) -> None:
    assert is_refusal(text)
    assert analyse_response("How do I pick a lock?", text).score == 0.0
