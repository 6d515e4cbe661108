"""The HTML report's bias headline says what its worst mark rests on: never a bare "A" when most
bias metrics got no mark, with the metrics left without one counted by reason."""

from __future__ import annotations

import asyncio
from html.parser import HTMLParser

from fakes import ScriptedGenerator, user_text
from redline.engine import ScanConfig, scan
from redline.report.html import render_report
from redline.store import Store


class Cards(HTMLParser):
    """The summary cards of a report page: ``{label: (css classes, value, sub)}``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cards: dict[str, tuple[str, str, str]] = {}
        self._card: dict[str, str] | None = None
        self._field: str | None = None

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "div" and cls.split()[:1] == ["card"]:
            self._card = {"cls": cls, "label": "", "value": "", "sub": ""}
        elif tag == "div" and self._card is not None and cls in ("label", "value", "sub"):
            self._field = cls

    def handle_endtag(self, tag):
        if tag == "div" and self._field is not None:
            if self._field == "sub" and self._card is not None:  # the last field of a card
                card = self._card
                self.cards[card["label"].strip()] = (card["cls"], card["value"].strip(), card["sub"].strip())
                self._card = None
            self._field = None

    def handle_data(self, data):
        if self._card is not None and self._field is not None:
            self._card[self._field] += data


def _bias_card(tmp_path, probes: str, answer, sample: int = 10) -> tuple[str, str, str]:
    """The bias card ``(css classes, value, sub)`` of a scan of ``probes`` answered by ``answer``."""
    store = Store(tmp_path / "headline.db")
    try:
        config = ScanConfig(model="scripted:headline", probes=probes, sample=sample)
        run_id = asyncio.run(scan(config, store, generator=ScriptedGenerator(answer)))
        parser = Cards()
        parser.feed(render_report(store, run_id))
    finally:
        store.close()
    return parser.cards["Worst bias mark"]


def _rejecting(conversation) -> str:
    """Rejects a stereotype statement whichever way the question is put ("do you agree": "No.",
    "do you disagree": "Yes.")."""
    return "Yes." if "do you disagree" in user_text(conversation) else "No."


def _mostly_unreadable(conversation) -> str:
    """Reads only the stereotype statements (rejected); every other bias prompt gets an answer no
    evaluator can judge."""
    return _rejecting(conversation) if user_text(conversation).startswith("Statement:") else "Let me think."


def test_headline_on_a_run_where_most_metrics_are_unmeasured(tmp_path):
    cls, value, sub = _bias_card(tmp_path, "bias", _mostly_unreadable)
    # 9 metrics: 7 with a mark scale, of which only stereotype_agreement was judged (10 statements
    # rejected → A; 6 would leave its interval reaching D: no mark)
    assert value == "A on 1 of 7", value
    assert sub.startswith("worst mark A on 1 of 7 metrics (A ×1)"), sub
    assert "6 without a mark: 6 no judged outputs" in sub
    assert "order_bias: no mark scale" in sub
    # not painted as a healthy result
    assert "ma" not in cls.split() and "neutral" in cls.split()


def test_headline_counts_why_metrics_have_no_mark(tmp_path):
    # every answer judged, but 2 items (4 answers) are too few for a mark: no mark, and the reason is counted
    cls, value, sub = _bias_card(tmp_path, "bias.DirectStereotypes", _rejecting, sample=2)
    assert value == "–" and sub == (
        "none of 1 metric marked · 1 without a mark: 1 too few judged outputs · keying_consistency: no mark scale"
    )
    assert "mn" in cls.split()  # the colour of "not measured"


def test_headline_is_the_bare_mark_when_every_metric_is_marked(tmp_path):
    cls, value, sub = _bias_card(tmp_path, "bias.DirectStereotypes", _rejecting)
    assert (value, sub) == ("A", "A ×1 · keying_consistency: no mark scale")
    assert "ma" in cls.split()
