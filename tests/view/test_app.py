"""``redline view`` through Starlette's test client: every page renders with the DOM hooks the
browser tests rely on, the filters select the right attempts, a label saved through the form
reaches the store and the corrected rate, 404s, and reading a run while a scan writes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import redline.view
from helpers.html_dom import parse
from helpers.view_runs import BASE, JUDGE, MEMBERS, build_large_run, client_for, large_attempt
from redline.report.formatting import pct, pct_interval
from redline.report.html import environment
from redline.report.outcome import COMPLETE_WITH_ERRORS
from redline.report.summary import build_summary
from redline.store import LABEL_FAIL, LABEL_PASS, RUN_COMPLETE, Store
from redline.view import ViewError, create_app
from redline.view.attempts import PAGE_SIZE

PROBES = [f"{'harmful' if k % 2 == 0 else 'injection'}.Probe{k}" for k in range(4)]


def page(client, url: str, status: int = 200):
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.text[:500])
    return parse(response.text)


def attempt_url(run_id: str, probe: str, seq: int) -> str:
    return f"/runs/{run_id}/attempt?probe={probe}&seq={seq}"


# -- pages ------------------------------------------------------------------------------------------
def test_runs_list_links_every_run_with_its_status_and_offers_a_comparison(hostile_store):
    path, run_id = hostile_store
    doc = page(client_for(path), "/")
    row = doc.one(f"table#runs tr[data-run={run_id}]")
    assert row.one("a.run-link").get("href") == f"/runs/{run_id}"
    assert row.one("td.status").text.strip() == COMPLETE_WITH_ERRORS  # the hostile run has an errored attempt
    form = doc.one("form#compare-form")
    assert form.get("action") == "/compare" and form.get("method") == "get"
    assert [o.get("value") for o in form.one("select[name=a]").select("option")] == [run_id]
    assert form.one("select[name=b]") and form.one("button[type=submit]")


def test_the_runs_list_marks_a_damaged_run_row_and_still_links_and_compares_the_others(tmp_path):
    path = tmp_path / "two.db"
    with Store(path) as store:
        good, bad = store.create_run("m", {}), store.create_run("m", {})
        for run_id in (good, bad):
            store.set_run_status(run_id, RUN_COMPLETE)
            store.release_run(run_id)
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE runs SET created = 'yesterday' WHERE run_id = ?", (bad,))
    con.close()
    client = client_for(path)
    doc = page(client, "/")
    assert doc.one(f"table#runs tr[data-run={good}]").one("a.run-link").get("href") == f"/runs/{good}"
    damaged = doc.one(f"table#runs tr[data-run={bad}]")
    assert damaged.get("data-damaged") == "true" and not damaged.select("a")
    assert damaged.one("td.status").text.strip() == "damaged"
    assert "its creation time is not a time" in damaged.text
    assert [o.get("value") for o in doc.one("form#compare-form").one("select[name=a]").select("option")] == [good]
    compared = page(client, f"/compare?a={good}&b={good}")
    assert [o.get("value") for o in compared.one("select[name=b]").select("option")] == [good]


def test_run_page_shows_the_summary_by_family_as_build_summary_computes_it(hostile_store):
    path, run_id = hostile_store
    doc = page(client_for(path), f"/runs/{run_id}")
    with Store(path) as store:
        summary = build_summary(store, run_id)
        finished = store.count_attempts(run_id)
    assert doc.one("#run-status").text.strip() == COMPLETE_WITH_ERRORS
    assert summary.errored and f"{summary.errored} of {summary.attempts} attempts errored" in doc.one("#live").text
    assert f"redline scan --resume {run_id} --retry-errors" in doc.one("#live").text
    assert int(doc.one("#done").text) == finished
    live = doc.one("#live")
    assert live.get("data-status") == RUN_COMPLETE and live.get("data-api") == f"/api/runs/{run_id}"
    assert doc.select("#live #run-status") and doc.select("#live table#summary")
    families = [t.get("data-family") for t in doc.select("table#summary tbody[data-family]")]
    assert families == list(dict.fromkeys(p.probe.split(".")[0] for p in summary.probes))
    for p in summary.probes:
        family = p.probe.split(".")[0]
        row = doc.one(f"table#summary tbody[data-family={family}] tr[data-probe={p.probe}]")
        assert row.one("td.rate").text.strip() == pct(p.failure_rate)
        assert row.one("td.ci").text.strip() == pct_interval(p.ci95)
        assert row.one("td.corrected") and row.one("td.mark")
        assert row.one("a.attempts-link").get("href") == f"/runs/{run_id}/attempts?probe={p.probe}"
    marks = doc.one("tr[data-probe=bias.ForcedChoice] td.mark").text
    assert "C" in marks  # the stored mark of stereotype_rate


def test_every_attempt_page_renders_its_conversation_outputs_and_scores(hostile_store):
    path, run_id = hostile_store
    client = client_for(path)
    with Store(path) as store:
        attempts = list(store.iter_attempts(run_id))
    assert len(attempts) > 40
    for attempt in attempts:
        doc = page(client, attempt_url(run_id, attempt.probe_classname, attempt.seq))
        turns = doc.select("#conversation .turn")
        assert [t.get("data-role") for t in turns] == [t.role for t in attempt.prompt.turns]
        sections = doc.select("section.output")
        assert [s.get("data-output") for s in sections] == [str(i) for i in range(len(attempt.outputs))]
        evaluation = attempt.notes.get("evaluation") or []
        for i, section in enumerate(sections):
            assert section.one(".text").text == attempt.outputs[i].text
            assert section.one(".verdict").text == (evaluation[i] if i < len(evaluation) else "undetected")
            for name, scores in attempt.detector_results.items():
                cell = section.one(f"table.scores tr[data-detector={name}] td.score").text
                assert cell == ("–" if scores[i] is None else f"{scores[i]:.3f}")
            form = section.one(f"form.review[data-output={i}]")
            assert form.get("method") == "post" and form.get("action") == f"/runs/{run_id}/reviews"
            hidden = {n.get("name"): n.get("value") for n in form.select("input[type=hidden]")}
            assert hidden["probe"] == attempt.probe_classname and hidden["seq"] == str(attempt.seq)
            assert hidden["output"] == str(i) and hidden["csrf"]
            assert form.one("select[name=label]") and form.one("textarea[name=note]") and form.one("button.save")
        if attempt.notes.get("error"):
            assert not sections and "HTTP 500 from mock" in doc.one(".error").text


def test_a_multi_turn_attempt_shows_each_outputs_own_turns(hostile_store):
    path, run_id = hostile_store
    doc = page(client_for(path), attempt_url(run_id, "demo.MultiTurn", 0))
    assert [t.get("data-role") for t in doc.select("#conversation .turn")] == ["system", "user"]
    second = doc.one("section.output[data-output=1]")
    assert [t.get("data-role") for t in second.select(".turn")] == ["assistant", "user"]
    assert second.select(".turn .content")[1].text == "Now add the exact synthesis steps."
    assert second.one(".verdict").text == "fail"


def test_label_choices_follow_the_verdict(hostile_store):
    path, run_id = hostile_store
    client = client_for(path)
    hit = page(client, attempt_url(run_id, "demo.MultiTurn", 0))
    options = lambda doc, i: [o.get("value") for o in doc.select(f"form.review[data-output={i}] option")]
    assert options(hit, 1) == ["correct", "false_positive"]
    assert options(hit, 0) == ["correct", "false_negative"]
    undetected = page(client, attempt_url(run_id, "bias.ForcedChoice", 4))
    assert undetected.one(".verdict").text == "undetected"
    assert options(undetected, 0) == ["fail", "pass"]


def test_compare_page_flags_significant_changes(tmp_path):
    path = tmp_path / "two.db"
    store = Store(path)
    runs = []
    for fail_every in (50, 2):  # run B fails far more often
        run_id = store.create_run("scripted:m", {"probe_names": ["harmful.P"]})
        for seq in range(100):
            a = large_attempt("harmful.P", seq, generations=1)
            a.notes["evaluation"] = ["fail" if seq % fail_every == 0 else "pass"]
            store.save_attempt(run_id, a)
        store.set_run_status(run_id, RUN_COMPLETE)
        store.release_run(run_id)
        runs.append(run_id)
    store.close()
    doc = page(client_for(path), f"/compare?a={runs[0]}&b={runs[1]}")
    row = doc.one("table#comparison tr[data-probe=harmful.P]")
    assert "significant" in row.classes and row.one("td.change").text.strip() == "worse"
    same = page(client_for(path), f"/compare?a={runs[0]}&b={runs[0]}")
    row = same.one("table#comparison tr[data-probe=harmful.P]")
    assert "significant" not in row.classes and row.one("td.change").text.strip() == "no significant change"


def test_api_gives_the_runs_state(hostile_store):
    path, run_id = hostile_store
    with Store(path) as store:
        finished = store.count_attempts(run_id)
    data = client_for(path).get(f"/api/runs/{run_id}").json()
    assert data == {"run_id": run_id, "status": RUN_COMPLETE, "finished": finished, "total": finished}


STATIC = Path(redline.view.__file__).with_name("static")
REPORT_CSS = environment().get_template("_style.css.j2").render()  # the HTML report's stylesheet, as is


def test_static_files_are_served_with_their_types(hostile_store):
    client = client_for(hostile_store[0])
    js = client.get("/static/view.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert js.content == (STATIC / "view.js").read_bytes()
    assert 'getAttribute("data-api")' in js.text  # the page names the API it polls
    expected = {"view.css": (STATIC / "view.css").read_text(), "report.css": REPORT_CSS}
    for name, text in expected.items():
        css = client.get(f"/static/{name}")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert css.text == text and text.strip()
    assert client.get("/static/other.js").status_code == 404


# -- 404 and 400 ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "/runs/no-such-run",
        "/runs/no-such-run/attempts",
        "/runs/no-such-run/attempt?probe=harmful.Requests&seq=0",
        "/api/runs/no-such-run",
        "/compare?a=no-such-run&b=RUN",
        "/runs/RUN/attempts?probe=no.Such",
        "/runs/RUN/attempt?probe=no.Such&seq=0",
        "/runs/RUN/attempt?probe=harmful.Requests&seq=12345",
        "/no/such/page",
    ],
)
def test_unknown_things_are_a_404_page_with_one_line(hostile_store, url):
    path, run_id = hostile_store
    response = client_for(path).get(url.replace("RUN", run_id))
    assert response.status_code == 404
    message = parse(response.text).one("#message").text
    assert message.strip() and "\n" not in message.strip()


@pytest.mark.parametrize(
    "query",
    [
        "outcome=maybe",
        "page=0",
        "page=x",
        "page=%C2%B2",  # a digit to str.isdigit, not to int()
        "page=" + "9" * 5000,
        "q=" + "x" * 501,
        "probe=harmful.Requests&seq=x",
        "probe=harmful.Requests&seq=--5",
        "probe=harmful.Requests&seq=%C2%B2",
        "probe=harmful.Requests&seq=%D9%A1",  # an Arabic-Indic 1: ASCII digits only
        "probe=harmful.Requests&seq=" + "9" * 5000,
    ],
)
def test_bad_query_values_are_a_400(hostile_store, query):
    path, run_id = hostile_store
    route = "attempt" if "seq" in query else "attempts"
    response = client_for(path).get(f"/runs/{run_id}/{route}?{query}")
    assert response.status_code == 400
    message = parse(response.text).one("#message").text.strip()
    assert message and "\n" not in message and len(message) < 200


def test_a_missing_store_is_refused_when_the_app_is_built(tmp_path):
    with pytest.raises(ViewError, match="no store at"):
        create_app(tmp_path / "missing.db")


# -- filters ----------------------------------------------------------------------------------------
def expected(attempts: int = 400, probes: int = 4, **want) -> list[tuple[str, int]]:
    """(probe, seq) of the large run's attempts that match, computed from how they were built."""
    found = []
    for i in range(attempts):
        probe, seq = PROBES[i % probes], i // probes
        outcome = "fail" if seq % 7 == 0 else "pass"
        if want.get("probe") and probe != want["probe"]:
            continue
        if want.get("outcome") and outcome != want["outcome"]:
            continue
        if want.get("disagree") and seq % 13:
            continue
        if want.get("q") and seq % 17:
            continue
        found.append((probe, seq))
    return sorted(found)


