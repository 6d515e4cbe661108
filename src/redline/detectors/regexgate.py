"""Faster large regular expressions with the same matches: :func:`gated` and :func:`prefiltered`.

A long alternation such as ``\b(?:I'm sorry|I cannot|...)`` with ``re.IGNORECASE`` is tried
alternative by alternative at every position of the text, which made the structural refusal
detector (:mod:`redline.detectors.refusal`) the largest cost of a fast HTTP scan. :func:`gated`
puts a look-ahead in front of such a pattern that fails at once where none of its alternatives
can begin: the matches are the same (the look-ahead's class is read with the pattern's own flags,
case folding included); only the positions where no match can start are skipped sooner.

:func:`prefiltered` goes further: every match of most patterns contains one of a few literal
strings (``sorry`` or ``afraid`` for ``\bI(?:'m| am)? (?:so )?(?:sorry|afraid)\b``), and a text
that contains none of them (tested with ``in`` on the text lower-cased, :func:`fold`) cannot
match, so the pattern is not run. A pattern without groups is split into its top-level
alternatives, each with its own strings and gate: a text runs only the alternatives it may
match, and the leftmost match (of those at one position, the first alternative's) is the match
of the whole pattern.

The first characters and the literal strings are read from CPython's own parse of the pattern
(``re._parser``). Where that parser is missing or the pattern's start cannot be told (a negated
class, ``.``, a back-reference, a possessive repeat...), the pattern is returned unchanged; where
no literal strings are found, it is always run.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

__all__ = ["Prefiltered", "fold", "gated", "prefiltered"]

try:  # CPython's own regular-expression parser (private, stable since 3.11)
    _sre: Any = importlib.import_module("re._constants")
    _sre_parse: Any = importlib.import_module("re._parser").parse
except ImportError:  # pragma: no cover - another implementation: no gate
    _sre = _sre_parse = None

_CLASSES = (
    {_sre.CATEGORY_SPACE: r"\s", _sre.CATEGORY_DIGIT: r"\d", _sre.CATEGORY_WORD: r"\w"} if _sre is not None else {}
)


def _first_chars(items: list[Any], at: int = 0) -> set[str] | None:
    """The characters (and ``\\s``-like classes) a match of the parsed pattern ``items[at:]`` can
    begin with, with ``""`` when it can match the empty string; ``None`` when it cannot tell (a
    negated class, ``.``, a back-reference...). Zero-width items (``\\b``, ``^``, look-arounds)
    are skipped: they consume nothing."""
    found: set[str] = set()
    while at < len(items):
        op, arg = items[at]
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            at += 1
            continue
        if op is _sre.LITERAL:
            found.add(re.escape(chr(arg)))
            return found
        if op is _sre.IN:
            for kind, value in arg:
                if kind is _sre.LITERAL:
                    found.add(re.escape(chr(value)))
                elif kind is _sre.RANGE and value[1] - value[0] < 512:
                    found.add(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
                elif kind is _sre.CATEGORY and value in _CLASSES:
                    found.add(_CLASSES[value])
                else:
                    return None
            return found
        if op is _sre.SUBPATTERN or op is _sre.BRANCH or op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            if op is _sre.SUBPATTERN:
                alternatives, optional = [list(arg[3])], False
            elif op is _sre.BRANCH:
                alternatives, optional = [list(a) for a in arg[1]], False
            else:
                alternatives, optional = [list(arg[2])], arg[0] == 0
            for alternative in alternatives:
                first = _first_chars(alternative)
                if first is None:
                    return None
                optional = optional or "" in first
                found |= first - {""}
            if not optional:
                return found
            at += 1
            continue
        return None
    found.add("")
    return found


def gated(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` behind a look-ahead that fails at once where no match can begin: the same
    matches (the look-ahead's class is read with the pattern's own flags, case folding
    included), several times faster on a long alternation, which otherwise tries every
    alternative at every position of the text. ``pattern`` itself when its first characters
    cannot be told."""
    return _compile_gated(pattern.pattern, pattern.flags) or pattern


