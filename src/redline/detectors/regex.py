"""``strings.Regex``: a regular expression decides whether an output is a hit.

The pattern comes from the detector's options (``--detector-opt strings.Regex.pattern=...``) or,
per attempt, from ``attempt.notes["prompt_metadata"]["regex"]`` (set by the probe or by a
dataset) or ``attempt.notes["regex"]``; options and attempt patterns are combined (any match).
With ``mode="absent"`` an output is a hit when *no* pattern matches (e.g. a required disclaimer
is missing). An attempt with no pattern at all is not scored (``None``: counted as undetected,
never as a pass).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from redline.attempt import Attempt
from redline.detectors.base import Detector, DetectorUnavailable

__all__ = ["RegexDetector", "compile_flags"]

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def compile_flags(flags: str) -> int:
    """``"is"`` → ``re.IGNORECASE | re.DOTALL``. Raises :class:`DetectorUnavailable` for an
    unknown letter."""
    value = 0
    for letter in flags:
        if letter not in _FLAGS:
            raise DetectorUnavailable(f"strings.Regex: unknown flag {letter!r} (use any of i, m, s, x)")
        value |= _FLAGS[letter]
    return value


class RegexDetector(Detector):
    """1.0 when a pattern matches the output (``mode="present"``, the default) or when none does
    (``mode="absent"``); ``None`` when neither the options nor the attempt give a pattern.

    Options: ``pattern`` (a string or a list of strings), ``flags`` (letters of ``imsx``, default
    ``"i"``), ``mode`` (``present`` / ``absent``).
    """

    name = "strings.Regex"
    description = "a regular expression (from options or the attempt's notes) matches the output"

    def __init__(self, pattern: str | Sequence[str] | None = None, flags: str = "i", mode: str = "present") -> None:
        if mode not in ("present", "absent"):
            raise DetectorUnavailable(f"strings.Regex: mode must be 'present' or 'absent', not {mode!r}")
        self.mode = mode
        self.flags = compile_flags(flags)
        patterns = [pattern] if isinstance(pattern, str) else list(pattern or [])
        self.patterns = [self._compile(p, "option") for p in patterns]
        self._cache: dict[str, re.Pattern[str]] = {}

    def _compile(self, pattern: str, where: str) -> re.Pattern[str]:
        try:
            return re.compile(str(pattern), self.flags)
        except re.error as exc:
            raise DetectorUnavailable(f"strings.Regex: invalid pattern {pattern!r} ({where}): {exc}") from None

    def attempt_patterns(self, attempt: Attempt) -> list[re.Pattern[str]]:
        """The compiled patterns that apply to ``attempt`` (options first)."""
        raw: list[str] = []
        for source in ((attempt.notes.get("prompt_metadata") or {}).get("regex"), attempt.notes.get("regex")):
            if isinstance(source, str):
                raw.append(source)
            elif isinstance(source, (list, tuple)):
                raw.extend(str(s) for s in source)
        compiled = list(self.patterns)
        for p in raw:
            if p not in self._cache:
                self._cache[p] = self._compile(p, f"attempt {attempt.seq}")
            compiled.append(self._cache[p])
        return compiled

    def detect(self, attempt: Attempt) -> list[float | None]:
        patterns = self.attempt_patterns(attempt)
        scores: list[float | None] = []
        for message in attempt.outputs_for(self.lang):
            if message is None or message.text is None or not patterns:
                scores.append(None)
                continue
            found = any(p.search(message.text) for p in patterns)
            scores.append(1.0 if found == (self.mode == "present") else 0.0)
        return scores