def listed(client, run_id: str, query: str) -> tuple[list[tuple[str, int]], int]:
    """Every (probe, seq) the attempts page lists for ``query``, following a#next, and its count."""
    url = f"/runs/{run_id}/attempts?{query}"
    rows: list[tuple[str, int]] = []
    count = None
    while url:
        doc = page(client, url)
        count = int(doc.one("#count").text.split()[0])
        for tr in doc.select("table#attempts tr.attempt"):
            rows.append((tr.get("data-probe"), int(tr.get("data-seq"))))
            link = tr.one("a.attempt-link").get("href")
            assert parse_qs(urlsplit(link).query) == {"probe": [tr.get("data-probe")], "seq": [tr.get("data-seq")]}
        nxt = doc.select("a#next")
        url = nxt[0].get("href") if nxt else None
    assert count is not None
    return rows, count


@pytest.mark.parametrize(
    "query, want",
    [
        ("", {}),
        ("outcome=fail", {"outcome": "fail"}),
        ("outcome=pass&probe=injection.Probe1", {"outcome": "pass", "probe": "injection.Probe1"}),
        ("disagree=1", {"disagree": True}),
        ("q=NEEDLE", {"q": True}),
        ("q=needle&outcome=fail", {"q": True, "outcome": "fail"}),
        ("outcome=error", {"outcome": "error"}),
        ("outcome=undetected", {"outcome": "undetected"}),
    ],
)
def test_filters_select_the_right_attempts(large_store, query, want):
    path, run_id = large_store
    rows, count = listed(client_for(path), run_id, query)
    want_rows = [] if want.get("outcome") in ("error", "undetected") else expected(**want)
    assert sorted(rows) == want_rows and count == len(want_rows)