def _compile_gated(source: str, flags: int, items: list[Any] | None = None) -> re.Pattern[str] | None:
    """:func:`gated`'s pattern for ``source`` (parsed: ``items``) compiled; ``None`` for none."""
    gate = _gated_source(source, flags, items)
    try:
        return None if gate is None else re.compile(gate, flags)
    except re.error:  # inline flags, which must stay first: no gate
        return None


def _gated_source(source: str, flags: int, items: list[Any] | None = None) -> str | None:
    """:func:`gated`'s pattern for ``source`` (parsed: ``items``); ``None`` for none."""
    if _sre_parse is None:
        return None
    try:
        if items is None:
            items = list(_sre_parse(source, flags))
        if (items and items[0] == (_sre.AT, _sre.AT_BEGINNING_STRING)) or (
            items and items[0] == (_sre.AT, _sre.AT_BEGINNING) and not flags & re.MULTILINE
        ):
            return None  # anchored at the start: tried at the start only, faster without a gate
        first = _first_chars(items)
        if not first or "" in first:
            return None
        return f"(?=[{''.join(sorted(first))}])(?:{source})"
    except Exception:  # the parser is CPython's own (or inline flags): keep the plain pattern
        return None


# -- literal prefilter -----------------------------------------------------------------------------

#: Characters that ``re.IGNORECASE`` matches with an ASCII letter but whose ``str.lower()`` is not
#: that letter (dotted capital I, dotless i, long s, Kelvin sign): read as the letter they match.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
#: Most strings one part of a pattern may stand for before it is read as "anything".
_MOST_STRINGS = 64


def fold(text: str) -> str:
    """``text`` lower-cased for :class:`Prefiltered`: every character that a pattern's ASCII
    character matches (case folding included) becomes that character, lower-cased."""
    global _last_fold
    last = _last_fold  # several patterns in a row read one sentence: fold it once
    if last[0] is text:
        return last[1]
    folded = text.lower() if text.isascii() else text.translate(_FOLD).lower()
    _last_fold = (text, folded)
    return folded


_last_fold = ("", "")


def _strings(items: list[Any]) -> set[str] | None:
    """Every string (folded) the parsed sequence ``items`` can consume, when they are few and
    ASCII; ``None`` otherwise. Zero-width items consume ``""``."""
    found = {""}
    for op, arg in items:
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            continue
        if op is _sre.LITERAL:
            options: set[str] | None = {chr(arg).lower()} if arg < 128 else None
        elif op is _sre.IN:
            options = set()
            for kind, value in arg:
                if kind is _sre.LITERAL and value < 128:
                    options.add(chr(value).lower())
                elif kind is _sre.RANGE and value[1] < 128 and value[1] - value[0] < _MOST_STRINGS:
                    options |= {chr(c).lower() for c in range(value[0], value[1] + 1)}
                else:
                    options = None
                    break
        elif op is _sre.SUBPATTERN:
            options = _strings(list(arg[3]))
        elif op is _sre.ATOMIC_GROUP:
            options = _strings(list(arg))
        elif op is _sre.BRANCH:
            options = set()
            for alternative in arg[1]:
                strings = _strings(list(alternative))
                if strings is None:
                    options = None
                    break
                options |= strings
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and arg[1] <= 3:
            body = _strings(list(arg[2]))
            options = None
            if body is not None and len(body) ** arg[1] <= _MOST_STRINGS:
                options, power = set(), {""}
                for count in range(arg[1] + 1):
                    if count >= arg[0]:
                        options |= power
                    power = {a + b for a in power for b in body}
        else:
            options = None
        if options is None or len(found) * len(options) > _MOST_STRINGS:
            return None
        found = {a + b for a in found for b in options}
    return found


