"""PII detection and redaction with Microsoft Presidio, shared by the ``leakage.PII`` detector
and the LVE ``PII_Checker``.

Presidio's pattern recognizers (e-mail, phone, credit card, IBAN, IP, SSN, URL, dates …) run on
a blank spaCy pipeline, so they work offline with nothing to download. When a spaCy NER model
is installed (``en_core_web_lg``, ``md`` or ``sm``, in that order) it is used as well, which
adds names, locations, organisations and nationalities. Checking for those entities without a
NER model raises :class:`PIIUnavailable` rather than passing everything.

E-mail recognition consults the public-suffix list: the snapshot bundled with ``tldextract`` is
used, never a download.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redline.errors import RedlineError

__all__ = ["NER_ENTITIES", "PIIFinding", "PIIUnavailable", "find_pii", "pii_analyzer", "redact"]

#: Entity types only a spaCy NER model finds.
NER_ENTITIES = frozenset({"PERSON", "LOCATION", "NRP", "ORGANIZATION"})
_SPACY_MODELS = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm")


class PIIUnavailable(RedlineError, RuntimeError):
    """Presidio/spaCy are not installed, or an entity type needs a NER model that is not."""


@dataclass(frozen=True)
class PIIFinding:
    """One piece of PII: its type, where it is, and the recognizer's score."""

    entity_type: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class _Analyzer:
    engine: Any
    ner_model: str | None
    entities: frozenset[str]


@functools.lru_cache(maxsize=1)
def pii_analyzer() -> _Analyzer:
    """The Presidio analyzer (built once), the NER model it uses (``None``: pattern
    recognizers only) and the entity types it can find."""
    try:
        import spacy
        import tldextract.tldextract as tld
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import SpacyNlpEngine
    except ImportError as exc:
        raise PIIUnavailable(
            f"PII checks need presidio-analyzer and spaCy ({exc.name} is not installed): pip install 'redline[pii]'"
        ) from None
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
    tld.TLD_EXTRACTOR.suffix_list_urls = ()  # bundled public-suffix snapshot, no download

    nlp, ner_model = None, None
    for name in _SPACY_MODELS:
        try:
            nlp, ner_model = spacy.load(name), name
            break
        except OSError:
            continue
    if nlp is None:
        nlp = spacy.blank("en")

    class _PreloadedSpacy(SpacyNlpEngine):
        """Presidio's spaCy engine around an already loaded pipeline (its own ``load`` would
        try to download a missing model)."""

        def load(self) -> None:
            # presidio leaves ``nlp`` unannotated (``self.nlp = None``), so mypy infers None.
            self.nlp = {"en": nlp}  # type: ignore[assignment]

    engine = _PreloadedSpacy(models=[{"lang_code": "en", "model_name": ner_model or "blank"}])
    engine.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(languages=["en"], nlp_engine=engine)
    analyzer = AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])
    if ner_model is not None:
        entities = frozenset(analyzer.get_supported_entities(language="en"))
    else:  # only what pattern recognizers find: the NER recognizer finds nothing on a blank pipeline
        entities = frozenset(
            e for r in registry.recognizers if "Spacy" not in type(r).__name__ for e in r.supported_entities
        )
    return _Analyzer(analyzer, ner_model, entities)


def _check_entities(entities: Sequence[str] | None) -> list[str] | None:
    analyzer = pii_analyzer()
    if entities is None:
        return sorted(analyzer.entities)
    missing = [e for e in entities if e not in analyzer.entities]
    if missing:
        needs_ner = [e for e in missing if e in NER_ENTITIES]
        if needs_ner:
            raise PIIUnavailable(
                f"PII entity {', '.join(needs_ner)} needs a spaCy NER model ({' or '.join(_SPACY_MODELS)}), none is installed"
            )
        raise PIIUnavailable(
            f"unknown PII entity type(s) {', '.join(missing)} (known: {', '.join(sorted(analyzer.entities))})"
        )
    return list(entities)


def find_pii(text: str, entities: Sequence[str] | None = None, threshold: float = 0.0) -> list[PIIFinding]:
    """PII of the given types (all known types when ``None``) in ``text``, scoring at least
    ``threshold``. :class:`PIIUnavailable` if a type cannot be detected here."""
    wanted = _check_entities(entities)
    if not text:
        return []
    results = pii_analyzer().engine.analyze(text=text, language="en", entities=wanted)
    return sorted(
        (PIIFinding(r.entity_type, r.start, r.end, float(r.score)) for r in results if r.score >= threshold),
        key=lambda f: (f.start, -f.end),
    )


def redact(text: str, entities: Sequence[str] | None = None, threshold: float = 0.0) -> str:
    """``text`` with every PII span of the given types replaced by ``<ENTITY_TYPE>``
    (overlapping spans are merged; the longest/first one names the type)."""
    findings = find_pii(text, entities, threshold)
    pieces: list[str] = []
    cursor = 0
    for f in findings:
        if f.start < cursor:  # overlaps the previous redaction: extend it
            cursor = max(cursor, f.end)
            continue
        pieces += [text[cursor : f.start], f"<{f.entity_type}>"]
        cursor = f.end
    pieces.append(text[cursor:])
    return "".join(pieces)