def expected_outcome(attempt) -> str:
    """The contract's outcome: error, else fail, else pass, else a bias answer, else undetected."""
    verdicts = [str(v) for v in attempt.notes.get("evaluation") or []]
    if attempt.notes.get("error"):
        return "error"
    for word in ("fail", "pass"):
        if word in verdicts:
            return word
    return next((v for v in verdicts if v != "undetected"), "undetected")


@pytest.mark.parametrize("outcome", ["fail", "pass", "undetected", "error", ""])
def test_each_outcome_filter_lists_exactly_the_attempts_of_that_outcome(hostile_store, outcome):
    path, run_id = hostile_store
    with Store(path) as store:
        outcomes = {(a.probe_classname, a.seq): expected_outcome(a) for a in store.iter_attempts(run_id)}
    client = client_for(path)
    rows, count = listed(client, run_id, f"outcome={outcome}")
    want = sorted(key for key, found in outcomes.items() if outcome in ("", found))
    assert want and sorted(rows) == want and count == len(want)
    doc = page(client, f"/runs/{run_id}/attempts?outcome={outcome}")
    shown = {(tr.get("data-probe"), int(tr.get("data-seq"))): tr.get("data-outcome") for tr in doc.select("tr.attempt")}
    assert shown and all(outcomes[key] == found for key, found in shown.items())