def _needles(items: list[Any]) -> set[str] | None:
    """Strings (folded) one of which every match of the parsed sequence ``items`` contains;
    ``None`` when no such set is found. Of the candidates (stretches of consecutive items that
    consume few strings, parts that hold such a set of their own) the one that costs least to
    test for (:func:`_cost`)."""
    candidates: list[set[str]] = []
    options = [_strings([item]) for item in items]
    for start in range(len(items)):  # the stretches of items that consume few strings
        before = options[start - 1] if start else None
        if before is not None and len(before) == 1 and "" not in before:
            continue  # the stretch from the literal before this one is as many strings, and longer
        found = {""}
        for stop in range(start, len(items)):
            step = options[stop]
            if step is None or len(found) * len(step) > _MOST_STRINGS:
                break
            grown = {a + b for a in found for b in step}
            if len(grown) > len(found) and "" not in found:
                candidates.append(found)  # before it stands for more strings
            found = grown
        if "" not in found:
            candidates.append(found)
    for op, arg in items:  # every part with a set of its own
        inner: list[list[Any]] = []
        if op is _sre.SUBPATTERN:
            inner = [list(arg[3])]
        elif op is _sre.ATOMIC_GROUP:
            inner = [list(arg)]
        elif op is _sre.ASSERT:
            inner = [list(arg[1])]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and arg[0] >= 1:
            inner = [list(arg[2])]
        elif op is _sre.BRANCH:
            inner = [list(a) for a in arg[1]]
        union: set[str] | None = set() if inner else None
        for part in inner:
            strings = _needles(part)
            if strings is None or union is None:
                union = None
                break
            union |= strings
        if union is not None:
            candidates.append(union)
    if not candidates:
        return None
    best = min(candidates, key=_cost)
    return {s for s in best if not any(o != s and o in s for o in best)}  # (one holding another: out)


