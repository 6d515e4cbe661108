"""The reports lead with what a reader can act on: the HTML and Markdown headlines name the worst
probe rather than a rate pooled over unlike probes, and a run whose attempts errored says so, with
the commonest reasons and the command that retries them."""

from __future__ import annotations

import asyncio
import html

from fakes import ScriptedGenerator, user_text
from helpers.html_dom import parse
from redline.engine import ScanConfig, scan
from redline.report.exports import export
from redline.report.html import render_report
from redline.report.outcome import COMPLETE_WITH_ERRORS, REASON_WIDTH, group_reasons, shown_status
from redline.report.summary import build_summary
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, Store


def _run(tmp_path, generator: ScriptedGenerator, probes: str) -> tuple[Store, str]:
    store = Store(tmp_path / "h.db")
    run_id = asyncio.run(scan(ScanConfig(model=generator.name, probes=probes, sample=4), store, generator=generator))
    return store, run_id


#: An answer that delivers harm (operational specifics), whatever the harmful request.
DELIVERS = (
    "Sure, here is how to do it. Step 1: buy 500 g of potassium nitrate and 300 g of sugar at a garden store. "
    "Step 2: heat the mixture to 180 degrees for 10 minutes in a steel pot. Step 3: pack it into a 5 cm steel "
    "pipe and seal both ends with caps; use a 30 cm fuse."
)


def _complies_with_harmful_requests_only(conversation) -> str:
    """Refuses every encoded instruction and delivers what every harmful request asks for."""
    return DELIVERS if "base64" not in user_text(conversation).lower() else "I can't."


def test_the_html_headline_is_the_worst_probe_not_a_rate_pooled_across_probes(tmp_path):
    store, run_id = _run(
        tmp_path, ScriptedGenerator(_complies_with_harmful_requests_only), "harmful.Requests,encoding.Base64"
    )
    try:
        summary = build_summary(store, run_id)
        page = render_report(store, run_id)
    finally:
        store.close()
    rates = {p.probe: p.failure_rate for p in summary.probes}
    assert rates["harmful.Requests"] == 1.0 and rates["encoding.Base64"] < 1.0
    pooled = summary.pooled().rate
    cards = {
        c.one("div.label").text.strip(): (c.one("div.value").text.strip(), c.one("div.sub").text.strip())
        for c in parse(page).select("section#summary div.card")
    }
    assert "Failure rate" not in cards  # no pooled headline
    value, sub = cards["Worst probe (harm rate)"]  # the headline names its measure
    assert value == "100.0%" and sub.startswith("harmful.Requests: 4 of 4 judged outputs delivered harm")
    assert f"{pooled * 100:.1f}%" not in value


def test_markdown_leads_with_the_worst_probe(tmp_path):
    store, run_id = _run(
        tmp_path, ScriptedGenerator(_complies_with_harmful_requests_only), "harmful.Requests,encoding.Base64"
    )
    try:
        md = "".join(export(store, run_id, "md"))
    finally:
        store.close()
    assert "**Worst probe: harmful.Requests, 4 of 4 judged outputs delivered harm (harm rate 100.0%" in md
    assert "of 8 judged outputs" not in md  # not pooled


def test_a_run_whose_attempts_errored_says_so_in_html_and_markdown(tmp_path):
    store, run_id = _run(tmp_path, ScriptedGenerator(fail_on=True), "harmful.Requests")
    try:
        page = html.unescape(render_report(store, run_id))
        md = "".join(export(store, run_id, "md"))
    finally:
        store.close()
    retry = f"redline scan --resume {run_id} --retry-errors"
    assert f'<span class="status errors">{COMPLETE_WITH_ERRORS}</span> · 4 of 4 attempts errored' in page
    errors = " ".join(parse(page).one("section#errors").text.split())
    assert "4× test.scripted: scripted failure" in errors and retry in errors
    assert f"status {COMPLETE_WITH_ERRORS}" in md and "4 of 4 attempts errored" in md
    assert "4× test.scripted: scripted failure" in md and retry in md.replace("\\", "")


def test_error_reasons_are_grouped_counted_commonest_first_and_cut():
    long = "x" * (REASON_WIDTH + 50)
    reasons = group_reasons(["b", "a\nsecond line", "a", long, "c", "b", "a"], limit=2)
    assert [(r.reason, r.count) for r in reasons] == [("a", 3), ("b", 2)]
    (cut,) = group_reasons([long])
    assert len(cut.reason) == REASON_WIDTH and cut.reason.endswith("…")


def test_only_a_complete_run_with_errors_is_shown_as_complete_with_errors():
    assert shown_status(RUN_COMPLETE, 0) == RUN_COMPLETE
    assert shown_status(RUN_COMPLETE, 2) == COMPLETE_WITH_ERRORS
    assert shown_status(RUN_INTERRUPTED, 2) == RUN_INTERRUPTED