def test_the_outcome_filter_lists_rows_of_that_outcome(large_store):
    path, run_id = large_store
    doc = page(client_for(path), f"/runs/{run_id}/attempts?outcome=fail")
    assert {tr.get("data-outcome") for tr in doc.select("tr.attempt")} == {"fail"}


def test_detector_filter_and_its_options(large_store, tmp_path):
    path, run_id = large_store
    doc = page(client_for(path), f"/runs/{run_id}/attempts")
    options = [o.get("value") for o in doc.one("form#filters select[name=detector]").select("option")]
    assert options == ["", *sorted([JUDGE, *MEMBERS])]
    _, count = listed(client_for(path), run_id, f"detector={JUDGE}")
    assert count == 400
    _, none = listed(client_for(path), run_id, "detector=toxicity.Other")
    assert none == 0


def test_filter_form_keeps_the_query(large_store):
    path, run_id = large_store
    doc = page(client_for(path), f"/runs/{run_id}/attempts?probe=harmful.Probe0&outcome=fail&disagree=1&q=x")
    form = doc.one("form#filters")
    assert form.get("method") == "get"
    selected = lambda name: [o.get("value") for o in form.select(f"select[name={name}] option[selected]")]
    assert selected("probe") == ["harmful.Probe0"] and selected("outcome") == ["fail"]
    assert "checked" in form.one("input[name=disagree]").attrs
    assert form.one("input[name=q]").get("value") == "x" and form.one("button[type=submit]")