#: Rough frequencies of characters in English text (any other: 0.002), to estimate how often a
#: string turns up in a sentence.
_FREQUENCIES = (
    *(0.17, 0.1, 0.075, 0.065, 0.062, 0.057, 0.057, 0.053, 0.05, 0.049, 0.035, 0.033, 0.022),
    *(0.023, 0.02, 0.018, 0.018, 0.016, 0.016, 0.016, 0.012, 0.008, 0.006, 0.003, 0.01, 0.01),
)
_FREQUENCY = dict(zip(" etaoinsrhldcumwfgypbvk'.,", _FREQUENCIES, strict=True))
#: Words in most sentences, which the frequencies of their characters make look rare.
_COMMON = frozenset(
    [
        "a",
        "all",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "for",
        "from",
        "have",
        "he",
        "here",
        "i",
        "if",
        "in",
        "is",
        "it",
        "not",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "there",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "which",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


#: Every part of a word of _COMMON.
_COMMON_PARTS = frozenset(word[i:j] for word in _COMMON for i in range(len(word)) for j in range(i, len(word) + 1))


@cache
def _chance(string: str) -> float:
    """About how often ``string`` turns up in a sentence of 100 characters (more than once
    counts more)."""
    odds = 100.0
    for char in string:
        odds *= _FREQUENCY.get(char, 0.002)
    return odds + (0.5 if string.strip(" '.,!?") in _COMMON_PARTS else 0.0)


def _cost(strings: set[str]) -> float:
    """What testing for ``strings`` costs, in tests of one string: one per string, and running
    the pattern (about fifty) as often as one of them is in a sentence of 100 characters."""
    chance = sum(map(_chance, strings))
    return len(strings) + 50 * min(1.0, chance) + chance / 100


def _alternatives(source: str) -> list[str]:
    """The top-level alternatives of the pattern ``source`` (split at each ``|`` outside groups,
    classes and escapes)."""
    parts, depth, start, at, in_class = [], 0, 0, 0, False
    while at < len(source):
        char = source[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            at += 1 + source.startswith("^", at + 1)
            at += source.startswith("]", at)  # a "]" first in a class is a literal
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[start:at])
            start = at + 1
        at += 1
    parts.append(source[start:])
    return parts


class Prefiltered:
    """A compiled pattern behind substring tests: :meth:`search`, :meth:`match`,
    :meth:`finditer` and :meth:`sub` give what the pattern's own give, but do not run the pattern
    where the text (:func:`fold`-ed) contains none of the literal strings one of which every match
    must contain. A pattern without groups is tried alternative by alternative (each behind its own
    strings and :func:`gated`): the leftmost match, and of those at one position the first
    alternative's, which is the match of the whole. Built by :func:`prefiltered`."""

    __slots__ = ("_flags", "_longest", "_memo", "_parts", "_pattern", "_source", "_whole", "needles")

    def __init__(
        self,
        pattern: re.Pattern[str] | None,
        parts: list[tuple[tuple[str, ...] | None, Any]],
        memo: int = 0,
        longest: int = 500,
        *,
        source: str | None = None,
        flags: int = 0,
    ) -> None:
        self._pattern = pattern  # (None: compiled from source and flags when first needed)
        self._source = pattern.pattern if pattern is not None else source
        self._flags = pattern.flags if pattern is not None else flags
        if self._source is None:
            raise TypeError("Prefiltered needs a pattern or its source")
        self._whole: re.Pattern[str] | None = None
        self._parts = parts
        for index, (_, part) in enumerate(parts):
            if isinstance(part, _Unbuilt):
                part.home = (parts, index)
        self._memo = lru_cache(maxsize=memo)(self._search) if memo else None
        self._longest = longest
        strings = [needles for needles, _ in parts]
        #: strings one of which every match contains (``None``: no such strings)
        self.needles = None if None in strings else tuple(sorted({s for n in strings for s in n or ()}))

    @classmethod
    def analysed(cls, source: str, flags: int, analysis: Analysis, memo: int = 0, longest: int = 500) -> Prefiltered:
        """What :func:`prefiltered` gives for ``re.compile(source, flags)``, built from the
        :func:`analyse` of that pattern stored beforehand: nothing is parsed or compiled until a
        text holds one of a part's strings (a module's many patterns cost nothing to import).
        ``analysis`` must be :func:`analyse`'s for this very pattern: a stale one gives wrong matches."""
        parts: list[tuple[tuple[str, ...] | None, Any]] = [
            (None if needles is None else tuple(needles), _Unbuilt(part, flags, None)) for part, needles in analysis
        ]
        return cls(None, parts, memo, longest, source=source, flags=flags)

    @property
    def regex(self) -> re.Pattern[str]:
        """The whole pattern, gated (built on first use: searches go by alternative)."""
        if self._whole is None:
            parts = self._parts
            if len(parts) == 1:
                self._whole = _built(parts[0][1])
            else:
                if self._pattern is None:
                    self._pattern = re.compile(self.pattern, self._flags)
                self._whole = gated(self._pattern)
        return self._whole

    @property
    def pattern(self) -> str:
        """The pattern's source (without the gate :attr:`regex` has)."""
        assert self._source is not None
        return self._source

    @property
    def flags(self) -> int:
        return self._flags

    def possible(self, text: str) -> bool:
        """False only when the pattern cannot match anywhere in ``text``."""
        if self.needles is None:
            return True
        folded = fold(text)
        return any(needle in folded for needle in self.needles)

    def search(self, text: str) -> re.Match[str] | None:
        if self._memo is not None and len(text) <= self._longest:
            return self._memo(text)
        return self._search(text)

    def _search(self, text: str) -> re.Match[str] | None:
        folded = fold(text)
        found: re.Match[str] | None = None
        for needles, part in self._parts:
            if needles is not None:
                for needle in needles:
                    if needle in folded:
                        break
                else:
                    continue  # none of this alternative's strings: it cannot match
            match = part.search(text)
            if match is not None and (found is None or match.start() < found.start()):
                found = match
                if not found.start():
                    break
        return found

    def match(self, text: str) -> re.Match[str] | None:
        folded = fold(text)
        for needles, part in self._parts:
            if needles is None or any(needle in folded for needle in needles):
                match = part.match(text)
                if match is not None:
                    return match
        return None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.regex.finditer(text) if self.possible(text) else iter(())

    def sub(self, repl: str, text: str) -> str:
        return self.regex.sub(repl, text) if self.possible(text) else text


class _Unbuilt:
    """An alternative of a :class:`Prefiltered`, compiled (gated) the first time a text holds one
    of its strings, when it takes its own place in its pattern's list: most alternatives of a long
    list of phrasings never meet such a text, and compiling them all made the import of
    :mod:`redline.detectors.refusal` a good part of a short scan's start."""

    __slots__ = ("flags", "home", "items", "source")

    def __init__(self, source: str, flags: int, items: list[Any] | None) -> None:
        self.source, self.flags, self.items = source, flags, items
        self.home: tuple[list, int] | None = None

    def build(self) -> re.Pattern[str]:
        compiled = _compile_gated(self.source, self.flags, self.items) or re.compile(self.source, self.flags)
        if self.home is not None:
            parts, index = self.home
            parts[index] = (parts[index][0], compiled)
        return compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.build().search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.build().match(text)


def _built(part: re.Pattern[str] | _Unbuilt) -> re.Pattern[str]:
    return part.build() if isinstance(part, _Unbuilt) else part


#: The parts of a pattern that :class:`Prefiltered` searches by, each with the literal strings one
#: of which its every match contains (``None``: none found, always run), as :func:`analyse` finds them.
Analysis = tuple[tuple[str, "tuple[str, ...] | None"], ...]


def _part(source: str, flags: int) -> tuple[tuple[str, ...] | None, _Unbuilt]:
    """The literal strings of the pattern ``source`` and the pattern, to be compiled gated on
    first use; ``re.error`` when ``source`` is no pattern (it is parsed now)."""
    items = list(_sre_parse(source, flags))
    try:
        needles = _needles(items)
    except Exception:  # the parser is CPython's own: no strings
        needles = None
    return (None if needles is None else tuple(sorted(needles, key=lambda s: (len(s), s)))), _Unbuilt(
        source, flags, items
    )


def _parts(pattern: re.Pattern[str]) -> list[tuple[tuple[str, ...] | None, Any]]:
    sources = [pattern.pattern]
    if not (pattern.groups or pattern.flags & re.VERBOSE or "(?#" in pattern.pattern):
        sources = _alternatives(pattern.pattern)
    try:
        return [_part(source, pattern.flags) for source in sources]
    except re.error:  # not split where it should have been: the whole pattern
        return [_part(pattern.pattern, pattern.flags)]


def prefiltered(pattern: re.Pattern[str], memo: int = 0, longest: int = 500) -> Prefiltered:
    """``pattern`` behind tests for the literal strings every match must contain (read from
    CPython's parse of it, case folding included): the same matches, and no run of the pattern on
    a text that holds none of them. A pattern without groups is split into its alternatives,
    each with its own strings. Without such strings, a :class:`Prefiltered` that always runs the
    pattern. With ``memo``, :meth:`Prefiltered.search` remembers its answer for that many texts
    of at most ``longest`` characters (least recently used forgotten first)."""
    if _sre_parse is None:
        return Prefiltered(pattern, [(None, pattern)], memo, longest)
    return Prefiltered(pattern, _parts(pattern), memo, longest)


def analyse(source: str, flags: int = 0) -> Analysis:
    """What :func:`prefiltered` reads in the pattern ``source``: its parts and their literal
    strings, as plain data to be stored (:meth:`Prefiltered.analysed` builds the same
    :class:`Prefiltered` from it without parsing the pattern again). The strings are facts about
    the pattern, the same on every Python version. ``re.error`` when ``source`` is no pattern."""
    pattern = re.compile(source, flags)
    if _sre_parse is None:
        return ((source, None),)
    return tuple((part.source, needles) for needles, part in _parts(pattern))
