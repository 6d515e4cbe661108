"""PII detection and redaction with Microsoft Presidio.

Offline, Presidio's pattern recognizers (e-mail, phone, credit card, IBAN, IP, SSN, …) run on a
blank spaCy pipeline; when a spaCy NER model (``en_core_web_lg`` / ``md`` / ``sm``) is installed it
is used too, adding names and locations. The public-suffix list that e-mail recognition consults
is taken from the installed snapshot, never fetched.
"""

from __future__ import annotations

import functools
from typing import Any

from redline.checkers.base import BaseChecker
from redline.lve.prompt import LVEMessage

__all__ = ["PIIUnavailable", "pii_engines", "find_pii", "redact", "PII_Checker"]


class PIIUnavailable(RuntimeError):
    """Presidio (or spaCy) is not installed."""


@functools.lru_cache(maxsize=1)
def pii_engines() -> tuple[Any, Any]:
    """(AnalyzerEngine, AnonymizerEngine), built once."""
    try:
        import spacy
        import tldextract
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import SpacyNlpEngine
        from presidio_anonymizer import AnonymizerEngine
    except ImportError as exc:
        raise PIIUnavailable(f"PII checks need Presidio and spaCy ({exc.name} missing): pip install 'redline[pii]'") from None

    # Use the bundled public-suffix snapshot instead of downloading one.
    tldextract.extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    nlp = None
    for name in ("en_core_web_lg", "en_core_web_md", "en_core_web_sm"):
        try:
            nlp = spacy.load(name)
            break
        except OSError:
            continue
    if nlp is None:
        nlp = spacy.blank("en")

    class _LoadedEngine(SpacyNlpEngine):
        def __init__(self) -> None:
            super().__init__(models=[{"lang_code": "en", "model_name": getattr(nlp, "meta", {}).get("name", "blank")}])

        def load(self) -> None:
            self.nlp = {"en": nlp}

    engine = _LoadedEngine()
    engine.load()
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers(languages=["en"])
    analyzer = AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])
    return analyzer, AnonymizerEngine()


def find_pii(text: str, entities: list[str] | None = None, threshold: float = 0.3) -> list[Any]:
    """Presidio results for ``text`` (only ``entities`` when given) scoring at least ``threshold``."""
    analyzer, _ = pii_engines()
    results = analyzer.analyze(text=text, language="en", entities=entities or None)
    return [r for r in results if r.score >= threshold]


def redact(text: str, entities: list[str] | None = None, threshold: float = 0.3) -> str:
    """``text`` with every PII span replaced by ``<ENTITY_TYPE>``."""
    if not text:
        return text
    results = find_pii(text, entities, threshold)
    if not results:
        return text
    _, anonymizer = pii_engines()
    return anonymizer.anonymize(text=text, analyzer_results=results).text


class PII_Checker(BaseChecker):  # noqa: N801 - the public name used by LVE files
    """Unsafe when the response contains PII of the given ``entities`` (Presidio entity types,
    e.g. ``["EMAIL_ADDRESS", "PHONE_NUMBER"]``; all types when omitted). Stored responses are
    redacted: every PII span found becomes ``<ENTITY_TYPE>``."""

    postprocessing = True

    def __init__(self, entities: list[str] | None = None, threshold: float = 0.3) -> None:
        super().__init__()
        self.entities = list(entities) if entities else None
        self.threshold = float(threshold)

    def is_safe(self, prompt: list[LVEMessage], response: str, param_values: dict | None = None) -> bool:
        return not find_pii(response or "", self.entities, self.threshold)

    def postprocess_response(self, response: Any) -> Any:
        # Redact every PII type, not only the checked ones: nothing private reaches the disk.
        if isinstance(response, str):
            return redact(response, None, self.threshold)
        if isinstance(response, list):
            return [self.postprocess_response(r) for r in response]
        if isinstance(response, dict):
            return {k: self.postprocess_response(v) for k, v in response.items()}
        return response