def test_pages_of_fifty_with_next_and_prev(large_store):
    path, run_id = large_store
    client = client_for(path)
    first = page(client, f"/runs/{run_id}/attempts")
    assert len(first.select("tr.attempt")) == PAGE_SIZE and not first.select("a#prev")
    second = page(client, first.one("a#next").get("href"))
    assert len(second.select("tr.attempt")) == PAGE_SIZE
    assert page(client, second.one("a#prev").get("href")).select("tr.attempt")[0].get("data-seq") == "0"
    last = page(client, f"/runs/{run_id}/attempts?page=8")
    assert len(last.select("tr.attempt")) == PAGE_SIZE and not last.select("a#next")
    beyond = page(client, f"/runs/{run_id}/attempts?page=9")
    assert not beyond.select("tr.attempt") and beyond.one("#count").text == "400 attempts"


def test_a_review_saying_the_judge_was_wrong_counts_as_disagreement(tmp_path):
    path = tmp_path / "large.db"
    store, run_id = build_large_run(path, attempts=40, probes=1)
    client = client_for(path)
    before, _ = listed(client, run_id, "disagree=1")
    assert before == [("harmful.Probe0", 0), ("harmful.Probe0", 13), ("harmful.Probe0", 26), ("harmful.Probe0", 39)]
    doc = page(client, attempt_url(run_id, "harmful.Probe0", 5))
    token = doc.select("form.review input[name=csrf]")[0].get("value")
    form = {"probe": "harmful.Probe0", "seq": "5", "output": "0", "label": "false_negative", "csrf": token}
    assert client.post(f"/runs/{run_id}/reviews", data=form).status_code == 303
    after, _ = listed(client, run_id, "disagree=1")
    assert ("harmful.Probe0", 5) in after and len(after) == 5
    store.close()


# -- labels -----------------------------------------------------------------------------------------
def token_of(client, run_id: str, probe: str, seq: int) -> str:
    return (
        parse(client.get(attempt_url(run_id, probe, seq)).text).select("form.review input[name=csrf]")[0].get("value")
    )


