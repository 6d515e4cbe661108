"""The first-character gate: the same matches as the plain pattern, everywhere."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from redline.detectors import refusal
from redline.detectors.regexgate import Prefiltered, analyse, gated, prefiltered

LABELLED = Path(__file__).parent.parent / "data" / "labelled_outputs.jsonl"


def spans(pattern: re.Pattern[str], text: str) -> list[tuple]:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@pytest.mark.parametrize(
    "source, flags",
    [
        (r"\b(?:I|we) (?:can't|cannot)\b|\bsorry\b", re.IGNORECASE),
        (r"^\s*(?:no|nope)[.!,]|\bmy (?:rules|policy)\b", re.IGNORECASE | re.MULTILINE),
        (r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z])|\n+", 0),
        (r"(?:a|b)?c+|\d{2}x", 0),
        (r"\b(?:K|ſ)\w+", re.IGNORECASE),  # case folds beyond ASCII: Kelvin sign, long s
    ],
)
def test_a_gated_pattern_finds_exactly_what_the_plain_one_finds(source, flags):
    plain = re.compile(source, flags)
    gate = gated(plain)
    assert gate.pattern != plain.pattern  # the gate is there
    rng = random.Random(7)
    alphabet = "IiWwe'nt canotsorySORRYmyrulepolicyNO.!,\n \t\"')]ABCabcx0123\u212aſ"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert spans(gate, text) == spans(plain, text), text


def test_a_pattern_whose_start_cannot_be_told_is_left_as_it_is():
    for source in (r".a", r"[^x]y", r"x?.", r"a*", r"(?i)abc"):
        plain = re.compile(source)
        assert gated(plain) is plain


def test_the_refusal_patterns_match_as_before_on_labelled_outputs():
    texts = [json.loads(line)["output"] for line in LABELLED.read_text(encoding="utf-8").splitlines() if line]
    names = ["_KEYWORDS", "_HARD", "_SOFT", "_PREMISE", "_MORAL", "_REDIRECT", "_TURN", "_NEUTRAL", "_NEGATION"]
    for name in names:
        gate = getattr(refusal, name)
        plain = re.compile(gate.pattern, gate.flags)  # the pattern itself, behind no gate
        assert gate.regex.pattern.startswith("(?=[")  # what finditer runs is gated
        for text in texts:
            for sentence in [text, *refusal._sentences(refusal._normalise(text))]:
                assert spans(gate, sentence) == spans(plain, sentence), (name, sentence)


@pytest.mark.parametrize(
    "source, flags",
    [
        (r"\b(?:I|we) (?:can't|cannot)\b|\bsorry\b|\bnot (?:able|allowed) to\b", re.IGNORECASE),
        (r"^\s*(?:no|nope)[.!,]|\bmy (?:rules|policy)\b", re.IGNORECASE | re.MULTILINE),
        (r"(a|b)?c+|\d{2}x", 0),  # a group: one part, not split
        (r"x.y|[^a]bc", 0),  # parts without strings: always run
    ],
)
def test_a_prefiltered_pattern_built_from_its_stored_analysis_is_the_same(source, flags):
    analysis = analyse(source, flags)
    assert json.loads(json.dumps(analysis)) == [[p, None if n is None else list(n)] for p, n in analysis]
    built = prefiltered(re.compile(source, flags))
    stored = Prefiltered.analysed(source, flags, analysis, memo=64)
    assert (stored.pattern, stored.flags, stored.needles) == (source, flags, built.needles)
    plain = re.compile(source, flags)
    rng = random.Random(11)
    alphabet = "IiWwe'nt canotsorySORRYmyrulepolicyNO.!,\n \t\"')]ABCabcxy0123ble"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        found = plain.search(text)
        for pattern in (built, stored):
            got = pattern.search(text)
            assert (got and (got.span(), got.groups())) == (found and (found.span(), found.groups())), text
            assert bool(pattern.match(text)) == bool(plain.match(text)), text
            assert spans(pattern, text) == spans(plain, text), text
            assert pattern.sub("#", text) == plain.sub("#", text), text