def test_a_label_is_saved_and_changes_the_corrected_rate(hostile_copy):
    path, run_id = hostile_copy
    client = client_for(path)
    probe = "injection.HiddenInData"
    before = page(client, f"/runs/{run_id}").one(f"tr[data-probe={probe}] td.corrected").text
    assert before.strip().startswith("–")  # judge not validated: no corrected rate yet
    form = {
        "probe": probe,
        "seq": "0",
        "output": "1",
        "label": "false_negative",
        "note": "it <b>did</b> leak",
        "csrf": token_of(client, run_id, probe, 0),
    }
    response = client.post(f"/runs/{run_id}/reviews", data=form)
    assert response.status_code == 303
    assert response.headers["location"] == f"/runs/{run_id}/attempt?probe={probe}&seq=0#output-1"
    with Store(path) as store:
        (review,) = store.reviews(run_id)
        corrected = next(p for p in build_summary(store, run_id).probes if p.probe == probe).corrected_rate
    assert (review.probe, review.seq, review.output) == (probe, 0, 1)
    assert (review.label, review.verdict, review.note, review.reviewer) == (
        LABEL_FAIL,
        "pass",
        "it <b>did</b> leak",
        "view",
    )
    assert corrected is not None
    after = page(client, f"/runs/{run_id}").one(f"tr[data-probe={probe}] td.corrected").text
    assert after != before and after.strip().startswith(pct(corrected))
    shown = page(client, response.headers["location"].split("#")[0]).one("section.output[data-output=1]")
    assert shown.one(".review-label").text == "false negative"
    assert shown.one(".review-note").text == "it <b>did</b> leak"
    assert [o.get("value") for o in shown.select("select[name=label] option[selected]")] == ["false_negative"]


@pytest.mark.parametrize(
    "probe, seq, output, choice, label, shown",
    [
        ("demo.MultiTurn", 0, 1, "correct", LABEL_FAIL, "correct"),
        ("demo.MultiTurn", 0, 1, "false_positive", LABEL_PASS, "false positive"),
        ("demo.MultiTurn", 0, 0, "correct", LABEL_PASS, "correct"),
        ("bias.ForcedChoice", 4, 0, "fail", LABEL_FAIL, "model failed"),
        ("bias.ForcedChoice", 4, 0, "pass", LABEL_PASS, "model passed"),
    ],
)
def test_each_choice_stores_what_the_model_did(hostile_copy, probe, seq, output, choice, label, shown):
    path, run_id = hostile_copy
    client = client_for(path)
    form = {"probe": probe, "seq": str(seq), "output": str(output), "label": choice}
    form["csrf"] = token_of(client, run_id, probe, seq)
    assert client.post(f"/runs/{run_id}/reviews", data=form).status_code == 303
    with Store(path) as store:
        (review,) = store.reviews(run_id)
    assert review.label == label and review.note is None
    doc = page(client, attempt_url(run_id, probe, seq))
    assert doc.one(f"section.output[data-output={output}] .review-label").text == shown


@pytest.mark.parametrize(
    "change, status",
    [
        ({"label": "false_positive"}, 400),  # a pass verdict: the judge cannot be a false positive
        ({"label": "fail"}, 400),
        ({"label": ""}, 400),
        ({"output": "5"}, 404),
        ({"seq": "777"}, 404),
        ({"seq": "x"}, 400),
        ({"seq": "\u00b2"}, 400),
        ({"output": "--1"}, 400),
        ({"seq": str(2**70)}, 404),
        ({"probe": "no.Such"}, 404),
        ({"note": "x" * 5000}, 400),
    ],
)
def test_a_label_that_cannot_apply_is_refused_and_nothing_is_written(hostile_copy, change, status):
    path, run_id = hostile_copy
    client = client_for(path)
    form = {"probe": "demo.MultiTurn", "seq": "0", "output": "0", "label": "correct"}
    form["csrf"] = token_of(client, run_id, "demo.MultiTurn", 0)
    form.update(change)
    response = client.post(f"/runs/{run_id}/reviews", data=form)
    assert response.status_code == status
    assert parse(response.text).one("#message").text.strip()
    with Store(path) as store:
        assert store.reviews(run_id) == []


def test_a_label_for_an_unknown_run_is_a_404(hostile_copy):
    path, run_id = hostile_copy
    client = client_for(path)
    form = {"probe": "demo.MultiTurn", "seq": "0", "output": "0", "label": "correct"}
    form["csrf"] = token_of(client, run_id, "demo.MultiTurn", 0)
    assert client.post("/runs/nope/reviews", data=form).status_code == 404


def test_a_json_or_multipart_label_is_refused(hostile_copy):
    path, run_id = hostile_copy
    client = client_for(path)
    fields = {"probe": "demo.MultiTurn", "seq": "0", "output": "0", "label": "correct"}
    fields["csrf"] = token_of(client, run_id, "demo.MultiTurn", 0)
    assert client.post(f"/runs/{run_id}/reviews", json=fields).status_code == 400
    assert client.post(f"/runs/{run_id}/reviews", data=fields, files={"f": b"x"}).status_code == 400
    with Store(path) as store:
        assert store.reviews(run_id) == []


# -- while a scan runs ------------------------------------------------------------------------------
def test_a_running_run_is_shown_live_and_its_new_attempts_appear(tmp_path):
    path = tmp_path / "live.db"
    scan = Store(path)  # stands for the scan: it holds the run's lock
    run_id = scan.create_run("scripted:live", {"probe_names": ["harmful.P"]})
    scan.save_attempt(run_id, large_attempt("harmful.P", 0))
    client = client_for(path)
    doc = page(client, f"/runs/{run_id}")
    assert doc.one("#run-status").text == "running" and doc.one("#live").get("data-status") == "running"
    assert doc.one("#done").text == "1"
    assert client.get(f"/api/runs/{run_id}").json() == {
        "run_id": run_id,
        "status": "running",
        "finished": 1,
        "total": None,
    }
    scan.write_batch([Store.attempt_row(run_id, large_attempt("harmful.P", seq)) for seq in (1, 2)])
    assert client.get(f"/api/runs/{run_id}").json()["finished"] == 3
    _, count = listed(client, run_id, "")
    assert count == 3
    scan.close()  # the scan died without an end: the run reads as interrupted
    assert client.get(f"/api/runs/{run_id}").json()["status"] == "interrupted"
    assert page(client, "/").one(f"tr[data-run={run_id}] td.status").text.strip() == "interrupted"


def test_pages_answer_while_a_scan_holds_a_write_transaction(tmp_path):
    path = tmp_path / "busy.db"
    store, run_id = build_large_run(path, attempts=20, probes=1)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM attempts")  # not committed: readers still see every attempt
    try:
        client = client_for(path)
        for url in ("/", f"/runs/{run_id}", f"/runs/{run_id}/attempts", f"/api/runs/{run_id}"):
            assert client.get(url).status_code == 200
        assert client.get(f"/api/runs/{run_id}").json()["finished"] == 20
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        store.close()


def test_the_attempt_list_reads_the_store_once_per_page_and_caches_finished_runs(tmp_path, counted_reads):
    path = tmp_path / "large.db"
    store, run_id = build_large_run(path, attempts=200, probes=2)
    reads = counted_reads
    reads.clear()  # what building the run read
    client = client_for(path)
    _, count = listed(client, run_id, "")  # 4 pages
    assert count == 200 and len(reads) == 1
    store.save_attempt(run_id, large_attempt("harmful.Probe0", 100))  # the run changed: read again
    _, count = listed(client, run_id, "probe=harmful.Probe0")
    assert count == 101 and len(reads) == 2
    store.close()


@pytest.mark.parametrize("host", ["evil.example:8000", "evil.example", "127.0.0.1:9999", "127.0.0.1", "", "[::1"])
def test_a_foreign_host_is_refused_even_for_reading(hostile_store, host):
    path, run_id = hostile_store
    response = client_for(path).get(f"/runs/{run_id}", headers={"host": host})
    assert response.status_code == 403 and run_id not in response.text
    assert "does not answer to host" in parse(response.text).one("#message").text


def test_the_loopback_names_with_the_servers_port_are_answered(hostile_store):
    path, run_id = hostile_store
    for host in ("127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000"):
        assert client_for(path).get(f"/runs/{run_id}", headers={"host": host}).status_code == 200


def test_the_base_url_of_the_tests_is_a_loopback_address():
    assert urlsplit(BASE).hostname == "127.0.0.1"
